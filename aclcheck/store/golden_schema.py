"""The golden layout's names (schema 3, the packed layout): every case one row of /index,
every array a slice of a shared 1-D dataset per dtype (docs/store.md). Pure: the row
schema of an operator's record class, case <-> row, and the id hash the reader and the
writer look rows up by; no file I/O.

Why packed: a group, its attributes and its datasets per case cost ~3 ms to write and
4-7 ms to read (HDF5 object headers, one attribute at a time); one row and a few slices
cost microseconds. Why one dataset per dtype and not one per shape class: the suites
aclcheck makes hold nearly as many shapes as cases (random shapes per family), so shape
classes would again mean a dataset per case; a slice needs no shape to be shared.

Generic over operators: the columns come from the record class (Case.record_fields) and
its roles (one slot per input role, one for the golden), so no tensor is named here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.record import FLOATS, INT, NAMES, SHAPE, TensorDesc
from aclcheck.store.codec import parse_shape_text, shape_text
from aclcheck.store.dtype_codec import storage_dtype

#: The group holding one 1-D dataset per logical dtype: /data/float16, /data/float64, ...
POOL_GROUP = "data"
#: Chunk size of the pools (bytes): one chunk is read and checksummed per first touch.
POOL_CHUNK_BYTES = 1 << 20
#: The stored array that is not an input: the float64 reference output.
GOLDEN = "golden"
GOLDEN_DTYPE = "float64"
Columns = tuple[tuple[str, str], ...]
_EXPECT: Columns = (("expected_status", "<i8"), ("expected_rule", "s"),
                    ("expected_reason", "s"), ("out_written", "u1"), ("has_golden", "u1"),
                    ("nbytes", "<i8"))


@dataclass(frozen=True)
class PackedSchema:
    """The /index columns of one record class: (column, kind), kind "s" for fixed-length
    UTF-8 text, else a numpy scalar type.

    First the record, one column per field (a role's shape, dtype and format as the
    record sets it or, where it leaves one unset, the value the tensor takes: a plain
    reader needs no fallback rule), then `unset` (the fields the record left unset), the
    expectation and flags, then where each array lies: `<array>_start` (-1: not stored),
    `<array>_count` (elements of storage), and for inputs the view's `<array>_strides`
    and `<array>_offset`.
    """

    case_type: type[Case]
    columns: Columns
    inputs: tuple[str, ...]  # input role names, in call order
    stored: tuple[str, ...]  # inputs, then GOLDEN: the order a case's arrays are appended
    optional: tuple[str, ...]  # record fields that may be None
    #: (field, kind, role name or None, fact) of every record field, in order
    fields: tuple[tuple[str, str, str | None, str], ...]
    #: record columns a file leaves out where no case sets them (the vendor facts, text,
    #: "" for unset): files of cases without them keep the columns they always had
    sparse: frozenset[str] = frozenset()

    def keeping(self, names: Collection[str]) -> PackedSchema:
        """This schema less the sparse columns a file's /index does not have."""
        drop = self.sparse - set(names)
        if not drop:
            return self
        return dataclasses.replace(self, columns=tuple(c for c in self.columns
                                                       if c[0] not in drop))

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    @cached_property
    def text(self) -> frozenset[str]:
        return frozenset(name for name, kind in self.columns if kind == "s")

    @cached_property
    def text_flags(self) -> tuple[tuple[str, bool], ...]:
        """(column, whether it is text) of every column, in order."""
        return tuple((name, kind == "s") for name, kind in self.columns)

    @cached_property
    def start_columns(self) -> dict[str, int]:
        """The column of each stored array's `<array>_start`."""
        return {name: self.names.index(f"{name}_start") for name in self.stored}


