"""Which reader and which check a store file gets: the one place that looks at a file's
root (its `format` attribute, a golden file's schema version) and picks the packed
reader and check (schema 3), the group-per-case ones of aclcheck.store.legacy (schemas 1
and 2), or the results file's check."""

from __future__ import annotations

from pathlib import Path

import h5py

from aclcheck.store.check_report import CheckReport
from aclcheck.store.codec import FORMAT_GOLDEN, FORMAT_RESULTS, SCHEMA_VERSION, plain_value
from aclcheck.store.golden_check import check_packed
from aclcheck.store.golden_reader import PackedFile
from aclcheck.store.h5read import H5_ERRORS, open_h5
from aclcheck.store.legacy.group_check import check_groups
from aclcheck.store.legacy.group_reader import GroupFile
from aclcheck.store.results import check_results

#: What open_golden returns: one interface over every schema.
GoldenFile = GroupFile | PackedFile


def schema_version(path: str | Path) -> int:
    """The schema version of a golden file (its root checked as every reader does)."""
    f, meta = open_h5(Path(path), FORMAT_GOLDEN)
    f.close()
    return int(meta["schema_version"])


def open_golden(path: str | Path, *, read_limit: int | None = None) -> GoldenFile:
    """Open a golden file of any schema this aclcheck reads (validates the root and
    /index): schema 3 packed, schemas 1 and 2 a group per case."""
    if schema_version(path) >= SCHEMA_VERSION:
        return PackedFile(path, read_limit=read_limit)
    return GroupFile(path, read_limit=read_limit)


def check_golden(path: str | Path) -> CheckReport:
    """Read every array (fletcher32 verified), validate schema and index against the
    records. Problems are collected; a file that cannot even be opened raises."""
    if schema_version(path) >= SCHEMA_VERSION:
        return check_packed(path)
    return check_groups(path)


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
    except H5_ERRORS:
        return None
    return plain_value(fmt) if fmt is not None else None


def is_golden(path: str | Path) -> bool:
    """Whether `path` is an aclcheck golden file (by its root attribute, not its name)."""
    return peek_format(path) == FORMAT_GOLDEN
