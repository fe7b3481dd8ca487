"""The golden reader (schema 3, the packed layout of aclcheck.store.golden_schema), with
the interface every golden reader has (aclcheck.store.dispatch.GoldenFile) and the same
promise: nothing is read that the case's record does not account for, and every problem
is one InputFileError line naming the file and the case.

Memory stays flat whatever the case count: only an 8-byte hash of each id and its row
are held (sorted, for random access by id: 12 bytes a case); rows are read in blocks as
cases are asked for, and arrays as slices of their pool (HDF5 verifies the fletcher32
checksum of each chunk it reads; its own chunk cache is off).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import h5py
import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.cases.layouts import StridedTensor
from aclcheck.dtypes import NUMPY_DTYPES
from aclcheck.errors import InputFileError, UsageError
from aclcheck.ops import OPERATORS
from aclcheck.ops.operator import Operator
from aclcheck.store.codec import (
    FORMAT_GOLDEN,
    SCHEMA_VERSION,
    index_dtype_problem,
    is_safe_id,
    plain_value,
)
from aclcheck.store.dtype_codec import decode_array, storage_dtype
from aclcheck.store.golden_schema import (
    GOLDEN,
    POOL_GROUP,
    Facts,
    Slot,
    facts,
    id_hash,
    packed_schema,
    record_from_row,
    row_dict,
    row_problem,
    slots_of,
)
from aclcheck.store.h5read import (
    CHECKSUM_MISMATCH,
    H5_ERRORS,
    check_layout,
    damage,
    default_read_limit,
    file_operator,
    member,
    open_h5,
    read_error,
)
from aclcheck.store.index import IndexEntry, entries_from_array
from aclcheck.store.records import record_problem

#: Rows read from /index at a time (and kept: one block).
BLOCK_ROWS = 1024
#: Ids read at a time when the file is opened (checked, hashed, not kept).
ID_BLOCK_ROWS = 1 << 13


class PoolReader:
    """One dtype's dataset (a pool of the layout), read in slices; checked when the file
    is opened. Small slices are served from
    a window of whole chunks read at once (a case after case read touches each chunk
    once, HDF5 verifying its checksum); a slice of a chunk or more is read by itself."""

    def __init__(self, ds: h5py.Dataset, dtype: str) -> None:
        self.ds = ds
        self.dtype = dtype
        self.storage = ds.dtype
        self.length = int(ds.shape[0])
        self.chunk = int(ds.chunks[0]) if ds.chunks else max(1, self.length)
        self._window = np.empty(0, self.storage)
        self._window_start = 0

    def read(self, start: int, count: int) -> np.ndarray:
        """Elements start..start+count-1 (the caller checked the bounds): a fresh array."""
        at = start - self._window_start
        if 0 <= at and at + count <= self._window.size:
            return self._window[at:at + count].copy()
        if count >= self.chunk:
            return self.read_range(start, count)
        lo = start // self.chunk * self.chunk
        hi = min(self.length, -(-(start + count) // self.chunk) * self.chunk)
        self._window, self._window_start = self.read_range(lo, hi - lo), lo
        return self._window[start - lo:start - lo + count].copy()

    def read_range(self, start: int, count: int) -> np.ndarray:
        """Elements start..start+count-1, read by HDF5 (h5py errors pass through)."""
        out = np.empty(count, self.storage)
        fspace = self.ds.id.get_space()
        fspace.select_hyperslab((start,), (count,))
        self.ds.id.read(h5py.h5s.create_simple((count,)), fspace, out)
        return out


class _Index(Sequence[IndexEntry]):
    """`PackedFile.index`: the /index rows as IndexEntry records, decoded block by block
    on demand (a list of them all would cost ~1 KB per case)."""

    def __init__(self, owner: PackedFile) -> None:
        self._owner = owner

    def __len__(self) -> int:
        return self._owner.case_count

    @overload
    def __getitem__(self, i: int) -> IndexEntry: ...

    @overload
    def __getitem__(self, i: slice) -> list[IndexEntry]: ...

    def __getitem__(self, i: int | slice) -> IndexEntry | list[IndexEntry]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._owner._entries(i // BLOCK_ROWS)[i % BLOCK_ROWS]

    def __iter__(self) -> Iterator[IndexEntry]:
        for block in range(-(-len(self) // BLOCK_ROWS)):
            yield from self._owner._entries(block)


class PackedFile:
    """An open packed golden file. `index` comes from /index alone; a case's record is its
    row, checked (names the contract knows, sane shapes, the row's own columns, each
    array's slot and view) before a byte of array data is read. `read_limit` bounds any
    one array (bytes)."""

    def __init__(self, path: str | Path, *, read_limit: int | None = None) -> None:
        self.path = Path(path)
        self.read_limit = default_read_limit() if read_limit is None else read_limit
        self._f, self.meta = open_h5(self.path, FORMAT_GOLDEN)
        self._block: tuple[int, np.ndarray] | None = None
        try:
            self._check_version()
            with damage(self.path, "/index"):
                self._load_index()
            with damage(self.path, f"/{POOL_GROUP}"):
                self._load_pools()
        except InputFileError:
            self._f.close()
            raise
        self.index: Sequence[IndexEntry] = _Index(self)
        self._block_entries: tuple[int, list[IndexEntry]] | None = None
        self._memo: tuple[str, Case, dict[str, Any], dict[str, Slot], Facts] | None = None

    # -- opening

    def _check_version(self) -> None:
        p, version = self.path, self.meta["schema_version"]
        if version != SCHEMA_VERSION:
            raise InputFileError.at(p, f"schema version {version} is not the packed layout "
                                    f"({SCHEMA_VERSION})")
        #: the operator whose cases the file holds
        self.op: Operator = OPERATORS[file_operator(p, self.meta)]
        self.case_type: type[Case] = self.op.case_type
        self.schema = packed_schema(self.case_type)

    def _load_index(self) -> None:
        """/index: a 1-D table of the schema's columns, case_count rows; its id column
        (unique ids, each safe as a path component) is kept, sorted, for lookups."""
        p = self.path
        index = member(p, self._f, "index", "/index")
        if index is None:
            raise InputFileError.at(p, "missing dataset /index")
        ds = check_layout(p, index, "/index", self.read_limit)
        if ds.ndim != 1:
            raise InputFileError.at(p, f"/index must be a 1-D table, has shape {ds.shape}")
        self.schema = self.schema.keeping(ds.dtype.names or ())
        if problem := index_dtype_problem(ds.dtype, self.schema.columns):
            raise InputFileError.at(p, f"/index {problem}")
        if ds.shape[0] != self.meta["case_count"]:
            raise InputFileError.at(p, f"/index has {ds.shape[0]} rows, "
                                 f"case_count says {self.meta['case_count']}")
        self._index_ds = ds
        self.case_count = int(ds.shape[0])
        hashes = np.empty(self.case_count, np.uint64)
        for start in range(0, self.case_count, ID_BLOCK_ROWS):
            try:
                ids = ds.fields("id")[start:start + ID_BLOCK_ROWS]
            except H5_ERRORS as exc:
                raise read_error(p, "/index", exc, CHECKSUM_MISMATCH) from None
            for at, raw in enumerate(ids.tolist(), start):
                try:
                    cid = raw.decode("utf-8")
                except UnicodeDecodeError:
                    cid = repr(raw)
                if not is_safe_id(cid):
                    raise InputFileError.at(p, f"/index: case id {cid!r} is not a plain name "
                                         "(letters, digits, '_', '.', '-')")
                hashes[at] = id_hash(raw)
        order = np.argsort(hashes, kind="stable")
        self._order = order.astype(np.uint32) if self.case_count < 1 << 32 else order
        self._hashes = hashes[order]
        # equal hashes: equal ids, or (rarely) two ids that hash alike
        same = np.flatnonzero(self._hashes[1:] == self._hashes[:-1])
        pairs = ([self._row_id(int(self._order[k])) for k in (i, i + 1)] for i in same)
        twice = sorted(a for a, b in pairs if a == b)
        if twice:
            raise InputFileError.at(p, f"/index: case {twice[0]} is listed twice")

    def _row_id(self, i: int) -> str:
        return self._rows(i // BLOCK_ROWS)[i % BLOCK_ROWS]["id"].decode("utf-8")

    def _load_pools(self) -> None:
        """/data: one 1-D dataset per known dtype, of its storage type, chunked with a
        fletcher32 checksum and every chunk stored (check_layout); nothing else."""
        p = self.path
        group = member(p, self._f, POOL_GROUP, f"/{POOL_GROUP}")
        if not isinstance(group, h5py.Group):
            raise InputFileError.at(p, f"missing group /{POOL_GROUP}")
        self._pools: dict[str, PoolReader] = {}
        for name in sorted(group.keys()):
            what = f"/{POOL_GROUP}/{name}"
            if name not in NUMPY_DTYPES:
                raise InputFileError.at(p, f"{what}: not a dtype this layout stores")
            ds = check_layout(p, member(p, group, name, what), what, math.inf)  # type: ignore[arg-type]
            label = plain_value(ds.attrs.get("dtype"))
            if ds.ndim != 1 or ds.dtype != storage_dtype(name) or label != name:
                raise InputFileError.at(p, f"{what}: a {ds.ndim}-D {ds.dtype} dataset with "
                                     f"dtype attribute {label!r}, expected 1-D "
                                     f"{storage_dtype(name)} {name!r}")
            self._pools[name] = PoolReader(ds, name)

    # -- context manager
    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> PackedFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- rows

    def _rows(self, block: int) -> np.ndarray:
        if self._block is None or self._block[0] != block:
            start = block * BLOCK_ROWS
            what = f"/index rows {start}..{start + BLOCK_ROWS - 1}"
            try:
                rows = self._index_ds[start:start + BLOCK_ROWS]
            except H5_ERRORS as exc:
                raise read_error(self.path, what, exc) from None
            self._block = (block, rows)
        return self._block[1]

    def _entries(self, block: int) -> list[IndexEntry]:
        if self._block_entries is None or self._block_entries[0] != block:
            try:
                entries = entries_from_array(self._rows(block), self.case_type)
            except (ValueError, UnicodeDecodeError, OverflowError) as exc:
                raise InputFileError.at(self.path, f"/index: bad row ({exc})") from None
            self._block_entries = (block, entries)
        return self._block_entries[1]

    def _position(self, case_id: str) -> int:
        """The row of `case_id`: its hash's places in the sorted hashes, each confirmed by
        the row's own id (the row is read next anyway)."""
        key = np.uint64(id_hash(case_id.encode("utf-8")))
        at = int(np.searchsorted(self._hashes, key))
        while at < len(self._hashes) and self._hashes[at] == key:
            i = int(self._order[at])
            if self._row_id(i) == case_id:
                return i
            at += 1
        raise UsageError(f"{self.path}: no case {case_id!r}")

    def _row(self, i: int, case_id: str) -> dict[str, Any]:
        try:
            return row_dict(self.schema, self._rows(i // BLOCK_ROWS)[i % BLOCK_ROWS])
        except (ValueError, UnicodeDecodeError, OverflowError) as exc:
            raise InputFileError.at(self.path, f"case {case_id}: bad row ({exc})") from None

    def row_ids(self) -> Iterator[str]:
        """The case ids in row order, read block by block (no index entries made)."""
        for block in range(-(-self.case_count // BLOCK_ROWS)):
            for raw in self._rows(block)["id"].tolist():
                yield raw.decode("utf-8", errors="replace")

    # -- queries (GoldenFile's interface)
    def ids(self) -> list[str]:
        return [e.id for e in self.index]

    def __contains__(self, case_id: str) -> bool:
        try:
            self._position(case_id)
        except UsageError:
            return False
        return True

    def entry(self, case_id: str) -> IndexEntry:
        return self.index[self._position(case_id)]

    def _case(self, case_id: str) -> tuple[Case, dict[str, Any]]:
        return self._checked(case_id)[:2]  # type: ignore[return-value]

    def _checked(self, case_id: str) -> tuple[Case, dict[str, Any], dict[str, Slot]]:
        """The case of a row, the row, and its slots, checked (the last one kept)."""
        if self._memo is not None and self._memo[0] == case_id:
            return self._memo[1:4]  # type: ignore[return-value]
        return self.checked_row(self._position(case_id), case_id)

    def checked_row(self, i: int, case_id: str) -> tuple[Case, dict[str, Any],
                                                          dict[str, Slot]]:
        """Row `i` (of case `case_id`) as its case, the row, and its slots, checked: a
        record the contract can judge, a row that says the same as its record (role
        columns, flags, each array's slot and view)."""
        row = self._row(i, case_id)
        if row["id"] != case_id:
            raise InputFileError.at(self.path, f"case {case_id}: row {i} is another case's")
        bad = f"case {case_id}: bad case record"
        try:
            case = self.case_type.from_record(record_from_row(self.schema, row))
            problem = record_problem(case)
            if problem is None:
                f = facts(case)
                problem = row_problem(self.schema, row, case, f)
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            raise InputFileError.at(self.path, f"{bad} ({exc})") from None
        if problem:
            raise InputFileError.at(self.path, f"{bad} ({problem})")
        slots = slots_of(self.schema, row, f)
        self._memo = (case_id, case, row, slots, f)
        return case, row, slots

    def _facts(self, case_id: str) -> Facts:
        self._checked(case_id)
        assert self._memo is not None
        return self._memo[4]

    def case(self, case_id: str) -> Case:
        """The Case of a row, checked: names the contract knows, sane shapes, and a row
        that says the same as its record (effective tensors, flags, slots, views)."""
        return self._case(case_id)[0]

    def attrs(self, case_id: str) -> dict[str, Any]:
        """The record and stored expectation of a case, as GoldenFile.attrs gives them
        (record fields that are None left out)."""
        case, row = self._case(case_id)
        attrs = {k: v for k, v in case.to_record().items() if v is not None}
        attrs["null"] = row["null"]
        attrs.update({k: row[k] for k in ("expected_status", "expected_rule",
                                          "expected_reason", "out_written", "has_golden")})
        return attrs

    def slots(self, case_id: str) -> dict[str, Slot]:
        """Where each of the case's arrays lies (checked against its record)."""
        return self._checked(case_id)[2]

    def pool(self, dtype: str) -> PoolReader:
        """The pool of one dtype (one the file has: see pools())."""
        return self._pools[dtype]

    def check_bounds(self, slot: Slot, what: str) -> PoolReader:
        """The slot's pool, after checking that the slot lies inside it."""
        pool = self._pools.get(slot.dtype)
        if pool is None:
            raise InputFileError.at(self.path, f"{what}: /{POOL_GROUP}/{slot.dtype} is missing")
        if slot.start + slot.count > pool.length:
            raise InputFileError.at(self.path, f"{what}: elements {slot.start}.."
                                    f"{slot.start + slot.count - 1} lie past the end of "
                                    f"/{POOL_GROUP}/{slot.dtype} ({pool.length})")
        return pool

    def read_slot(self, slot: Slot, what: str) -> np.ndarray:
        """The stored elements of a slot (storage dtype, 1-D), after checking its size
        against the read limit and its pool; fletcher32 verified by HDF5 as it reads."""
        if slot.count == 0:
            return np.empty(0, storage_dtype(slot.dtype))
        nbytes = slot.count * storage_dtype(slot.dtype).itemsize
        if nbytes > self.read_limit:
            raise InputFileError.at(self.path, f"{what}: declares {nbytes} bytes, over the "
                                 f"read limit of {self.read_limit} bytes "
                                 "($ACLCHECK_MAX_READ_MB)")
        pool = self.check_bounds(slot, what)
        try:
            return pool.read(slot.start, slot.count)
        except H5_ERRORS as exc:
            raise read_error(self.path, what, exc) from None

    def tensor(self, case_id: str, name: str) -> StridedTensor | None:
        """One input tensor (by role) as laid out in memory (None for a null pointer)."""
        case, _, slots = self._checked(case_id)
        if name not in self.schema.inputs:
            raise UsageError(f"{self.path}: {case.OPERATOR} has no input {name!r}")
        slot = slots[name]
        if not slot.stored:
            return None
        data = self.read_slot(slot, f"case {case_id}: {name}")
        f = self._facts(case_id)
        strides, offset, _ = f.views[name]
        return StridedTensor(decode_array(data, f.dtypes[name]), tuple(f.descs[name].shape),
                             strides, offset)

    def inputs(self, case_id: str) -> tuple[StridedTensor | None, ...]:
        """The input tensors in role order, from storage + shape/strides/offset."""
        return tuple(self.tensor(case_id, name) for name in self.schema.inputs)

    def golden(self, case_id: str) -> np.ndarray | None:
        """The float64 golden, shaped like the output (None for calls that must be
        rejected; a call the contract says succeeds has one: the row check refuses it
        otherwise)."""
        case, _, slots = self._checked(case_id)
        slot = slots[GOLDEN]
        if not slot.stored:
            return None
        return self.read_slot(slot, f"case {case_id}: golden").reshape(
            self._facts(case_id).golden_shape)

    def data(self, case_id: str) -> CaseData:
        """The case's record, input tensors by role and golden."""
        case = self.case(case_id)
        inputs = {name: self.tensor(case_id, name) for name in self.schema.inputs}
        return CaseData(case, inputs, self.golden(case_id))

    def compression(self) -> str:
        """'gzip' or 'none': the filter of the pools (for `merge`)."""
        for pool in self._pools.values():
            return "gzip" if pool.ds.compression == "gzip" else "none"
        return "none"

    def pools(self) -> dict[str, int]:
        """Length (elements) of each pool, by dtype."""
        return {name: pool.length for name, pool in self._pools.items()}
