"""The store's on-disk schema: names and constants, attribute and shape-text codecs,
chunking, run metadata and case-id rules (docs/store.md). Pure functions, no file I/O
beyond writing attributes to an open object. The /index table is aclcheck.store.index,
case records aclcheck.store.records, array codecs aclcheck.dtypes."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import h5py
import ml_dtypes
import numpy as np

from aclcheck import __version__
from aclcheck.cases import Case
from aclcheck.errors import AclcheckError, UsageError

FORMAT_GOLDEN = "aclcheck-golden"
FORMAT_RESULTS = "aclcheck-results"
#: Golden files: the newest schema this aclcheck reads and writes. 1: a group per case;
#: 2 adds the root attribute `operator` (schema 1 files hold the 2D adaptive average
#: pooling backward, the only operator that wrote them); 3: the packed layout
#: (aclcheck.store.golden_schema), the one every golden file is written in. Schemas 1 and
#: 2 are read by aclcheck.store.legacy.
SCHEMA_VERSION = 3
#: Results files hold outputs by case id, whatever the operator: their layout is unchanged.
RESULTS_SCHEMA_VERSION = 1
#: The operator of a golden file of schema 1.
SCHEMA1_OPERATOR = "adaptive_avg_pool2d_backward"
#: Target chunk size: large enough for throughput, small enough to stay in cache.
CHUNK_BYTES = 1 << 20
GZIP_LEVEL = 1
COMPRESSIONS = ("none", "gzip")
#: HDF5 1.10 object formats (single-chunk / fixed-array chunk indexes, compact groups):
#: a third of the per-case overhead of the 1.6 formats; readable by HDF5 >= 1.10.
LIBVER = ("v110", "v110")
CASE_ID_RE = re.compile(r"[A-Za-z0-9_.-]+")
MAX_ID_LENGTH = 200
#: Root attributes every file carries (both formats).
REQUIRED_ROOT_ATTRS = ("format", "schema_version", "tool_version", "created", "case_count")
#: Root attributes that describe the run, not the data (ignored when comparing files).
VOLATILE_ROOT_ATTRS = frozenset(
    {"created", "command_line", "tool_version", "numpy_version", "h5py_version",
     "hdf5_version", "ml_dtypes_version", "python_version"}
)


# -- small codecs ------------------------------------------------------------------------


def shape_text(shape: Iterable[int]) -> str:
    """(2, 3, 17, 9) -> '2x3x17x9' (the index's shape columns)."""
    return "x".join(map(str, map(int, shape)))


def parse_shape_text(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split("x")) if text else ()




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


def attr_value(value: Any) -> Any:
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


def plain_value(value: Any) -> Any:
    """An attribute as plain Python (str, int, float, list of int)."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray):
        return [plain_value(v) for v in value.tolist()]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


# -- metadata -----------------------------------------------------------------------------


def created_time() -> str:
    """Now (UTC, ISO 8601), or $SOURCE_DATE_EPOCH's time where it is set (reproducible
    builds' convention: the same command then writes the same bytes)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    when = _dt.datetime.now(_dt.UTC)
    if epoch.isdigit():
        when = _dt.datetime.fromtimestamp(int(epoch), _dt.UTC)
    return when.isoformat(timespec="seconds")


def run_meta(command_line: str = "", suite: str = "", **extra: Any) -> dict[str, Any]:
    """Root attributes describing the run: versions, creation time, command line, suite."""
    meta: dict[str, Any] = {
        "tool_version": __version__,
        "numpy_version": np.__version__,
        "h5py_version": h5py.version.version,
        "hdf5_version": h5py.version.hdf5_version,
        "ml_dtypes_version": ml_dtypes.__version__,
        "python_version": sys.version.split()[0],
        "created": created_time(),
        "command_line": command_line,
        "suite": suite,
    }
    meta.update(extra)
    return meta



def rows_array(rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...]) -> np.ndarray:
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


def is_safe_id(case_id: object) -> bool:
    """An id usable as an HDF5 group name and as one path component on any system:
    letters, digits, '_', '.', '-', at most MAX_ID_LENGTH characters, not '.' or '..'."""
    return (isinstance(case_id, str) and len(case_id) <= MAX_ID_LENGTH
            and CASE_ID_RE.fullmatch(case_id) is not None and case_id not in (".", ".."))


def check_id(case_id: str, error: type[AclcheckError] = UsageError) -> None:
    """`error` for an id `is_safe_id` refuses (the writers call it for every case)."""
    if not is_safe_id(case_id):
        raise error(f"case id {case_id!r} is not a valid group name "
                         f"(use only letters, digits, '_', '.', '-'; at most "
                         f"{MAX_ID_LENGTH} characters; not '.' or '..')")


def check_ids(cases: Iterable[Case], error: type[AclcheckError] = UsageError) -> None:
    """Reject ids the store cannot use, before any work."""
    for case in cases:
        check_id(case.id, error)


def index_dtype_problem(dtype: np.dtype, columns: tuple[tuple[str, str], ...]) -> str | None:
    """Why a table's compound dtype is not the schema's (missing column, wrong kind)."""
    names = dtype.names or ()
    for name, kind in columns:
        if name not in names:
            return f"lacks column {name!r}"
        got = dtype.fields[name][0]
        if kind == "s" and got.kind != "S":
            return f"column {name!r} is {got}, expected fixed-length text"
        if kind != "s":
            want = np.dtype(kind)
            ok_kinds = "iu" if want.kind in "iu" else want.kind  # any integer for integers
            if got.kind not in ok_kinds:
                return f"column {name!r} is {got}, expected {want}"
        if got.shape:
            return f"column {name!r} is an array column"
    return None
