"""Drive a hunt campaign over an executor: the batches a checkpoint has not recorded go out,
at most `window` at a time; each result is recorded (journal line, fsync) the moment it
comes back, in whatever order; an interrupt or a failed batch cancels what is still
queued, and everything recorded stays recorded for the next run. A batch whose worker
died is sent once more, then recorded with its calls ERROR (never a hang).

The executor is anything with concurrent.futures' `submit` whose futures concurrent.futures
can wait for: a process pool here, a Dask client's executor (`Client.get_executor()`),
or `Inline` (this process, one batch at a time). What a batch is to the executor (`task`)
and how it is judged there (`work`) are the caller's: aclcheck.running.live
ships a `BatchTask` of plain data and judges it with `judge_batch`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from aclcheck.errors import first_sentence
from aclcheck.fanout import Done, Executor, FanOut
from aclcheck.triage.campaign import BatchResult, Tally, lost_batch, remaining
from aclcheck.triage.checkpoint import Checkpoint

#: progress(tally so far, the batch just recorded)
Progress = Callable[[Tally, BatchResult], None]


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
    fan: FanOut[int] = FanOut(executor, work, ordered=False)
    try:
        while True:
            while len(fan) < window and (batch := next(todo, None)) is not None:
                fan.send(batch, task(batch))
            if not fan:
                return checkpoint.tally
            _record(checkpoint, fan.next(), progress)
    except BaseException:
        for done in fan.stop():  # nothing finished is lost
            _record(checkpoint, done, progress)
        raise


def _record(checkpoint: Checkpoint, done: Done[int], progress: Progress | None) -> None:
    """Record a batch come back. One whose executor worker was lost twice is recorded as
    lost_batch: its calls ERROR, never a hang (a batch that raised stopped the campaign
    in FanOut.next: its exception goes on)."""
    lost = done.lost
    if lost is None:
        result = done.result
    elif lost.refused is not None:  # the executor would not take it again
        raise lost.refused
    else:
        assert lost.error is not None  # the campaign's fan-out has no allowance
        result = lost_batch(checkpoint.campaign, done.key,
                            f"the executor lost the worker this batch was on twice (this "
                            f"batch or another one there ended it: {first_sentence(lost.error)})")
    checkpoint.record(result)
    if progress is not None:
        progress(checkpoint.tally, result)
