"""The order a run's cases go in, behind one `Schedule`: serial (one case after the other),
pipelined (an isolated run with one call in flight while this process loads and judges
the neighbouring cases) or fanned out (each case on a concurrent.futures-style executor:
a local process pool, a Dask client's executor). Whichever runs them, the verdicts come
in case order, identical to a serial run; only this process reads the cases' source.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, wait
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from aclcheck import interrupts
from aclcheck.cases import Case, CaseData
from aclcheck.cases.call import Capabilities, Outcome
from aclcheck.fanout import Done, Executor, FanOut
from aclcheck.impls.base import Implementation
from aclcheck.judging.case.verdicts import CaseVerdict
from aclcheck.judging.diagnosis.reproduce import CaseClues
from aclcheck.running.calls import CaseRunner, RunOptions, isolates
from aclcheck.running.runner import (
    Later,
    Prepared,
    call_again,
    conclude,
    judge_first,
    never_came_back,
    prepare,
    run_case,
    send_again,
)
from aclcheck.running.workers.adapter import WorkerAdapter
from aclcheck.running.workers.parent import Heartbeat, Parked
from aclcheck.running.workers.wire import AdapterInfo
from aclcheck.running.workers.zygote import Zygote


class CaseSource(Protocol):
    """Anything that yields a case's data (a golden file, or cases made in memory)."""

    def load(self, case: Case) -> CaseData: ...


ProgressFn = Callable[[CaseVerdict], None]


class Schedule(Protocol):
    """A way to run cases: their verdicts in case order (iter_verdicts: serial or
    pipelined; iter_verdicts_parallel: fanned out, its executor bound first)."""

    def __call__(self, impl: Implementation, cases: Iterable[Case], source: CaseSource,
                 opts: RunOptions, *, progress: ProgressFn | None = None
                 ) -> Iterator[CaseVerdict]: ...


def iter_verdicts(impl: Implementation, cases: Iterable[Case], source: CaseSource,
                  opts: RunOptions, progress: ProgressFn | None = None, *,
                  runner: CaseRunner | None = None, heartbeat: Heartbeat | None = None,
                  zygote: Zygote | None = None) -> Iterator[CaseVerdict]:
    """Verdicts in case order, pipelined where every call goes to the isolated worker one
    at a time (CaseRunner.pipelined), else serial. `runner`: one the caller made (and
    closes); `heartbeat` gets a line now and then while one call runs long (CI logs);
    `zygote`: a prestarted one for the runner made here."""
    caps = Capabilities.of(impl)
    owned = runner is None
    runner = runner if runner is not None else CaseRunner(impl, opts, heartbeat, zygote)
    try:
        stream = (pipelined(runner, cases, source, caps) if runner.pipelined else
                  serial(runner, cases, source, caps))
        for verdict in stream:
            interrupts.check()  # a Ctrl-C swallowed on the way (a finalizer) stops here
            if progress is not None:
                progress(verdict)
            yield verdict
    finally:
        if owned:
            runner.close()


def serial(runner: CaseRunner, cases: Iterable[Case], source: CaseSource,
           caps: Capabilities) -> Iterator[CaseVerdict]:
    """Verdicts in case order, one case after the other."""
    return (run_case(runner, source.load(case), caps) for case in cases)


# -- pipelined ---------------------------------------------------------------------------


#: most calls set aside at once (each keeps its worker process)
MAX_PARKED = 2
#: most failing cases whose evidence is asked of the helper and not yet attached, and
#: most output elements among them (each case's data is held until its evidence comes)
MAX_CLUES_ASKED = 64
MAX_CLUES_ELEMENTS = 1 << 20


@dataclass
class _Waiting:
    """A case whose call was set aside: its verdict comes once the call is settled."""

    prepared: Prepared
    parked: Parked


@dataclass
class _Clueing:
    """A FAIL whose diagnosis evidence the helper process computes."""

    verdict: CaseVerdict
    data: CaseData
    output: np.ndarray
    future: Future[CaseClues | None]


@dataclass
class _Rechecking:
    """A case whose first answer is judged while the stale-state check's calls run in the
    recall worker: its verdict comes once their answer is collected, which waits until
    the next case needs that worker (the worker computes while this process works on
    the next case)."""

    prepared: Prepared
    outcome: Outcome
    judged: CaseVerdict
    verdict: CaseVerdict | _Clueing | None = None


