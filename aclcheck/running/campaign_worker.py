"""One batch of a hunt campaign, judged wherever an executor runs it (this process, a
process of this machine, a Dask worker on another one).

What crosses the network is plain data: the campaign's definition, a batch number, the
run options and (when calls are isolated) the adapter's capabilities; back come verdict
counts and the record of each failing call. Tensors never travel: the worker draws call
i from (seed, i), makes its inputs and the float64 reference itself, and runs the adapter
(in its own isolated worker process when the options say so, as `verify` would).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from aclcheck.cases import Case
from aclcheck.judging.case.verdicts import CaseVerdict
from aclcheck.running.live import LiveJudge
from aclcheck.running.runner import RunOptions
from aclcheck.running.wire import AdapterInfo
from aclcheck.triage.campaign import MESSAGE_CHARS, BatchResult, Campaign, Failure, call_case
from aclcheck.triage.shrink import Signature

Judge = Callable[[Case], CaseVerdict]


@dataclass(frozen=True)
class BatchTask:
    """One batch, as shipped to a worker (picklable plain data)."""

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


#: one judge per (adapter, options, thread) per worker process: its zygote and worker
#: live as long as the process, so every batch after the first starts no process; a Dask
#: worker with several threads runs batches at once, each thread with its own judge
_JUDGES: dict[tuple[str, str, int], LiveJudge] = {}


def _judge(task: BatchTask) -> LiveJudge:
    from aclcheck.impls.registry import create
    from aclcheck.running.remote import RemoteImpl

    # options may hold unhashable overrides: their repr
    key = (task.campaign.impl, repr(task.opts), threading.get_ident())
    if key not in _JUDGES:
        spec = task.campaign.impl
        impl = RemoteImpl(spec, task.info) if task.info is not None else create(spec)
        _JUDGES[key] = LiveJudge(impl, task.opts)
    return _JUDGES[key]


def judge_batch(task: BatchTask) -> BatchResult:
    """Executor side: judge one batch with this process's judge for the task's adapter."""
    return judge_calls(_judge(task), task.campaign, task.batch)
