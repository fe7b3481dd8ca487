"""The HDF5 golden and results store: schema, atomic writer, reader, integrity check.

One module owns the on-disk layout (documented in docs/store.md), so the generator, the
inspector, `verify` and any C++ reader agree on it. Files are plain HDF5 (only the
built-in fletcher32 / shuffle / gzip filters, default library version bounds), written
to a temporary file beside the target and moved into place with os.replace only when
complete. Every problem a reader meets becomes an InputFileError whose one-line message
names the file.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import re
import sys
import tempfile
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import ml_dtypes
import numpy as np

from aclcheck import __version__, contract
from aclcheck.cases import NUMPY_DTYPES, Case, CaseTensors
from aclcheck.dtypes import from_storage, to_storage
from aclcheck.errors import InputFileError, UsageError
from aclcheck.layouts import StridedTensor

FORMAT_GOLDEN = "aclcheck-golden"
FORMAT_RESULTS = "aclcheck-results"
SCHEMA_VERSION = 1
#: Target chunk size: large enough for throughput, small enough to stay in cache.
CHUNK_BYTES = 1 << 20
GZIP_LEVEL = 1
COMPRESSIONS = ("none", "gzip")
#: HDF5 1.10 object formats (single-chunk / fixed-array chunk indexes, compact groups):
#: a third of the per-case overhead of the 1.6 formats; readable by HDF5 >= 1.10.
LIBVER = ("v110", "v110")
#: Start the kernel's writeback after this many bytes (see _AtomicH5.wrote).
WRITEBACK_BYTES = 32 << 20
TENSOR_DATASETS = ("grad_output", "self")
CASE_ID_RE = re.compile(r"[A-Za-z0-9_.-]+")
#: Root attributes every file carries (both formats).
REQUIRED_ROOT_ATTRS = ("format", "schema_version", "tool_version", "created", "case_count")
#: Root attributes that describe the run, not the data (ignored when comparing files).
VOLATILE_ROOT_ATTRS = frozenset(
    {"created", "command_line", "tool_version", "numpy_version", "h5py_version",
     "hdf5_version", "ml_dtypes_version", "python_version"}
)
#: Case attributes besides the Case record fields.
EXPECT_ATTRS = ("expected_status", "expected_rule", "expected_reason", "out_written",
                "has_golden")
_MAX_PROBLEMS = 50


class OutputFileError(UsageError):
    """The output path cannot be written (missing or read-only folder, existing file)."""


# -- small codecs ------------------------------------------------------------------------


def shape_text(shape: Iterable[int]) -> str:
    """(2, 3, 17, 9) -> '2x3x17x9' (the index's shape columns)."""
    return "x".join(str(int(d)) for d in shape)


def parse_shape_text(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split("x")) if text else ()


def encode_array(values: np.ndarray) -> tuple[np.ndarray, str]:
    """(array as stored, dtype name): bfloat16 as uint16 bits, bool as uint8 0/1."""
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        return arr.astype(np.uint8), "bool"
    name = dtype_name(arr.dtype)
    return to_storage(arr), name


def decode_array(stored: np.ndarray, name: str) -> np.ndarray:
    """Inverse of `encode_array`."""
    if name == "bool":
        return np.asarray(stored) != 0
    return from_storage(stored, name)


def dtype_name(dtype: np.dtype) -> str:
    """Canonical name of a numpy dtype ('bfloat16' for ml_dtypes.bfloat16)."""
    dt = np.dtype(dtype)
    if dt == np.dtype(ml_dtypes.bfloat16):
        return "bfloat16"
    if dt == np.bool_:
        return "bool"
    return dt.name


def storage_dtype(name: str) -> np.dtype:
    """The numpy dtype a tensor of dtype `name` is stored as."""
    if name == "bfloat16":
        return np.dtype(np.uint16)
    if name == "bool":
        return np.dtype(np.uint8)
    if name not in NUMPY_DTYPES:
        raise KeyError(name)
    return np.dtype(NUMPY_DTYPES[name])


def chunk_shape(shape: tuple[int, ...], itemsize: int,
                target: int = CHUNK_BYTES) -> tuple[int, ...] | None:
    """Row-major chunk of about `target` bytes: whole trailing dims while they fit, then a
    slice of the next one. None for empty datasets (HDF5 cannot chunk zero-size dims)."""
    if not shape or math.prod(shape) == 0:
        return None
    if math.prod(shape) * itemsize <= target:
        return tuple(shape)
    chunk = [1] * len(shape)
    budget = max(1, target // itemsize)
    for axis in range(len(shape) - 1, -1, -1):
        if shape[axis] <= budget:
            chunk[axis] = shape[axis]
            budget //= shape[axis]
        else:
            chunk[axis] = max(1, budget)
            break
    return tuple(chunk)


def _attr_value(value: Any) -> Any:
    """A record value as an HDF5 attribute (None is never written: the attribute is omitted)."""
    if isinstance(value, bool):
        return np.uint8(value)
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, str):
        return text_attr(value)
    if isinstance(value, dict):
        return text_attr(json.dumps(value, sort_keys=True))
    if isinstance(value, list | tuple):
        if all(isinstance(v, str) for v in value) and value:
            return text_attr(",".join(value))
        return np.asarray(value, dtype=np.int64)
    raise TypeError(f"cannot store {type(value).__name__} as an attribute")


def text_attr(value: str) -> np.ndarray:
    """A string as a fixed-length UTF-8 HDF5 string (no global heap, simple for C/C++)."""
    raw = value.encode("utf-8")
    return np.array(raw, dtype=h5py.string_dtype("utf-8", max(1, len(raw))))


def set_attrs(obj: h5py.HLObject, attrs: Mapping[str, Any]) -> None:
    """Create new attributes through the low-level API (twice as fast as obj.attrs[...],
    which writes each attribute under a temporary name first)."""
    for name, value in attrs.items():
        arr = np.asarray(value)
        if arr.ndim:
            arr = np.ascontiguousarray(arr)
        tid = h5py.h5t.py_create(arr.dtype, logical=True)
        space = (h5py.h5s.create_simple(arr.shape) if arr.ndim
                 else h5py.h5s.create(h5py.h5s.SCALAR))
        h5py.h5a.create(obj.id, name.encode("utf-8"), tid, space).write(arr, mtype=tid)


def _new_group(parent: h5py.Group, name: str) -> h5py.Group:
    """A group whose ~25 attributes stay in its object header (compact storage): the
    default switches to a fractal heap above 8 attributes, twice the size per case."""
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_attr_phase_change(64, 48)
    return h5py.Group(h5py.h5g.create(parent.id, name.encode("utf-8"), gcpl=gcpl))


def _py(value: Any) -> Any:
    """An attribute as plain Python (str, int, float, list of int)."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray):
        return [_py(v) for v in value.tolist()]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


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
        attrs[key] = _attr_value(value)
    exp = case.expectation
    attrs["expected_status"] = np.int64(exp.status)
    attrs["expected_rule"] = text_attr(exp.rule)
    attrs["expected_reason"] = text_attr(exp.reason)
    attrs["out_written"] = np.uint8(case.out_written)
    return attrs


def record_from_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The case record (Case.to_record() form) from /cases/<id> attributes; an absent
    attribute takes the field's default (None for optional fields); required fields
    without an attribute are left out, so Case.from_record reports them."""
    rec: dict[str, Any] = {}
    for fld in dataclasses.fields(Case):
        key, kind = fld.name, str(fld.type)
        if key not in attrs:
            if fld.default is not dataclasses.MISSING:
                rec[key] = fld.default
            elif fld.default_factory is not dataclasses.MISSING:
                rec[key] = list(fld.default_factory())
            continue
        value = _py(attrs[key])
        if key == "null":
            value = [v for v in str(value).split(",") if v]
        elif "tuple[int" in kind:
            value = [int(v) for v in (value if isinstance(value, list) else [value])]
        elif kind == "int":
            value = int(value)
        rec[key] = value
    return rec


# -- the index ----------------------------------------------------------------------------

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


def _index_array(entries: list[IndexEntry]) -> np.ndarray:
    rows = []
    for e in entries:
        row = {f: getattr(e, f) for f in _ENTRY_FIELDS}
        for key in ("self_shape", "grad_shape", "out_shape"):
            row[key] = shape_text(row[key])
        row["null"] = ",".join(row["null"])
        rows.append(row)
    return _rows_array(rows, INDEX_COLUMNS)


def _entries_from_array(arr: np.ndarray) -> list[IndexEntry]:
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


# -- metadata -----------------------------------------------------------------------------


def run_meta(command_line: str = "", suite: str = "", **extra: Any) -> dict[str, Any]:
    """Root attributes describing the run: versions, creation time, command line, suite."""
    meta: dict[str, Any] = {
        "tool_version": __version__,
        "numpy_version": np.__version__,
        "h5py_version": h5py.version.version,
        "hdf5_version": h5py.version.hdf5_version,
        "ml_dtypes_version": ml_dtypes.__version__,
        "python_version": sys.version.split()[0],
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command_line": command_line,
        "suite": suite,
    }
    meta.update(extra)
    return meta


# -- atomic writing -----------------------------------------------------------------------


def check_output_path(path: str | Path, force: bool) -> Path:
    """Refuse an output path before any work: missing or non-folder parent, a directory,
    an existing file without `force`. (Write permission is proven by the temp file.)"""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.exists():
        raise OutputFileError(f"{p}: output folder {folder} does not exist")
    if not folder.is_dir():
        raise OutputFileError(f"{p}: {folder} is not a folder")
    if p.is_dir():
        raise OutputFileError(f"{p}: is a folder, expected a file name")
    if p.exists() and not force:
        raise OutputFileError(f"{p}: file exists (use --force to overwrite)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputFileError(f"{p}: output folder {folder} is not writable")
    return p


class _AtomicH5:
    """An HDF5 file written under a temporary name in the target folder; `commit` closes,
    fsyncs and os.replace()s it onto the target; `abort` deletes it."""

    def __init__(self, path: str | Path, force: bool) -> None:
        self.path = check_output_path(path, force)
        self.force = force
        folder = self.path.parent if str(self.path.parent) else Path(".")
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp.h5",
                                       dir=folder)
            os.close(fd)
        except OSError as exc:
            raise OutputFileError(f"{self.path}: cannot write in {folder}: "
                                  f"{exc.strerror or exc}") from None
        self.tmp = Path(tmp)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(self.tmp, 0o666 & ~mask)  # mkstemp's 0600 would stick after the rename
        try:
            # no chunk cache: every chunk is written once, whole (saves a copy per chunk)
            self.file = h5py.File(self.tmp, "w", libver=LIBVER, rdcc_nbytes=0)
        except OSError as exc:
            self.tmp.unlink(missing_ok=True)
            raise OutputFileError(f"{self.path}: cannot create HDF5 file: {exc}") from None
        self.done = False
        self._unflushed = 0
        self._fd: int | None = None
        if hasattr(os, "posix_fadvise"):
            try:
                self._fd = os.open(self.tmp, os.O_RDONLY)
            except OSError:
                self._fd = None

    def wrote(self, nbytes: int) -> None:
        """Account written bytes; every WRITEBACK_BYTES start the kernel's writeback
        (POSIX_FADV_DONTNEED), so the data reaches the disk while we keep computing and
        the final fsync has little left to wait for."""
        self._unflushed += nbytes
        if self._fd is not None and self._unflushed >= WRITEBACK_BYTES:
            self._unflushed = 0
            try:
                os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def commit(self) -> int:
        """Close, flush to disk and move into place; returns the file size in bytes."""
        self._close_fd()
        self.file.close()
        if self.path.exists() and not self.force:
            self.abort()
            raise OutputFileError(f"{self.path}: file appeared while writing (use --force)")
        try:
            with open(self.tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            size = self.tmp.stat().st_size
            os.replace(self.tmp, self.path)
        except OSError as exc:
            self.abort()
            raise OutputFileError(f"{self.path}: cannot move the finished file into place: "
                                  f"{exc.strerror or exc}") from None
        self.done = True
        try:  # make the rename itself durable
            dfd = os.open(self.path.parent if str(self.path.parent) else ".", os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass
        return size

    def abort(self) -> None:
        if self.done:
            return
        self.done = True
        self._close_fd()
        try:
            self.file.close()
        except Exception:  # noqa: BLE001 - already failing; the unlink matters more
            pass
        self.tmp.unlink(missing_ok=True)


def _write_dataset(parent: h5py.Group, name: str, data: np.ndarray, compress: str,
                   attrs: Mapping[str, Any]) -> h5py.Dataset:
    """A dataset with the store's filters: chunked + fletcher32 (+ shuffle/gzip), or
    contiguous without filters when empty. Large uncompressed datasets are written
    chunk by chunk with `fletcher32` below (same bytes on disk as HDF5's filter)."""
    chunks = chunk_shape(tuple(data.shape), data.dtype.itemsize)
    kw: dict[str, Any] = {"track_times": False}
    if chunks is not None:
        kw.update(chunks=chunks, fletcher32=True)
        if compress == "gzip":
            kw.update(compression="gzip", compression_opts=GZIP_LEVEL, shuffle=True)
    if (chunks is not None and compress == "none" and data.nbytes >= DIRECT_MIN_BYTES
            and _direct_plan(data.shape, chunks) is not None
            and math.prod(chunks) * data.dtype.itemsize % 2 == 0):
        ds = parent.create_dataset(name, shape=data.shape, dtype=data.dtype, **kw)
        _write_chunks(ds, np.ascontiguousarray(data), chunks)
    else:
        ds = parent.create_dataset(name, data=data, **kw)
    set_attrs(ds, attrs)
    return ds


# -- fletcher32 chunks without HDF5's filter pass -----------------------------------------

#: Datasets at least this large are written with write_direct_chunk + `fletcher32`:
#: HDF5's byte-wise checksum and its extra copy cost more than the write itself; numpy's
#: sums compute the same checksum about twice as fast.
DIRECT_MIN_BYTES = 64 * 1024
_INV256 = pow(256, -1, 65535)
_FLETCHER_BLOCK = 1024


def fletcher32(buf: np.ndarray) -> int:
    """HDF5's fletcher32 checksum (H5_checksum_fletcher32) of an even-length byte buffer.

    HDF5 sums big-endian 16-bit words w_i: s1 = sum w_i, s2 = sum (n - i) w_i, both folded
    mod 65535 with 0xFFFF kept for a nonzero multiple of 65535 (0 only for all-zero data).
    Little-endian words are w_i * 256 (mod 65535), so native sums of row and column blocks
    give both sums in two vectorised passes. Returns (s2 << 16) | s1.
    """
    x = np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
    if x.size % 2:
        raise ValueError("fletcher32 here needs an even number of bytes")
    words = x.view("<u2")
    n = words.size
    rows = n // _FLETCHER_BLOCK
    main = words[: rows * _FLETCHER_BLOCK].reshape(rows, _FLETCHER_BLOCK)
    acc = np.uint32 if rows <= 65536 else np.uint64  # column sums must not overflow
    row_sums = main.sum(axis=1, dtype=np.uint32).astype(np.uint64)
    col_sums = main.sum(axis=0, dtype=acc).astype(np.uint64)
    tail = words[rows * _FLETCHER_BLOCK:].astype(np.uint64)
    total = int(row_sums.sum()) + int(tail.sum())
    if total == 0:
        return 0
    # sum of i * x_i, i = row * BLOCK + col, reduced mod 65535 as we go
    weighted = (_FLETCHER_BLOCK * int((np.arange(rows, dtype=np.uint64)
                                        * (row_sums % 65535)).sum())
                + int((np.arange(_FLETCHER_BLOCK, dtype=np.uint64) * (col_sums % 65535)).sum())
                + int((np.arange(rows * _FLETCHER_BLOCK, n, dtype=np.uint64) * tail).sum()))
    s1 = (total * _INV256) % 65535 or 65535
    s2 = ((n * total - weighted) * _INV256) % 65535 or 65535
    return (s2 << 16) | s1


def _direct_plan(shape: tuple[int, ...], chunks: tuple[int, ...]) -> int | None:
    """The axis k where chunks are (1, .., 1, c_k, full dims...), so every chunk is one
    contiguous run of the C-order data; None for other chunk shapes."""
    k = next((a for a, c in enumerate(chunks) if c != 1), len(chunks) - 1)
    if any(c != 1 for c in chunks[:k]) or tuple(chunks[k + 1:]) != tuple(shape[k + 1:]):
        return None
    return k


def _chunk_runs(shape: tuple[int, ...], chunks: tuple[int, ...],
                item: int) -> Iterator[tuple[tuple[int, ...], int, int]]:
    """(chunk offsets, first byte, valid bytes) of every chunk, in file order."""
    k = _direct_plan(shape, chunks)
    assert k is not None
    inner = math.prod(shape[k + 1:]) * item
    per_outer = shape[k] * inner
    trailing = (0,) * (len(shape) - k - 1)
    for outer in range(math.prod(shape[:k])):
        lead = tuple(int(i) for i in np.unravel_index(outer, shape[:k])) if k else ()
        for j in range(0, shape[k], chunks[k]):
            yield (*lead, j, *trailing), outer * per_outer + j * inner, \
                min(chunks[k], shape[k] - j) * inner


def _filtered_chunk(flat: np.ndarray, start: int, valid: int, chunk_bytes: int) -> np.ndarray:
    """One chunk as HDF5's fletcher32 filter stores it: data, zero padding past the
    dataset's edge, then the checksum as 4 little-endian bytes."""
    buf = np.empty(chunk_bytes + 4, dtype=np.uint8)
    buf[:valid] = flat[start:start + valid]
    if valid < chunk_bytes:
        buf[valid:chunk_bytes] = 0
    checksum = fletcher32(buf[:chunk_bytes])
    buf[chunk_bytes:] = np.frombuffer(checksum.to_bytes(4, "little"), dtype=np.uint8)
    return buf


def _write_chunks(ds: h5py.Dataset, data: np.ndarray, chunks: tuple[int, ...]) -> None:
    """Write every chunk with write_direct_chunk, checksums computed here. (A helper
    thread computing checksums ahead did not help: the write holds the GIL.)"""
    chunk_bytes = math.prod(chunks) * data.dtype.itemsize
    flat = data.reshape(-1).view(np.uint8)
    for offsets, start, valid in _chunk_runs(data.shape, chunks, data.dtype.itemsize):
        ds.id.write_direct_chunk(offsets, _filtered_chunk(flat, start, valid, chunk_bytes))


def _tensor_attrs(t: StridedTensor, dtype: str) -> dict[str, Any]:
    return {"dtype": text_attr(dtype), "shape": np.asarray(t.shape, dtype=np.int64),
            "strides": np.asarray(t.strides, dtype=np.int64), "offset": np.int64(t.offset)}


def _write_tensor(group: h5py.Group, name: str, t: StridedTensor, compress: str) -> int:
    stored, dname = encode_array(t.storage)
    if t.contiguous and stored.size == math.prod(t.shape):
        stored = stored.reshape(t.shape)  # the logical array itself: readable as is
    _write_dataset(group, name, stored, compress, _tensor_attrs(t, dname))
    return stored.nbytes


def _check_id(case_id: str) -> None:
    if not CASE_ID_RE.fullmatch(case_id) or case_id in (".", ".."):
        raise UsageError(f"case id {case_id!r} is not a valid group name "
                         "(use only letters, digits, '_', '.', '-')")


def check_ids(cases: Iterable[Case]) -> None:
    """Reject ids the store cannot use, before any work."""
    for case in cases:
        _check_id(case.id)


class GoldenWriter:
    """Streams cases into a golden file; the file appears under its name only on commit.

    Use as a context manager: a normal exit commits, an exception deletes the temp file.
    """

    def __init__(self, path: str | Path, meta: Mapping[str, Any] | None = None, *,
                 force: bool = False, compress: str = "none") -> None:
        if compress not in COMPRESSIONS:
            raise UsageError(f"unknown compression {compress!r}; valid: {', '.join(COMPRESSIONS)}")
        self.meta = dict(meta or run_meta())
        self.compress = compress
        self._out = _AtomicH5(path, force)
        self.path = self._out.path
        try:
            self._cases = self._out.file.create_group("cases")
        except BaseException:
            self._out.abort()
            raise
        self._entries: list[IndexEntry] = []
        self._seen: set[str] = set()
        self.array_bytes = 0
        self.file_bytes = 0

    def add(self, case: Case, tensors: CaseTensors) -> int:
        """Write one case; returns the bytes of array data stored."""
        _check_id(case.id)
        if case.id in self._seen:
            raise UsageError(f"duplicate case id {case.id!r}")
        self._seen.add(case.id)
        group = _new_group(self._cases, case.id)
        has_golden = tensors.golden is not None
        set_attrs(group, {**record_attrs(case), "has_golden": np.uint8(has_golden)})
        nbytes = 0
        for name, t in (("grad_output", tensors.grad_output), ("self", tensors.self)):
            if t is not None:
                nbytes += _write_tensor(group, name, t, self.compress)
        if has_golden:
            g = np.ascontiguousarray(tensors.golden, dtype=np.float64)
            _write_dataset(group, "golden", g, self.compress, {"dtype": text_attr("float64")})
            nbytes += g.nbytes
        self._entries.append(index_entry(case, has_golden, nbytes))
        self.array_bytes += nbytes
        self._out.wrote(nbytes)
        return nbytes

    def commit(self) -> int:
        """Write /index and the root attributes, then move the file into place (on any
        failure the temporary file is removed)."""
        f = self._out.file
        try:
            _write_dataset(f, "index", _index_array(self._entries), "none", {})
            _write_root_attrs(f, FORMAT_GOLDEN, self.meta, len(self._entries))
            self.file_bytes = self._out.commit()
        except BaseException:
            self._out.abort()
            raise
        return self.file_bytes

    def abort(self) -> None:
        self._out.abort()

    def __enter__(self) -> GoldenWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def _write_root_attrs(f: h5py.File, fmt: str, meta: Mapping[str, Any], count: int) -> None:
    f.attrs["format"] = text_attr(fmt)
    f.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
    for key, value in meta.items():
        if value is None or key in ("format", "schema_version", "case_count"):
            continue
        f.attrs[key] = _attr_value(value)
    if "tool_version" not in f.attrs:
        f.attrs["tool_version"] = text_attr(__version__)
    if "created" not in f.attrs:
        f.attrs["created"] = text_attr(_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))
    f.attrs["case_count"] = np.int64(count)


def write_golden(path: str | Path, items: Iterable[tuple[Case, CaseTensors]],
                 meta: Mapping[str, Any] | None = None, *, force: bool = False,
                 compress: str = "none") -> GoldenWriter:
    """Write a whole golden file from (case, tensors) pairs; returns the closed writer."""
    with GoldenWriter(path, meta, force=force, compress=compress) as writer:
        for case, tensors in items:
            writer.add(case, tensors)
    return writer


# -- reading ------------------------------------------------------------------------------


def _open_h5(path: str | Path, expected_format: str) -> tuple[h5py.File, dict[str, Any]]:
    """Open and validate the root of a store file; every failure is one InputFileError."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"{p}: no such file")
    if p.is_dir():
        raise InputFileError(f"{p}: is a folder, expected an HDF5 file")
    try:
        is_hdf5 = h5py.is_hdf5(p)
    except OSError as exc:
        raise InputFileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if not is_hdf5:
        raise InputFileError(f"{p}: not an HDF5 file")
    try:
        f = h5py.File(p, "r")
    except _H5_ERRORS as exc:
        msg = str(exc)
        if "truncated" in msg:
            m = re.search(r"eof = (\d+).*stored_eof = (\d+)", msg)
            detail = (f"{m.group(1)} of {m.group(2)} bytes present" if m
                      else _h5_reason(msg))
            raise InputFileError(f"{p}: truncated HDF5 file ({detail})") from None
        raise InputFileError(f"{p}: unreadable HDF5 file ({_h5_reason(msg)})") from None
    try:
        meta = {k: _py(v) for k, v in f.attrs.items()}
    except _H5_ERRORS as exc:
        f.close()
        raise InputFileError(f"{p}: damaged root attributes ({_h5_reason(str(exc))})") from None
    try:
        _check_root(p, meta, expected_format)
    except InputFileError:
        f.close()
        raise
    return f, meta


def _h5_reason(msg: str) -> str:
    """The useful part of an h5py/HDF5 error message, on one line."""
    msg = " ".join(msg.split())
    m = re.search(r"\((.*)\)\s*$", msg)
    return m.group(1) if m else msg


#: What h5py raises on damaged metadata (corrupt headers, failed metadata checksums,
#: broken links): each becomes an InputFileError naming the file and the object.
_H5_ERRORS = (OSError, KeyError, RuntimeError, ValueError, TypeError, IndexError)


@contextmanager
def _damage(p: Path, what: str) -> Iterator[None]:
    """Turn h5py errors met while reading `what` into one-line InputFileErrors."""
    try:
        yield
    except InputFileError:
        raise
    except _H5_ERRORS as exc:
        raise InputFileError(f"{p}: {what}: damaged file ({_h5_reason(str(exc))})") from None


def _check_root(p: Path, meta: Mapping[str, Any], expected_format: str) -> None:
    fmt = meta.get("format")
    if fmt is None:
        raise InputFileError(f"{p}: not an aclcheck file (no 'format' attribute)")
    if fmt != expected_format:
        raise InputFileError(f"{p}: is a {fmt!r} file, expected {expected_format!r}")
    version = meta.get("schema_version")
    if not isinstance(version, int):
        raise InputFileError(f"{p}: missing or non-integer 'schema_version' attribute")
    if version > SCHEMA_VERSION:
        raise InputFileError(f"{p}: schema version {version} is newer than this aclcheck "
                             f"understands ({SCHEMA_VERSION}); upgrade aclcheck")
    if version < 1:
        raise InputFileError(f"{p}: invalid schema version {version}")
    for key in REQUIRED_ROOT_ATTRS:
        if key not in meta:
            raise InputFileError(f"{p}: missing root attribute {key!r}")


def _read(p: Path, ds: h5py.Dataset, what: str) -> np.ndarray:
    """Read a whole dataset; fletcher32 failures and other read errors -> InputFileError."""
    try:
        return ds[()]
    except _H5_ERRORS as exc:
        msg = _h5_reason(str(exc))
        if "filter" in msg or "checksum" in msg:
            kind = "checksum mismatch (fletcher32)" if ds.fletcher32 else "filter failure"
            raise InputFileError(f"{p}: {what}: {kind}: the data is corrupt") from None
        raise InputFileError(f"{p}: {what}: cannot read ({msg})") from None


def _tensor_from(p: Path, ds: h5py.Dataset, what: str) -> StridedTensor:
    with _damage(p, what):
        attrs = {k: _py(v) for k, v in ds.attrs.items()}
        stored_dtype = ds.dtype
    for key in ("dtype", "shape", "strides", "offset"):
        if key not in attrs:
            raise InputFileError(f"{p}: {what}: missing attribute {key!r}")
    name = str(attrs["dtype"])
    try:
        want = storage_dtype(name)
    except KeyError:
        raise InputFileError(f"{p}: {what}: unknown dtype attribute {name!r}") from None
    if stored_dtype != want:
        raise InputFileError(f"{p}: {what}: stored as {stored_dtype}, dtype {name!r} needs {want}")
    shape = tuple(int(v) for v in _as_list(attrs["shape"]))
    strides = tuple(int(v) for v in _as_list(attrs["strides"]))
    offset = int(attrs["offset"])
    if len(strides) != len(shape) or offset < 0 or any(s < 0 for s in strides):
        raise InputFileError(f"{p}: {what}: inconsistent shape/strides/offset attributes")
    storage = decode_array(_read(p, ds, what).reshape(-1), name)
    if math.prod(shape) > 0:
        last = offset + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))
        if last >= storage.size:
            raise InputFileError(f"{p}: {what}: view reaches element {last} of a "
                                 f"{storage.size}-element storage buffer")
    return StridedTensor(storage, shape, strides, offset)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


class GoldenFile:
    """An open golden file. `index` comes from /index alone; case data is read on demand."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._f, self.meta = _open_h5(self.path, FORMAT_GOLDEN)
        try:
            with _damage(self.path, "/index"):
                self._load_index()
        except InputFileError:
            self._f.close()
            raise
        self._pos = {e.id: i for i, e in enumerate(self.index)}

    def _load_index(self) -> None:
        """Read /index into `index` (and check it against the root's case_count)."""
        if "index" not in self._f or not isinstance(self._f["index"], h5py.Dataset):
            raise InputFileError(f"{self.path}: missing dataset /index")
        if "cases" not in self._f or not isinstance(self._f["cases"], h5py.Group):
            raise InputFileError(f"{self.path}: missing group /cases")
        arr = _read(self.path, self._f["index"], "/index")
        missing = [n for n, _ in INDEX_COLUMNS if arr.dtype.names is None
                   or n not in arr.dtype.names]
        if missing:
            raise InputFileError(f"{self.path}: /index lacks column {missing[0]!r}")
        self.index: list[IndexEntry] = _entries_from_array(arr)
        if len(self.index) != self.meta["case_count"]:
            raise InputFileError(f"{self.path}: /index has {len(self.index)} rows, "
                                 f"case_count says {self.meta['case_count']}")

    # -- context manager
    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> GoldenFile:
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
        try:
            group = self._f["cases"][case_id]
        except KeyError as exc:
            if "doesn't exist" not in str(exc):
                raise InputFileError(f"{self.path}: case {case_id}: damaged file "
                                     f"({_h5_reason(str(exc))})") from None
            raise InputFileError(f"{self.path}: case {case_id}: group /cases/{case_id} "
                                 "is missing") from None
        except _H5_ERRORS as exc:
            raise InputFileError(f"{self.path}: case {case_id}: damaged file "
                                 f"({_h5_reason(str(exc))})") from None
        return group

    def attrs(self, case_id: str) -> dict[str, Any]:
        """All attributes of /cases/<id> as plain Python values."""
        group = self._group(case_id)
        with _damage(self.path, f"case {case_id}: attributes"):
            return {k: _py(v) for k, v in group.attrs.items()}

    def record(self, case_id: str) -> dict[str, Any]:
        return record_from_attrs(self.attrs(case_id))

    def case(self, case_id: str) -> Case:
        """The Case, rebuilt from the stored record (enough to regenerate it)."""
        try:
            return Case.from_record(self.record(case_id))
        except (TypeError, ValueError, KeyError) as exc:
            raise InputFileError(f"{self.path}: case {case_id}: bad case record "
                                 f"({exc})") from None

    def _dataset(self, case_id: str, name: str) -> h5py.Dataset | None:
        group = self._group(case_id)
        with _damage(self.path, f"case {case_id}: dataset {name}"):
            return group[name] if name in group else None

    def tensor(self, case_id: str, name: str) -> StridedTensor | None:
        """grad_output or self as laid out in memory (None for a null pointer)."""
        entry = self.entry(case_id)
        ds = self._dataset(case_id, name)
        if ds is None:
            if name in entry.null:
                return None
            raise InputFileError(f"{self.path}: case {case_id}: dataset {name!r} is missing")
        return _tensor_from(self.path, ds, f"case {case_id}: dataset {name}")

    def inputs(self, case_id: str) -> tuple[StridedTensor | None, StridedTensor | None]:
        """(grad_output, self) reconstructed from storage + shape/strides/offset."""
        return self.tensor(case_id, "grad_output"), self.tensor(case_id, "self")

    def golden(self, case_id: str) -> np.ndarray | None:
        """The float64 golden (None for calls that must be rejected)."""
        entry = self.entry(case_id)
        ds = self._dataset(case_id, "golden")
        if ds is None:
            if entry.has_golden:
                raise InputFileError(f"{self.path}: case {case_id}: dataset 'golden' is missing")
            return None
        what = f"case {case_id}: dataset golden"
        with _damage(self.path, what):
            stored = ds.dtype
        if stored != np.float64:
            raise InputFileError(f"{self.path}: {what}: stored as {stored}, expected float64")
        return _read(self.path, ds, what)

    def tensors(self, case_id: str) -> CaseTensors:
        grad, self_ = self.inputs(case_id)
        return CaseTensors(grad, self_, self.golden(case_id))


def open_golden(path: str | Path) -> GoldenFile:
    """Open a golden file (validates the root and reads /index)."""
    return GoldenFile(path)


# -- integrity check ----------------------------------------------------------------------


@dataclass
class CheckReport:
    """What `check_file` found: problems (one line each) and how much it read."""

    path: Path
    kind: str = ""
    cases: int = 0
    datasets: int = 0
    bytes_read: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)
    truncated: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, message: str) -> None:
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(message)
        else:
            self.truncated += 1

    def to_dict(self) -> dict[str, Any]:
        return {"file": str(self.path), "format": self.kind, "ok": self.ok,
                "cases": self.cases, "datasets_read": self.datasets,
                "bytes_read": self.bytes_read, "problems": self.problems,
                "problems_not_shown": self.truncated}