@cache
def packed_schema(case_type: type[Case]) -> PackedSchema:
    """The schema of `case_type`'s packed /index (computed once per class)."""
    fields = case_type.record_fields()
    keys = {r.key: r.name for r in case_type.ROLES}
    sparse = frozenset(case_type.STATED)
    record = tuple((f.name, "<u8" if f.kind == INT and f.name not in sparse else "s")
                   for f in fields)
    described = tuple((f.name, f.kind, None if f.role is None else keys[f.role],
                       f.name.rpartition("_")[2]) for f in fields)
    inputs = tuple(r.name for r in case_type.inputs())
    slots: list[tuple[str, str]] = []
    for name in inputs:
        slots += [(f"{name}_start", "<i8"), (f"{name}_count", "<i8"),
                  (f"{name}_strides", "s"), (f"{name}_offset", "<i8")]
    slots += [(f"{GOLDEN}_start", "<i8"), (f"{GOLDEN}_count", "<i8")]
    columns = (*record, ("unset", "s"), *_EXPECT, *slots)
    return PackedSchema(case_type, columns, inputs, (*inputs, GOLDEN),
                        tuple(f.name for f in fields if f.nullable and f.name not in sparse),
                        described, sparse)


def id_hash(raw: bytes) -> int:
    """A case id's 8-byte hash (its UTF-8 bytes): the reader keeps these, sorted, instead
    of the id column (a lookup by id costs 12 bytes a case, not the column's width), and
    the writer finds duplicate ids by them without holding the ids."""
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little")


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


@dataclass(frozen=True)
class Facts:
    """What the layout needs of one case, worked out once: each role's tensor, each
    input's view (strides, offset, storage elements), each stored array's dtype and the
    golden's shape."""

    descs: dict[str, TensorDesc]
    views: dict[str, tuple[tuple[int, ...], int, int]]
    dtypes: dict[str, str]
    golden_shape: tuple[int, ...]

    def count(self, name: str) -> int:
        """Storage elements array `name` must have."""
        return math.prod(self.golden_shape) if name == GOLDEN else self.views[name][2]


def facts(case: Case) -> Facts:
    descs = {r.name: case.tensor_desc(r.name) for r in case.ROLES}
    inputs = [r.name for r in case.inputs()]
    views = {name: case.view_geometry(name) for name in inputs}
    out = case.output()
    return Facts(descs, views, {**{n: descs[n].dtype for n in inputs}, GOLDEN: GOLDEN_DTYPE},
                 tuple(descs[out.shape_of or out.name].shape))


def _text(value: Any, kind: str) -> Any:
    if kind == SHAPE:
        return shape_text(value)
    if kind == NAMES:
        return ",".join(value)
    if kind == FLOATS:
        return ",".join(repr(float(v)) for v in value)
    return value


#: The facts of a role's record fields that a tensor always has (an unset one is written
#: as the tensor takes it); the others are written empty (0) when unset.
_DESCRIBED = ("shape", "dtype", "format")


def record_columns(case: Case, f: Facts) -> dict[str, Any]:
    """The record part of a case's row, and its `unset` column."""
    out: dict[str, Any] = {}
    unset = []
    schema = packed_schema(type(case))
    for name, kind, role, fact in schema.fields:
        value = getattr(case, name)
        if name in schema.sparse:
            out[name] = "" if value is None else str(_text(value, kind))
            continue
        if value is None:
            unset.append(name)
            if role is None or fact not in _DESCRIBED:
                out[name] = 0 if kind == INT else ""
                continue
            value = getattr(f.descs[role], fact)
        out[name] = _text(value, kind)
    out["unset"] = ",".join(unset)
    return out


def case_row(case: Case, slots: Mapping[str, Slot], f: Facts | None = None
             ) -> dict[str, Any]:
    """The /index row of `case` whose arrays lie at `slots` (every stored name)."""
    schema = packed_schema(type(case))
    f = facts(case) if f is None else f
    row = record_columns(case, f)
    exp = case.expectation
    row.update(expected_status=exp.status, expected_rule=exp.rule,
               expected_reason=exp.reason, out_written=int(case.out_written),
               has_golden=int(slots[GOLDEN].stored))
    nbytes = 0
    for name in schema.stored:
        slot = slots[name]
        row[f"{name}_start"], row[f"{name}_count"] = slot.start, slot.count
        if slot.stored:
            nbytes += slot.count * storage_dtype(slot.dtype).itemsize
        if name != GOLDEN:
            strides, offset = ((), 0)
            if slot.stored:
                strides, offset, _ = f.views[name]
            row[f"{name}_strides"], row[f"{name}_offset"] = shape_text(strides), offset
    row["nbytes"] = nbytes
    return row


