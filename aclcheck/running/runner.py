"""Run cases through an adapter (in-process or isolated) and collect verdicts.

Only the caller touches files: a `CaseSource` hands over plain arrays per case, and the
runner returns plain verdicts. Which calls run isolated lives here; the worker processes
themselves in aclcheck.running.isolation, the --repeat check in aclcheck.running.repeats.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from aclcheck import interrupts
from aclcheck.cases import Case, CaseData
from aclcheck.cases.acl import SUCCESS
from aclcheck.cases.call import Capabilities, Outcome
from aclcheck.cases.layouts import StridedTensor
from aclcheck.cores import worker_threads
from aclcheck.errors import UnknownImplementation, UsageError
from aclcheck.impls.base import CallInputs, Implementation, guarded_run
from aclcheck.impls.registry import spec_kind
from aclcheck.judging.case.default_standard import accumulation
from aclcheck.judging.case.expressible import not_expressible
from aclcheck.judging.case.judge import JudgeOptions, judge, skipped
from aclcheck.judging.case.model import CaseModel
from aclcheck.judging.case.overflow import judged_mode
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.ops import operator_of
from aclcheck.options import TIMEOUT_S
from aclcheck.running import recall
from aclcheck.running.clue_pool import CluePool, case_evidence
from aclcheck.running.hangs import HANG_FLOOR_S, CallClock
from aclcheck.running.integrity import IntegrityGuard
from aclcheck.running.isolation import Heartbeat, IsolatedRunner, start_zygote
from aclcheck.running.remote import RemoteImpl
from aclcheck.running.repeats import judge_repeats
from aclcheck.running.zygote import Zygote


class CaseSource(Protocol):
    """Anything that yields a case's data (a golden file, or cases made in memory)."""

    def load(self, case: Case) -> CaseData: ...


@dataclass(frozen=True)
class RunOptions:
    judge: JudgeOptions = field(default_factory=JudgeOptions)
    #: run every call in a worker process; None: yes for fork-safe adapters (a forked
    #: worker costs nothing), no for the others (False: in-process, for debuggers)
    isolate: bool | None = None
    #: hard cap on one call's seconds in a worker (hang detection adapts below it)
    timeout: float = TIMEOUT_S
    #: address-space cap of the isolated worker in bytes (None: no cap)
    memory_limit: int | None = None
    repeat: int = 1
    deterministic: bool = False
    #: run calls the contract rejects in the isolated worker even without `isolate`:
    #: an implementation that accepts them may read out of bounds and take the run down
    isolate_invalid: bool = True
    #: hang allowance floor in seconds (see aclcheck.running.hangs)
    hang_floor: float = HANG_FLOOR_S
    #: the CPU (spinning) rule ends any call, not only those the contract rejects
    #: (--spin-rule all; aclcheck.running.cpu_watch)
    spin_all: bool = False
    #: call each valid case again right after its twin and judge both answers
    #: (aclcheck.running.recall: the stale-state check)
    recall: bool = True


def isolates(impl: Implementation, opts: RunOptions) -> bool:
    """Whether every call runs in a worker: always for an adapter that exists only
    there (RemoteImpl), else as asked, else where the adapter is fork-safe."""
    if isinstance(impl, RemoteImpl):
        return True
    if not impl.spec:  # cannot be rebuilt elsewhere (stored results, library objects)
        return False
    if opts.isolate is not None:
        return opts.isolate
    return impl.fork_safe


