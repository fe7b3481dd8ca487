"""A case's lifecycle: prepare -> call -> recall -> conclude, and the only place a verdict
is made. `prepare` builds the case's model and call (or SKIPs it); the calls go through a
`CaseRunner` (aclcheck.running.calls: in this process or an isolated worker); the
stale-state check calls the case again after its twin (aclcheck.running.recall); `conclude`
judges what came back, with the --repeat check, notes and a FAIL's evidence. The order
cases run in (serial, pipelined, fanned out) is aclcheck.running.schedule's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.cases.call import Capabilities, Outcome
from aclcheck.cases.layouts import StridedTensor
from aclcheck.dtypes import JUDGED_FORMATS, ulp_distance
from aclcheck.errors import UsageError, first_sentence
from aclcheck.fanout import Lost, LostHow
from aclcheck.impls.base import CallInputs
from aclcheck.judging.case.default_standard import accumulation
from aclcheck.judging.case.expressible import not_expressible
from aclcheck.judging.case.judge import judge, lost, skipped
from aclcheck.judging.case.model import CaseModel
from aclcheck.judging.case.overflow import judged_mode
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.ops import operator_of
from aclcheck.running import recall
from aclcheck.running.calls import CaseRunner
from aclcheck.running.clue_pool import case_evidence


@dataclass(frozen=True)
class Prepared:
    """A case ready to run: its model (built once, by its operator), its data, the call."""

    model: CaseModel
    data: CaseData
    call: CallInputs


def call_of(case: Case, inputs: Mapping[str, StridedTensor | None],
            overflow_mode: str | None) -> CallInputs:
    """The call an adapter gets: the inputs and the overflow mode the case is judged in
    (the product's default, or the run's --overflow-mode where the product offers it)."""
    return CallInputs(case, inputs, judged_mode(case.product, overflow_mode)[0].value)


def prepare(runner: CaseRunner, loaded: CaseData, caps: Capabilities
            ) -> Prepared | CaseVerdict:
    """The call to make, or the SKIP verdict of a case the adapter cannot run."""
    case = loaded.case
    reason = runner.impl.supports(case)
    if reason is not True:
        return skipped(case, str(reason))
    if case.expectation.isolated_only and runner.impl.makes_calls and not runner.impl.spec:
        return skipped(case, f"{runner.impl.name} cannot run in a worker process: this call "
                             "is made only there (it may write outside its buffers)")
    opts = runner.opts.judge
    model = operator_of(case).model(case, accumulation(case.product, case.dtype,
                                                       opts.accumulate, opts.overrides))
    cannot = not_expressible(model, caps)
    if cannot is not None:
        return skipped(case, cannot)
    return Prepared(model, loaded, call_of(case, loaded.inputs, opts.overflow_mode))


def _twin(prepared: Prepared) -> recall.TwinOf:
    return recall.TwinOf(prepared.call, operator_of(prepared.call.case).spatial_rank)


def _recall_due(runner: CaseRunner, prepared: Prepared, first: Outcome) -> bool:
    return runner.opts.recall and recall.wanted(prepared.call, first)


def send_again(runner: CaseRunner, prepared: Prepared, first: Outcome) -> bool:
    """The stale-state check's calls (aclcheck.running.recall: the case's twin, then the
    case again) sent to the recall worker, not awaited (the caller judges the first
    answer meanwhile and then asks CaseRunner.recall_answer); False where no call is due
    or the calls do not go to the recall worker (call_again makes them)."""
    if not _recall_due(runner, prepared, first) or not runner.recall_apart(prepared.call):
        return False
    runner.send_recall(_twin(prepared), prepared.call)
    return True


def call_again(runner: CaseRunner, prepared: Prepared, first: Outcome) -> Outcome | None:
    """The stale-state check's calls, awaited: in the recall worker where there is one
    (send_again), else one after the other where the case's first call ran; the second
    outcome (None: not checked; the twin's answer is not the case's)."""
    if not _recall_due(runner, prepared, first):
        return None
    if send_again(runner, prepared, first):
        return runner.recall_answer()
    runner.call(_twin(prepared).build())  # not judged
    return runner.call(prepared.call)


def judge_first(runner: CaseRunner, prepared: Prepared, outcome: Outcome,
                caps: Capabilities) -> CaseVerdict:
    """The verdict of the case's first answer alone (conclude adds the rest)."""
    if outcome.unusable is not None:  # the same for every case: one usage error
        raise UsageError(outcome.unusable)
    return judge(prepared.model, prepared.data, outcome, caps, runner.opts.judge)


