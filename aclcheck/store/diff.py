"""Comparing two golden files: data drift (`diff_golden`, the golden drift gate):
the root attributes that describe the data, /index, every case record and the bytes of
every dataset. Comparing two verify reports is aclcheck.report.diff.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from aclcheck.store.codec import FORMAT_GOLDEN, VOLATILE_ROOT_ATTRS, plain_value
from aclcheck.store.h5read import (
    check_layout,
    damage,
    default_read_limit,
    member,
    open_h5,
    read_dataset,
)


def diff_golden(a: str | Path, b: str | Path, limit: int = 20) -> list[str]:
    """Differences in data between two golden files, ignoring volatile root attributes
    (creation time, command line, versions) and storage filters. Empty list = identical:
    same index, same case records, byte-identical datasets with the same attributes.
    Both files must be golden files; every dataset passes the readers' layout rules."""
    diffs: list[str] = []
    fa, meta_a = open_h5(a, FORMAT_GOLDEN)
    try:
        fb, meta_b = open_h5(b, FORMAT_GOLDEN)
    except BaseException:
        fa.close()
        raise
    with fa, fb:
        ra = {k: v for k, v in meta_a.items() if k not in VOLATILE_ROOT_ATTRS}
        rb = {k: v for k, v in meta_b.items() if k not in VOLATILE_ROOT_ATTRS}
        for key in sorted(set(ra) | set(rb)):
            if ra.get(key) != rb.get(key):
                diffs.append(f"root attribute {key}: {ra.get(key)!r} != {rb.get(key)!r}")
        with damage(Path(a), f"compared with {b}"):
            _diff_node(_Side(Path(a), fa), _Side(Path(b), fb), "/", diffs, limit)
    return diffs[:limit]


@dataclass
class _Side:
    path: Path
    node: Any  # a group or a dataset
    limit: int = field(default_factory=default_read_limit)

    def at(self, name: str, where: str) -> _Side:
        return _Side(self.path, member(self.path, self.node, name, where), self.limit)

    def data(self, what: str) -> np.ndarray:
        ds = check_layout(self.path, self.node, what, self.limit)
        return np.asarray(read_dataset(self.path, ds, what))


def _diff_node(a: _Side, b: _Side, where: str, diffs: list[str], limit: int) -> None:
    names_a, names_b = set(a.node.keys()), set(b.node.keys())
    for name in sorted(names_a ^ names_b)[:5]:
        diffs.append(f"{where}{name}: only in {'first' if name in names_a else 'second'} file")
    for name in sorted(names_a & names_b):
        if len(diffs) >= limit:
            return
        path = f"{where}{name}"
        oa, ob = a.at(name, path), b.at(name, path)
        if isinstance(oa.node, h5py.Group) != isinstance(ob.node, h5py.Group):
            diffs.append(f"{path}: group in one file, dataset in the other")
            continue
        _diff_attrs(oa.node, ob.node, path, diffs)
        if isinstance(oa.node, h5py.Group):
            _diff_node(oa, ob, path + "/", diffs, limit)
            continue
        da, db = oa.node, ob.node
        if da.dtype != db.dtype or da.shape != db.shape:
            diffs.append(f"{path}: {da.dtype}{da.shape} != {db.dtype}{db.shape}")
        elif oa.data(path).tobytes() != ob.data(path).tobytes():
            diffs.append(f"{path}: data differs")


def _diff_attrs(a: h5py.HLObject, b: h5py.HLObject, path: str, diffs: list[str]) -> None:
    aa = {k: plain_value(v) for k, v in a.attrs.items()}
    bb = {k: plain_value(v) for k, v in b.attrs.items()}
    for key in sorted(set(aa) | set(bb)):
        if aa.get(key) != bb.get(key):
            diffs.append(f"{path} attribute {key}: {aa.get(key)!r} != {bb.get(key)!r}")
