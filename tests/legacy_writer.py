"""The group-per-case writer (schema 2), for tests: streams cases (record attributes,
inputs, float64 golden) into a group each and writes /index and the root attributes on
commit.

Not what aclcheck writes (every golden file is packed: aclcheck.store.golden_writer); kept
here so that tests can make the older files aclcheck.store.legacy still reads."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.cases.layouts import StridedTensor
from aclcheck.errors import UsageError
from aclcheck.ops import default_operator
from aclcheck.store.atomic import AtomicH5, write_dataset, write_root_attrs
from aclcheck.store.codec import (
    COMPRESSIONS,
    FORMAT_GOLDEN,
    attr_value,
    check_id,
    rows_array,
    run_meta,
    set_attrs,
    shape_text,
    text_attr,
)
from aclcheck.store.dtype_codec import encode_array
from aclcheck.store.index import IndexEntry, index_columns, index_entry
from aclcheck.store.legacy.group_reader import GROUP_SCHEMA_VERSION


def record_attrs(case: Case) -> dict[str, Any]:
    """Attributes of /cases/<id>: the case record (None omitted, lists of str joined by
    commas, empty `null` as "") plus the expectation."""
    attrs: dict[str, Any] = {}
    for key, value in case.to_record().items():
        if value is None:
            continue
        if key == "null":
            attrs[key] = text_attr(",".join(value))
            continue
        attrs[key] = attr_value(value)
    exp = case.expectation
    attrs["expected_status"] = np.int64(exp.status)
    attrs["expected_rule"] = text_attr(exp.rule)
    attrs["expected_reason"] = text_attr(exp.reason)
    attrs["out_written"] = np.uint8(case.out_written)
    return attrs


def index_array(entries: list[IndexEntry], case_type: type[Case]) -> np.ndarray:
    """The /index table of the group layout (one row per entry, shapes as text)."""
    rows = []
    for e in entries:
        row = e.to_dict()
        for column, shape in e.shapes:
            row[column] = shape_text(shape)
        row["null"] = ",".join(e.null)
        rows.append(row)
    return rows_array(rows, index_columns(case_type))


def new_group(parent: h5py.Group, name: str) -> h5py.Group:
    """A group whose ~25 attributes stay in its object header (compact storage): the
    default switches to a fractal heap above 8 attributes, twice the size per case."""
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_attr_phase_change(64, 48)
    return h5py.Group(h5py.h5g.create(parent.id, name.encode("utf-8"), gcpl=gcpl))


def _tensor_attrs(t: StridedTensor, dtype: str) -> dict[str, Any]:
    return {"dtype": text_attr(dtype), "shape": np.asarray(t.shape, dtype=np.int64),
            "strides": np.asarray(t.strides, dtype=np.int64), "offset": np.int64(t.offset)}


def _write_tensor(group: h5py.Group, name: str, t: StridedTensor, compress: str) -> int:
    stored, dname = encode_array(t.storage)
    if t.contiguous and stored.size == math.prod(t.shape):
        stored = stored.reshape(t.shape)  # the logical array itself: readable as is
    write_dataset(group, name, stored, compress, _tensor_attrs(t, dname))
    return stored.nbytes



class GroupWriter:
    """Streams cases into a golden file; the file appears under its name only on commit.

    Use as a context manager: a normal exit commits, an exception deletes the temp file.
    """

    def __init__(self, path: str | Path, meta: Mapping[str, Any] | None = None, *,
                 force: bool = False, compress: str = "none") -> None:
        if compress not in COMPRESSIONS:
            raise UsageError(f"unknown compression {compress!r}; valid: {', '.join(COMPRESSIONS)}")
        self.meta = dict(meta or run_meta())
        self.compress = compress
        self._out = AtomicH5(path, force)
        self.path = self._out.path
        try:
            self._cases = self._out.file.create_group("cases")
        except BaseException:
            self._out.abort()
            raise
        self._entries: list[IndexEntry] = []
        #: the record class of the cases written (the default operator's until one is)
        self.case_type: type[Case] = default_operator().case_type
        self._seen: set[str] = set()
        self.array_bytes = 0
        self.file_bytes = 0

    def add(self, case: Case, tensors: CaseData) -> int:
        """Write one case; returns the bytes of array data stored."""
        check_id(case.id)
        if case.id in self._seen:
            raise UsageError(f"duplicate case id {case.id!r}")
        self._seen.add(case.id)
        has_golden = tensors.golden is not None
        with self._out.writing():
            group = new_group(self._cases, case.id)
            set_attrs(group, {**record_attrs(case), "has_golden": np.uint8(has_golden)})
            nbytes = 0
            for name, t in tensors.inputs.items():
                if t is not None:
                    nbytes += _write_tensor(group, name, t, self.compress)
            if has_golden:
                g = np.ascontiguousarray(tensors.golden, dtype=np.float64)
                write_dataset(group, "golden", g, self.compress,
                              {"dtype": text_attr("float64")})
                nbytes += g.nbytes
        self._entries.append(index_entry(case, has_golden, nbytes))
        self.case_type = type(case)
        self.array_bytes += nbytes
        return nbytes

    def commit(self) -> int:
        """Write /index and the root attributes, then move the file into place (on any
        failure the temporary file is removed)."""
        f = self._out.file
        try:
            with self._out.writing():
                write_dataset(f, "index", index_array(self._entries, self.case_type), "none",
                              {})
                meta = {**self.meta, "operator": self.case_type.OPERATOR}
                write_root_attrs(f, FORMAT_GOLDEN, meta, len(self._entries),
                                 GROUP_SCHEMA_VERSION)
            self.file_bytes = self._out.commit()
        except BaseException:
            self._out.abort()
            raise
        return self.file_bytes

    def abort(self) -> None:
        self._out.abort()

    def __enter__(self) -> GroupWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_groups(path: str | Path, items: Iterable[tuple[Case, CaseData]],
                 meta: Mapping[str, Any] | None = None, *, force: bool = False,
                 compress: str = "none") -> GroupWriter:
    """Write a whole golden file from (case, tensors) pairs; returns the closed writer."""
    with GroupWriter(path, meta, force=force, compress=compress) as writer:
        for case, tensors in items:
            writer.add(case, tensors)
    return writer
