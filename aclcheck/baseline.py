"""Diffing: the one home of comparing two runs.

  * two verify reports: new failures, fixed cases, metric regressions (`diff`, the
    baseline gate);
  * two golden files: data drift (`diff_golden`, the golden drift gate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import h5py
import numpy as np

from aclcheck.judging.verdicts import CaseVerdict, Verdict
from aclcheck.store import FORMAT_GOLDEN, VOLATILE_ROOT_ATTRS
from aclcheck.store.h5read import (
    check_layout,
    damage,
    default_read_limit,
    member,
    open_h5,
    read_dataset,
)
from aclcheck.store.schema import plain_value

#: Metrics where a larger value is worse, and how much growth counts as a regression.
REGRESSION_METRICS: dict[str, float] = {"max_ulp": 1.0, "mismatch_ratio": 1.0}


@dataclass(frozen=True)
class Regression:
    case_id: str
    metric: str
    old: float
    new: float


@dataclass
class Diff:
    """Case by case. Only a failing case that now passes is `fixed`; one now listed as a
    known failure (XFAIL) is `now_known`, one no longer judged (SKIP, MISTRUSTED)
    `unjudged`."""

    new_failures: list[tuple[CaseVerdict | None, CaseVerdict]] = field(default_factory=list)
    still_failing: list[tuple[CaseVerdict, CaseVerdict]] = field(default_factory=list)
    fixed: list[tuple[CaseVerdict, CaseVerdict]] = field(default_factory=list)
    now_known: list[tuple[CaseVerdict, CaseVerdict]] = field(default_factory=list)
    unjudged: list[tuple[CaseVerdict, CaseVerdict]] = field(default_factory=list)
    changed: list[tuple[CaseVerdict, CaseVerdict]] = field(default_factory=list)
    regressions: list[Regression] = field(default_factory=list)
    added: list[CaseVerdict] = field(default_factory=list)
    removed: list[CaseVerdict] = field(default_factory=list)

    @property
    def worse(self) -> bool:
        """New failures: what a baseline gate fails on (regressions are reported)."""
        return bool(self.new_failures)


def run_mismatch(old: dict[str, Any], new: dict[str, Any], key: str) -> str | None:
    """How two reports differ in `key` ('golden': by file name, so runs from other
    folders match; 'implementation'), or None. `diff` and `verify --baseline` refuse
    reports of different golden files and warn about different implementations."""
    a, b = old.get(key), new.get(key)
    if key == "golden" and isinstance(a, str) and isinstance(b, str):
        a, b = PurePath(a).name, PurePath(b).name
    if a == b:
        return None
    return f"{key} {old.get(key)!r} vs {new.get(key)!r}"


def _number(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _gates(v: CaseVerdict) -> bool:
    return v.failing or v.verdict == Verdict.XPASS


def diff(old: Sequence[CaseVerdict], new: Sequence[CaseVerdict]) -> Diff:
    """What changed from `old` to `new`, case by case (matched by id)."""
    before = {v.case_id: v for v in old}
    after = {v.case_id: v for v in new}
    d = Diff()
    for cid, now in after.items():
        was = before.get(cid)
        if was is None:
            d.added.append(now)
            if _gates(now):
                d.new_failures.append((None, now))
            continue
        if _gates(now) and not was.failing:
            d.new_failures.append((was, now))
        elif _gates(now):
            d.still_failing.append((was, now))
        elif was.failing:
            group = (d.fixed if now.verdict == Verdict.PASS else
                     d.now_known if now.verdict == Verdict.XFAIL else d.unjudged)
            group.append((was, now))
        elif was.verdict != now.verdict:
            d.changed.append((was, now))
        if now.verdict == Verdict.PASS and was.verdict == Verdict.PASS:
            for metric, factor in REGRESSION_METRICS.items():
                a, b = _number(was.metrics.get(metric)), _number(now.metrics.get(metric))
                if a is not None and b is not None and b > a * factor and b - a > 0:
                    d.regressions.append(Regression(cid, metric, a, b))
    d.removed = [v for cid, v in before.items() if cid not in after]
    return d


# -- golden files (the drift gate) --------------------------------------------------------


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
