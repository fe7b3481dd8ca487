"""Drive a hunt campaign over an executor: the batches a checkpoint has not recorded go out,
at most `window` at a time; each result is recorded (journal line, fsync) the moment it
comes back, in whatever order; an interrupt or a failed batch cancels what is still
queued, and everything recorded stays recorded for the next run.

The executor is anything with concurrent.futures' `submit` whose futures concurrent.futures
can wait for: a process pool here, a Dask client's executor (`Client.get_executor()`),
or `Inline` (this process, one batch at a time). What a batch is to the executor (`task`)
and how it is judged there (`work`) are the caller's: aclcheck.running.campaign_worker
ships a `BatchTask` of plain data and judges it with `judge_batch`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, Protocol

from aclcheck import interrupts
from aclcheck.triage.campaign import BatchResult, Tally, remaining
from aclcheck.triage.checkpoint import Checkpoint

#: progress(tally so far, the batch just recorded)
Progress = Callable[[Tally, BatchResult], None]
#: seconds between interrupt checks while batches run
POLL_S = 0.5


class Executor(Protocol):
    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]: ...


class Inline:
    """Runs each submitted batch at once in this process (no executor asked for)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            if isinstance(exc, KeyboardInterrupt):
                raise
            fut.set_exception(exc)
        return fut


def run_campaign(checkpoint: Checkpoint, executor: Executor, task: Callable[[int], Any],
                 work: Callable[[Any], BatchResult], *, window: int = 4,
                 progress: Progress | None = None) -> Tally:
    """Judge every batch the checkpoint lacks (`work(task(batch))` on the executor); the
    checkpoint's tally when all are in. `window`: batches in flight (a few per worker
    keeps every worker busy)."""
    campaign = checkpoint.campaign
    todo = remaining(campaign, checkpoint.tally.done)
    pending: set[Future[BatchResult]] = set()
    try:
        while True:
            while len(pending) < window:
                batch = next(todo, None)
                if batch is None:
                    break
                pending.add(executor.submit(work, task(batch)))
            if not pending:
                return checkpoint.tally
            interrupts.check()  # before blocking: a Ctrl-C lost on the way stops here
            done, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
            failed = _record(checkpoint, done, progress)
            if failed is not None:  # a batch that raised stops the campaign
                raise failed
    except BaseException:
        for fut in pending:
            fut.cancel()
        _record(checkpoint, {f for f in pending if f.done()}, progress)  # nothing lost
        raise


def _record(checkpoint: Checkpoint, done: set[Future[BatchResult]],
            progress: Progress | None) -> BaseException | None:
    """Record every finished batch that succeeded; the first exception of the others."""
    failed = None
    for fut in sorted(done, key=id):
        if fut.cancelled():
            continue
        exc = fut.exception()
        if exc is not None:
            failed = failed or exc
            continue
        result = fut.result()
        checkpoint.record(result)
        if progress is not None:
            progress(checkpoint.tally, result)
    return failed