def _check_dataset_filters(ds: h5py.Dataset, what: str, report: CheckReport) -> None:
    if ds.size and not ds.fletcher32:
        report.add(f"{what}: no fletcher32 checksum (schema requires it)")


def check_golden(path: str | Path) -> CheckReport:
    """Read every dataset (fletcher32 verified), validate schema and index against the
    groups. Problems are collected; a file that cannot even be opened raises."""
    report = CheckReport(Path(path), FORMAT_GOLDEN)
    with open_golden(path) as gf:
        f = gf._f
        p = gf.path
        ids = gf.ids()
        report.cases = len(ids)
        if len(set(ids)) != len(ids):
            report.add("/index: duplicate case ids")
        try:
            groups = set(f["cases"].keys())
            _check_dataset_filters(f["index"], "/index", report)
        except _H5_ERRORS as exc:
            report.add(f"/cases: damaged file ({_h5_reason(str(exc))})")
            return report
        for extra in sorted(groups - set(ids))[:5]:
            report.add(f"/cases/{extra}: group not listed in /index")
        for entry in gf.index:
            try:
                with _damage(p, f"case {entry.id}"):
                    _check_case(gf, entry, report)
            except InputFileError as exc:
                report.add(str(exc).removeprefix(f"{p}: "))
    return report