def pipelined(runner: CaseRunner, cases: Iterable[Case], source: CaseSource,
              caps: Capabilities) -> Iterator[CaseVerdict]:
    """Verdicts in case order, one call in flight: the parent loads the next case and
    judges the previous one while the worker computes, and a call that looks blocked is
    set aside with its worker (aclcheck.running.workers.parent.Parked) while the next
    cases run in a fresh one (only where a fresh worker is a fork away and the
    stale-state check has its own worker). The stale-state check's calls of a case run
    in the recall worker while this process judges the case's first answer and goes on
    to the next case; their answer is collected when the next case's check is due."""
    yield from _Pipeline(runner, caps).run(cases, source)


class _Pipeline:
    """The state of one pipelined run: the call in flight, the verdicts not yet given
    (in case order), the case whose check is in the recall worker, the evidence asked."""

    def __init__(self, runner: CaseRunner, caps: Capabilities) -> None:
        self.runner = runner
        self.caps = caps
        self.worker = runner.isolated()
        self.apart = runner.separate_recall  # the check's calls overlap with the next case's
        self.pending: Prepared | None = None
        self.order: deque[CaseVerdict | _Waiting | _Rechecking | _Clueing] = deque()
        self.checking: _Rechecking | None = None  # the case whose check is in the recall worker
        self.clues = runner.clues  # failing cases' evidence, computed beside the run
        #: evidence asked for and not yet come, with its output's elements
        self.asked: deque[tuple[Future[CaseClues | None], int]] = deque()

    def concluded(self, first: Prepared, outcome: Outcome, again: Outcome | None,
                  judged: CaseVerdict | None = None) -> CaseVerdict | _Clueing:
        """conclude(), a FAIL's evidence asked of the helper (at most MAX_CLUES_ASKED
        cases and MAX_CLUES_ELEMENTS output elements at once: memory stays bounded, the
        oldest is awaited first)."""
        later: Later = []
        verdict = conclude(self.runner, first, outcome, self.caps, again, judged, later=later)
        if not later:
            return verdict
        data, output = later[0]
        asked = self.asked
        while asked and (len(asked) >= MAX_CLUES_ASKED or output.size
                         + sum(n for _, n in asked) > MAX_CLUES_ELEMENTS):
            wait([asked.popleft()[0]])
        future = self.clues.submit(data, output)
        asked.append((future, output.size))
        return _Clueing(verdict, data, output, future)

    def collect(self) -> tuple[Prepared, Outcome, Outcome | None] | None:
        """The pending call's outcome (and its second one where the check shares the
        worker: its calls run now, before the next case is submitted); None: set aside."""
        assert self.pending is not None
        first, self.pending = self.pending, None
        got = self.worker.collect(park_idle=self.apart and len(self.worker.parked) < MAX_PARKED)
        if isinstance(got, Parked):
            self.order.append(_Waiting(first, got))
            return None
        self.runner.after_isolated(first.call, got)
        return first, got, None if self.apart else call_again(self.runner, first, got)

    def settle_check(self) -> None:
        """The checked case's verdict, from the recall worker's answer (the worker is
        then free for the next case's check)."""
        if self.checking is not None:
            done, self.checking = self.checking, None
            done.verdict = self.concluded(done.prepared, done.outcome,
                                          self.runner.recall_answer(), done.judged)

    def finish(self, first: Prepared, outcome: Outcome, again: Outcome | None
               ) -> CaseVerdict | _Rechecking | _Clueing:
        if not self.apart:
            return self.concluded(first, outcome, again)
        # the check's calls go to the recall worker, while the worker computes the next
        # case and this process judges the first answer (and goes on to the next case)
        self.settle_check()
        sent = send_again(self.runner, first, outcome)
        judged = judge_first(self.runner, first, outcome, self.caps)
        if not sent:  # no check due
            return self.concluded(first, outcome, None, judged)
        self.checking = _Rechecking(first, outcome, judged)
        return self.checking

    def ready(self, block: bool = False, interrupted: bool = False) -> Iterator[CaseVerdict]:
        """The verdicts at the front of the order that are settled (all, with `block`;
        `interrupted`: a FAIL whose evidence has not come goes without it)."""
        order = self.order
        for entry in order:  # settle what has answered (or hung) meanwhile
            if isinstance(entry, _Waiting):
                entry.parked.poll()
        while order:
            head = order[0]
            if isinstance(head, _Waiting):
                outcome = head.parked.wait() if block else head.parked.poll()
                if outcome is None:
                    return
                order[0] = head = self.finish(head.prepared, outcome, None)
            if isinstance(head, _Rechecking):
                if head.verdict is None:
                    if not block:
                        return
                    self.settle_check()
                assert head.verdict is not None
                order[0] = head = head.verdict
            if isinstance(head, _Clueing):
                if interrupted and not head.future.done():
                    head.future.cancel()
                    order[0] = head.verdict
                else:
                    if not block and not head.future.done():
                        return
                    order[0] = replace(head.verdict, clues=self.clues.result(
                        head.future, head.data, head.output))
            yield order.popleft()  # type: ignore[misc]

    def run(self, cases: Iterable[Case], source: CaseSource) -> Iterator[CaseVerdict]:
        """Verdicts in case order (see pipelined)."""
        try:
            for case in cases:
                loaded = source.load(case)  # overlaps with the worker computing `pending`
                prepared = prepare(self.runner, loaded, self.caps)
                if isinstance(prepared, CaseVerdict):
                    if self.pending is not None and (done := self.collect()) is not None:
                        self.order.append(self.finish(*done))
                    self.order.append(prepared)
                elif self.pending is None:
                    self.worker.submit(prepared.call)
                    self.pending = prepared
                else:
                    done = self.collect()
                    self.worker.submit(prepared.call)  # the worker starts on this one...
                    self.pending = prepared
                    if done is not None:  # ...while we judge (and check) the previous one
                        self.order.append(self.finish(*done))
                yield from self.ready()
            if self.pending is not None and (done := self.collect()) is not None:
                self.order.append(self.finish(*done))
            yield from self.ready(block=True)
        except KeyboardInterrupt:
            # an interrupted run keeps what was judged: the checked case's check has
            # answered by now (or does within its allowance)
            try:
                self.settle_check()
            except KeyboardInterrupt:  # the check's own call raised it
                pass
            else:
                yield from self.ready(interrupted=True)
            raise


