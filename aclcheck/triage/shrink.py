"""Shrink a failing case to the smallest call that still fails the same way.

A purpose-built greedy delta-debugging loop over the operator's space of calls
(CaseSpace.proposals: for each dimension, N, C, H, W, Ho, Wo for 2-D pooling, the
smallest values first: 1, 2, 3, a quarter, a half, one less) keeping the first that still
fails the same way; then simpler values (all ones, small exact integers); repeat until
a whole round changes nothing or the time is up. "The same way" is the same verdict, the
same contract rule (an invalid call stays invalid for the same reason) and, where the
original had a hint at the likely bug, the same hint class. Product, dtype, format and
layout never change.

Pure over a `judge` callable (Case -> CaseVerdict): `live.LiveJudge` in the CLI, any
function in tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from aclcheck.cases import Case
from aclcheck.judging.findings import HintCode
from aclcheck.judging.verdicts import CaseVerdict, Verdict
from aclcheck.ops import operator_of
from aclcheck.options import MAX_TIME_S

Judge = Callable[[Case], CaseVerdict]
#: progress(tries, accepted, current smallest case)
Progress = Callable[[int, int, Case], None]


def hint_classes(verdict: CaseVerdict) -> frozenset[HintCode | None]:
    """The codes of a verdict's hints at the likely bug."""
    return frozenset(h.code for h in verdict.hints)


@dataclass(frozen=True)
class Signature:
    """How a case fails: what a smaller case must keep."""

    verdict: Verdict
    rule: str
    hints: frozenset[HintCode | None]

    @classmethod
    def of(cls, case: Case, verdict: CaseVerdict) -> Signature:
        return cls(verdict.verdict, case.expectation.rule, hint_classes(verdict))

    def kept_by(self, case: Case, verdict: CaseVerdict) -> bool:
        """Same verdict and rule; every hint class of the original still present."""
        if verdict.verdict != self.verdict or case.expectation.rule != self.rule:
            return False
        return self.hints <= hint_classes(verdict)


@dataclass(frozen=True)
class ShrinkResult:
    original: Case
    first: CaseVerdict  # the original's verdict
    minimal: Case
    verdict: CaseVerdict  # the minimal case's verdict
    tries: int
    accepted: int
    seconds: float
    timed_out: bool

    @property
    def failing(self) -> bool:
        return self.first.failing


def shrink(case: Case, judge: Judge, *, max_time: float = MAX_TIME_S,
           progress: Progress | None = None, first: CaseVerdict | None = None
           ) -> ShrinkResult:
    """The smallest case found that fails like `case` (see the module docstring).

    A case that does not fail comes back unchanged (result.failing is False).
    """
    start = time.monotonic()
    deadline = start + max_time
    verdict0 = first if first is not None else judge(case)
    tries, accepted = 1 if first is None else 0, 0
    best, best_verdict = case, verdict0
    if not verdict0.failing:
        return ShrinkResult(case, verdict0, case, verdict0, tries, 0,
                            time.monotonic() - start, False)
    want = Signature.of(case, verdict0)
    space = operator_of(case).space
    simple = space.simple_values

    def attempt(candidate: Case) -> bool:
        nonlocal best, best_verdict, tries, accepted
        tries += 1
        v = judge(candidate)
        if progress is not None:
            progress(tries, accepted, best)
        if want.kept_by(candidate, v):
            best, best_verdict = candidate, v
            accepted += 1
            return True
        return False

    timed_out = False
    changed = True
    while changed and not timed_out:
        changed = False
        restart = True
        while restart:  # dims: restart from the first dim after each success
            restart = False
            for candidate in space.proposals(best):
                if time.monotonic() > deadline:
                    timed_out = True
                    break
                if attempt(candidate):
                    changed = restart = True
                    break
            if timed_out:
                break
        for dist in simple:
            if timed_out or best.distribution in simple[:simple.index(dist) + 1]:
                break
            if time.monotonic() > deadline:
                timed_out = True
                break
            if attempt(space.renamed(best.replace(distribution=dist))):
                changed = True
                break
    return ShrinkResult(case, verdict0, best, best_verdict, tries, accepted,
                        time.monotonic() - start, timed_out)
