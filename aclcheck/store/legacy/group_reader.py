"""The reader of the group-per-case layout (schemas 1 and 2: a group per case, its record
as the group's attributes, a dataset per array): `GroupFile`, with the interface of
every golden reader (aclcheck.store.dispatch.GoldenFile). It lists cases from /index
alone and reads a case's record, inputs and golden on demand, each checked against the
record first. Read-only: aclcheck writes only the packed layout (schema 3)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.cases.layouts import StridedTensor
from aclcheck.cases.record import INT, NAMES, SHAPE
from aclcheck.errors import InputFileError, UsageError
from aclcheck.ops import OPERATORS
from aclcheck.ops.operator import Operator
from aclcheck.store.codec import (
    FORMAT_GOLDEN,
    index_dtype_problem,
    is_safe_id,
    plain_value,
)
from aclcheck.store.dtype_codec import decode_array, storage_dtype
from aclcheck.store.h5read import (
    check_layout,
    damage,
    default_read_limit,
    file_operator,
    member,
    open_h5,
    read_checked,
    read_dataset,
)
from aclcheck.store.index import IndexEntry, entries_from_array, index_columns, index_mismatches
from aclcheck.store.records import record_problem

#: The group-per-case layout's last schema version.
GROUP_SCHEMA_VERSION = 2
#: Case attributes besides the Case record fields.
EXPECT_ATTRS = ("expected_status", "expected_rule", "expected_reason", "out_written",
                "has_golden")


def record_from_attrs(attrs: Mapping[str, Any], case_type: type[Case]) -> dict[str, Any]:
    """The case record (Case.to_record() form) from /cases/<id> attributes; an absent
    attribute takes the field's default (None for optional fields); required fields
    without an attribute are left out, so Case.from_record reports them."""
    kinds = {f.name: f.kind for f in case_type.record_fields()}
    rec: dict[str, Any] = {}
    for fld in dataclasses.fields(case_type):  # type: ignore[arg-type]
        key, kind = fld.name, kinds[fld.name]
        if key not in attrs:
            if fld.default is not dataclasses.MISSING:
                rec[key] = fld.default
            elif fld.default_factory is not dataclasses.MISSING:
                rec[key] = list(fld.default_factory())
            continue
        value = plain_value(attrs[key])
        if kind == NAMES:
            value = [v for v in str(value).split(",") if v]
        elif kind == SHAPE:
            value = [int(v) for v in (value if isinstance(value, list) else [value])]
        elif kind == INT:
            value = int(value)
        rec[key] = value
    return rec


def tensor_from(p: Path, ds: object, what: str, case: Case, name: str,
                limit: int) -> StridedTensor:
    """An input tensor, after checking its attributes and declared size against the case
    record (dtype, shape, and the strides / offset / storage size of the record's layout)
    and the read limit: nothing is read that the record does not account for."""
    ds = check_layout(p, ds, what, limit)
    with damage(p, what):
        attrs = {k: plain_value(v) for k, v in ds.attrs.items()}
        stored_dtype = ds.dtype
        stored_size = int(ds.size)
    for key in ("dtype", "shape", "strides", "offset"):
        if key not in attrs:
            raise InputFileError.at(p, f"{what}: missing attribute {key!r}")
    desc = case.tensor_desc(name)
    dname = attrs["dtype"]
    if dname != desc.dtype:
        raise InputFileError.at(p, f"{what}: dtype attribute {dname!r} != record {desc.dtype!r}")
    want = storage_dtype(desc.dtype)
    if stored_dtype != want:
        raise InputFileError.at(p, f"{what}: stored as {stored_dtype}, dtype {dname!r} "
                                f"needs {want}")
    shape, strides = _as_list(attrs["shape"]), _as_list(attrs["strides"])
    offset = attrs["offset"]
    if not all(isinstance(v, int) and not isinstance(v, bool)
               for v in (*shape, *strides, offset)):
        raise InputFileError.at(p, f"{what}: shape/strides/offset attributes must be "
                                "integers")
    shape, strides = tuple(shape), tuple(strides)
    if shape != tuple(desc.shape):
        raise InputFileError.at(p, f"{what}: shape {shape} != record {tuple(desc.shape)}")
    geometry = case.view_geometry(name)
    if (strides, offset, stored_size) != geometry:
        raise InputFileError.at(p, f"{what}: strides {strides}, offset {offset}, storage "
                                f"{stored_size} != layout {case.layout!r}: {geometry[0]}, "
                                f"{geometry[1]}, {geometry[2]}")
    storage = decode_array(read_dataset(p, ds, what).reshape(-1), desc.dtype)
    return StridedTensor(storage, shape, strides, offset)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _stored_flags_problem(attrs: dict[str, Any], entry: IndexEntry) -> str | None:
    """The case group's has_golden / expected_status must be integers that agree with
    /index (the writer stores both in both places)."""
    for key in ("has_golden", "expected_status"):
        value = attrs.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            return f"attribute {key!r} must be an integer, got {value!r}"
        if value != int(getattr(entry, key)):
            return f"attribute {key!r} is {value}, /index says {int(getattr(entry, key))}"
    return None


class GroupFile:
    """An open golden file of schema 1 or 2 (a group per case). `index` comes from /index
    alone; case data is read on demand, each piece checked against the case record (and
    the record against /index) before a byte of array data is read. `read_limit` bounds
    any one dataset (bytes)."""

    def __init__(self, path: str | Path, *, read_limit: int | None = None) -> None:
        self.path = Path(path)
        self.read_limit = default_read_limit() if read_limit is None else read_limit
        self._f, self.meta = open_h5(self.path, FORMAT_GOLDEN)
        if self.meta["schema_version"] > GROUP_SCHEMA_VERSION:
            self._f.close()
            raise InputFileError.at(self.path, f"schema version {self.meta['schema_version']}"
                                    " is not a group-per-case layout (open_golden reads it)")
        #: the operator whose cases the file holds
        self.op: Operator = OPERATORS[file_operator(self.path, self.meta)]
        self.case_type: type[Case] = self.op.case_type
        try:
            with damage(self.path, "/index"):
                self._load_index()
        except InputFileError:
            self._f.close()
            raise
        self._pos = {e.id: i for i, e in enumerate(self.index)}
        self._memo: tuple[str, Case] | None = None

    def _load_index(self) -> None:
        """Read /index into `index`: a 1-D table of the schema's columns, as many rows as
        the root's case_count, ids unique and safe as path components, and no group
        under /cases that /index does not list."""
        p = self.path
        index = member(p, self._f, "index", "/index")
        if index is None:
            raise InputFileError.at(p, "missing dataset /index")
        cases = member(p, self._f, "cases", "/cases")
        if not isinstance(cases, h5py.Group):
            raise InputFileError.at(p, "missing group /cases")
        self._cases = cases
        ds = check_layout(p, index, "/index", self.read_limit)
        if ds.ndim != 1:
            raise InputFileError.at(p, f"/index must be a 1-D table, has shape {ds.shape}")
        problem = index_dtype_problem(ds.dtype, index_columns(self.case_type))
        if problem:
            raise InputFileError.at(p, f"/index {problem}")
        if ds.shape[0] != self.meta["case_count"]:
            raise InputFileError.at(p, f"/index has {ds.shape[0]} rows, "
                                    f"case_count says {self.meta['case_count']}")
        try:
            self.index: list[IndexEntry] = entries_from_array(read_dataset(p, ds, "/index"),
                                                              self.case_type)
        except (ValueError, UnicodeDecodeError, OverflowError) as exc:
            raise InputFileError.at(p, f"/index: bad row ({exc})") from None
        seen: set[str] = set()
        for entry in self.index:
            if not is_safe_id(entry.id):
                raise InputFileError.at(p, f"/index: case id {entry.id!r} is not a plain name "
                                        "(letters, digits, '_', '.', '-')")
            if entry.id in seen:
                raise InputFileError.at(p, f"/index: case {entry.id} is listed twice")
            seen.add(entry.id)
        stray = sorted(set(cases.keys()) - seen)  # a case hidden from /index is not skipped
        if stray:
            raise InputFileError.at(p, f"/cases/{stray[0]}: group not listed in /index")

    # -- context manager
    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> GroupFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- queries
    def ids(self) -> list[str]:
        return [e.id for e in self.index]

    def __contains__(self, case_id: str) -> bool:
        return case_id in self._pos

    def entry(self, case_id: str) -> IndexEntry:
        try:
            return self.index[self._pos[case_id]]
        except KeyError:
            raise UsageError(f"{self.path}: no case {case_id!r}") from None

    def _group(self, case_id: str) -> h5py.Group:
        self.entry(case_id)
        group = member(self.path, self._cases, case_id, f"case {case_id}")
        if group is None:
            raise InputFileError.at(self.path, f"case {case_id}: group /cases/{case_id} "
                                    "is missing")
        if not isinstance(group, h5py.Group):
            raise InputFileError.at(self.path, f"case {case_id}: /cases/{case_id} is not a "
                                    "group")
        return group

    def attrs(self, case_id: str) -> dict[str, Any]:
        """All attributes of /cases/<id> as plain Python values."""
        group = self._group(case_id)
        with damage(self.path, f"case {case_id}: attributes"):
            return {k: plain_value(v) for k, v in group.attrs.items()}

    def case(self, case_id: str) -> Case:
        """The Case, rebuilt from the stored record (enough to regenerate it), checked:
        names the contract knows, sane shapes, and the same facts as its /index row."""
        if self._memo is not None and self._memo[0] == case_id:
            return self._memo[1]
        bad = f"case {case_id}: bad case record"
        attrs = self.attrs(case_id)
        try:
            case = self.case_type.from_record(record_from_attrs(attrs, self.case_type))
            problem = record_problem(case) or _stored_flags_problem(attrs, self.entry(case_id))
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            raise InputFileError.at(self.path, f"{bad} ({exc})") from None
        if problem:
            raise InputFileError.at(self.path, f"{bad} ({problem})")
        mismatches = index_mismatches(self.entry(case_id), case)
        if mismatches:
            raise InputFileError.at(self.path, f"case {case_id}: {mismatches[0]}")
        self._memo = (case_id, case)
        return case

    def _dataset(self, case_id: str, name: str) -> object | None:
        return member(self.path, self._group(case_id), name, f"case {case_id}: dataset {name}")

    def tensor(self, case_id: str, name: str) -> StridedTensor | None:
        """One input tensor (by role) as laid out in memory (None for a null pointer)."""
        case = self.case(case_id)
        ds = self._dataset(case_id, name)
        if name in case.null:
            if ds is not None:
                raise InputFileError.at(self.path, f"case {case_id}: dataset {name!r} present "
                                        "for a null pointer")
            return None
        if ds is None:
            raise InputFileError.at(self.path, f"case {case_id}: dataset {name!r} is missing")
        return tensor_from(self.path, ds, f"case {case_id}: dataset {name}", case, name,
                           self.read_limit)

    def inputs(self, case_id: str) -> tuple[StridedTensor | None, ...]:
        """The input tensors in role order, from storage + shape/strides/offset."""
        return tuple(self.tensor(case_id, r.name) for r in self.case_type.inputs())

    def golden(self, case_id: str) -> np.ndarray | None:
        """The float64 golden, shaped like self (None for calls that must be rejected).
        A call the contract says succeeds must have one, whatever /index says."""
        case = self.case(case_id)
        entry = self.entry(case_id)
        ds = self._dataset(case_id, "golden")
        what = f"case {case_id}: dataset golden"
        if ds is None:
            if entry.has_golden or case.positive:
                raise InputFileError.at(self.path, f"case {case_id}: dataset 'golden' is missing")
            return None
        ds = check_layout(self.path, ds, what, self.read_limit)
        with damage(self.path, what):
            stored, shape = ds.dtype, tuple(int(d) for d in ds.shape)
            label = plain_value(ds.attrs.get("dtype"))
        if stored != np.float64 or label != "float64":
            raise InputFileError.at(self.path, f"{what}: stored as {stored} (dtype attribute "
                                    f"{label!r}), expected float64")
        out = case.output()
        want = case.tensor_desc(out.shape_of or out.name).shape
        if shape != tuple(want):
            raise InputFileError.at(self.path, f"{what}: shape {shape} != "
                                    f"{case.role(out.shape_of or out.name).api} shape "
                                    f"{tuple(want)}")
        return read_checked(self.path, ds, what, self.read_limit)

    def data(self, case_id: str) -> CaseData:
        """The case's record, input tensors by role and golden."""
        case = self.case(case_id)
        inputs = {r.name: self.tensor(case_id, r.name) for r in self.case_type.inputs()}
        return CaseData(case, inputs, self.golden(case_id))

    def compression(self) -> str:
        """'gzip' or 'none': the filter of the first chunked dataset (for `merge`)."""
        for entry in self.index:
            for name in [r.name for r in self.case_type.inputs()] + ["golden"]:
                ds = self._dataset(entry.id, name)
                with damage(self.path, f"case {entry.id}: dataset {name}"):
                    if isinstance(ds, h5py.Dataset) and ds.chunks is not None:
                        return "gzip" if ds.compression == "gzip" else "none"
        return "none"

