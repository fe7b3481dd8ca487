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
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any, Protocol

from aclcheck import interrupts
from aclcheck.errors import first_sentence
from aclcheck.executors import worker_lost
from aclcheck.triage.campaign import BatchResult, Tally, lost_batch, remaining
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
    pending: dict[Future[BatchResult], _Sent] = {}

    def send(batch: int, tries: int = 0) -> None:
        pending[executor.submit(work, task(batch))] = _Sent(batch, tries)

    try:
        while True:
            while len(pending) < window:
                batch = next(todo, None)
                if batch is None:
                    break
                send(batch)
            if not pending:
                return checkpoint.tally
            interrupts.check()  # before blocking: a Ctrl-C lost on the way stops here
            done, _ = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: pending[f].batch):
                sent = pending.pop(fut)
                lost = _record(checkpoint, fut, sent, progress)
                if lost is not None:  # its worker died: once more, on a fresh submission
                    send(sent.batch, sent.tries + 1)
    except BaseException:
        for fut in pending:
            fut.cancel()
        for fut, sent in pending.items():  # nothing finished is lost
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                _record(checkpoint, fut, sent, progress)
        raise


@dataclass(frozen=True)
class _Sent:
    """A batch on the executor: its number, and how often it was sent before."""

    batch: int
    tries: int


def _record(checkpoint: Checkpoint, fut: Future[BatchResult], sent: _Sent,
            progress: Progress | None) -> BaseException | None:
    """Record a finished batch. A batch whose executor worker was lost is returned to be
    sent again, or, on its second loss, recorded as lost_batch: its calls ERROR, never a
    hang. A batch that raised stops the campaign (its exception, raised here)."""
    exc = fut.exception()
    if exc is None:
        result = fut.result()
    elif not worker_lost(exc):  # the batch raised: the campaign stops
        raise exc
    elif sent.tries == 0:
        return exc
    else:
        result = lost_batch(checkpoint.campaign, sent.batch,
                            f"the executor lost the worker this batch was on twice (this "
                            f"batch or another one there ended it: {first_sentence(exc)})")
    checkpoint.record(result)
    if progress is not None:
        progress(checkpoint.tally, result)
    return None