def _check_case(gf: GoldenFile, entry: IndexEntry, report: CheckReport) -> None:
    cid = entry.id
    attrs = gf.attrs(cid)
    missing = [k for k in ("id", "product", "dtype", "format", "self_shape", "grad_shape",
                           "seed", "family") + EXPECT_ATTRS if k not in attrs]
    if missing:
        report.add(f"case {cid}: missing attribute {missing[0]!r}")
        return
    case = gf.case(cid)
    if case.id != cid:
        report.add(f"case {cid}: record id is {case.id!r}")
    expected = index_entry(case, bool(attrs["has_golden"]), entry.nbytes)
    for fld in ("family", "product", "dtype", "format", "layout", "distribution",
                "self_shape", "grad_shape", "out_shape", "null", "has_golden"):
        if getattr(expected, fld) != getattr(entry, fld):
            report.add(f"case {cid}: /index {fld} {getattr(entry, fld)!r} != record "
                       f"{getattr(expected, fld)!r}")
    if int(attrs["expected_status"]) != entry.expected_status:
        report.add(f"case {cid}: /index expected_status {entry.expected_status} != "
                   f"attribute {attrs['expected_status']}")
    group = gf._group(cid)
    nbytes = 0
    for name in TENSOR_DATASETS:
        present = name in group
        if name in case.null:
            if present:
                report.add(f"case {cid}: dataset {name!r} present for a null pointer")
            continue
        if not present:
            report.add(f"case {cid}: dataset {name!r} is missing")
            continue
        ds = group[name]
        what = f"case {cid}: dataset {name}"
        _check_dataset_filters(ds, what, report)
        t = _tensor_from(gf.path, ds, what)
        report.datasets += 1
        report.bytes_read += ds.nbytes
        nbytes += ds.nbytes
        desc = case.tensor_desc(name)
        if t.shape != tuple(desc.shape):
            report.add(f"{what}: shape {t.shape} != record {tuple(desc.shape)}")
        stored_name = _py(ds.attrs["dtype"])
        if stored_name != desc.dtype:
            report.add(f"{what}: dtype {stored_name!r} != record {desc.dtype!r}")
    if "golden" in group:
        ds = group["golden"]
        what = f"case {cid}: dataset golden"
        _check_dataset_filters(ds, what, report)
        g = gf.golden(cid)
        report.datasets += 1
        report.bytes_read += ds.nbytes
        nbytes += ds.nbytes
        if g is not None and g.shape != tuple(case.self_shape):
            report.add(f"{what}: shape {g.shape} != self shape {tuple(case.self_shape)}")
    elif entry.has_golden:
        report.add(f"case {cid}: dataset 'golden' is missing")
    if nbytes != entry.nbytes:
        report.add(f"case {cid}: /index nbytes {entry.nbytes} != stored {nbytes}")


