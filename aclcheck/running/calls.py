"""Where a case's calls are made: in this process (integrity-checked) or in an isolated
worker (aclcheck.running.workers), with the stale-state check's calls in a recall worker
of their own where one pays. `RunOptions` are a run's options for every call; the case's
lifecycle around its calls (prepare, recall, conclude) is aclcheck.running.runner's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aclcheck.cases import Case
from aclcheck.cases.acl import SUCCESS
from aclcheck.cases.call import Outcome
from aclcheck.cores import worker_threads
from aclcheck.errors import UnknownImplementation, UsageError
from aclcheck.impls.base import CallInputs, Implementation, guarded_run
from aclcheck.impls.registry import spec_kind
from aclcheck.judging.case.judge import JudgeOptions
from aclcheck.options import TIMEOUT_S
from aclcheck.running.clue_pool import CluePool
from aclcheck.running.integrity import IntegrityGuard
from aclcheck.running.recall import TwinOf
from aclcheck.running.workers.adapter import WorkerAdapter
from aclcheck.running.workers.hangs import HANG_FLOOR_S, CallClock
from aclcheck.running.workers.lifetime import start_zygote
from aclcheck.running.workers.parent import Heartbeat, IsolatedRunner
from aclcheck.running.workers.zygote import Zygote


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
    #: hang allowance floor in seconds (see aclcheck.running.workers.hangs)
    hang_floor: float = HANG_FLOOR_S
    #: the CPU (spinning) rule ends any call, not only those the contract rejects
    #: (--spin-rule all; aclcheck.running.workers.cpu_watch)
    spin_all: bool = False
    #: call each valid case again right after its twin and judge both answers
    #: (aclcheck.running.recall: the stale-state check)
    recall: bool = True


def isolates(impl: Implementation, opts: RunOptions) -> bool:
    """Whether every call runs in a worker: always for an adapter that exists only
    there (WorkerAdapter), else as asked, else where the adapter is fork-safe."""
    if isinstance(impl, WorkerAdapter):
        return True
    if not impl.spec:  # cannot be rebuilt elsewhere (stored results, library objects)
        return False
    if opts.isolate is not None:
        return opts.isolate
    return impl.fork_safe


class CaseRunner:
    """Makes an adapter's calls, in-process or in an isolated worker as the options say.

    Workers come from `zygote` (aclcheck.running.workers.adapter.open_impl starts it; the runner
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
        #: the stale-state check's worker (fork-safe isolated runs; see send_recall)
        self._recall: IsolatedRunner | None = None
        #: the zygote workers come from; a forking one only for a fork-safe adapter
        self._zygote = zygote
        if zygote is not None and zygote.preloads and not impl.fork_safe:
            zygote.close()
            self._zygote = None
        self._note: str | None = None
        if opts.deterministic and not isinstance(impl, WorkerAdapter):
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
        if isinstance(self.impl, WorkerAdapter):
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
        declines = isinstance(self.impl, WorkerAdapter) and self.impl.info.declines
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

    def recall_apart(self, call: CallInputs) -> bool:
        """Whether the check's calls of `call` go to the recall worker."""
        return self.separate_recall and self._needs_isolation(call.case)

    def send_recall(self, twin: CallInputs | TwinOf, call: CallInputs) -> None:
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
