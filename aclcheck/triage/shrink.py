"""Shrink a failing case to the smallest call that still fails the same way.

A purpose-built greedy delta-debugging loop over the case's fields: for each dimension
(N, C, H, W, Ho, Wo) try the smallest values first (1, 2, 3, a quarter, a half, one
less) and keep the first that still fails the same way; then try simpler values
(all ones, small exact integers); repeat until a whole round changes nothing or the time
is up. "The same way" is the same verdict, the same contract rule (an invalid call stays
invalid for the same reason) and, where the original had a hint at the likely bug, the
same hint class. Product, dtype, format and layout never change.

Pure over a `judge` callable (Case -> CaseVerdict): `live.LiveJudge` in the CLI, any
function in tests.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from aclcheck.cases import Case, make_id
from aclcheck.judging.verdicts import CaseVerdict, Verdict

Judge = Callable[[Case], CaseVerdict]
#: progress(tries, accepted, current smallest case)
Progress = Callable[[int, int, Case], None]

#: Value distributions tried, simplest first (kept only if the case still fails).
SIMPLE_VALUES: tuple[str, ...] = ("ones", "exact-int")


def hint_classes(verdict: CaseVerdict) -> frozenset[str]:
    """The hints of a verdict's detail with their numbers blanked ("last row (h=#)")."""
    return frozenset(re.sub(r"\d+", "#", line.removeprefix("hint: "))
                     for line in verdict.detail.splitlines() if line.startswith("hint: "))


@dataclass(frozen=True)
class Signature:
    """How a case fails: what a smaller case must keep."""

    verdict: Verdict
    rule: str
    hints: frozenset[str]

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


#: dimension name -> (tensor, axis from the end) pairs it changes together
def _dims(case: Case) -> dict[str, list[tuple[str, int]]]:
    rank = len(case.self_shape)
    dims: dict[str, list[tuple[str, int]]] = {}
    if rank >= 3 and len(case.grad_shape) == rank:
        lead = ["N", "C"] if rank == 4 else ["C"]
        for k, name in enumerate(lead):
            axis = -rank + k
            tensors = ["self", "grad"]
            if case.self_shape[axis] != case.grad_shape[axis]:
                tensors = ["self"]  # a mismatch is the call's point: keep it
            dims[name] = [(t, axis) for t in tensors]
    if rank >= 2:
        dims["H"] = [("self", -2)]
        dims["W"] = [("self", -1)]
    if len(case.grad_shape) >= 2:
        dims["Ho"] = [("grad", -2)]
        dims["Wo"] = [("grad", -1)]
    return dims


def _size(case: Case, where: list[tuple[str, int]]) -> int:
    tensor, axis = where[0]
    shape = case.self_shape if tensor == "self" else case.grad_shape
    return int(shape[axis])


def _with_size(case: Case, where: list[tuple[str, int]], value: int) -> Case:
    shapes = {"self": list(case.self_shape), "grad": list(case.grad_shape)}
    out = list(case.out_shape) if case.out_shape is not None else None
    for tensor, axis in where:
        shapes[tensor][axis] = value
        if tensor == "self" and out is not None and len(out) == len(case.self_shape):
            out[axis] = value  # an out override follows self's size
    return renamed(case.replace(self_shape=tuple(shapes["self"]),
                                grad_shape=tuple(shapes["grad"]),
                                out_shape=tuple(out) if out is not None else None))


def renamed(case: Case, label: str = "min") -> Case:
    """The case under an id that says what it is now."""
    return case.replace(id=make_id(case.product, case.dtype, case.format, label,
                                   case.self_shape, case.grad_shape, case.distribution,
                                   case.layout))


def candidates(value: int) -> list[int]:
    """Smaller sizes to try, smallest first."""
    return sorted({v for v in (1, 2, 3, value // 4, value // 2, value - 1) if 0 < v < value})


def _proposals(case: Case) -> Iterator[Case]:
    for where in _dims(case).values():
        for value in candidates(_size(case, where)):
            yield _with_size(case, where, value)


def shrink(case: Case, judge: Judge, *, max_time: float = 60.0,
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
            for candidate in _proposals(best):
                if time.monotonic() > deadline:
                    timed_out = True
                    break
                if attempt(candidate):
                    changed = restart = True
                    break
            if timed_out:
                break
        for dist in SIMPLE_VALUES:
            if timed_out or best.distribution in SIMPLE_VALUES[:SIMPLE_VALUES.index(dist) + 1]:
                break
            if time.monotonic() > deadline:
                timed_out = True
                break
            if attempt(renamed(best.replace(distribution=dist))):
                changed = True
                break
    return ShrinkResult(case, verdict0, best, best_verdict, tries, accepted,
                        time.monotonic() - start, timed_out)