def check_file(path: str | Path) -> CheckReport:
    """Integrity check of a golden or a results file (dispatch on the format attribute)."""
    p = Path(path)
    fmt = peek_format(p)
    if fmt == FORMAT_RESULTS:
        return check_results(p)
    return check_golden(p)


def peek_format(path: str | Path) -> str | None:
    """The root `format` attribute of an HDF5 file, or None (no file, not HDF5, none)."""
    p = Path(path)
    try:
        if not p.is_file() or not h5py.is_hdf5(p):
            return None
        with h5py.File(p, "r") as f:
            fmt = f.attrs.get("format")
    except _H5_ERRORS:
        return None
    return _py(fmt) if fmt is not None else None


# -- merging shards ----------------------------------------------------------------------


def _shard_of(gf: GoldenFile) -> tuple[dict[str, Any], tuple[int, int] | None]:
    """(selection without its shard, (K, N) or None) from a file's root attributes."""
    raw = gf.meta.get("selection")
    try:
        sel = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        sel = {}
    shard_text = sel.pop("shard", None)
    if not shard_text:
        return sel, None
    k, n = (int(v) for v in str(shard_text).split("/"))
    return sel, (k, n)


def merge_golden(inputs: list[str | Path], output: str | Path, *, force: bool = False,
                 compress: str | None = None) -> int:
    """Join golden files into one; returns the number of cases.

    Shards of one suite (`generate --shard K/N`, all N of them) are interleaved back into
    the unsharded order, so the result equals an unsharded run case for case. Other files
    are concatenated in the given order. Duplicate ids are refused. The compression of
    the first input is kept unless `compress` says otherwise.
    """
    if not inputs:
        raise UsageError("merge needs at least one input file")
    files = [open_golden(p) for p in inputs]
    try:
        shards = [_shard_of(gf) for gf in files]
        order: list[tuple[GoldenFile, str]] = []
        if all(k_n is not None for _, k_n in shards):
            order = _interleave_shards(files, shards)
        else:
            order = [(gf, cid) for gf in files for cid in gf.ids()]
        seen: dict[str, Path] = {}
        for gf, cid in order:
            if cid in seen:
                raise UsageError(f"case {cid!r} is in both {seen[cid]} and {gf.path}")
            seen[cid] = gf.path
        first = files[0]
        if compress is None:
            compress = _compression_of(first)
        meta = {k: v for k, v in first.meta.items() if k not in VOLATILE_ROOT_ATTRS}
        sel, k_n = shards[0]
        if k_n is not None:
            meta["selection"] = json.dumps(sel, sort_keys=True)
        names = " ".join(str(p) for p in inputs)
        meta = run_meta(f"aclcheck merge -o {output} {names}", str(meta.get("suite", "")),
                        **{k: v for k, v in meta.items() if k != "suite"})
        with GoldenWriter(output, meta, force=force, compress=compress) as writer:
            for gf, cid in order:
                writer.add(gf.case(cid), gf.tensors(cid))
        return len(order)
    finally:
        for gf in files:
            gf.close()


