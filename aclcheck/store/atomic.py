"""Writing a store file atomically: output-path checks, a temporary HDF5 file moved into
place only when complete, and datasets with the store's filters."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from aclcheck import __version__
from aclcheck.errors import OutputFileError
from aclcheck.store.codec import (
    FORMAT_GOLDEN,
    GZIP_LEVEL,
    LIBVER,
    RESULTS_SCHEMA_VERSION,
    SCHEMA_VERSION,
    attr_value,
    chunk_shape,
    created_time,
    set_attrs,
    text_attr,
)
from aclcheck.store.h5read import h5_reason


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


class AtomicH5:
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

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Writes into the file: a failure (disk full, I/O error) removes the temporary
        file and becomes one OutputFileError line naming the target."""
        try:
            yield
        except OSError as exc:
            self.abort()
            raise OutputFileError(f"{self.path}: cannot write: {write_reason(exc)}") from None

    def commit(self) -> int:
        """Close, flush to disk and move into place; returns the file size in bytes."""
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
        try:
            self.file.close()
        except Exception:  # noqa: BLE001 - already failing; the unlink matters more
            pass
        self.tmp.unlink(missing_ok=True)


def write_reason(exc: OSError) -> str:
    """The one-line cause of a failed write (HDF5 buries errno's text in a long message)."""
    msg = " ".join(str(exc).split())
    m = re.search(r"error message = '([^']*)'", msg)
    if m:
        return m.group(1)
    return exc.strerror or h5_reason(msg)


def write_dataset(parent: h5py.Group, name: str, data: np.ndarray, compress: str,
                  attrs: Mapping[str, Any]) -> h5py.Dataset:
    """A dataset with the store's filters: chunked + HDF5's own fletcher32 (+ shuffle and
    gzip), or contiguous without filters when empty (HDF5 cannot chunk zero-size dims)."""
    chunks = chunk_shape(tuple(data.shape), data.dtype.itemsize)
    kw: dict[str, Any] = {"track_times": False}
    if chunks is not None:
        kw.update(chunks=chunks, fletcher32=True)
        if compress == "gzip":
            kw.update(compression="gzip", compression_opts=GZIP_LEVEL, shuffle=True)
    ds = parent.create_dataset(name, data=data, **kw)
    set_attrs(ds, attrs)
    return ds


def write_root_attrs(f: h5py.File, fmt: str, meta: Mapping[str, Any], count: int,
                     version: int | None = None) -> None:
    """The root attributes; `version`: the schema (default: the newest of `fmt`)."""
    f.attrs["format"] = text_attr(fmt)
    if version is None:
        version = SCHEMA_VERSION if fmt == FORMAT_GOLDEN else RESULTS_SCHEMA_VERSION
    f.attrs["schema_version"] = np.int64(version)
    for key, value in meta.items():
        if value is None or key in ("format", "schema_version", "case_count"):
            continue
        f.attrs[key] = attr_value(value)
    if "tool_version" not in f.attrs:
        f.attrs["tool_version"] = text_attr(__version__)
    if "created" not in f.attrs:
        f.attrs["created"] = text_attr(created_time())
    f.attrs["case_count"] = np.int64(count)
