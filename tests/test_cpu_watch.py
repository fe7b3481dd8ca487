"""The CPU-time hang rule (aclcheck/running/workers/cpu_watch.py): spinning calls are hung as soon
as they used far more CPU than comparable calls, blocked calls after the wall-clock
allowance, slow-but-working calls only at their CPU allowance or the cap. Every sample is
injected: no test depends on timing."""

from __future__ import annotations

import os
import select
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from aclcheck.impls.base import CallInputs
from aclcheck.running.workers import parent as isolation
from aclcheck.running.workers.cpu_watch import (
    CPU_FACTOR,
    CPU_FLOOR_S,
    STALL_WINDOW_S,
    CallWatch,
    cpu_clock,
    process_cpu_seconds,
    watch,
)
from aclcheck.running.workers.hangs import CallClock
from aclcheck.running.workers.inflight import PendingCall
from aclcheck.running.workers.lifetime import start_zygote
from aclcheck.running.workers.parent import IsolatedRunner, Parked
from aclcheck.store.dispatch import open_golden
from tests import hostile_modules as hm


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
    wall = CallClock(cap=60.0)
    cpu = cpu_clock(wall)
    for _ in range(3):
        wall.record(1000, 0.004, first=False)
        cpu.record(1000, 0.003, first=False)
    w = watch(wall, cpu, 1000, first=False)
    assert w.cpu_allowance == CPU_FLOOR_S and w.wall_allowance == 5.0
    cpu.record(1000, 0.2, first=False)  # a heavier comparable call raises the allowance
    w = watch(wall, cpu, 1000, first=False)
    assert w.cpu_allowance == pytest.approx(CPU_FACTOR * 0.2) and "CPU seconds" in w.cpu_why
    fresh = CallClock(cap=60.0)
    first = watch(fresh, cpu_clock(fresh), 1000, first=True)
    # the run's first call may initialize a library: the wall clock's first allowance
    assert first.cpu_allowance == fresh.first_floor


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/stat"), reason="needs /proc")
def test_process_cpu_seconds_reads_this_process() -> None:
    before = process_cpu_seconds(os.getpid())
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    after = process_cpu_seconds(os.getpid())
    assert before is not None and after is not None and after >= before
    assert process_cpu_seconds(2**22 + 12345) is None  # no such process


# -- the rule wired into the isolated runner (virtual clock, injected CPU samples) ----------


class _Virtual:
    """The runner's clock and `select.poll()` for a worker that never answers: each poll
    lets its milliseconds pass in virtual time, and the worker's CPU time grows at
    `rate` CPU seconds per virtual second (no process, no sleeping)."""

    def __init__(self, rate: float) -> None:
        self.t = 1000.0
        self.rate = rate

    def now(self) -> float:
        return self.t

    def cpu(self, pid: int) -> float:
        return self.rate * (self.t - 1000.0)

    def poll(self) -> SimpleNamespace:
        def advance(ms: int) -> list:
            self.t += ms / 1000
            return []

        return SimpleNamespace(register=lambda fd, events: None, poll=advance)


def _wait_for_verdict(monkeypatch: pytest.MonkeyPatch, rate: float, cap: float = 60.0
                      ) -> tuple[str, float]:
    """Why, and after how many virtual seconds, the runner gives up on a call whose
    worker uses `rate` CPU seconds per second (wall allowance 5 s, CPU allowance 0.5 s)."""
    v = _Virtual(rate)
    monkeypatch.setattr(isolation, "select", SimpleNamespace(
        poll=v.poll, POLLIN=1, POLLHUP=2, POLLERR=4))
    runner = isolation.IsolatedRunner("impl_fixtures:hangs", timeout=cap, now=v.now,
                                      cpu_time=v.cpu)
    try:
        runner.clock.record(1000, 0.001, first=False)  # not the run's first call
        w = watch(runner.clock, runner.cpu_clock, 1000, first=False)
        assert (w.wall_allowance, w.cpu_allowance) == (5.0, CPU_FLOOR_S)
        pending = PendingCall(1, SimpleNamespace(case=SimpleNamespace(id="c")), 1000,
                                     first=False, sent_at=v.now(), deadline=v.now() + 5.0,
                                     watch=w, cpu0=v.cpu(0))
        live = SimpleNamespace(pid=-1, channel=SimpleNamespace(fileno=lambda: -1))
        reason = runner._wait(live, pending)
    finally:
        runner.close()
    assert reason is not None
    return reason, v.t - 1000.0


