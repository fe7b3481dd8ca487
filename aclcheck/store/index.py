"""The /index table: one row per case with what listing and filtering need, so a golden
file's cases are listed without opening a case group (docs/store.md)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from aclcheck import contract
from aclcheck.cases import Case
from aclcheck.store.codec import parse_shape_text, rows_array, shape_text

#: (column, kind): "s" fixed-length UTF-8 bytes, otherwise a numpy scalar type.
INDEX_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "s"), ("family", "s"), ("product", "s"), ("dtype", "s"), ("format", "s"),
    ("layout", "s"), ("distribution", "s"), ("self_shape", "s"), ("grad_shape", "s"),
    ("out_shape", "s"), ("null", "s"), ("expected_status", "<i8"), ("expected_rule", "s"),
    ("out_written", "u1"), ("has_golden", "u1"), ("nbytes", "<i8"),
)


@dataclass(frozen=True)
class IndexEntry:
    """One /index row: what listing and filtering need, without opening the case group."""

    id: str
    family: str
    product: str
    dtype: str
    format: str
    layout: str
    distribution: str
    self_shape: tuple[int, ...]
    grad_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    null: tuple[str, ...]
    expected_status: int
    expected_rule: str
    out_written: bool
    has_golden: bool
    nbytes: int

    @property
    def status_name(self) -> str:
        return contract.status_name(self.expected_status)

    def to_dict(self) -> dict[str, Any]:
        d = {f: getattr(self, f) for f in _ENTRY_FIELDS}
        for key in ("self_shape", "grad_shape", "out_shape", "null"):
            d[key] = list(d[key])
        d["expected_status_name"] = self.status_name
        return d


_ENTRY_FIELDS = tuple(f.name for f in dataclasses.fields(IndexEntry))


def index_entry(case: Case, has_golden: bool, nbytes: int) -> IndexEntry:
    return IndexEntry(
        case.id, case.family, case.product, case.dtype, case.format, case.layout,
        case.distribution, tuple(case.self_shape), tuple(case.grad_shape),
        tuple(case.tensor_desc("out").shape), tuple(case.null), case.expected_status,
        case.expectation.rule, case.out_written, has_golden, nbytes,
    )


def index_array(entries: list[IndexEntry]) -> np.ndarray:
    rows = []
    for e in entries:
        row = {f: getattr(e, f) for f in _ENTRY_FIELDS}
        for key in ("self_shape", "grad_shape", "out_shape"):
            row[key] = shape_text(row[key])
        row["null"] = ",".join(row["null"])
        rows.append(row)
    return rows_array(rows, INDEX_COLUMNS)


def entries_from_array(arr: np.ndarray) -> list[IndexEntry]:
    cols = {}
    for name, kind in INDEX_COLUMNS:
        if kind == "s":
            cols[name] = [b.decode("utf-8") for b in arr[name].tolist()]
        else:
            cols[name] = arr[name].tolist()
    out = []
    for i in range(len(arr)):
        out.append(IndexEntry(
            cols["id"][i], cols["family"][i], cols["product"][i], cols["dtype"][i],
            cols["format"][i], cols["layout"][i], cols["distribution"][i],
            parse_shape_text(cols["self_shape"][i]), parse_shape_text(cols["grad_shape"][i]),
            parse_shape_text(cols["out_shape"][i]),
            tuple(v for v in cols["null"][i].split(",") if v), int(cols["expected_status"][i]),
            cols["expected_rule"][i], bool(cols["out_written"][i]),
            bool(cols["has_golden"][i]), int(cols["nbytes"][i]),
        ))
    return out


#: /index columns compared with the record (the index is what listing and `verify`'s
#: selection trust, so it must say what the record says).
INDEX_RECORD_FIELDS = ("family", "product", "dtype", "format", "layout", "distribution",
                       "self_shape", "grad_shape", "out_shape", "null")


def index_mismatches(entry: IndexEntry, case: Case) -> list[str]:
    """Where an /index row disagrees with its case record (one line each)."""
    expected = index_entry(case, entry.has_golden, entry.nbytes)
    problems = [f"/index {fld} {getattr(entry, fld)!r} != record {getattr(expected, fld)!r}"
                for fld in INDEX_RECORD_FIELDS if getattr(expected, fld) != getattr(entry, fld)]
    if entry.id != case.id:
        problems.insert(0, f"record id is {case.id!r}")
    return problems
