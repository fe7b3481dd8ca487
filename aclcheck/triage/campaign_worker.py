"""One batch of a hunt campaign, judged wherever an executor runs it (a process of this
machine, a Dask worker on another one).

What crosses the network is plain data: the campaign's definition, a batch number, the
run options and (when calls are isolated) the adapter's capabilities; back come verdict
counts and the record of each failing call. Tensors never travel: the worker draws call
i from (seed, i), makes its inputs and the float64 reference itself, and runs the adapter
(in its own isolated worker process when the options say so, as `verify` would).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from aclcheck.cases import Case
from aclcheck.live import LiveJudge
from aclcheck.runner import RunOptions
from aclcheck.shrink import Signature
from aclcheck.triage.campaign import BatchResult, Campaign, Failure, call_case
from aclcheck.verdicts import CaseVerdict
from aclcheck.wire import AdapterInfo


@dataclass(frozen=True)
class BatchTask:
    """One batch, as shipped to a worker (picklable plain data)."""

    campaign: Campaign
    batch: int
    opts: RunOptions
    info: AdapterInfo | None = None  # the adapter's capabilities when calls are isolated


def failure_key(case: Case, verdict: CaseVerdict) -> str:
    """What failures are deduplicated by: the verdict, the contract rule and the hint
    classes (shrink's Signature: what a smaller case must keep)."""
    sig = Signature.of(case, verdict)
    return "|".join((sig.verdict.value, sig.rule, *sorted(sig.hints)))


#: one judge per (adapter, options) per worker process: its zygote and worker live as
#: long as the process, so every batch after the first starts no process
_JUDGES: dict[tuple[str, str], LiveJudge] = {}


def _judge(task: BatchTask) -> LiveJudge:
    from aclcheck.impls.registry import create
    from aclcheck.impls.remote import RemoteImpl

    key = (task.campaign.impl, repr(task.opts))
    if key not in _JUDGES:
        spec = task.campaign.impl
        impl = RemoteImpl(spec, task.info) if task.info is not None else create(spec)
        _JUDGES[key] = LiveJudge(impl, task.opts)
    return _JUDGES[key]


def judge_batch(task: BatchTask) -> BatchResult:
    """Judge every call of one batch; counts by verdict and the failing calls."""
    judge = _judge(task)
    counts: Counter[str] = Counter()
    failures = []
    start = time.perf_counter()
    for i in task.campaign.calls(task.batch):
        case = call_case(task.campaign, i)
        verdict = judge(case)
        counts[verdict.verdict.value] += 1
        if verdict.failing:
            failures.append(Failure(i, case.to_record(), verdict.verdict.value,
                                    failure_key(case, verdict), verdict.message))
    return BatchResult(task.batch, dict(counts), tuple(failures),
                       time.perf_counter() - start)
