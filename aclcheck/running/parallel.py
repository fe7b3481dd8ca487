"""The runner's fan-out: each case runs on a concurrent.futures-style executor (a local
process pool, a Dask client's executor), verdicts come back in case order, identical to
a serial run. Only this process reads the golden file; workers get plain data.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from aclcheck.cases import Case, CaseData
from aclcheck.cases.call import Capabilities
from aclcheck.errors import first_sentence
from aclcheck.fanout import Done, Executor, FanOut, LostHow
from aclcheck.impls.base import Implementation
from aclcheck.judging.judge import lost as lost_verdict
from aclcheck.judging.verdicts import CaseVerdict
from aclcheck.running.remote import RemoteImpl
from aclcheck.running.runner import (
    CaseRunner,
    CaseSource,
    ProgressFn,
    RunOptions,
    isolates,
    run_case,
)
from aclcheck.running.wire import AdapterInfo


@dataclass(frozen=True)
class WorkItem:
    """One case shipped to an executor worker: plain, picklable data (no file handles).
    `info`: the adapter's capabilities when its calls are isolated, so the executor
    worker never imports it either (None: it runs there, in-process)."""

    spec: str
    loaded: CaseData
    opts: RunOptions
    info: AdapterInfo | None = None


#: per worker process and thread: a Dask worker may run several tasks at once on its
#: threads, and a CaseRunner (its isolated worker, its hang history) serves one call at a time
_WORKER_CACHE: dict[tuple[str, str, int], tuple[Implementation, CaseRunner]] = {}


def run_work_item(item: WorkItem) -> CaseVerdict:
    """Pool-side: build (once per process) the adapter from its spec and run one case."""
    from aclcheck.impls.registry import create

    # options may hold unhashable overrides
    key = (item.spec, repr(item.opts), threading.get_ident())
    if key not in _WORKER_CACHE:
        impl = RemoteImpl(item.spec, item.info) if item.info is not None else create(item.spec)
        _WORKER_CACHE[key] = (impl, CaseRunner(impl, item.opts))
    impl, runner = _WORKER_CACHE[key]
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
    info = impl.info if isinstance(impl, RemoteImpl) else None
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
    """A case's verdict as it came back. A run that never came back (its worker died:
    Dask's KilledWorker, a broken process pool; or it outlasted `allowance`) was tried
    once more on a fresh submission, and is that case's ERROR: never a hang of the run,
    never an internal error."""
    if done.lost is None:
        return done.result  # type: ignore[no-any-return]
    lost = done.lost
    if lost.how is LostHow.TOO_LATE:
        why = f"the executor's run of this case did not come back within {allowance:g} s"
    else:
        assert lost.error is not None  # a worker that died says how
        why = ("the executor lost the worker this case was on (this case or another "
               f"one there ended it: {first_sentence(lost.error)})")
    if lost.refused is not None:
        return lost_verdict(done.key, f"{why}; not retried: the executor refused "
                                      f"it ({first_sentence(lost.refused)})")
    return lost_verdict(done.key, f"twice (retried once on a fresh worker): {why}")
