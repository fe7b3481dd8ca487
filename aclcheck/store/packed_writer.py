"""The packed golden writer (schema 3, aclcheck.store.packed): streams cases into one row
of /index each and their arrays into one 1-D dataset per dtype.

Memory stays flat whatever the case count: a pool keeps at most one chunk of its tail
(every chunk is written once, whole, so HDF5 never reads a chunk back), and the rows
wait in an unlinked temporary file until the commit writes /index from it in batches.
Same interface as GoldenWriter; the file appears under its name only on commit.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import h5py
import numpy as np

from aclcheck.cases import Case, CaseTensors
from aclcheck.errors import UsageError
from aclcheck.store.atomic import AtomicH5, write_dataset, write_root_attrs
from aclcheck.store.packed import (
    COLUMN_NAMES,
    GOLDEN_DTYPE,
    INPUTS,
    OPERATOR,
    PACKED_COLUMNS,
    PACKED_SCHEMA_VERSION,
    POOL_CHUNK_BYTES,
    POOL_GROUP,
    TEXT_COLUMNS,
    Slot,
    array_dtype,
    case_row,
    row_values,
)
from aclcheck.store.schema import (
    COMPRESSIONS,
    FORMAT_GOLDEN,
    GZIP_LEVEL,
    check_id,
    chunk_shape,
    encode_array,
    run_meta,
    set_attrs,
    storage_dtype,
    text_attr,
)

#: Rows written to /index per batch at commit.
INDEX_BATCH_ROWS = 1 << 14


class _Pool:
    """One dtype's 1-D dataset, appended to: whole chunks go to the file as they fill,
    the tail (less than a chunk) waits in a buffer."""

    def __init__(self, group: h5py.Group, dtype: str, compress: str) -> None:
        self.group = group
        self.dtype = dtype
        self.compress = compress
        self.storage = storage_dtype(dtype)
        self.chunk = max(1, POOL_CHUNK_BYTES // self.storage.itemsize)
        self.buffer = np.empty(self.chunk, self.storage)
        self.fill = 0  # elements waiting in the buffer
        self.length = 0  # elements appended (file + buffer)
        self.written = 0  # elements in the file
        self.ds: h5py.Dataset | None = None

    def append(self, flat: np.ndarray) -> int:
        """Append a 1-D array of the storage dtype; its start in the pool."""
        start, n, i = self.length, flat.size, 0
        if self.fill:
            take = min(n, self.chunk - self.fill)
            self.buffer[self.fill:self.fill + take] = flat[:take]
            self.fill += take
            i = take
            if self.fill == self.chunk:
                self._write(self.buffer)
                self.fill = 0
        whole = (n - i) // self.chunk * self.chunk
        if whole:
            self._write(flat[i:i + whole])
            i += whole
        if i < n:
            self.buffer[:n - i] = flat[i:]
            self.fill = n - i
        self.length += n
        return start

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
        if self.fill:
            self._write(self.buffer[:self.fill], last=True)
            self.fill = 0


class _Rows:
    """/index rows on their way to the commit: pickled into an unlinked temporary file
    (memory stays flat), with the widest text of each text column."""

    def __init__(self) -> None:
        self.file: IO[bytes] = tempfile.TemporaryFile(prefix="aclcheck-index-")
        self.count = 0
        self._text = [i for i, n in enumerate(COLUMN_NAMES) if n in TEXT_COLUMNS]
        self.widths = dict.fromkeys(self._text, 1)

    def add(self, values: tuple[Any, ...]) -> None:
        for i in self._text:
            if len(values[i]) > self.widths[i]:
                self.widths[i] = len(values[i])
        pickle.dump(values, self.file, protocol=pickle.HIGHEST_PROTOCOL)
        self.count += 1

    def dtype(self) -> np.dtype:
        return np.dtype([(name, f"S{self.widths[i]}" if i in self.widths else kind)
                         for i, (name, kind) in enumerate(PACKED_COLUMNS)])

    def batches(self, size: int) -> Iterator[np.ndarray]:
        """The rows in order, as tables of at most `size` rows."""
        self.file.seek(0)
        dtype, left = self.dtype(), self.count
        while left:
            n = min(size, left)
            yield np.array([pickle.load(self.file) for _ in range(n)], dtype=dtype)
            left -= n

    def close(self) -> None:
        self.file.close()


class PackedWriter:
    """Streams cases into a packed golden file (schema 3); the file appears under its
    name only on commit. A context manager: a normal exit commits, an exception deletes
    the temporary file. Same interface as GoldenWriter."""

    def __init__(self, path: str | Path, meta: Mapping[str, Any] | None = None, *,
                 force: bool = False, compress: str = "none") -> None:
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
        self._pools: dict[str, _Pool] = {}
        self._rows = _Rows()
        self.array_bytes = 0
        self.file_bytes = 0

    def _pool(self, dtype: str) -> _Pool:
        if dtype not in self._pools:
            self._pools[dtype] = _Pool(self._group, dtype, self.compress)
        return self._pools[dtype]

    def add(self, case: Case, tensors: CaseTensors) -> int:
        """Append one case; returns the bytes of array data stored."""
        check_id(case.id)
        arrays: dict[str, np.ndarray | None] = {
            name: (None if t is None else encode_array(t.storage)[0])
            for name, t in zip(INPUTS, (tensors.grad_output, tensors.self), strict=True)}
        arrays["golden"] = (None if tensors.golden is None
                            else np.ascontiguousarray(tensors.golden, dtype=np.float64))
        slots: dict[str, Slot] = {}
        nbytes = 0
        with self._out.writing():
            for name, arr in arrays.items():
                dtype = GOLDEN_DTYPE if name == "golden" else array_dtype(case, name)
                if arr is None:
                    slots[name] = Slot(dtype, -1, 0)
                    continue
                flat = arr.reshape(-1)
                start = self._pool(dtype).append(flat) if flat.size else 0
                slots[name] = Slot(dtype, start, flat.size)
                nbytes += flat.nbytes
            self._rows.add(row_values(case_row(case, slots)))
        self.array_bytes += nbytes
        self._out.wrote(nbytes)
        return nbytes

    def _write_index(self, f: h5py.File) -> None:
        """/index from the spilled rows, batch by batch (aligned to its chunks); refuses a
        duplicate id, as GoldenWriter does (here at the end: no set of ids in memory)."""
        dtype, n = self._rows.dtype(), self._rows.count
        if n == 0:
            write_dataset(f, "index", np.zeros(0, dtype), "none", {})
            return
        chunks = chunk_shape((n,), dtype.itemsize)
        assert chunks is not None
        batch = max(1, INDEX_BATCH_ROWS // chunks[0]) * chunks[0]
        ds = f.create_dataset("index", shape=(n,), dtype=dtype, chunks=chunks,
                              fletcher32=True, track_times=False)
        ids, at = [], 0
        for rows in self._rows.batches(batch):
            ds[at:at + len(rows)] = rows
            ids.append(rows["id"])
            at += len(rows)
        every = np.sort(np.concatenate(ids))
        same = np.flatnonzero(every[1:] == every[:-1])
        if same.size:
            raise UsageError(f"duplicate case id {every[same[0]].decode()!r}")

    def commit(self) -> int:
        """Write the pools' tails, /index and the root attributes, then move the file into
        place (on any failure the temporary file is removed)."""
        f = self._out.file
        try:
            with self._out.writing():
                for pool in self._pools.values():
                    pool.close()
                self._write_index(f)
                write_root_attrs(f, FORMAT_GOLDEN, self.meta, self._rows.count)
                f.attrs["schema_version"] = np.int64(PACKED_SCHEMA_VERSION)
                f.attrs["operator"] = text_attr(OPERATOR)
            self.file_bytes = self._out.commit()
        except BaseException:
            self._out.abort()
            raise
        finally:
            self._rows.close()
        return self.file_bytes

    def abort(self) -> None:
        self._rows.close()
        self._out.abort()

    def __enter__(self) -> PackedWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_packed(path: str | Path, items: Iterable[tuple[Case, CaseTensors]],
                 meta: Mapping[str, Any] | None = None, *, force: bool = False,
                 compress: str = "none") -> PackedWriter:
    """Write a whole packed golden file from (case, tensors) pairs; the closed writer."""
    with PackedWriter(path, meta, force=force, compress=compress) as writer:
        for case, tensors in items:
            writer.add(case, tensors)
    return writer
