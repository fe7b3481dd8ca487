"""Shrink a failing case to the smallest call that still fails the same way.

A purpose-built greedy delta-debugging loop over the operator's space of calls
(CaseSpace.proposals: for each dimension, N, C, H, W, Ho, Wo for 2-D pooling, the
smallest values first: 1, 2, 3, a quarter, a half, one less) keeping the first that still
fails the same way; then simpler values (all ones, small exact integers); repeat until
a whole round changes nothing or the time is up. "The same way" is the same verdict, the
same contract rule (an invalid call stays invalid for the same reason) and the same
diagnosis: a FAIL named by a what-if model or a finding (judging.diagnosis.ranking) keeps that
code, so a window bug never shrinks into a rounding question or into a case whose
golden cancels to zero (no model is judged there); a failure without a code keeps the
hint classes of the original. Product, dtype, format and layout never change; the
minimal case's shape family is named anew (`relabelled`).

Pure over a `judge` callable (Case -> CaseVerdict): `live.LiveJudge` in the CLI, any
function in tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from aclcheck.cases import Case
from aclcheck.judging.case.hints import HintCode
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.judging.diagnosis.codes import DiagnosisCode
from aclcheck.judging.diagnosis.ranking import FINDING_SHARE
from aclcheck.ops import operator_of
from aclcheck.options import MAX_TIME_S

Judge = Callable[[Case], CaseVerdict]
#: progress(tries, accepted, current smallest case)
Progress = Callable[[int, int, Case], None]


def hint_classes(verdict: CaseVerdict) -> frozenset[HintCode | None]:
    """The codes of a verdict's hints at the likely bug."""
    return frozenset(h.code for h in verdict.hints)


def diagnosis_codes(verdict: CaseVerdict) -> tuple[DiagnosisCode, ...]:
    """What names a FAIL's bug, strongest first: the what-if models that reproduce it
    (bit-exact ones first, value models before precision ones), then the findings that
    account for nearly all of its wrong elements."""
    clues = verdict.clues
    if clues is None:
        return ()
    models = sorted(clues.explained_by, key=lambda m: (not m.exact, m.precision, m.code))
    found = [f.code for f in clues.ordered_findings if f.share >= FINDING_SHARE]
    return tuple(dict.fromkeys([m.code for m in models] + found))


@dataclass(frozen=True)
class Signature:
    """How a case fails: what a smaller case must keep."""

    verdict: Verdict
    rule: str
    hints: frozenset[HintCode | None]
    code: DiagnosisCode | None = None  # the diagnosis a smaller case must keep

    @classmethod
    def of(cls, case: Case, verdict: CaseVerdict) -> Signature:
        codes = diagnosis_codes(verdict)
        return cls(verdict.verdict, case.expectation.rule, hint_classes(verdict),
                   codes[0] if codes else None)

    def kept_by(self, case: Case, verdict: CaseVerdict) -> bool:
        """Same verdict and rule; the same diagnosis code among the smaller case's (or,
        without a code, every hint class of the original still present)."""
        if verdict.verdict != self.verdict or case.expectation.rule != self.rule:
            return False
        if self.code is not None:
            return self.code in diagnosis_codes(verdict)
        return self.hints <= hint_classes(verdict)


def relabelled(case: Case) -> Case:
    """The case with its shape family named for its shapes now (a "nondivisible" case
    shrunk into an upsampling one is "upsampling"); families of values, layouts, ranks
    or rules keep their label."""
    hooks = operator_of(case).diagnosis
    family = hooks.family(case) if hooks is not None else case.family
    return case if family == case.family else case.replace(family=family)


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
    return ShrinkResult(case, verdict0, relabelled(best), best_verdict, tries, accepted,
                        time.monotonic() - start, timed_out)