def _interleave_shards(files: list[GoldenFile],
                       shards: list[tuple[dict[str, Any], tuple[int, int] | None]]
                       ) -> list[tuple[GoldenFile, str]]:
    """Cases of shards 1..N of one suite in the unsharded (round-robin) order."""
    sel0, first = shards[0]
    assert first is not None
    n = first[1]
    by_k: dict[int, GoldenFile] = {}
    for gf, (sel, k_n) in zip(files, shards, strict=True):
        assert k_n is not None
        k, nn = k_n
        if nn != n or sel != sel0:
            raise UsageError(f"{gf.path}: shard {k}/{nn} of another suite than "
                             f"{files[0].path}")
        if k in by_k:
            raise UsageError(f"{gf.path}: shard {k}/{n} given twice (also {by_k[k].path})")
        by_k[k] = gf
    missing = [f"{k}/{n}" for k in range(1, n + 1) if k not in by_k]
    if missing:
        raise UsageError(f"shards {', '.join(missing)} missing: merge needs all {n}")
    queues = [deque(by_k[k].ids()) for k in range(1, n + 1)]
    total = sum(len(q) for q in queues)
    order = []
    for i in range(total):
        q = queues[i % n]
        if not q:
            raise UsageError(f"{by_k[i % n + 1].path}: shard sizes do not fit one suite")
        order.append((by_k[i % n + 1], q.popleft()))
    return order


