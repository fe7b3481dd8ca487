"""`aclcheck hunt --budget N --checkpoint DIR`: a resumable campaign of N random valid
calls, batches judged on an executor (this process, `--executor dask-local:N`, a Dask
cluster), every finished batch journaled in the checkpoint; then the distinct failures
shrunk here and handed back to the command to write. docs/campaign.md."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console

from aclcheck.cases import Case
from aclcheck.cli.shrink import describe, minimal_lines, progress_printer, say
from aclcheck.errors import AclcheckError
from aclcheck.executors import open_executor
from aclcheck.fanout import slots
from aclcheck.judging.case.verdicts import CaseVerdict
from aclcheck.judging.gate.gate import UNJUDGED
from aclcheck.ops.operator import Operator
from aclcheck.running.calls import RunOptions
from aclcheck.running.live import BatchTask, LiveJudge, judge_batch, judge_calls
from aclcheck.running.workers.adapter import OpenedImpl, WorkerAdapter
from aclcheck.triage.campaign import BatchResult, Campaign, Tally
from aclcheck.triage.campaign_run import Inline, Progress, run_campaign
from aclcheck.triage.checkpoint import Checkpoint
from aclcheck.triage.shrink import ShrinkResult, shrink

#: stop(tally): raise to stop the campaign after a recorded batch (tests inject one)
Stop = Callable[[Tally], None]


@dataclass(frozen=True)
class Found:
    """One distinct failure: the minimal case (named for the output) and how it failed."""

    case: Case
    first: CaseVerdict
    shrunk: ShrinkResult
    seen: int  # calls of the campaign that failed this way


def judged_calls(tally: Tally) -> int:
    """Calls whose verdict says something (not SKIP, not MISTRUSTED)."""
    unjudged = {v.value for v in UNJUDGED}
    return sum(n for verdict, n in tally.counts.items() if verdict not in unjudged)


def _progress(err: Console, campaign: Campaign, stop: Stop | None) -> Progress:
    """A status line on a terminal; in logs a line at each tenth of the batches."""
    def show(tally: Tally, result: BatchResult) -> None:
        text = (f"campaign: {tally.calls}/{campaign.budget} calls, "
                f"{sum(tally.seen.values())} failing, {len(tally.first)} distinct")
        if err.is_terminal:
            err.print(f"\r{text}   ", end="", markup=False, highlight=False)
        elif campaign.batches >= 10 and len(tally.done) % (campaign.batches // 10) == 0:
            err.print(text, markup=False, highlight=False)
        if stop is not None:
            stop(tally)
    return show


def run_batches(ckpt: Checkpoint, judge: LiveJudge, opened: OpenedImpl, opts: RunOptions,
                executor: str | None, out: Console, err: Console,
                stop: Stop | None = None) -> tuple[Tally, int, float]:
    """Judge every batch the checkpoint lacks: here with `judge`, or over `executor`;
    the tally, the workers and the seconds this run took. Ctrl-C and a failed batch
    keep every recorded batch (the checkpoint) and say how to resume."""
    campaign = ckpt.campaign
    if ckpt.complete:  # nothing to judge: no executor started
        return ckpt.tally, 1, 0.0
    progress = _progress(err, campaign, stop)
    info = opened.impl.info if isinstance(opened.impl, WorkerAdapter) else None
    started = time.monotonic()
    workers = 1
    try:
        if executor is None:
            run_campaign(ckpt, Inline(), lambda b: b,
                         lambda b: judge_calls(judge, campaign, b), window=1,
                         progress=progress)
        else:
            with open_executor(1, executor) as pool:
                workers = slots(pool)
                say(out, f"aclcheck: {workers} worker(s) at {executor}")
                run_campaign(ckpt, pool, lambda b: BatchTask(campaign, b, opts, info),
                             judge_batch, window=2 * workers, progress=progress)
    except KeyboardInterrupt:
        if err.is_terminal:
            err.print()
        say(out, f"aclcheck: stopped after {ckpt.tally.calls} of {campaign.budget} calls; "
                 f"all recorded in {ckpt.folder}: rerun the same command to resume")
        raise
    except AclcheckError:
        raise
    except Exception as exc:  # noqa: BLE001 - a batch raised on its worker (a lost worker
        # Dask gave up on, an adapter missing there): one line (exit 4), resumable
        raise AclcheckError(f"a batch failed on its worker ({type(exc).__name__}: "
                          f"{' '.join(str(exc).split())[:300]}); {ckpt.tally.calls} calls "
                          f"are recorded in {ckpt.folder}: rerun to resume") from None
    if err.is_terminal:
        err.print()
    return ckpt.tally, workers, time.monotonic() - started


def resume_line(ckpt: Checkpoint) -> str:
    """What the command says about the checkpoint it opened."""
    campaign, tally = ckpt.campaign, ckpt.tally
    torn = " (a torn last journal line was dropped: its batch runs again)" if ckpt.torn else ""
    done = (f"{len(tally.done)} of {campaign.batches} batches ({tally.calls} of "
            f"{campaign.budget} calls) judged already, {len(tally.first)} distinct failure(s) "
            f"so far{torn}")
    if ckpt.extended_from is not None:
        return (f"aclcheck: extending the campaign in {ckpt.folder} from "
                f"{ckpt.extended_from} to {campaign.budget} calls: {done}")
    if not ckpt.resumed:
        return (f"aclcheck: new campaign in {ckpt.folder}: {campaign.budget} calls in "
                f"{campaign.batches} batches of {campaign.batch}")
    if ckpt.complete:
        return (f"aclcheck: the campaign in {ckpt.folder} is complete: {tally.calls} calls "
                f"judged ({', '.join(f'{n} {v}' for v, n in sorted(tally.counts.items()))}), "
                f"{sum(tally.seen.values())} failing, {len(tally.first)} distinct")
    return f"aclcheck: resuming the campaign in {ckpt.folder}: {done}"


def shrink_distinct(tally: Tally, chosen: Operator, judge: LiveJudge, out: Console,
                    err: Console, shrink_time: float) -> list[Found]:
    """Each distinct failure (lowest call index per key) shrunk here, judged again first
    (the adapter of this machine); minimal cases that coincide are kept once."""
    found: list[Found] = []
    minimal_ids: set[str] = set()
    for failure in tally.distinct():
        case = failure.case(chosen.name)
        say(out, f"found: call {failure.index} ({tally.seen[failure.key]} call(s) failed "
                 f"this way: {failure.key}): {failure.verdict} - {failure.message}")
        verdict = judge(case)
        if not verdict.failing:
            say(out, f"  not failing when judged again here ({verdict.verdict.value}): "
                     "kept unshrunk")
        result = shrink(case, judge, max_time=shrink_time, first=verdict,
                        progress=progress_printer(err, "shrinking"))
        if err.is_terminal:
            err.print()
        say(out, describe(result))
        for line in minimal_lines(judge, result) if result.verdict.failing else ():
            say(out, line)
        if result.minimal.id in minimal_ids:
            say(out, "  the same minimal case as an earlier failure: written once")
            continue
        minimal_ids.add(result.minimal.id)
        renamed = chosen.space.renamed(result.minimal, f"hunt{len(found)}")
        found.append(Found(renamed, verdict, result, tally.seen[failure.key]))
    return found


def summary_line(tally: Tally, campaign: Campaign, workers: int, seconds: float,
                 judged_now: int) -> str:
    """The campaign's totals, and this run's throughput."""
    rate = judged_now / seconds if seconds > 0 else 0.0
    return (f"aclcheck: campaign of {campaign.budget} calls: {tally.calls} judged "
            f"({', '.join(f'{n} {v}' for v, n in sorted(tally.counts.items()))}); "
            f"{sum(tally.seen.values())} failing, {len(tally.first)} distinct; this run: "
            f"{judged_now} calls in {seconds:.1f} s on {workers} worker(s), "
            f"{rate / workers:.1f} calls/s per worker")


__all__ = ["Found", "judged_calls", "resume_line", "run_batches",
           "shrink_distinct", "summary_line"]
