"""The packed golden layout (schema 3): every case one row of /index, every array a slice of
a shared 1-D dataset per dtype (docs/store-packed.md). Pure: names, the row schema, and
case <-> row; no file I/O.

Why packed: a group, its attributes and its datasets per case cost ~3 ms to write and
4-7 ms to read (HDF5 object headers, one attribute at a time); one row and three slices
cost microseconds. Why one dataset per dtype and not one per shape class: the suites
aclcheck makes hold nearly as many shapes as cases (random shapes per family), so shape
classes would again mean a dataset per case; a slice needs no shape to be shared.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aclcheck.cases import Case
from aclcheck.layouts import layout_geometry
from aclcheck.store.schema import parse_shape_text, shape_text, storage_dtype

#: Golden files in this layout carry this schema version (v1: a group per case; v2: v1 plus
#: the operator root attribute; v3: v2's root, packed data).
PACKED_SCHEMA_VERSION = 3
#: The operator every file of this aclcheck was written for (root attribute `operator`).
OPERATOR = "adaptive_avg_pool2d_backward"
#: The group holding one 1-D dataset per logical dtype: /data/float16, /data/float64, ...
POOL_GROUP = "data"
#: Chunk size of the pools (bytes): one chunk is read and checksummed per first touch.
POOL_CHUNK_BYTES = 1 << 20
#: Tensor roles of the call: (tensor name, record key of its shape/dtype/format fields).
ROLES: tuple[tuple[str, str], ...] = (("grad_output", "grad"), ("self", "self"),
                                      ("out", "out"))
#: Arrays stored per case, in the order a case's bytes are appended.
INPUTS: tuple[str, ...] = ("grad_output", "self")
STORED: tuple[str, ...] = (*INPUTS, "golden")
GOLDEN_DTYPE = "float64"

#: (column, kind) of /index: "s" fixed-length UTF-8 text, else a numpy scalar type. The
#: first group is the case record (role columns: each tensor's shape, dtype and format as
#: the record sets it, or where it leaves one unset (named in `unset`), the value the
#: tensor takes), then the expectation, then
#: where each array lies: `<array>_start` (-1: not stored), `<array>_count` (elements of
#: storage), and for inputs the view's `<array>_strides` and `<array>_offset`.
PACKED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "s"), ("family", "s"), ("product", "s"), ("dtype", "s"), ("format", "s"),
    ("layout", "s"), ("distribution", "s"), ("seed", "<u8"),
    *((f"{key}_{attr}", "s") for _, key in ROLES for attr in ("shape", "dtype", "format")),
    ("null", "s"), ("unset", "s"),
    ("expected_status", "<i8"), ("expected_rule", "s"), ("expected_reason", "s"),
    ("out_written", "u1"), ("has_golden", "u1"), ("nbytes", "<i8"),
    *((f"{name}_{part}", kind) for name in INPUTS
      for part, kind in (("start", "<i8"), ("count", "<i8"), ("strides", "s"),
                         ("offset", "<i8"))),
    ("golden_start", "<i8"), ("golden_count", "<i8"),
)
COLUMN_NAMES = tuple(name for name, _ in PACKED_COLUMNS)
TEXT_COLUMNS = frozenset(name for name, kind in PACKED_COLUMNS if kind == "s")

_FIELDS = dataclasses.fields(Case)
#: Record fields a case may leave unset (None: the tensor takes the case's main value).
OPTIONAL_FIELDS = tuple(f.name for f in _FIELDS if f.default is None)


def pool_name(dtype: str) -> str:
    """The dataset of `dtype`'s arrays, relative to the root."""
    return f"{POOL_GROUP}/{dtype}"


@dataclass(frozen=True)
class Slot:
    """Where one stored array lies: `count` elements from `start` of pool `dtype`'s
    dataset; start -1 for an array not stored (a null pointer, no golden)."""

    dtype: str
    start: int
    count: int

    @property
    def stored(self) -> bool:
        return self.start >= 0


def array_dtype(case: Case, name: str) -> str:
    """The logical dtype of stored array `name` (an input's effective dtype, or float64)."""
    return GOLDEN_DTYPE if name == "golden" else case.tensor_desc(name).dtype


def expected_count(case: Case, name: str) -> int:
    """Storage elements array `name` of `case` must have (layout geometry for inputs)."""
    if name == "golden":
        return math.prod(case.self_shape)
    return layout_geometry(tuple(case.tensor_desc(name).shape), case.layout)[2]


def role_columns(case: Case) -> dict[str, str]:
    """The role columns of a case: the record's value of each tensor's shape, dtype and
    format where it sets one, else the value the tensor takes (the case's main dtype and
    format, self's shape for out)."""
    out: dict[str, str] = {}
    for name, key in ROLES:
        desc = case.tensor_desc(name)
        for attr, effective in (("shape", desc.shape), ("dtype", desc.dtype),
                                ("format", desc.format)):
            col = f"{key}_{attr}"
            given = getattr(case, col, None)
            value = given if given is not None else effective
            out[col] = shape_text(value) if attr == "shape" else str(value)
    return out