# -- fanned out --------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkItem:
    """One case shipped to an executor worker: plain, picklable data (no file handles).
    `info`: the adapter's capabilities when its calls are isolated, so the executor
    worker never imports it either (None: it runs there, in-process)."""

    spec: str
    loaded: CaseData
    opts: RunOptions
    info: AdapterInfo | None = None


#: per executor process and thread: a Dask worker may run several tasks at once on its
#: threads, and a CaseRunner (its isolated worker, its hang history) serves one call at a time
_EXECUTOR_CACHE: dict[tuple[str, str, int], tuple[Implementation, CaseRunner]] = {}


def run_work_item(item: WorkItem) -> CaseVerdict:
    """Pool-side: build (once per process) the adapter from its spec and run one case."""
    from aclcheck.impls.registry import create

    # options may hold unhashable overrides
    key = (item.spec, repr(item.opts), threading.get_ident())
    if key not in _EXECUTOR_CACHE:
        impl = WorkerAdapter(item.spec, item.info) if item.info is not None else create(item.spec)
        _EXECUTOR_CACHE[key] = (impl, CaseRunner(impl, item.opts))
    impl, runner = _EXECUTOR_CACHE[key]
    return run_case(runner, item.loaded, Capabilities.of(impl))


def iter_verdicts_parallel(impl: Implementation, cases: Iterable[Case], source: CaseSource,
                           opts: RunOptions, pool: Executor, *, window: int = 8,
                           progress: ProgressFn | None = None) -> Iterator[CaseVerdict]:
    """Like iter_verdicts, but each case runs on `pool` (ProcessPoolCaseRunner, a Dask
    client's executor, ...). Only this process reads the source; at most `window` cases
    are in flight, and verdicts come back in case order, identical to a serial run."""
    if not impl.spec:
        raise ValueError(f"{impl.name} cannot be rebuilt in another process; run it serially")
    # a call in the kernel's own process has no cap: only a lost worker ends its wait
    allowance = case_allowance(opts) if isolates(impl, opts) else None
    fan: FanOut[Case] = FanOut(pool, run_work_item, allowance=allowance)
    info = impl.info if isinstance(impl, WorkerAdapter) else None
    it = iter(cases)
    while True:
        while len(fan) < window and (case := next(it, None)) is not None:
            loaded = source.load(case)
            fan.send(loaded.case, WorkItem(impl.spec, loaded, opts, info))
        if not fan:
            return
        verdict = _verdict(fan.next(), allowance)
        if progress is not None:
            progress(verdict)
        yield verdict


#: seconds a case may take beyond its calls' caps (a worker's start, imports, the queue)
LOST_SLACK_S = 120.0


def case_allowance(opts: RunOptions) -> float:
    """The longest a case's run may take on an executor worker: every call it makes
    (the repeats and the stale-state check's two) at the --timeout cap, plus slack."""
    calls = opts.repeat + (2 if opts.recall else 0)
    return calls * opts.timeout + LOST_SLACK_S


def _verdict(done: Done[Case], allowance: float | None) -> CaseVerdict:
    """A case's verdict as it came back, or the ERROR of a case whose run never did."""
    if done.lost is None:
        return done.result  # type: ignore[no-any-return]
    return never_came_back(done.key, done.lost, allowance)