def row_values(schema: PackedSchema, row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A row as a tuple in column order, text as UTF-8 bytes (what the table stores)."""
    return tuple([str(row[n]).encode("utf-8") if text else row[n]
                  for n, text in schema.text_flags])


def row_dict(schema: PackedSchema, arr: np.void | np.ndarray) -> dict[str, Any]:
    """One stored row as plain Python values (text decoded; UnicodeDecodeError on bad
    bytes, for the reader to report)."""
    out: dict[str, Any] = {}
    for name, value in zip(schema.names, arr.tolist(), strict=True):
        out[name] = value.decode("utf-8") if isinstance(value, bytes) else int(value)
    return out


def record_from_row(schema: PackedSchema, row: Mapping[str, Any]) -> dict[str, Any]:
    """The case record (Case.to_record() form) a row holds; ValueError when `unset`
    names a field that cannot be unset."""
    unset = [f for f in row["unset"].split(",") if f]
    bad = [f for f in unset if f not in schema.optional]
    if bad:
        raise ValueError(f"unset names {bad[0]!r}, which is not an optional record field")
    rec: dict[str, Any] = {}
    for name, kind, _, _ in schema.fields:
        value = row.get(name, "") if name in schema.sparse else row[name]
        if name in unset or name in schema.sparse and value == "":
            rec[name] = None
        elif name in schema.sparse and kind == INT:
            rec[name] = int(value)
        elif name in unset:
            rec[name] = None
        elif kind == NAMES:
            rec[name] = [v for v in value.split(",") if v]
        elif kind == SHAPE:
            rec[name] = list(parse_shape_text(value))
        elif kind == FLOATS:
            rec[name] = [float(v) for v in value.split(",") if v]
        else:
            rec[name] = value
    return rec


def row_problem(schema: PackedSchema, row: Mapping[str, Any], case: Case,
                f: Facts) -> str | None:
    """Where a row disagrees with its own record or with the layout rules (the role
    columns, the stored flags, each array's slot and view), or None."""
    for col, want in record_columns(case, f).items():
        if col not in row and col in schema.sparse and want == "":
            continue
        if row.get(col) != want:
            return f"{col} {row[col]!r} != record {want!r}"
    if row["out_written"] not in (0, 1) or row["has_golden"] not in (0, 1):
        return "out_written and has_golden must be 0 or 1"
    if bool(row["out_written"]) != case.out_written:
        return f"out_written {row['out_written']} != record {int(case.out_written)}"
    if case.positive != bool(row["has_golden"]):
        return ("the contract says this call succeeds, but it has no golden" if case.positive
                else "a golden for a call the contract rejects")
    nbytes = 0
    for name in schema.stored:
        start, count = row[f"{name}_start"], row[f"{name}_count"]
        absent = (not row["has_golden"]) if name == GOLDEN else name in case.null
        if absent:
            if start != -1 or count != 0:
                return f"{name}: stored ({start}, {count}) where nothing may be"
            continue
        want = f.count(name)
        if start < 0 or count != want:
            return f"{name}: slot ({start}, {count}), the record needs {want} elements"
        if count == 0 and start != 0:
            return f"{name}: an empty array must start at 0, not {start}"
        if name != GOLDEN:
            strides, offset, _ = f.views[name]
            got = (row[f"{name}_strides"], row[f"{name}_offset"])
            if got != (shape_text(strides), offset):
                return (f"{name}: strides {got[0]!r}, offset {got[1]} != layout "
                        f"{case.layout!r}: {shape_text(strides)!r}, {offset}")
        nbytes += count * storage_dtype(f.dtypes[name]).itemsize
    if row["nbytes"] != nbytes:
        return f"nbytes {row['nbytes']} != stored {nbytes}"
    return None


def slots_of(schema: PackedSchema, row: Mapping[str, Any], f: Facts) -> dict[str, Slot]:
    """Each stored array's slot, from a row that passed `row_problem`."""
    return {name: Slot(f.dtypes[name], row[f"{name}_start"], row[f"{name}_count"])
            for name in schema.stored}