def test_an_answer_waiting_when_the_caller_comes_is_never_a_hang(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A call collected long after it was sent (the parent was busy: a parked call, a
    slow report, a loaded machine) whose answer is already there is not judged hung,
    however far past the cap the clock has run."""
    v = _Virtual(rate=1.0)
    monkeypatch.setattr(isolation, "select", SimpleNamespace(
        poll=lambda: SimpleNamespace(register=lambda fd, events: None,
                                     poll=lambda ms: [(-1, 1)]),
        POLLIN=1, POLLHUP=2, POLLERR=4))
    runner = isolation.IsolatedRunner("impl_fixtures:hangs", timeout=3.0, now=v.now,
                                      cpu_time=v.cpu)
    try:
        w = watch(runner.clock, runner.cpu_clock, 1000, first=False)
        pending = PendingCall(1, SimpleNamespace(case=SimpleNamespace(id="c")), 1000,
                                     first=False, sent_at=v.now() - 60.0,
                                     deadline=v.now() - 57.0, watch=w, cpu0=v.cpu(0))
        live = SimpleNamespace(pid=-1, channel=SimpleNamespace(fileno=lambda: -1))
        assert runner._wait(live, pending) is None
    finally:
        runner.close()


def test_the_runner_ends_a_spinning_call_after_a_fraction_of_a_second(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reason, after = _wait_for_verdict(monkeypatch, rate=1.0)  # one core, flat out
    assert "spinning" in reason and after <= CPU_FLOOR_S + 2 * isolation.SAMPLE_EVERY_S
    reason, after = _wait_for_verdict(monkeypatch, rate=0.25)  # a busy machine's share
    assert "spinning" in reason and after < 5.0 / 2


def test_the_runner_ends_a_blocked_call_at_the_wall_allowance(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reason, after = _wait_for_verdict(monkeypatch, rate=0.0)
    assert "blocked" in reason and after == pytest.approx(5.0, abs=isolation.SAMPLE_EVERY_S)


def test_the_runner_waits_for_a_slow_call_that_keeps_working(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded machine: a tenth of a core for the call, which is no spinner (0.5 s of CPU
    is not reached before the cap) and never stalls: only the cap ends it."""
    reason, after = _wait_for_verdict(monkeypatch, rate=0.05, cap=8.0)
    assert "--timeout 8 s" in reason and after == pytest.approx(8.0, abs=0.2)


# -- a blocked call set aside: the run goes on in a fresh worker ---------------------------

_BLOCKS_ON_FIFO = hm.CORRECT + '''

def fn(grad_output, self):
    if grad_output.ndim == 3:  # blocks (no CPU) until the test writes into the FIFO
        with open(FIFO, "rb") as f:
            f.read(1)
    return correct(grad_output, self)
'''


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/stat"), reason="needs /proc")
def test_a_blocked_call_is_set_aside_and_settled_later(valid_3d_4d_golden: Path,
                                                       tmp_path: Path) -> None:
    """The 3-D call blocks until released: collect() sets it aside (no time limit can
    fire first: the hang floor is 600 s), the 4-D call answers from a fresh worker, and
    once released the set-aside call gives its own answer."""
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    spec = hm.write_module(tmp_path, _BLOCKS_ON_FIFO.replace("FIFO", repr(str(fifo))))
    with open_golden(valid_3d_4d_golden) as gf:
        cases = [gf.case(i) for i in gf.ids()]
        blocked = next(c for c in cases if len(c.self_shape) == 3)
        other = next(c for c in cases if len(c.self_shape) == 4)
        calls = [CallInputs(c, gf.data(c.id).inputs) for c in (blocked, other)]
    zygote = start_zygote(spec)
    worker = IsolatedRunner(spec, timeout=1200, zygote=zygote,
                            clock=CallClock(cap=1200, floor=600, first_floor=600))
    try:
        worker.submit(calls[0])
        parked = worker.collect(park_idle=True)
        assert isinstance(parked, Parked) and parked.case_id == blocked.id
        assert parked.poll() is None and worker.parked == [parked]
        later = worker.run(calls[1])
        assert later.crashed is None and isinstance(later.output, np.ndarray)
        assert worker.started == 2  # the run went on in a fresh worker
        with open(fifo, "wb") as f:
            f.write(b"x")
        settled = parked.wait()
        assert settled.crashed is None and isinstance(settled.output, np.ndarray)
        assert settled.output.shape == tuple(blocked.self_shape)
        assert worker.parked == []
    finally:
        worker.close()
        zygote.close()


class _PollsFirst:
    """The runner's clock and `select.poll()` for real workers: virtual seconds pass only
    while a poll waits (SAMPLE_EVERY_S per poll), and each call's first poll returns at
    once, so every call is sampled at least once while in flight, however fast it is.
    How many more polls a call takes depends on the machine; the test does not."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.polls = 0

    def now(self) -> float:
        return self.t

    def poll(self) -> SimpleNamespace:
        real = select.poll()
        first = [True]

        def wait(ms: int) -> list:
            self.polls += 1
            self.t += isolation.SAMPLE_EVERY_S
            if first[0]:
                first[0] = False
                return []
            return real.poll(ms)

        return SimpleNamespace(register=real.register, poll=wait)


def test_a_worker_cpu_time_is_read_once_per_answered_call(
        valid_3d_4d_golden: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reading taken at an answer starts the worker's next call (it idles in between);
    a fresh worker's first call reads its own start. The samples the watch takes while a
    call is in flight are its own (as many as the call's polls); outside them, the rule
    is one reading per answered call plus the fresh worker's first. Each call still gets
    its own CPU seconds recorded."""
    v = _PollsFirst()
    monkeypatch.setattr(isolation, "select", SimpleNamespace(
        poll=v.poll, POLLIN=select.POLLIN, POLLHUP=select.POLLHUP, POLLERR=select.POLLERR))
    in_wait = [False]
    reads = {"sampled": 0, "other": 0}

    def counting(pid: int) -> float | None:
        reads["sampled" if in_wait[0] else "other"] += 1
        return process_cpu_seconds(pid)

    with open_golden(valid_3d_4d_golden) as gf:
        calls = [CallInputs(gf.case(i), gf.data(i).inputs) for i in gf.ids()][:3]
    # no limit can fire: the virtual clock runs as fast as the polls
    worker = IsolatedRunner("reference", timeout=1e9, cpu_time=counting, now=v.now,
                            clock=CallClock(cap=1e9, floor=1e9, first_floor=1e9))
    worker.cpu_clock = CallClock(cap=1e9, floor=1e9, first_floor=1e9)
    real_wait = worker._wait

    def wait(*args: object, **kwargs: object) -> str | None:
        in_wait[0] = True
        try:
            return real_wait(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            in_wait[0] = False

    monkeypatch.setattr(worker, "_wait", wait)
    try:
        for call in calls:
            assert worker.run(call).crashed is None
        assert reads["other"] == len(calls) + 1
        assert reads["sampled"] >= len(calls)  # every call was sampled in flight
        assert worker.cpu_clock._steady or worker.cpu_clock._first  # recorded
    finally:
        worker.close()


# -- slow is not hung: the spinning rule ends only calls the contract rejects -------------


def test_a_working_call_the_contract_accepts_runs_to_the_cap() -> None:
    """The spinning rule is off (a valid call): CPU far past the allowance, still working,
    is never hung before the cap; the same samples hang a call the contract rejects."""
    valid = CallWatch(5.0, "the hang floor (5 s)", 0.5, "the CPU floor", 60.0, spin=False)
    invalid = _watch()
    for t in range(1, 240):  # one core flat out for a minute
        assert valid.observe(t / 4, t / 4) is None
    assert "--timeout 60 s" in (valid.observe(60.0, 60.0) or "")
    assert "spinning" in (invalid.observe(1.0, 1.0) or "")


def test_a_valid_call_that_stops_working_is_still_hung_as_blocked() -> None:
    w = CallWatch(5.0, "the hang floor (5 s)", 0.5, "the CPU floor", 60.0, spin=False)
    for t in range(1, 25):  # computes for 6 s: well past the CPU allowance
        assert w.observe(t / 4, t / 4) is None
    reasons = [w.observe(6 + t / 4, 6.0) for t in range(1, 9)]
    assert any(r and "blocked" in r for r in reasons)


def _armed_spin(monkeypatch: pytest.MonkeyPatch, status: int, spin_all: bool) -> bool:
    """Whether the runner arms a call of `status` with the spinning rule."""
    from aclcheck.cases.record import Expectation

    v = _Virtual(0.0)
    runner = isolation.IsolatedRunner("impl_fixtures:hangs", timeout=60, now=v.now,
                                      cpu_time=v.cpu, spin_all=spin_all)
    try:
        case = SimpleNamespace(id="c", expected_status=status,
                               expectation=Expectation(status, "r", "why"))
        pending = PendingCall(1, SimpleNamespace(case=case), 1000, first=False)
        live = SimpleNamespace(pid=-1, answered=1, cpu_mark=None)
        runner._arm(live, pending)  # type: ignore[arg-type]
        assert pending.watch is not None
        return pending.watch.spin
    finally:
        runner.close()


def test_the_runner_spins_out_only_calls_the_contract_rejects(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from aclcheck.cases.acl import SUCCESS, UNSPECIFIED

    assert not _armed_spin(monkeypatch, SUCCESS, spin_all=False)
    assert not _armed_spin(monkeypatch, UNSPECIFIED, spin_all=False)
    assert _armed_spin(monkeypatch, 161002, spin_all=False)
    assert _armed_spin(monkeypatch, SUCCESS, spin_all=True)  # --spin-rule all


_BURNS_CPU = hm.CORRECT + '''
import time


def fn(grad_output, self):
    if grad_output.ndim == 3:  # a slow but correct call: 0.8 s of CPU, past the 0.5 s floor
        end = time.process_time() + 0.8
        while time.process_time() < end:
            pass
    return correct(grad_output, self)
'''


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/stat"), reason="needs /proc")
def test_a_slow_correct_kernel_passes_and_spin_rule_all_ends_it(
        valid_3d_4d_golden: Path, tmp_path: Path) -> None:
    """End to end: a valid call that keeps computing well past the CPU allowance passes
    (the cap, 600 s, is the only limit that could end it); `--spin-rule all` ends it."""
    import json

    from click.testing import CliRunner

    from aclcheck.cli import cli

    spec = hm.write_module(tmp_path, _BURNS_CPU)
    with open_golden(valid_3d_4d_golden) as gf:
        ranks = [(i, len(gf.case(i).self_shape)) for i in gf.ids()]
    at = next(n for n, (_, rank) in enumerate(ranks) if rank == 4)
    four = ranks[at][0]
    three = next(i for i, rank in ranks[at:] if rank == 3)  # after the 4-D one:
    verdicts = {}  # not the worker's first call, which has an allowance of its own
    for rule in ("rejected", "all"):
        report = tmp_path / f"{rule}.json"
        res = CliRunner().invoke(cli, ["verify", str(valid_3d_4d_golden), "--impl", spec,
                                       "--id", four, "--id", three, "--timeout", "600",
                                       "--no-stale-check", "--spin-rule", rule,
                                       "--json", str(report)])
        case = {c["id"]: c for c in json.loads(report.read_text())["cases"]}[three]
        verdicts[rule] = (res.exit_code, case["verdict"], case.get("message", ""))
    assert verdicts["rejected"][:2] == (0, "PASS"), verdicts
    assert verdicts["all"][:2] == (1, "ERROR") and "spinning" in verdicts["all"][2], verdicts