def _compression_of(gf: GoldenFile) -> str:
    for entry in gf.index:
        group = gf._group(entry.id)
        for name in group:
            ds = group[name]
            if ds.chunks is not None:
                return "gzip" if ds.compression == "gzip" else "none"
    return "none"


# -- comparing two golden files (the drift test) ------------------------------------------


def diff_golden(a: str | Path, b: str | Path, limit: int = 20) -> list[str]:
    """Differences in data between two golden files, ignoring volatile root attributes
    (creation time, command line, versions) and storage filters. Empty list = identical:
    same index, same case records, byte-identical datasets with the same attributes."""
    diffs: list[str] = []
    with h5py.File(_ok(a), "r") as fa, h5py.File(_ok(b), "r") as fb:
        ra = {k: _py(v) for k, v in fa.attrs.items() if k not in VOLATILE_ROOT_ATTRS}
        rb = {k: _py(v) for k, v in fb.attrs.items() if k not in VOLATILE_ROOT_ATTRS}
        for key in sorted(set(ra) | set(rb)):
            if ra.get(key) != rb.get(key):
                diffs.append(f"root attribute {key}: {ra.get(key)!r} != {rb.get(key)!r}")
        _diff_node(fa, fb, "/", diffs, limit)
    return diffs[:limit]