class CaseRunner:
    """Makes an adapter's calls, in-process or in an isolated worker as the options say.

    Workers come from `zygote` (aclcheck.running.remote.open_impl starts it; the runner
    closes it), or, for a fork-safe adapter built here, from a zygote started with the
    first isolated call: no call pays a fresh interpreter. In-process calls are followed
    by an integrity check of this process (aclcheck.running.integrity).
    Owns processes: use it as a context manager or call close().
    """

    def __init__(self, impl: Implementation, opts: RunOptions,
                 heartbeat: Heartbeat | None = None, zygote: Zygote | None = None) -> None:
        self.impl = impl
        self.opts = opts
        self.isolate = isolates(impl, opts)
        if opts.memory_limit and not self.isolate:
            fix = "add --isolate" if opts.isolate is None else "drop --no-isolate"
            raise UsageError(f"--memory-limit caps the isolated worker: it needs isolation "
                             f"({impl.name} runs in-process here; {fix})")
        self.heartbeat = heartbeat
        self._isolated: IsolatedRunner | None = None
        #: the stale-state check's worker (fork-safe isolated runs; see recall_calls)
        self._recall: IsolatedRunner | None = None
        #: the zygote workers come from; a forking one only for a fork-safe adapter
        self._zygote = zygote
        if zygote is not None and zygote.preloads and not impl.fork_safe:
            zygote.close()
            self._zygote = None
        self._note: str | None = None
        if opts.deterministic and not isinstance(impl, RemoteImpl):
            try:
                self._note = impl.set_deterministic(True)
            except Exception as exc:  # noqa: BLE001 - reported per case, not a crash
                self._note = f"cannot switch deterministic mode: {exc}"
        #: in-process calls: what they must leave alone, taken before the first
        self._guard = IntegrityGuard() if not self.isolate else None
        #: failing cases' evidence beside the run (pipelined runs; see clue_pool)
        self.clues = CluePool()

    @property
    def may_refuse_determinism(self) -> bool:
        """Whether the adapter can say it could not switch deterministic mode: aclcheck's
        own adapters and plugins can; a plain callable has one mode, so what its worker
        says about itself (a refusal in an answer or a note in its READY frame) is data
        from the kernel's process, never a capability."""
        try:
            return not self.impl.spec or spec_kind(self.impl.spec) != "callable"
        except UnknownImplementation:
            return False

    @property
    def deterministic_note(self) -> str | None:
        """Why deterministic mode is not what was asked (the worker's word when isolated,
        for adapters that can refuse)."""
        if not self.may_refuse_determinism:
            return None
        if isinstance(self.impl, RemoteImpl):
            return self._isolated.note if self._isolated is not None else None
        return self._note

    def __enter__(self) -> CaseRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _needs_isolation(self, case: Case) -> bool:
        if self.isolate:
            return True
        if case.expectation.isolated_only and self.impl.makes_calls:  # prepare(): a spec
            return True
        return (self.opts.isolate_invalid and not self.impl.has_status_codes
                and case.expected_status != SUCCESS and bool(self.impl.spec))

    def _new_isolated(self, spare: bool = False) -> IsolatedRunner:
        if self.impl.fork_safe and self._zygote is None:
            self._zygote = start_zygote(self.impl.spec)
        declines = isinstance(self.impl, RemoteImpl) and self.impl.info.declines
        return IsolatedRunner(
            self.impl.spec, self.opts.timeout, self.opts.deterministic or None,
            self.opts.memory_limit, zygote=self._zygote, heartbeat=self.heartbeat,
            clock=CallClock(cap=self.opts.timeout, floor=self.opts.hang_floor),
            check_supports=declines,
            # the case worker and the recall worker compute at once: they share the cores
            threads=worker_threads(2) if self.separate_recall and self.opts.recall else None,
            spare=spare, spin_all=self.opts.spin_all)

    def isolated(self) -> IsolatedRunner:
        if self._isolated is None:  # the case worker: replaced most, so one kept ahead
            self._isolated = self._new_isolated(spare=True)
        return self._isolated

    @property
    def separate_recall(self) -> bool:
        """Whether the stale-state check's calls go to a worker of their own: isolated
        runs of a fork-safe adapter (a second fork of the zygote, once per run)."""
        return self.isolate and self.impl.fork_safe

    def recall_calls(self, twin: CallInputs | recall.TwinOf, call: CallInputs) -> Outcome:
        """The stale-state check's calls (aclcheck.running.recall): `twin`, then `call`
        again; the second outcome. In the recall worker where there is one (see
        send_recall), else where the case's first call ran."""
        if self.recall_apart(call):
            self.send_recall(twin, call)
            return self.recall_answer()
        self.call(twin.build() if isinstance(twin, recall.TwinOf) else twin)  # not judged
        return self.call(call)

    def recall_apart(self, call: CallInputs) -> bool:
        """Whether the check's calls of `call` go to the recall worker."""
        return self.separate_recall and self._needs_isolation(call.case)

    def send_recall(self, twin: CallInputs | recall.TwinOf, call: CallInputs) -> None:
        """Send the check's two calls to the recall worker, a long-lived second worker
        that never sees a case's first call (both in one message, each watched as if sent
        alone: IsolatedRunner.submit); recall_answer() gives the second outcome, and the
        caller may judge meanwhile."""
        if self._recall is None:
            self._recall = self._new_isolated()
        self._recall.submit(twin, then=call)

    def recall_answer(self) -> Outcome:
        """The second outcome of the calls send_recall() sent (the twin's, which comes
        without its output, is dropped)."""
        assert self._recall is not None
        self._recall.collect()
        return self._recall.collect()  # type: ignore[return-value]

    def after_isolated(self, call: CallInputs, outcome: Outcome) -> None:
        """A worker that accepted an invalid call may have corrupted its memory (out-of-
        bounds reads and writes): replace it before it can blame the next case (a fork
        from the zygote: milliseconds)."""
        if call.case.expected_status != SUCCESS and outcome.output is not None:
            self.isolated().recycle()

    @property
    def pipelined(self) -> bool:
        """Every call goes to the worker, one at a time: the parent can read and judge
        neighbouring cases while the worker computes."""
        return self.isolate and self.opts.repeat == 1

    def call(self, call: CallInputs) -> Outcome:
        if self._needs_isolation(call.case):
            outcome = self.isolated().run(call)
            self.after_isolated(call, outcome)
            return outcome
        outcome = guarded_run(self.impl, call)
        changed = self._guard.check() if self._guard is not None else ()
        if changed:
            shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more"
                                              if len(changed) > 5 else "")
            return Outcome(crashed=f"the implementation changed aclcheck's own process: "
                                   f"{shown} (put back; run it isolated)",
                           time_s=outcome.time_s)
        return outcome

    def close(self) -> None:
        try:
            self.clues.close(interrupted=True)  # first: it holds copies of our sockets
            for worker in (self._isolated, self._recall):
                if worker is not None:
                    worker.close()
            self._isolated = self._recall = None
        finally:
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None


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


