"""Judge a `Case` on the fly: make its tensors, run the adapter, compare with the float64
reference. No golden file: the reference is fast enough to recompute per call.

`shrink` and `hunt` are loops around `LiveJudge`; it reuses a `CaseRunner` (isolation of
invalid calls, timeouts) so a case is judged exactly as `verify` would. A hunt campaign's
batch is judged the same way wherever an executor runs it (this process, a process of
this machine, a Dask worker on another one): what crosses the network is plain data (the
campaign's definition, a batch number, the run options and, when calls are isolated, the
adapter's capabilities); back come verdict counts and the record of each failing call.
Tensors never travel: the executor draws call i from (seed, i), makes its inputs and the
float64 reference itself, and runs the adapter (in its own isolated worker process when
the options say so, as `verify` would).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from aclcheck.cases import Case, CaseData
from aclcheck.cases.call import Capabilities, Outcome
from aclcheck.errors import UsageError
from aclcheck.impls.base import Implementation
from aclcheck.judging.case.verdicts import CaseVerdict
from aclcheck.ops.materialize import make_tensors
from aclcheck.running.calls import CaseRunner, RunOptions
from aclcheck.running.config import VerifyConfig
from aclcheck.running.runner import call_of, run_case
from aclcheck.running.workers.adapter import OpenedImpl, WorkerAdapter, open_impl
from aclcheck.running.workers.wire import AdapterInfo
from aclcheck.running.workers.zygote import Zygote
from aclcheck.triage.campaign import MESSAGE_CHARS, BatchResult, Campaign, Failure, call_case
from aclcheck.triage.shrink import Signature


def load_in_memory(case: Case) -> CaseData:
    """A case's inputs and golden, made in memory (what a golden file would hold)."""
    return make_tensors(case)


class LiveJudge:
    """Callable: Case -> CaseVerdict, through one adapter. Use as a context manager (it
    owns its runner's worker process, if any)."""

    def __init__(self, impl: Implementation, opts: RunOptions | None = None,
                 zygote: Zygote | None = None) -> None:
        self.impl = impl
        self.caps = Capabilities.of(impl)
        self.runner = CaseRunner(impl, opts or RunOptions(), zygote=zygote)
        self.calls = 0

    def __call__(self, case: Case) -> CaseVerdict:
        self.calls += 1
        return run_case(self.runner, load_in_memory(case), self.caps)

    def output(self, case: Case) -> tuple[CaseData, Outcome]:
        """One more call of a case (what it returned, beside its inputs and golden):
        to print a minimal case whole."""
        self.calls += 1
        data = load_in_memory(case)
        return data, self.runner.call(
            call_of(case, data.inputs, self.runner.opts.judge.overflow_mode))

    def close(self) -> None:
        self.runner.close()

    def __enter__(self) -> LiveJudge:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def can_rerun(impl: Implementation) -> str | None:
    """Why this adapter cannot judge new calls (stored results), or None."""
    from aclcheck.impls.results_impl import ResultsImpl

    if isinstance(impl, ResultsImpl):
        return (f"{impl.name} holds stored outputs of fixed cases; shrink and hunt need an "
                "implementation they can call (--impl)")
    return None


def live_setup(config: VerifyConfig) -> tuple[OpenedImpl, RunOptions]:
    """The adapter of a live command (refusing one that cannot rerun) and its run options,
    once its configuration is checked (the tolerance file is read before any kernel code
    runs)."""
    config.check()
    opts = config.run_options()
    opened = open_impl(config.impl, config.isolate)
    why = can_rerun(opened.impl)
    if why:
        opened.close()
        raise UsageError(why)
    return opened, opts


# -- a hunt campaign's batches, judged on an executor --------------------------------------

Judge = Callable[[Case], CaseVerdict]


@dataclass(frozen=True)
class BatchTask:
    """One batch of a hunt campaign, as shipped to an executor (picklable plain data)."""

    campaign: Campaign
    batch: int
    opts: RunOptions
    info: AdapterInfo | None = None  # the adapter's capabilities when calls are isolated


def failure_key(case: Case, verdict: CaseVerdict) -> str:
    """What failures are deduplicated by: how shrink tells them apart (its Signature):
    the verdict, the contract rule, and the diagnosis code that names the bug, or
    without one the hint classes."""
    sig = Signature.of(case, verdict)
    how = [sig.code.value] if sig.code is not None else sorted(
        "none" if h is None else h.value for h in sig.hints)
    return "|".join((sig.verdict.value, sig.rule, *how))


def judge_calls(judge: Judge, campaign: Campaign, batch: int) -> BatchResult:
    """Judge every call of one batch with `judge`; counts by verdict, the failing calls."""
    counts: Counter[str] = Counter()
    failures = []
    start = time.perf_counter()
    for i in campaign.calls(batch):
        case = call_case(campaign, i)
        verdict = judge(case)
        counts[verdict.verdict.value] += 1
        if verdict.failing:
            failures.append(Failure(i, case.to_record(), verdict.verdict.value,
                                    failure_key(case, verdict),
                                    verdict.message[:MESSAGE_CHARS]))
    return BatchResult(batch, dict(counts), tuple(failures), time.perf_counter() - start)


#: one judge per (adapter, options, thread) per executor process: its zygote and worker
#: live as long as the process, so every batch after the first starts no process; a Dask
#: worker with several threads runs batches at once, each thread with its own judge
_JUDGES: dict[tuple[str, str, int], LiveJudge] = {}


def _judge(task: BatchTask) -> LiveJudge:
    from aclcheck.impls.registry import create

    # options may hold unhashable overrides: their repr
    key = (task.campaign.impl, repr(task.opts), threading.get_ident())
    if key not in _JUDGES:
        spec = task.campaign.impl
        impl = WorkerAdapter(spec, task.info) if task.info is not None else create(spec)
        _JUDGES[key] = LiveJudge(impl, task.opts)
    return _JUDGES[key]


def judge_batch(task: BatchTask) -> BatchResult:
    """Executor side: judge one batch with this process's judge for the task's adapter."""
    return judge_calls(_judge(task), task.campaign, task.batch)
