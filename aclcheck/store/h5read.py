"""Opening and reading store files defensively: the root checks, one-line errors for
every h5py failure, and the dataset rules every reader applies before reading."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from aclcheck.errors import InputFileError
from aclcheck.ops import OPERATORS
from aclcheck.store.codec import (
    CHUNK_BYTES,
    FORMAT_GOLDEN,
    REQUIRED_ROOT_ATTRS,
    RESULTS_SCHEMA_VERSION,
    SCHEMA1_OPERATOR,
    SCHEMA_VERSION,
    plain_value,
)

#: The filters the writer uses; a dataset with any other filter is refused unread.
ALLOWED_FILTERS = {h5py.h5z.FILTER_FLETCHER32: "fletcher32", h5py.h5z.FILTER_SHUFFLE: "shuffle",
                   h5py.h5z.FILTER_DEFLATE: "gzip"}
#: Largest chunk a reader decodes (the writer's are <= CHUNK_BYTES): bounds what one
#: compressed chunk can inflate to.
MAX_CHUNK_BYTES = 16 * CHUNK_BYTES
#: Environment variable that sets the read limit in MB (default: half the memory).
READ_LIMIT_ENV = "ACLCHECK_MAX_READ_MB"
_MIN_READ_LIMIT = 1 << 30

# -- opening ------------------------------------------------------------------------------


def memory_bytes() -> int:
    """Physical memory of this machine (0 when unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def default_read_limit() -> int:
    """Largest dataset a reader loads, in bytes: $ACLCHECK_MAX_READ_MB, or half the
    physical memory (at least 1 GiB). A file cannot make a reader allocate more."""
    env = os.environ.get(READ_LIMIT_ENV, "").strip()
    if env:
        try:
            return max(1, int(float(env) * 1e6))
        except ValueError:
            pass
    return max(_MIN_READ_LIMIT, memory_bytes() // 2)


def open_h5(path: str | Path, expected_format: str) -> tuple[h5py.File, dict[str, Any]]:
    """Open and validate the root of a store file; every failure is one InputFileError."""
    p = Path(path)
    if not p.exists():
        raise InputFileError.at(p, "no such file")
    if p.is_dir():
        raise InputFileError.at(p, "is a folder, expected an HDF5 file")
    if not p.is_file():
        raise InputFileError.at(p, "not a regular file (a FIFO or device is not read)")
    try:
        is_hdf5 = h5py.is_hdf5(p)
    except OSError as exc:
        raise InputFileError.at(p, f"cannot read: {exc.strerror or exc}") from None
    if not is_hdf5:
        raise InputFileError.at(p, "not an HDF5 file")
    try:
        f = h5py.File(p, "r", rdcc_nbytes=0)
    except H5_ERRORS as exc:
        msg = str(exc)
        if "truncated" in msg:
            m = re.search(r"eof = (\d+).*stored_eof = (\d+)", msg)
            detail = (f"{m.group(1)} of {m.group(2)} bytes present" if m
                      else h5_reason(msg))
            raise InputFileError.at(p, f"truncated HDF5 file ({detail})") from None
        raise InputFileError.at(p, f"unreadable HDF5 file ({h5_reason(msg)})") from None
    try:
        meta = {k: plain_value(v) for k, v in f.attrs.items()}
    except H5_ERRORS as exc:
        f.close()
        raise InputFileError.at(p, f"damaged root attributes ({h5_reason(str(exc))})") from None
    try:
        _check_root(p, meta, expected_format)
    except InputFileError:
        f.close()
        raise
    return f, meta


def h5_reason(msg: str) -> str:
    """The useful part of an h5py/HDF5 error message, on one line."""
    msg = " ".join(msg.split())
    m = re.search(r"\((.*)\)\s*$", msg)
    return m.group(1) if m else msg


#: What h5py raises on damaged metadata (corrupt headers, failed metadata checksums,
#: broken links): each becomes an InputFileError naming the file and the object.
H5_ERRORS = (OSError, KeyError, RuntimeError, ValueError, TypeError, IndexError)


@contextmanager
def damage(p: Path, what: str) -> Iterator[None]:
    """Turn h5py errors met while reading `what` into one-line InputFileErrors."""
    try:
        yield
    except InputFileError:
        raise
    except H5_ERRORS as exc:
        raise InputFileError.at(p, f"{what}: damaged file ({h5_reason(str(exc))})") from None


def _check_root(p: Path, meta: Mapping[str, Any], expected_format: str) -> None:
    fmt = meta.get("format")
    if fmt is None:
        raise InputFileError.at(p, "not an aclcheck file (no 'format' attribute)")
    if fmt != expected_format:
        raise InputFileError.at(p, f"is a {fmt!r} file, expected {expected_format!r}")
    version = meta.get("schema_version")
    if not isinstance(version, int):
        raise InputFileError.at(p, "missing or non-integer 'schema_version' attribute")
    newest = SCHEMA_VERSION if expected_format == FORMAT_GOLDEN else RESULTS_SCHEMA_VERSION
    if version > newest:
        raise InputFileError.at(p, f"schema version {version} is newer than this aclcheck "
                                f"understands ({newest}); upgrade aclcheck")
    if version < 1:
        raise InputFileError.at(p, f"invalid schema version {version}")
    for key in REQUIRED_ROOT_ATTRS:
        if key not in meta:
            raise InputFileError.at(p, f"missing root attribute {key!r}")
    count = meta["case_count"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InputFileError.at(p, f"root attribute 'case_count' must be a non-negative "
                                f"integer, got {count!r}")
    if expected_format == FORMAT_GOLDEN:
        file_operator(p, meta)


def file_operator(p: Path, meta: Mapping[str, Any]) -> str:
    """The operator whose cases a golden file holds: the root attribute `operator` (schema
    2 on), the 2D adaptive average pooling backward for schema 1 (the only operator that
    wrote it); one InputFileError when the file names an operator this aclcheck lacks."""
    if meta.get("schema_version") == 1:
        return SCHEMA1_OPERATOR
    name = meta.get("operator")
    if name is None:
        raise InputFileError.at(p, "missing root attribute 'operator' (schema version "
                                f"{meta.get('schema_version')})")
    if not isinstance(name, str):
        raise InputFileError.at(p, f"root attribute 'operator' must be text, got {name!r}")
    if name not in OPERATORS:
        raise InputFileError.at(p, f"written for operator {name!r}, which this aclcheck does "
                                f"not know (known: {', '.join(OPERATORS)}); upgrade aclcheck")
    return str(name)


#: A read whose fletcher32 checksum failed, as every reader and `inspect --check` say it.
CHECKSUM_MISMATCH = "checksum mismatch (fletcher32)"
CORRUPT = f"{CHECKSUM_MISMATCH}: the data is corrupt"


def read_error(p: Path, what: str, exc: BaseException, corrupt: str = CORRUPT
               ) -> InputFileError:
    """The one-line error of a failed read of `what`: `corrupt` where a filter failed
    (the fletcher32 checksum, as HDF5 reports it), else the reason HDF5 gives."""
    msg = h5_reason(str(exc))
    if "filter" in msg or "checksum" in msg:
        return InputFileError.at(p, f"{what}: {corrupt}")
    return InputFileError.at(p, f"{what}: cannot read ({msg})")


def read_dataset(p: Path, ds: h5py.Dataset, what: str) -> np.ndarray:
    """Read a whole dataset; fletcher32 failures and other read errors -> InputFileError."""
    try:
        return ds[()]
    except H5_ERRORS as exc:
        corrupt = CORRUPT if ds.fletcher32 else "filter failure: the data is corrupt"
        raise read_error(p, what, exc, corrupt) from None


def member(p: Path, parent: h5py.Group, name: str, what: str) -> object | None:
    """parent[name], or None when there is no such member. Soft and external links are
    refused unfollowed (an external link would open another file)."""
    with damage(p, what):
        link = parent.get(name, getlink=True)
        if link is None:
            return None
        if not isinstance(link, h5py.HardLink):
            kind = ("a link into another file" if isinstance(link, h5py.ExternalLink)
                    else "a soft link")
            raise InputFileError.at(p, f"{what}: is {kind}; not followed")
        return parent[name]


# -- dataset rules ------------------------------------------------------------------------


def declared_bytes(ds: h5py.Dataset) -> int:
    """Bytes the dataset's shape and dtype declare (exact integers, no overflow)."""
    return math.prod(int(d) for d in ds.shape) * int(ds.dtype.itemsize)


def check_layout(p: Path, ds: object, what: str, limit: int) -> h5py.Dataset:
    """Refuse, before reading a byte of data, any dataset the writer does not produce:
    a group in a dataset's place, external storage (data in another file), virtual or
    compact datasets, unknown filters, non-empty data without a fletcher32 checksum,
    chunks never written, oversized chunks, and anything declaring over `limit` bytes."""
    if not isinstance(ds, h5py.Dataset):
        raise InputFileError.at(p, f"{what}: is a {type(ds).__name__.lower()}, expected a "
                                "dataset")
    with damage(p, what):
        dcpl = ds.id.get_create_plist()
        layout = dcpl.get_layout()
        external = dcpl.get_external_count()
        filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
        nbytes = declared_bytes(ds)
        chunks = ds.chunks
    if external:
        raise InputFileError.at(p, f"{what}: refers to external storage (data kept in "
                                "another file); not read")
    if layout not in (h5py.h5d.CONTIGUOUS, h5py.h5d.CHUNKED):
        kind = {h5py.h5d.COMPACT: "compact"}.get(layout, "virtual or unknown")
        raise InputFileError.at(p, f"{what}: {kind} dataset layout; not read")
    unknown = [f for f in filters if f not in ALLOWED_FILTERS]
    if unknown:
        raise InputFileError.at(p, f"{what}: unknown HDF5 filter {unknown[0]}; not read")
    if nbytes > limit:
        raise InputFileError.at(p, f"{what}: declares {nbytes} bytes, over the read limit of "
                                f"{limit} bytes (${READ_LIMIT_ENV})")
    if nbytes == 0:
        return ds
    if layout != h5py.h5d.CHUNKED or h5py.h5z.FILTER_FLETCHER32 not in filters:
        raise InputFileError.at(p, f"{what}: stored without a fletcher32 checksum; not read")
    assert chunks is not None
    if math.prod(chunks) * ds.dtype.itemsize > MAX_CHUNK_BYTES:
        raise InputFileError.at(p, f"{what}: chunks of {math.prod(chunks)} elements, over "
                                f"{MAX_CHUNK_BYTES} bytes; not read")
    expected = math.prod(-(-int(d) // int(c)) for d, c in zip(ds.shape, chunks, strict=True))
    with damage(p, what):
        written = ds.id.get_num_chunks()
    if written != expected:
        raise InputFileError.at(p, f"{what}: {written} of {expected} chunks stored; the data "
                                "is incomplete")
    return ds


def read_checked(p: Path, ds: object, what: str, limit: int) -> np.ndarray:
    """`check_layout`, then the whole dataset (fletcher32 verified by HDF5)."""
    return read_dataset(p, check_layout(p, ds, what, limit), what)
