"""The --repeat check: a case called again, its outputs compared bit for bit (in ULP),
NONDETERMINISTIC where determinism was asked for (--deterministic) and not refused by
something aclcheck trusts (its own adapters' and plugins' notes, never a plain callable's)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.call import Outcome
from aclcheck.dtypes import JUDGED_FORMATS, ulp_distance
from aclcheck.impls.base import CallInputs
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict

if TYPE_CHECKING:
    from aclcheck.running.runner import CaseRunner


def repeat_variation(case: Case, outputs: list[np.ndarray]) -> int:
    """Max ULP distance between the first output and any repeat (0 = bitwise equal)."""
    fmt = JUDGED_FORMATS.get(case.dtype)
    first = outputs[0]
    worst = 0
    for other in outputs[1:]:
        if fmt is None:
            worst = max(worst, int(not np.array_equal(first, other, equal_nan=True)))
            continue
        dist = ulp_distance(first, other, fmt)
        nan_diff = np.isnan(first.astype(np.float32)) != np.isnan(other.astype(np.float32))
        if np.any(nan_diff):
            worst = max(worst, 2**31)
        if dist.size:
            worst = max(worst, int(dist.max()))
    return worst


def judge_repeats(runner: CaseRunner, call: CallInputs, first: Outcome,
                  verdict: CaseVerdict) -> CaseVerdict:
    """The verdict with the repeats' variation: a note, or NONDETERMINISTIC where the run
    asked for determinism and nothing trusted excused the kernel from it."""
    outputs = [first.output]
    for _ in range(runner.opts.repeat - 1):
        again = runner.call(call)
        if again.crashed or not isinstance(again.output, np.ndarray) or (
            again.output.shape != first.output.shape  # type: ignore[union-attr]
        ):
            what = again.crashed or again.raised or "no output"
            return replace(verdict, verdict=Verdict.ERROR,
                           message=f"a repeat failed where the first run did not: {what}")
        outputs.append(again.output)
    worst = repeat_variation(call.case, outputs)  # type: ignore[arg-type]
    metrics = dict(verdict.metrics, repeat_max_ulp=worst)
    verdict = replace(verdict, metrics=metrics)
    if worst == 0:
        return _with_note(verdict, f"deterministic over {runner.opts.repeat} runs")
    note = f"run-to-run variation over {runner.opts.repeat} runs: max {worst} ULP"
    refused = runner.deterministic_note or (first.deterministic_refused
                                            and runner.may_refuse_determinism)
    if runner.opts.deterministic and not refused:
        return replace(verdict, verdict=Verdict.NONDETERMINISTIC,
                       message=f"outputs differ between repeats with determinism on "
                               f"(max {worst} ULP)", notes=verdict.notes + (note,))
    return _with_note(verdict, note)


def _with_note(v: CaseVerdict, note: str) -> CaseVerdict:
    return replace(v, notes=v.notes + (note,))
