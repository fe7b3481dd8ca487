"""A golden file's digest: what its cases are, cheap to compute, so that reports can show
they judged the same cases (merge refuses shards of two suites with one name)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from aclcheck.errors import InputFileError
from aclcheck.store.codec import FORMAT_GOLDEN, VOLATILE_ROOT_ATTRS, plain_value
from aclcheck.store.dispatch import GoldenFile
from aclcheck.store.h5read import H5_ERRORS, check_layout, damage, member, open_h5, read_error

#: Opens every digest: a change of what the digest covers changes it, so digests of two
#: definitions never compare equal.
DIGEST_TAG = b"aclcheck golden digest 1"
#: How a digest is written (aclcheck.report.json_report checks the same form).
DIGEST_PREFIX = "blake2b:"
#: /index rows read at a time.
DIGEST_ROWS = 1 << 13


def golden_digest(gf: GoldenFile) -> str:
    """'blake2b:<64 hex>' of what an open golden file's cases are, cheap to compute.

    It covers the root attributes that define the suite (all but VOLATILE_ROOT_ATTRS),
    every /index row (schema 3: each case's record, expectation and where its arrays
    lie) and the size of every dataset (schema 3: each pool's dtype and length; schemas
    1 and 2, where the record lives in each case's group: that group's attributes and
    each dataset's dtype, shape and attributes). Not the array bytes (fletcher32 and
    `inspect --check` guard those), the compression, nor the run that wrote the file
    (docs/store.md, "The golden digest"). Reads /index once, in blocks."""
    p = gf.path
    f, meta = open_h5(p, FORMAT_GOLDEN)
    try:
        digest = _Digest(meta)
        index = check_layout(p, member(p, f, "index", "/index"), "/index", gf.read_limit)
        with damage(p, "/index"):
            rows, dtype = int(index.shape[0]), index.dtype
        columns = _Columns(digest, dtype)
        for start in range(0, rows, DIGEST_ROWS):
            columns.add(_rows(p, index, start, min(rows, start + DIGEST_ROWS)))
        columns.close(rows)
        if int(meta["schema_version"]) >= 3:
            _pools(p, f, digest)
        else:
            _groups(gf, f, digest)
        return digest.hexdigest()
    finally:
        f.close()


class _Digest:
    """blake2b-256 over labelled, length-prefixed items (no two item lists feed the
    same bytes), opened with the tag and the file's defining root attributes."""

    def __init__(self, meta: Mapping[str, Any]) -> None:
        self._h = hashlib.blake2b(DIGEST_TAG, digest_size=32)
        self.add("root", {k: v for k, v in meta.items() if k not in VOLATILE_ROOT_ATTRS})

    def add(self, label: str, value: Any) -> None:
        """A JSON-able value, as canonical JSON."""
        self.add_bytes(label, json.dumps(value, sort_keys=True, default=str).encode())

    def add_bytes(self, label: str, data: bytes) -> None:
        for part in (label.encode(), data):
            self._h.update(len(part).to_bytes(8, "little"))
            self._h.update(part)

    def hexdigest(self) -> str:
        return DIGEST_PREFIX + self._h.hexdigest()


class _Columns:
    """/index's bytes column by column (a field's elements only: padding between the
    fields of a row in memory is not data), one running hash a column, so the digest
    does not depend on how many rows are read at a time."""

    def __init__(self, digest: _Digest, dtype: np.dtype) -> None:
        self._digest, self._names = digest, dtype.names or ()
        digest.add("/index columns", [[n, dtype.fields[n][0].str] for n in self._names])
        self._hashes = [hashlib.blake2b(digest_size=32) for _ in self._names]

    def add(self, rows: np.ndarray) -> None:
        for name, h in zip(self._names, self._hashes, strict=True):
            h.update(np.ascontiguousarray(rows[name]).tobytes())

    def close(self, rows: int) -> None:
        self._digest.add("/index rows", rows)
        for name, h in zip(self._names, self._hashes, strict=True):
            self._digest.add_bytes(f"/index column {name}", h.digest())


def _rows(p: Path, index: h5py.Dataset, start: int, stop: int) -> np.ndarray:
    try:
        return index[start:stop]
    except H5_ERRORS as exc:
        raise read_error(p, f"/index rows {start}..{stop - 1}", exc) from None


def _pools(p: Path, f: h5py.File, digest: _Digest) -> None:
    """Schema 3: each pool's name, storage type and length."""
    group = member(p, f, "data", "/data")
    if not isinstance(group, h5py.Group):
        raise InputFileError.at(p, "missing group /data")
    with damage(p, "/data"):
        for name in sorted(group.keys()):
            pool = member(p, group, name, f"/data/{name}")
            if not isinstance(pool, h5py.Dataset):
                raise InputFileError.at(p, f"/data/{name}: is not a dataset")
            digest.add("pool", [name, pool.dtype.str, list(pool.shape)])


def _attrs(obj: h5py.HLObject) -> dict[str, Any]:
    return {k: plain_value(v) for k, v in sorted(obj.attrs.items())}


def _groups(gf: GoldenFile, f: h5py.File, digest: _Digest) -> None:
    """Schemas 1 and 2: each case's group in /index order, its attributes (the record)
    and each member's dtype, shape and attributes (one HDF5 object at a time)."""
    p = gf.path
    cases = member(p, f, "cases", "/cases")
    if not isinstance(cases, h5py.Group):
        raise InputFileError.at(p, "missing group /cases")
    for cid in gf.ids():
        what = f"case {cid}"
        group = member(p, cases, cid, what)
        if not isinstance(group, h5py.Group):
            raise InputFileError.at(p, f"{what}: group /cases/{cid} is missing")
        with damage(p, what):
            digest.add("case", [cid, _attrs(group)])
            for name in sorted(group.keys()):
                item = member(p, group, name, f"{what}: {name}")
                if isinstance(item, h5py.Dataset):
                    digest.add("dataset", [name, item.dtype.str, list(item.shape),
                                           _attrs(item)])
                elif isinstance(item, h5py.Group):
                    digest.add("group", [name, _attrs(item)])
                else:
                    digest.add("other", [name, type(item).__name__])
