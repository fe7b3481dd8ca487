"""The golden writer (schema 3, the packed layout of aclcheck.store.golden_schema): streams
cases into one row of /index each and their arrays into one 1-D dataset per dtype.

Memory stays flat whatever the case count: a pool keeps at most one chunk of its tail
(every chunk is written once, whole, so HDF5 never reads a chunk back), and the rows
wait in an unlinked temporary file until the commit writes /index from it in batches.
The file appears under its name only on commit. Every golden file aclcheck writes is
written here.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import h5py
import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.errors import UsageError
from aclcheck.ops import default_operator
from aclcheck.store.atomic import AtomicH5, write_dataset, write_root_attrs
from aclcheck.store.codec import (
    COMPRESSIONS,
    FORMAT_GOLDEN,
    GZIP_LEVEL,
    SCHEMA_VERSION,
    check_id,
    run_meta,
    set_attrs,
    text_attr,
)
from aclcheck.store.dtype_codec import encode_array, storage_dtype
from aclcheck.store.golden_schema import (
    GOLDEN,
    GOLDEN_DTYPE,
    POOL_CHUNK_BYTES,
    POOL_GROUP,
    PackedSchema,
    Slot,
    case_row,
    facts,
    id_hash,
    packed_schema,
    row_values,
)

#: Rows kept in memory before they are spilled to the temporary file (and written to
#: /index per batch at commit).
SPILL_ROWS = 1024


class PoolWriter:
    """One dtype's 1-D dataset (a pool of the layout), appended to: whole chunks go to the
    file as they fill, the tail (less than a chunk) waits in a buffer.

    Appending is two steps, so a batch of cases costs integer arithmetic per array and a
    few large copies: `reserve` gives an array its place and notes the chunk writes that
    appending it makes (the same writes, in the same order, whatever the batching: so
    are the file's bytes); `write` makes them from the batch's concatenated array, and
    `keep_tail` buffers what is left of it."""

    def __init__(self, group: h5py.Group, dtype: str, compress: str) -> None:
        self.group = group
        self.dtype = dtype
        self.compress = compress
        self.storage = storage_dtype(dtype)
        self.chunk = max(1, POOL_CHUNK_BYTES // self.storage.itemsize)
        self.buffer = np.empty(self.chunk, self.storage)
        self.length = 0  # elements appended (file + buffer + reserved)
        self.written = 0  # elements in the file (whole chunks only, until close)
        self.ds: h5py.Dataset | None = None

    def reserve(self, n: int, writes: list[tuple[PoolWriter, int, int]]) -> int:
        """The start of `n` more elements; adds to `writes` the (pool, first chunk,
        chunks) written once they are there: the chunk they complete, then the whole
        chunks they hold."""
        start = self.length
        end = start + n
        chunk = self.chunk
        pos = start
        if pos % chunk:  # the buffer's chunk, completed or not
            pos = min(end, (pos // chunk + 1) * chunk)
            if pos % chunk == 0:
                writes.append((self, pos // chunk - 1, 1))
        whole = (end - pos) // chunk
        if whole:
            writes.append((self, pos // chunk, whole))
        self.length = end
        return start

    def write(self, first: int, count: int, src: np.ndarray, base: int) -> None:
        """Write chunks [first, first + count) (reserved), from the buffer and `src`,
        which holds the pool's elements from `base` on."""
        lo, hi = first * self.chunk, (first + count) * self.chunk
        if lo < base:  # the buffer's chunk, completed by the start of src
            fill = base - lo
            self.buffer[fill:] = src[:hi - base]
            self._write(self.buffer)
        else:
            self._write(src[lo - base:hi - base])

    def keep_tail(self, src: np.ndarray, base: int) -> None:
        """Buffer the elements of `src` (from `base` on) past the last whole chunk."""
        if base + src.size != self.length:
            raise UsageError(f"{self.dtype}: a batch of {src.size} elements, its cases "
                             f"reserved {self.length - base}")
        tail = self.length - self.length % self.chunk
        at = max(tail, base)
        if at < self.length:
            self.buffer[at - tail:self.length - tail] = src[at - base:]

    def _write(self, data: np.ndarray, *, last: bool = False) -> None:
        if self.ds is None:
            kw: dict[str, Any] = {}
            if self.compress == "gzip":
                kw.update(compression="gzip", compression_opts=GZIP_LEVEL, shuffle=True)
            # a pool smaller than a chunk is one chunk of its own size (no padding)
            chunk = data.size if last else self.chunk
            self.ds = self.group.create_dataset(
                self.dtype, shape=(0,), maxshape=(None,), dtype=self.storage,
                chunks=(chunk,), fletcher32=True, track_times=False, **kw)
            set_attrs(self.ds, {"dtype": text_attr(self.dtype)})
        end = self.written + data.size
        self.ds.resize((end,))
        self.ds[self.written:end] = data
        self.written = end

    def close(self) -> None:
        """Write the tail (the pool's last, partial chunk)."""
        fill = self.length - self.written
        if fill:
            self._write(self.buffer[:fill], last=True)


class _Rows:
    """/index rows on their way to the commit: pickled into an unlinked temporary file
    (memory stays flat), with the widest text of each text column."""

    def __init__(self, schema: PackedSchema) -> None:
        self.schema = schema
        self.file: IO[bytes] = tempfile.TemporaryFile(prefix="aclcheck-index-")
        self.count = 0
        text = schema.text
        self._text = [i for i, n in enumerate(schema.names) if n in text]
        self.widths = dict.fromkeys(self._text, 1)
        #: the sparse columns no row has set yet (left out of the file)
        self._unused = {i for i, n in enumerate(schema.names) if n in schema.sparse}
        self._block: list[tuple[Any, ...]] = []

    def add(self, values: tuple[Any, ...]) -> None:
        widths = self.widths
        for i in self._text:
            if len(values[i]) > widths[i]:
                widths[i] = len(values[i])
        if self._unused:
            self._unused -= {i for i in self._unused if values[i]}
        self._block.append(values)
        self.count += 1
        if len(self._block) >= SPILL_ROWS:
            self._spill()

    def _spill(self) -> None:
        if self._block:
            pickle.dump(self._block, self.file, protocol=pickle.HIGHEST_PROTOCOL)
            self._block = []

    def dtype(self) -> np.dtype:
        return np.dtype([(name, f"S{self.widths[i]}" if i in self.widths else kind)
                         for i, (name, kind) in enumerate(self.schema.columns)
                         if i not in self._unused])

    def batches(self) -> Iterator[np.ndarray]:
        """The rows in order, as tables of at most SPILL_ROWS rows."""
        self._spill()
        self.file.seek(0)
        dtype, left = self.dtype(), self.count
        keep = [i for i in range(len(self.schema.columns)) if i not in self._unused]
        while left:
            block = pickle.load(self.file)
            left -= len(block)
            if self._unused:
                block = [tuple(row[i] for i in keep) for row in block]
            yield np.array(block, dtype=dtype)

    def close(self) -> None:
        self.file.close()


def index_chunk(n: int, dtype: np.dtype) -> int:
    """Rows per /index chunk: about POOL_CHUNK_BYTES, a power of two (so the spilled
    blocks of SPILL_ROWS rows fill whole chunks), at most the rows there are."""
    rows = max(1, POOL_CHUNK_BYTES // dtype.itemsize)
    return min(n, 1 << (rows.bit_length() - 1), SPILL_ROWS)


@dataclass(frozen=True)
class Prepared:
    """Cases made ready for a packed file wherever their tensors were made (a worker
    sends this, not the tensors): each case's /index row in column order, its arrays'
    starts counted from the start of this batch's array of their dtype, and the batch's
    arrays concatenated, one flat array per pool dtype (a few large buffers cross a
    process boundary far more cheaply than many small arrays). The writer appends each
    case's slices to the pools and puts where they landed into its row."""

    cases: list[Case]
    rows: list[tuple[Any, ...]]
    #: per case: (start column, pool dtype, elements) of each non-empty stored array
    moves: list[tuple[tuple[int, str, int], ...]]
    pools: dict[str, np.ndarray]
    nbytes: list[int]  # per case: bytes of array data
    has_golden: list[bool]


def prepare(items: Iterable[tuple[Case, CaseData]]) -> Prepared:
    """Everything of `add` that needs no file, for a batch of cases (pure)."""
    cases: list[Case] = []
    rows: list[tuple[Any, ...]] = []
    moves: list[tuple[tuple[int, str, int], ...]] = []
    parts: dict[str, list[np.ndarray]] = {}
    sizes: dict[str, int] = {}
    nbytes: list[int] = []
    goldens: list[bool] = []
    for case, tensors in items:
        check_id(case.id)
        schema = packed_schema(type(case))
        f = facts(case)
        slots: dict[str, Slot] = {}
        moved: list[tuple[int, str, int]] = []
        stored = [(name, f.dtypes[name], tensors.inputs.get(name)) for name in schema.inputs]
        stored.append((GOLDEN, GOLDEN_DTYPE, tensors.golden))
        for name, dtype, t in stored:
            flat = _flat(name, dtype, t)
            if flat is None:
                slots[name] = Slot(dtype, -1, 0)
                continue
            start = 0
            if flat.size:
                start = sizes.get(dtype, 0)
                parts.setdefault(dtype, []).append(flat)
                sizes[dtype] = start + flat.size
                moved.append((schema.start_columns[name], dtype, flat.size))
            slots[name] = Slot(dtype, start, flat.size)
        row = case_row(case, slots, f)
        cases.append(case)
        rows.append(row_values(schema, row))
        moves.append(tuple(moved))
        nbytes.append(row["nbytes"])
        goldens.append(tensors.golden is not None)
    pools = {dtype: arrs[0] if len(arrs) == 1 else np.concatenate(arrs)
             for dtype, arrs in parts.items()}
    return Prepared(cases, rows, moves, pools, nbytes, goldens)


def _flat(name: str, dtype: str, t: Any) -> np.ndarray | None:
    """One array as its pool stores it, 1-D (a StridedTensor's storage, a golden), or
    None (not stored)."""
    if t is None:
        return None
    if name == GOLDEN:
        return np.ascontiguousarray(t, dtype=np.float64).reshape(-1)
    flat = t.storage.reshape(-1)
    want = storage_dtype(dtype)
    if flat.dtype != want:  # bfloat16 as its uint16 bits, bool as uint8
        flat = encode_array(flat)[0]
    if flat.dtype != want:
        raise UsageError(f"{name}: storage of dtype {flat.dtype}, the record says {dtype}")
    return flat


class GoldenWriter:
    """Streams cases into a golden file (schema 3, packed); the file appears under its
    name only on commit. A context manager: a normal exit commits, an exception deletes
    the temporary file. `case_type`: the record class of the cases (default: the first
    case's; the default operator's for a file of no cases)."""

    def __init__(self, path: str | Path, meta: Mapping[str, Any] | None = None, *,
                 force: bool = False, compress: str = "none",
                 case_type: type[Case] | None = None) -> None:
        if compress not in COMPRESSIONS:
            raise UsageError(f"unknown compression {compress!r}; valid: {', '.join(COMPRESSIONS)}")
        self.meta = dict(meta or run_meta())
        self.compress = compress
        self._out = AtomicH5(path, force)
        self.path = self._out.path
        try:
            self._group = self._out.file.create_group(POOL_GROUP, track_order=False)
        except BaseException:
            self._out.abort()
            raise
        self._pools: dict[str, PoolWriter] = {}
        self._rows: _Rows | None = None
        self.case_type = case_type
        self.array_bytes = 0
        self.file_bytes = 0

    def _pool(self, dtype: str) -> PoolWriter:
        if dtype not in self._pools:
            self._pools[dtype] = PoolWriter(self._group, dtype, self.compress)
        return self._pools[dtype]

    def _rows_for(self, case: Case) -> _Rows:
        if self._rows is None:
            if self.case_type is None:
                self.case_type = type(case)
            self._rows = _Rows(packed_schema(self.case_type))
        if type(case) is not self.case_type:
            raise UsageError(f"case {case.id}: a {case.OPERATOR} case in a file of "
                             f"{self.case_type.OPERATOR} cases")
        return self._rows

    def add(self, case: Case, tensors: CaseData) -> int:
        """Append one case; returns the bytes of array data stored."""
        return self.add_prepared(prepare([(case, tensors)]))[0]

    def add_prepared(self, batch: Prepared) -> list[int]:
        """Append cases that `prepare` made ready (here or in a worker): each array goes
        to its pool and its start into its row. Array by array, in the order of one case
        at a time: the pools' chunks then reach the file in the same order however the
        cases were batched, and so do the file's bytes. Returns each case's bytes of
        array data."""
        if not batch.cases:
            return []
        rows = self._rows_for(batch.cases[0])
        for case in batch.cases[1:]:
            self._rows_for(case)  # one operator's cases only
        bases = {dtype: self._pool(dtype).length for dtype in batch.pools}
        writes: list[tuple[PoolWriter, int, int]] = []
        with self._out.writing():
            for row, moved in zip(batch.rows, batch.moves, strict=True):
                if moved:
                    values = list(row)
                    for column, dtype, count in moved:
                        start = self._pool(dtype).reserve(count, writes)
                        if dtype not in bases or values[column] != start - bases[dtype]:
                            raise UsageError(f"{dtype}: a batch whose rows and arrays "
                                             "disagree")
                        values[column] = start
                    row = tuple(values)
                rows.add(row)
            for pool, first, count in writes:
                pool.write(first, count, batch.pools[pool.dtype], bases[pool.dtype])
            for dtype, src in batch.pools.items():
                self._pools[dtype].keep_tail(src, bases[dtype])
        total = sum(batch.nbytes)
        self.array_bytes += total
        return batch.nbytes

    def _write_index(self, f: h5py.File) -> int:
        """/index from the spilled rows, batch by batch (aligned to its chunks); refuses a
        duplicate id (here at the end: no set of ids in memory). Returns the row count."""
        if self._rows is None:
            self._rows = _Rows(packed_schema(self.case_type or default_operator().case_type))
        dtype, n = self._rows.dtype(), self._rows.count
        if n == 0:
            write_dataset(f, "index", np.zeros(0, dtype), "none", {})
            return 0
        ds = f.create_dataset("index", shape=(n,), dtype=dtype, chunks=(index_chunk(n, dtype),),
                              fletcher32=True, track_times=False)
        hashes, at = [], 0
        for rows in self._rows.batches():  # whole chunks: none is written twice
            ds[at:at + len(rows)] = rows
            hashes.append(np.array([id_hash(cid) for cid in rows["id"].tolist()],
                                   np.uint64))
            at += len(rows)
        every = np.concatenate(hashes)  # 8 bytes a case, not the ids themselves
        order = np.argsort(every, kind="stable")
        for i in np.flatnonzero(every[order][1:] == every[order][:-1]):
            a, b = ds[int(order[i])]["id"], ds[int(order[i + 1])]["id"]
            if a == b:  # not only the same hash
                raise UsageError(f"duplicate case id {a.decode()!r}")
        return n

    def commit(self) -> int:
        """Write the pools' tails, /index and the root attributes, then move the file into
        place (on any failure the temporary file is removed)."""
        f = self._out.file
        try:
            with self._out.writing():
                for pool in self._pools.values():
                    pool.close()
                count = self._write_index(f)
                assert self._rows is not None
                meta = {**self.meta, "operator": self._rows.schema.case_type.OPERATOR}
                write_root_attrs(f, FORMAT_GOLDEN, meta, count, SCHEMA_VERSION)
            self.file_bytes = self._out.commit()
        except BaseException:
            self._out.abort()
            raise
        finally:
            self._close_rows()
        return self.file_bytes

    def _close_rows(self) -> None:
        if self._rows is not None:
            self._rows.close()

    def abort(self) -> None:
        self._close_rows()
        self._out.abort()

    def __enter__(self) -> GoldenWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_golden(path: str | Path, items: Iterable[tuple[Case, CaseData]],
                 meta: Mapping[str, Any] | None = None, *, force: bool = False,
                 compress: str = "none") -> GoldenWriter:
    """Write a whole golden file from (case, tensors) pairs; the closed writer."""
    with GoldenWriter(path, meta, force=force, compress=compress) as writer:
        for case, tensors in items:
            writer.add(case, tensors)
    return writer