def case_row(case: Case, slots: Mapping[str, Slot]) -> dict[str, Any]:
    """The /index row of `case` whose arrays lie at `slots` (every name of STORED)."""
    rec = case.to_record()
    exp = case.expectation
    row: dict[str, Any] = {k: rec[k] for k in ("id", "family", "product", "dtype", "format",
                                               "layout", "distribution", "seed")}
    row.update(role_columns(case))
    row["null"] = ",".join(case.null)
    row["unset"] = ",".join(f for f in OPTIONAL_FIELDS if rec[f] is None)
    row.update(expected_status=exp.status, expected_rule=exp.rule,
               expected_reason=exp.reason, out_written=int(case.out_written),
               has_golden=int(slots["golden"].stored))
    nbytes = 0
    for name in STORED:
        slot = slots[name]
        row[f"{name}_start"], row[f"{name}_count"] = slot.start, slot.count
        if slot.stored:
            nbytes += slot.count * storage_dtype(slot.dtype).itemsize
        if name in INPUTS:
            strides, offset = ((), 0)
            if slot.stored:
                strides, offset, _ = layout_geometry(tuple(case.tensor_desc(name).shape),
                                                     case.layout)
            row[f"{name}_strides"], row[f"{name}_offset"] = shape_text(strides), offset
    row["nbytes"] = nbytes
    return row


def row_values(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A row as a tuple in column order, text as UTF-8 bytes (what the table stores)."""
    return tuple(str(row[n]).encode("utf-8") if n in TEXT_COLUMNS else row[n]
                 for n in COLUMN_NAMES)


def row_dict(arr: np.void | np.ndarray) -> dict[str, Any]:
    """One stored row as plain Python values (text decoded; UnicodeDecodeError on bad
    bytes, for the reader to report)."""
    out: dict[str, Any] = {}
    for name, value in zip(COLUMN_NAMES, arr.tolist(), strict=True):
        out[name] = value.decode("utf-8") if isinstance(value, bytes) else int(value)
    return out


def record_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The case record (Case.to_record() form) a row holds; ValueError when `unset`
    names a field that cannot be unset."""
    unset = [f for f in row["unset"].split(",") if f]
    bad = [f for f in unset if f not in OPTIONAL_FIELDS]
    if bad:
        raise ValueError(f"unset names {bad[0]!r}, which is not an optional record field")
    rec: dict[str, Any] = {}
    for fld in _FIELDS:
        key = fld.name
        if key in unset:
            rec[key] = None
        elif key == "null":
            rec[key] = [v for v in row["null"].split(",") if v]
        elif key.endswith("_shape"):
            rec[key] = list(parse_shape_text(row[key]))
        else:
            rec[key] = row[key]
    return rec


def row_problem(row: Mapping[str, Any], case: Case) -> str | None:
    """Where a row disagrees with its own record or with the layout rules (the effective
    role columns, the stored flags, each array's slot and view), or None."""
    for col, want in role_columns(case).items():
        if row[col] != want:
            return f"{col} {row[col]!r} != record {want!r}"
    if row["out_written"] not in (0, 1) or row["has_golden"] not in (0, 1):
        return "out_written and has_golden must be 0 or 1"
    if bool(row["out_written"]) != case.out_written:
        return f"out_written {row['out_written']} != record {int(case.out_written)}"
    if case.positive != bool(row["has_golden"]):
        return ("the contract says this call succeeds, but it has no golden" if case.positive
                else "a golden for a call the contract rejects")
    nbytes = 0
    for name in STORED:
        start, count = row[f"{name}_start"], row[f"{name}_count"]
        absent = (not row["has_golden"]) if name == "golden" else name in case.null
        if absent:
            if start != -1 or count != 0:
                return f"{name}: stored ({start}, {count}) where nothing may be"
            continue
        want = expected_count(case, name)
        if start < 0 or count != want:
            return f"{name}: slot ({start}, {count}), the record needs {want} elements"
        if count == 0 and start != 0:
            return f"{name}: an empty array must start at 0, not {start}"
        if name in INPUTS:
            strides, offset, _ = layout_geometry(tuple(case.tensor_desc(name).shape),
                                                 case.layout)
            got = (row[f"{name}_strides"], row[f"{name}_offset"])
            if got != (shape_text(strides), offset):
                return (f"{name}: strides {got[0]!r}, offset {got[1]} != layout "
                        f"{case.layout!r}: {shape_text(strides)!r}, {offset}")
        nbytes += count * storage_dtype(array_dtype(case, name)).itemsize
    if row["nbytes"] != nbytes:
        return f"nbytes {row['nbytes']} != stored {nbytes}"
    return None


def slots_of(row: Mapping[str, Any], case: Case) -> dict[str, Slot]:
    """Each stored array's slot, from a row that passed `row_problem`."""
    return {name: Slot(array_dtype(case, name), row[f"{name}_start"], row[f"{name}_count"])
            for name in STORED}
