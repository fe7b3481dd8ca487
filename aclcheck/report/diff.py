"""Comparing two verify runs: new failures, fixed cases, metric regressions (`diff`, the
baseline gate). Comparing two golden files (data drift) is aclcheck.store.diff.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from aclcheck.judging.case.verdicts import CaseVerdict, Verdict

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