def _ok(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise InputFileError(f"{p}: no such file")
    return p


def _diff_node(a: h5py.Group, b: h5py.Group, where: str, diffs: list[str], limit: int) -> None:
    names_a, names_b = set(a.keys()), set(b.keys())
    for name in sorted(names_a ^ names_b)[:5]:
        diffs.append(f"{where}{name}: only in {'first' if name in names_a else 'second'} file")
    for name in sorted(names_a & names_b):
        if len(diffs) >= limit:
            return
        oa, ob = a[name], b[name]
        path = f"{where}{name}"
        if isinstance(oa, h5py.Group) != isinstance(ob, h5py.Group):
            diffs.append(f"{path}: group in one file, dataset in the other")
            continue
        if isinstance(oa, h5py.Group):
            _diff_attrs(oa, ob, path, diffs)
            _diff_node(oa, ob, path + "/", diffs, limit)
            continue
        _diff_attrs(oa, ob, path, diffs)
        if oa.dtype != ob.dtype or oa.shape != ob.shape:
            diffs.append(f"{path}: {oa.dtype}{oa.shape} != {ob.dtype}{ob.shape}")
        elif np.asarray(oa[()]).tobytes() != np.asarray(ob[()]).tobytes():
            diffs.append(f"{path}: data differs")


def _diff_attrs(a: h5py.HLObject, b: h5py.HLObject, path: str, diffs: list[str]) -> None:
    aa = {k: _py(v) for k, v in a.attrs.items()}
    bb = {k: _py(v) for k, v in b.attrs.items()}
    for key in sorted(set(aa) | set(bb)):
        if aa.get(key) != bb.get(key):
            diffs.append(f"{path} attribute {key}: {aa.get(key)!r} != {bb.get(key)!r}")


# -- results: outputs of an implementation, keyed by the golden's case ids ----------------

RESULT_INDEX_COLUMNS: tuple[tuple[str, str], ...] = (
    ("case_id", "s"), ("status", "<i8"), ("time_s", "<f8"), ("has_output", "u1"),
    ("dtype", "s"), ("shape", "s"),
)


@dataclass(frozen=True)
class ResultRow:
    """What an implementation did with one case: status, output (None if none), time."""

    case_id: str
    status: int
    output: np.ndarray | None
    time_s: float
    message: str = ""


def write_results(path: str | Path, implementation: str, rows: Iterable[ResultRow],
                  meta: Mapping[str, Any] | None = None, *, force: bool = False,
                  compress: str = "none") -> int:
    """Write a results file atomically (same filters and checks as golden files).

    Layout: /results/<case_id>/output (bf16 as uint16 bits, dtype attribute) with
    attributes status, time_s, message; /index one row per case. Returns the file size.
    """
    if compress not in COMPRESSIONS:
        raise UsageError(f"unknown compression {compress!r}; valid: {', '.join(COMPRESSIONS)}")
    full = dict(meta or run_meta())
    full["implementation"] = implementation
    out = _AtomicH5(path, force)
    try:
        root = out.file.create_group("results")
        index: list[dict[str, Any]] = []
        seen: set[str] = set()
        for row in rows:
            _check_id(row.case_id)
            if row.case_id in seen:
                raise UsageError(f"duplicate result for case {row.case_id!r}")
            seen.add(row.case_id)
            group = root.create_group(row.case_id)
            set_attrs(group, {"status": np.int64(row.status), "time_s": np.float64(row.time_s),
                              "message": text_attr(row.message)})
            dname, shape = "", ""
            if row.output is not None:
                out_arr = np.ascontiguousarray(row.output)
                stored, dname = encode_array(out_arr)
                shape = shape_text(out_arr.shape)
                _write_dataset(group, "output", stored, compress, {"dtype": text_attr(dname)})
                out.wrote(stored.nbytes)
            index.append({"case_id": row.case_id, "status": row.status, "time_s": row.time_s,
                          "has_output": row.output is not None, "dtype": dname,
                          "shape": shape})
        _write_dataset(out.file, "index", _rows_array(index, RESULT_INDEX_COLUMNS), "none", {})
        _write_root_attrs(out.file, FORMAT_RESULTS, full, len(index))
        return out.commit()
    except BaseException:
        out.abort()
        raise


def _rows_array(rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...]) -> np.ndarray:
    """A compound table: "s" columns as fixed-length UTF-8 bytes sized to the longest."""
    fields = []
    for name, kind in columns:
        if kind == "s":
            width = max([1] + [len(str(r[name]).encode("utf-8")) for r in rows])
            fields.append((name, f"S{width}"))
        else:
            fields.append((name, kind))
    arr = np.zeros(len(rows), dtype=np.dtype(fields))
    for name, kind in columns:
        if kind == "s":
            arr[name] = [str(r[name]).encode("utf-8") for r in rows]
        else:
            arr[name] = [r[name] for r in rows]
    return arr