def call_again(runner: CaseRunner, prepared: Prepared, first: Outcome) -> Outcome | None:
    """The stale-state check's calls (aclcheck.running.recall): the case's twin, then the
    case again, one after the other (CaseRunner.recall_calls); the second outcome (None:
    not checked; the twin's answer is not the case's)."""
    if not runner.opts.recall or not recall.wanted(prepared.call, first):
        return None
    return runner.recall_calls(_twin(prepared), prepared.call)


def send_again(runner: CaseRunner, prepared: Prepared, first: Outcome) -> bool:
    """call_again's calls sent to the recall worker, not awaited (the caller judges the
    first answer meanwhile and then asks CaseRunner.recall_answer); False where no call
    is due or the calls do not go to the recall worker (call_again makes them)."""
    if not runner.opts.recall or not recall.wanted(prepared.call, first) \
            or not runner.recall_apart(prepared.call):
        return False
    runner.send_recall(_twin(prepared), prepared.call)
    return True


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
    from dataclasses import replace

    return replace(v, **changes)  # type: ignore[arg-type]


def _with_note(v: CaseVerdict, note: str) -> CaseVerdict:
    return _replace(v, notes=v.notes + (note,))


ProgressFn = Callable[[CaseVerdict], None]


def run_cases(impl: Implementation, cases: Sequence[Case], source: CaseSource,
              opts: RunOptions, progress: ProgressFn | None = None) -> list[CaseVerdict]:
    """Every case through the adapter, in order; one verdict each."""
    return list(iter_verdicts(impl, cases, source, opts, progress))


def iter_verdicts(impl: Implementation, cases: Iterable[Case], source: CaseSource,
                  opts: RunOptions, progress: ProgressFn | None = None, *,
                  runner: CaseRunner | None = None, heartbeat: Heartbeat | None = None,
                  zygote: Zygote | None = None) -> Iterator[CaseVerdict]:
    """Verdicts in case order. `runner`: one the caller made (and closes); `heartbeat`
    gets a line now and then while one call runs long (CI logs); `zygote`: a prestarted
    one for the runner made here."""
    caps = Capabilities.of(impl)
    owned = runner is None
    runner = runner if runner is not None else CaseRunner(impl, opts, heartbeat, zygote)
    try:
        from aclcheck.running.pipeline import pipelined  # it builds on this module

        stream = (pipelined(runner, cases, source, caps) if runner.pipelined else
                  (run_case(runner, source.load(case), caps) for case in cases))
        for verdict in stream:
            interrupts.check()  # a Ctrl-C swallowed on the way (a finalizer) stops here
            if progress is not None:
                progress(verdict)
            yield verdict
    finally:
        if owned:
            runner.close()
