"""The one fan-out (aclcheck.fanout) that generate, verify and the campaign share: the
window is the executor's slots, a piece whose worker died is sent once more, a second
loss comes back as a record (never a hang, never a traceback), and what finished before
a stop is handed back. A fake executor stands in for a pool: futures it makes itself."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from aclcheck.fanout import FanOut, LostHow, slots, worker_lost


class Held:
    """An executor whose futures finish as they are sent, with a `slots` as a Dask
    cluster's executor has; `dies`: how many of the next submissions lose their worker;
    `refuses_after`: how many it takes before it refuses work."""

    def __init__(self, slots: int = 8, dies: int = 0, refuses_after: int | None = None
                 ) -> None:
        self.slots = slots
        self.dies = dies
        self.refuses_after = refuses_after
        self.sent: list[tuple[Any, ...]] = []
        self.futures: list[Future[Any]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        if self.refuses_after is not None and len(self.sent) >= self.refuses_after:
            raise RuntimeError("the executor is closed. It takes no more work")
        self.sent.append(args)
        fut: Future[Any] = Future()
        if self.dies:
            self.dies -= 1
            fut.set_exception(BrokenProcessPool("a worker ended abruptly. More text"))
        else:
            fut.set_result(fn(*args))
        self.futures.append(fut)
        return fut


class Later(Held):
    """Futures finished by the test, in the order it chooses."""

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        self.sent.append(args)
        fut: Future[Any] = Future()
        self.futures.append(fut)
        return fut


def double(x: int) -> int:
    return 2 * x


def test_slots_come_from_the_executor_not_its_private_parts() -> None:
    assert slots(Held(slots=8)) == 8
    assert slots(None) == 1
    assert slots(object()) == 1
    assert worker_lost(BrokenProcessPool("x")) and not worker_lost(ValueError("x"))


def test_ordered_pieces_come_back_in_the_order_sent() -> None:
    fan: FanOut[int] = FanOut(Held(), double)
    for i in range(5):
        fan.send(i, i)
    assert len(fan) == 5
    got = [fan.next() for _ in range(5)]
    assert [(d.key, d.result, d.lost) for d in got] == [(i, 2 * i, None) for i in range(5)]
    assert not fan


def test_a_piece_sent_ahead_comes_back_first() -> None:
    fan: FanOut[str] = FanOut(Held(), double)
    fan.send("later", 1)
    fan.send("rest", 2, ahead=True)
    assert [fan.next().key for _ in range(2)] == ["rest", "later"]


def test_a_lost_worker_costs_one_more_submission_then_the_result() -> None:
    pool = Held(dies=1)
    fan: FanOut[int] = FanOut(pool, double)
    fan.send(7, 7)
    done = fan.next()
    assert (done.result, done.lost) == (14, None)
    assert pool.sent == [(7,), (7,)]


def test_a_piece_lost_twice_comes_back_as_a_record() -> None:
    pool = Held(dies=2)
    fan: FanOut[int] = FanOut(pool, double)
    fan.send(7, 7)
    done = fan.next()
    assert done.lost is not None and done.lost.how is LostHow.WORKER_DIED
    assert isinstance(done.lost.error, BrokenProcessPool) and done.lost.refused is None
    assert len(pool.sent) == 2  # sent once more, not forever


def test_a_refused_resend_comes_back_with_the_refusal() -> None:
    pool = Held(dies=1, refuses_after=1)
    fan: FanOut[int] = FanOut(pool, double)
    fan.send(7, 7)
    lost = fan.next().lost
    assert lost is not None and isinstance(lost.refused, RuntimeError)


def test_a_piece_past_its_allowance_is_sent_again_then_lost() -> None:
    class Never(Held):
        def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
            self.sent.append(args)
            return Future()  # never finishes

    pool = Never()
    fan: FanOut[int] = FanOut(pool, double, allowance=0.01)
    fan.send(1, 1)
    lost = fan.next().lost
    assert lost is not None and lost.how is LostHow.TOO_LATE and len(pool.sent) == 2


def test_the_works_own_error_is_raised_not_retried() -> None:
    def broken(x: int) -> int:
        raise ValueError("the batch itself is wrong")

    class Raising(Held):
        def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
            self.sent.append(args)
            fut: Future[Any] = Future()
            try:
                fut.set_result(fn(*args))
            except ValueError as exc:
                fut.set_exception(exc)
            return fut

    pool = Raising()
    fan: FanOut[int] = FanOut(pool, broken)
    fan.send(1, 1)
    with pytest.raises(ValueError, match="itself is wrong"):
        fan.next()
    assert len(pool.sent) == 1


def test_unordered_pieces_come_back_as_they_finish() -> None:
    pool = Later()
    fan: FanOut[int] = FanOut(pool, double, ordered=False)
    for i in range(3):
        fan.send(i, i)
    pool.futures[2].set_result("third")
    assert fan.next().key == 2
    pool.futures[0].set_result("first")
    pool.futures[1].set_result("second")
    assert [fan.next().key for _ in range(2)] == [0, 1]  # finished together: sent first, first


def test_stop_cancels_what_is_out_and_hands_back_what_finished() -> None:
    pool = Later()
    fan: FanOut[int] = FanOut(pool, double, ordered=False)
    for i in range(3):
        fan.send(i, i)
    pool.futures[1].set_result("done")
    assert [(d.key, d.result) for d in fan.stop()] == [(1, "done")]
    assert pool.futures[0].cancelled() and pool.futures[2].cancelled() and not fan


def test_the_campaign_keeps_twice_the_executors_slots_in_flight(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hunt --campaign over an executor of 8 slots: 16 batches out at once (the window the
    campaign's fan-out is given), never more."""
    from aclcheck.cli import hunt_campaign
    from aclcheck.triage import campaign_run

    seen: dict[str, int] = {}
    real = campaign_run.run_campaign

    @contextmanager
    def fake_pool(jobs: int, url: str | None = None):  # type: ignore[no-untyped-def]
        yield Held(slots=8)

    def counting(*args: Any, window: int, **kwargs: Any) -> Any:
        seen["window"] = window
        return real(*args, window=window, **kwargs)

    monkeypatch.setattr(hunt_campaign, "open_executor", fake_pool)
    monkeypatch.setattr(hunt_campaign, "run_campaign", counting)
    from click.testing import CliRunner

    from aclcheck.cli import cli

    result = CliRunner().invoke(cli, [
        "hunt", "--impl", "reference", "--budget", "40", "--batch", "2", "--product",
        "atlas-a2", "--dtype", "float32", "--seed", "3", "--executor", "dask-local:8",
        "-o", str(tmp_path)])
    assert seen == {"window": 16}, result.output
    assert result.exit_code == 0, result.output