def _result_index(p: Path, f: h5py.File) -> np.ndarray:
    with _damage(p, "/index"):
        return _result_index_unguarded(p, f)


def _result_index_unguarded(p: Path, f: h5py.File) -> np.ndarray:
    if "index" not in f or "results" not in f:
        raise InputFileError(f"{p}: missing /index or /results")
    arr = _read(p, f["index"], "/index")
    names = arr.dtype.names or ()
    for name, _ in RESULT_INDEX_COLUMNS:
        if name not in names:
            raise InputFileError(f"{p}: /index lacks column {name!r}")
    return arr


def iter_results(path: str | Path) -> Iterator[ResultRow]:
    """Result rows in file order, one case read at a time."""
    p = Path(path)
    f, _meta = _open_h5(p, FORMAT_RESULTS)
    with f:
        arr = _result_index(p, f)
        for rec in arr:
            cid = rec["case_id"].decode("utf-8")
            with _damage(p, f"result {cid}"):
                row = _result_row(p, f, rec, cid)
            yield row


def _result_row(p: Path, f: h5py.File, rec: np.void, cid: str) -> ResultRow:
    try:
        group = f["results"][cid]
    except KeyError as exc:
        if "doesn't exist" not in str(exc):
            raise
        raise InputFileError(f"{p}: result {cid}: group is missing") from None
    output = None
    if "output" in group:
        ds = group["output"]
        name = str(_py(ds.attrs.get("dtype", "")))
        try:
            want = storage_dtype(name)
        except KeyError:
            raise InputFileError(f"{p}: result {cid}: unknown dtype {name!r}") from None
        if ds.dtype != want:
            raise InputFileError(f"{p}: result {cid}: output stored as {ds.dtype}, "
                                 f"dtype {name!r} needs {want}")
        output = decode_array(_read(p, ds, f"result {cid}: dataset output"), name)
    elif rec["has_output"]:
        raise InputFileError(f"{p}: result {cid}: dataset 'output' is missing")
    return ResultRow(cid, int(rec["status"]), output, float(rec["time_s"]),
                     str(_py(group.attrs.get("message", ""))))


def read_results(path: str | Path) -> dict[str, ResultRow]:
    """All result rows of a results file, by case id."""
    return {row.case_id: row for row in iter_results(path)}


def results_meta(path: str | Path) -> dict[str, Any]:
    """Root attributes of a results file (validated)."""
    f, meta = _open_h5(Path(path), FORMAT_RESULTS)
    f.close()
    return meta


def check_results(path: str | Path) -> CheckReport:
    """Read every dataset of a results file and validate it against its index."""
    p = Path(path)
    report = CheckReport(p, FORMAT_RESULTS)
    f, meta = _open_h5(p, FORMAT_RESULTS)
    with f, _damage(p, "/results"):
        arr = _result_index(p, f)
        groups = set(f["results"].keys())
        ids = [b.decode("utf-8") for b in arr["case_id"].tolist()]
        report.cases = len(ids)
        if len(ids) != meta["case_count"]:
            report.add(f"/index has {len(ids)} rows, case_count says {meta['case_count']}")
        for extra in sorted(groups - set(ids))[:5]:
            report.add(f"/results/{extra}: group not listed in /index")
        _check_dataset_filters(f["index"], "/index", report)
    try:
        for row in iter_results(p):
            if row.output is not None:
                report.datasets += 1
                report.bytes_read += row.output.nbytes
    except InputFileError as exc:
        report.add(str(exc).removeprefix(f"{p}: "))
    return report
