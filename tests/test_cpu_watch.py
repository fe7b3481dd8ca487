"""The CPU-time hang rule (aclcheck/running/cpu_watch.py): spinning calls are hung as soon
as they used far more CPU than comparable calls, blocked calls after the wall-clock
allowance, slow-but-working calls only at their CPU allowance or the cap. Every sample is
injected: no test depends on timing."""

from __future__ import annotations

import os
import time

import pytest

from aclcheck.hangs import CallClock
from aclcheck.running.cpu_watch import (
    CPU_FLOOR_S,
    STALL_WINDOW_S,
    CallWatch,
    cpu_clock,
    process_cpu_seconds,
    watch,
)


def _watch(wall_allowance: float = 5.0, cpu_allowance: float = 0.5,
           cap: float = 60.0) -> CallWatch:
    return CallWatch(wall_allowance, "the hang floor (5 s)", cpu_allowance,
                     "the CPU floor", cap)


def test_a_spinning_call_is_hung_when_its_cpu_passes_the_allowance() -> None:
    w = _watch()
    assert w.observe(0.2, 0.3) is None
    reason = w.observe(0.4, 0.6)  # two threads spinning: CPU runs ahead of the wall clock
    assert reason is not None and "spinning" in reason and "0.60 s of CPU" in reason


def test_a_spinning_call_on_a_busy_machine_is_hung_long_before_the_wall_floor() -> None:
    w = _watch()
    hung_at = next(t / 10 for t in range(1, 200) if w.observe(t / 10, 0.2 * t / 10))
    assert hung_at < 5.0 / 1.5  # a fifth of a core: 2.6 s, not the 5 s floor


def test_a_blocked_call_is_hung_after_the_wall_allowance() -> None:
    w = _watch()
    reasons = [w.observe(t / 4, 0.01) for t in range(1, 24)]  # 0.25 .. 5.75 s, no CPU
    first = next(i for i, r in enumerate(reasons) if r)
    assert (first + 1) / 4 >= 5.0
    assert "blocked" in reasons[first]  # type: ignore[operator]


def test_a_working_call_past_the_wall_allowance_is_not_hung() -> None:
    """A loaded machine: the call keeps getting CPU, slowly; only the cap ends it."""
    w = _watch(cpu_allowance=30.0, cap=20.0)
    for t in range(1, 80):
        assert w.observe(t / 4, 0.1 * t / 4) is None
    assert "--timeout 20 s" in (w.observe(20.0, 2.0) or "")


def test_a_call_that_stops_working_is_hung_a_window_later() -> None:
    w = _watch(cpu_allowance=30.0)
    for t in range(1, 25):  # works for 6 s (past the wall allowance): not hung
        assert w.observe(t / 4, 0.2 * t / 4) is None
    stuck = 0.2 * 6
    reasons = [w.observe(6 + t / 4, stuck) for t in range(1, 9)]
    first = next(i for i, r in enumerate(reasons) if r)
    assert (first + 1) / 4 >= STALL_WINDOW_S


def test_unknown_cpu_falls_back_to_the_wall_clock_rule() -> None:
    w = _watch()
    assert w.observe(4.9, None) is None
    assert "allowed by the hang floor" in (w.observe(5.0, None) or "")


def test_cpu_allowance_comes_from_the_runs_cpu_history() -> None:
    wall, cpu = CallClock(cap=60.0), cpu_clock(60.0)
    for _ in range(3):
        wall.record(1000, 0.004, first=False)
        cpu.record(1000, 0.003, first=False)
    w = watch(wall, cpu, 1000, first=False)
    assert w.cpu_allowance == CPU_FLOOR_S and w.wall_allowance == 5.0
    cpu.record(1000, 0.05, first=False)  # a heavier comparable call raises the allowance
    w = watch(wall, cpu, 1000, first=False)
    assert w.cpu_allowance == pytest.approx(2.5) and "CPU seconds" in w.cpu_why
    first = watch(CallClock(cap=60.0), cpu_clock(60.0), 1000, first=True)
    assert first.cpu_allowance >= 10.0  # a fresh worker's first call may initialize a library


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/stat"), reason="needs /proc")
def test_process_cpu_seconds_reads_this_process() -> None:
    before = process_cpu_seconds(os.getpid())
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    after = process_cpu_seconds(os.getpid())
    assert before is not None and after is not None and after >= before
    assert process_cpu_seconds(2**22 + 12345) is None  # no such process
