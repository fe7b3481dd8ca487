"""Comparing two golden files: data drift (`diff_golden`, the golden drift gate): the
root attributes that describe the data, the case list, and case by case the record, the
stored expectation and the bytes of every array (with its view). Files of any two schemas
compare by what they hold, not how it is laid out (a schema-2 file and its conversion to
schema 3 are equal). Comparing two verify reports is aclcheck.report.diff.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aclcheck.cases.layouts import StridedTensor
from aclcheck.store.codec import VOLATILE_ROOT_ATTRS
from aclcheck.store.dispatch import GoldenFile, open_golden

#: Root attributes that say how the file is laid out, not what it holds.
LAYOUT_ROOT_ATTRS = frozenset({"schema_version"})


def diff_golden(a: str | Path, b: str | Path, limit: int = 20) -> list[str]:
    """Differences in data between two golden files, ignoring volatile root attributes
    (creation time, command line, versions), the schema and storage filters. Empty
    list = identical: same cases in the same order, same records and expectations,
    byte-identical arrays with the same views. Every case is read as the readers read
    it (checked, checksums verified), one at a time."""
    with open_golden(a) as ga, open_golden(b) as gb:
        skip = VOLATILE_ROOT_ATTRS | LAYOUT_ROOT_ATTRS
        ra = {k: v for k, v in ga.meta.items() if k not in skip}
        rb = {k: v for k, v in gb.meta.items() if k not in skip}
        diffs = [f"root attribute {key}: {ra.get(key)!r} != {rb.get(key)!r}"
                 for key in sorted(set(ra) | set(rb)) if ra.get(key) != rb.get(key)]
        ids_a, ids_b = ga.ids(), gb.ids()
        only_a, only_b = set(ids_a) - set(ids_b), set(ids_b) - set(ids_a)
        diffs += [f"case {cid}: only in the first file" for cid in sorted(only_a)[:5]]
        diffs += [f"case {cid}: only in the second file" for cid in sorted(only_b)[:5]]
        common = [cid for cid in ids_a if cid not in only_a]
        if not only_a and not only_b and ids_a != ids_b:
            diffs.append("the cases are in another order")
        for cid in common:
            if len(diffs) >= limit:
                break
            diffs += _diff_case(ga, gb, cid)
    return diffs[:limit]


def _diff_case(ga: GoldenFile, gb: GoldenFile, cid: str) -> list[str]:
    ca, cb = ga.case(cid), gb.case(cid)
    if ca != cb:
        ra, rb = ca.to_record(), cb.to_record()
        return [f"case {cid}: record {k}: {ra.get(k)!r} != {rb.get(k)!r}"
                for k in sorted(set(ra) | set(rb)) if ra.get(k) != rb.get(k)][:3]
    diffs = []
    aa, ab = ga.attrs(cid), gb.attrs(cid)
    for key in ("expected_status", "expected_rule", "expected_reason", "out_written",
                "has_golden"):
        if aa.get(key) != ab.get(key):
            diffs.append(f"case {cid}: {key}: {aa.get(key)!r} != {ab.get(key)!r}")
    da, db = ga.data(cid), gb.data(cid)
    for name in da.inputs:
        if not _same_tensor(da.inputs[name], db.inputs.get(name)):
            diffs.append(f"case {cid}: {name}: data differs")
    if not _same_array(da.golden, db.golden):
        diffs.append(f"case {cid}: golden: data differs")
    return diffs


def _same_tensor(a: StridedTensor | None, b: StridedTensor | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.shape, a.strides, a.offset) == (b.shape, b.strides, b.offset) \
        and _same_array(a.storage, b.storage)


def _same_array(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
