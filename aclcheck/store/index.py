"""The /index table: one row per case with what listing and filtering need, so a golden
file's cases are listed without opening a case group (docs/store.md). One shape column
per tensor of the operator's record (its `{key}_shape` fields: each tensor's shape as
the call passes it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.acl import status_name
from aclcheck.cases.record import SHAPE
from aclcheck.store.codec import parse_shape_text

Columns = tuple[tuple[str, str], ...]

#: (column, kind): "s" fixed-length UTF-8 bytes, otherwise a numpy scalar type; the shape
#: columns of the operator's tensors stand between "distribution" and "null".
_HEAD: Columns = (("id", "s"), ("family", "s"), ("product", "s"), ("dtype", "s"),
                  ("format", "s"), ("layout", "s"), ("distribution", "s"))
_TAIL: Columns = (("null", "s"), ("expected_status", "<i8"), ("expected_rule", "s"),
                  ("out_written", "u1"), ("has_golden", "u1"), ("nbytes", "<i8"))


def shape_columns(case_type: type[Case]) -> tuple[str, ...]:
    """The shape columns of an operator's index: its record's shape fields, in order."""
    return tuple(f.name for f in case_type.record_fields()
                 if f.kind == SHAPE and f.name.endswith("_shape") and f.role is not None
                 and f.name == f"{f.role}_shape")


def index_columns(case_type: type[Case]) -> Columns:
    return _HEAD + tuple((name, "s") for name in shape_columns(case_type)) + _TAIL


@dataclass(frozen=True)
class IndexEntry:
    """One /index row: what listing and filtering need, without opening the case group.
    A shape column reads as an attribute (`entry.<key>_shape`)."""

    id: str
    family: str
    product: str
    dtype: str
    format: str
    layout: str
    distribution: str
    shapes: tuple[tuple[str, tuple[int, ...]], ...]  # (shape column, shape), in order
    null: tuple[str, ...]
    expected_status: int
    expected_rule: str
    out_written: bool
    has_golden: bool
    nbytes: int
    #: an imported vendor case: the status its test expects, where it comes from
    vendor_status: int | None = None
    source: str = ""

    def __getattr__(self, name: str) -> tuple[int, ...]:
        shapes = self.__dict__.get("shapes")
        if name.startswith("_") or shapes is None:
            raise AttributeError(name)
        for column, shape in shapes:
            if column == name:
                return shape
        raise AttributeError(name)

    @property
    def status_name(self) -> str:
        return status_name(self.expected_status)

    def to_dict(self) -> dict[str, Any]:
        """The row as plain data, in column order (`inspect --json`)."""
        d: dict[str, Any] = {name: getattr(self, name) for name, _ in _HEAD}
        d.update((column, list(shape)) for column, shape in self.shapes)
        d.update({name: getattr(self, name) for name, _ in _TAIL})
        d["null"] = list(self.null)
        d["expected_status_name"] = self.status_name
        if self.vendor_status is not None:
            d["vendor_status"] = self.vendor_status
        if self.source:
            d["source"] = self.source
        return d


def index_entry(case: Case, has_golden: bool, nbytes: int) -> IndexEntry:
    roles = {f"{r.key}_shape": r.name for r in case.ROLES}
    shapes = tuple((column, tuple(case.tensor_desc(roles[column]).shape))
                   for column in shape_columns(type(case)))
    return IndexEntry(
        case.id, case.family, case.product, case.dtype, case.format, case.layout,
        case.distribution, shapes, tuple(case.null), case.expected_status,
        case.expectation.rule, case.out_written, has_golden, nbytes,
        getattr(case, "vendor_status", None), getattr(case, "source", None) or "",
    )


def entries_from_array(arr: np.ndarray, case_type: type[Case]) -> list[IndexEntry]:
    cols = {}
    for name, kind in index_columns(case_type):
        if kind == "s":
            cols[name] = [b.decode("utf-8") for b in arr[name].tolist()]
        else:
            cols[name] = arr[name].tolist()
    shape_cols = shape_columns(case_type)
    names = arr.dtype.names or ()
    vendor = [b.decode("utf-8") for b in arr["vendor_status"].tolist()] \
        if "vendor_status" in names else None
    sources = [b.decode("utf-8") for b in arr["source"].tolist()] \
        if "source" in names else None
    out = []
    for i in range(len(arr)):
        out.append(IndexEntry(
            cols["id"][i], cols["family"][i], cols["product"][i], cols["dtype"][i],
            cols["format"][i], cols["layout"][i], cols["distribution"][i],
            tuple((c, parse_shape_text(cols[c][i])) for c in shape_cols),
            tuple(v for v in cols["null"][i].split(",") if v), int(cols["expected_status"][i]),
            cols["expected_rule"][i], bool(cols["out_written"][i]),
            bool(cols["has_golden"][i]), int(cols["nbytes"][i]),
            int(vendor[i]) if vendor and vendor[i] else None, sources[i] if sources else "",
        ))
    return out


def index_mismatches(entry: IndexEntry, case: Case) -> list[str]:
    """Where an /index row disagrees with its case record (one line each): the columns
    listing and `verify`'s selection trust must say what the record says."""
    expected = index_entry(case, entry.has_golden, entry.nbytes)
    fields = ("family", "product", "dtype", "format", "layout", "distribution",
              *shape_columns(type(case)), "null")
    problems = [f"/index {fld} {getattr(entry, fld)!r} != record {getattr(expected, fld)!r}"
                for fld in fields if getattr(expected, fld) != getattr(entry, fld)]
    if entry.id != case.id:
        problems.insert(0, f"record id is {case.id!r}")
    return problems