#: failing cases whose evidence the caller computes (elsewhere): (data, output) each
Later = list[tuple[CaseData, np.ndarray]]


def conclude(runner: CaseRunner, prepared: Prepared, outcome: Outcome,
             caps: Capabilities, again: Outcome | None = None,
             judged: CaseVerdict | None = None, later: Later | None = None) -> CaseVerdict:
    """Judge what came back (and the second answer of the stale-state check, repeating
    the call if asked), with notes (the caller adds the repro line:
    aclcheck.running.config.VerifyConfig.repro). `judged`: the first answer's verdict
    where judge_first already gave it. `later`: a FAIL's diagnosis evidence is not
    computed but asked for there (the caller attaches it: aclcheck.running.clue_pool)."""
    opts = runner.opts
    verdict = judged if judged is not None else judge_first(runner, prepared, outcome, caps)
    failing = outcome  # the answer whose numbers the verdict reports
    if again is not None and not recall.same_answer(outcome.output, again.output):
        first_passed = verdict.verdict is Verdict.PASS
        verdict = recall.merged(verdict, judge(prepared.model, prepared.data, again, caps,
                                               opts.judge))
        if first_passed and verdict.verdict is not Verdict.PASS:
            failing = again
    verdict = _with_clues(verdict, prepared.data, failing, later)
    if opts.repeat > 1 and isinstance(outcome.output, np.ndarray) and not outcome.crashed:
        verdict = judge_repeats(runner, prepared.call, outcome, verdict)
    if runner.deterministic_note:
        verdict = _with_note(verdict, runner.deterministic_note)
    if outcome.log:  # the worker's output during this call (e.g. glibc's abort message)
        verdict = _replace(verdict, detail="\n".join(filter(None, (
            verdict.detail.rstrip("\n"), "worker output (stdout, stderr):", outcome.log))))
    return verdict


def _with_clues(verdict: CaseVerdict, data: CaseData, outcome: Outcome,
                later: Later | None = None) -> CaseVerdict:
    """A FAIL with its diagnosis evidence, from the operator's what-if models (or the
    FAIL as it is, its evidence asked for in `later`)."""
    if verdict.verdict is not Verdict.FAIL or operator_of(data.case).diagnosis is None \
            or not isinstance(outcome.output, np.ndarray):
        return verdict
    if later is not None:
        later.append((data, outcome.output))
        return verdict
    return _replace(verdict, clues=case_evidence(data, outcome.output))


def run_case(runner: CaseRunner, loaded: CaseData, caps: Capabilities) -> CaseVerdict:
    """Run, repeat if asked, and judge one case."""
    prepared = prepare(runner, loaded, caps)
    if isinstance(prepared, CaseVerdict):
        return prepared
    outcome = runner.call(prepared.call)
    return conclude(runner, prepared, outcome, caps, call_again(runner, prepared, outcome))


def _replace(v: CaseVerdict, **changes: object) -> CaseVerdict:
    return replace(v, **changes)  # type: ignore[arg-type]


def _with_note(v: CaseVerdict, note: str) -> CaseVerdict:
    return _replace(v, notes=v.notes + (note,))


# -- the --repeat check: a case called again, its outputs compared bit for bit (in ULP),
# NONDETERMINISTIC where determinism was asked for (--deterministic) and not refused by
# something aclcheck trusts (its own adapters' and plugins' notes, never a plain callable's)


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


def never_came_back(case: Case, loss: Lost, allowance: float | None) -> CaseVerdict:
    """The ERROR of a case whose run on an executor never came back (its worker died:
    Dask's KilledWorker, a broken process pool; or it outlasted `allowance`), after the
    one resend the fan-out makes: never a hang of the run, never an internal error."""
    if loss.how is LostHow.TOO_LATE:
        why = f"the executor's run of this case did not come back within {allowance:g} s"
    else:
        assert loss.error is not None  # a worker that died says how
        why = ("the executor lost the worker this case was on (this case or another "
               f"one there ended it: {first_sentence(loss.error)})")
    if loss.refused is not None:
        return lost(case, f"{why}; not retried: the executor refused "
                          f"it ({first_sentence(loss.refused)})")
    return lost(case, f"twice (retried once on a fresh worker): {why}")
