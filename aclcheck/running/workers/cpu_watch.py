"""Judging a call in flight by the worker's CPU time as well as the wall clock (issue 25).

The wall-clock rule alone (aclcheck.running.workers.hangs) must wait out a floor of
seconds, because on a busy machine a healthy call can take 50x longer than its
neighbours; and the floor is what a run waits for every call that spins (PyTorch CPU
spins on some calls the contract rejects: 1-2 per run of the default suite, 5 s to 36 s
each). CPU time is immune to the machine's load, so it can judge much sooner:

  * a call the contract rejects is **spinning** once its worker has used more CPU than
    `factor` times the CPU of the slowest comparable call of this run (never less than a
    floor of a fraction of a second; the first call of a worker against first calls):
    declared hung at once (PyTorch CPU spins on some invalid calls). A valid call is never
    ended by this rule unless the user asks (`--spin-rule all`): a correct kernel may be
    slow (a debug build, an emulator), and slow is not hung;
  * a call is **blocked** once the wall-clock allowance has passed and the worker has
    used (almost) no CPU over the last second: declared hung as today;
  * a call that keeps computing past the wall-clock allowance (a loaded machine, a slow
    kernel) is not hung until the cap (`--timeout`) is reached (or, where the spinning
    rule applies, its CPU allowance).

Where the worker's CPU time cannot be read (no /proc), the wall-clock rule alone decides,
as before. Pure bookkeeping plus one reader of /proc: the isolated runner feeds samples.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

from aclcheck.running.workers.hangs import CallClock

#: a call may use this many CPU seconds before its neighbours' history counts (a healthy
#: small call uses milliseconds); the run's very first call, which may initialize a
#: library and has nothing to compare with, keeps the wall clock's first-call allowance
CPU_FLOOR_S = 0.5
#: ...or this many times the CPU of the slowest comparable call: CPU time does not grow
#: with the machine's load as wall time does (50x, aclcheck.running.workers.hangs), only with
#: caches and clock speed, so a tighter factor fails no slow machine's healthy call
CPU_FACTOR = 10.0
#: a worker that used less than STALL_RATE CPU seconds per second over the last
#: STALL_WINDOW_S seconds is not progressing (blocked: a lock, a pipe, a device)
STALL_WINDOW_S = 1.0
STALL_RATE = 0.02

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process `pid`, all its threads (Linux /proc); None
    where it cannot be read (another system, or the process is gone)."""
    try:  # os-level calls: this runs twice per call, and a buffered file costs more
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        stat = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    fields = stat.rsplit(b")", 1)[-1].split()
    try:
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14, 15)
    except (IndexError, ValueError):
        return None


def cpu_clock(wall: CallClock) -> CallClock:
    """The CPU-seconds counterpart of the run's wall CallClock: same size classes, cap and
    first-call allowance; the CPU factor and floor; recorded with the CPU seconds of
    answered calls."""
    return CallClock(cap=wall.cap, factor=CPU_FACTOR, floor=CPU_FLOOR_S,
                     first_floor=wall.first_floor)


@dataclass
class CallWatch:
    """One call in flight: fed (wall seconds since it was sent, worker CPU seconds since
    then) samples, it says when and why the call is hung."""

    wall_allowance: float
    wall_why: str
    cpu_allowance: float
    cpu_why: str
    cap: float
    #: the spinning rule applies (a call the contract rejects, or --spin-rule all); else
    #: a call that keeps using CPU runs to the cap
    spin: bool = True
    _samples: deque[tuple[float, float]] = field(default_factory=deque)

    def observe(self, wall: float, cpu: float | None) -> str | None:
        """Why the call is hung now (a message tail), or None to keep waiting. `cpu`
        None: the worker's CPU time is unknown (the wall-clock rule alone)."""
        if wall >= self.cap:
            return f"no answer after {wall:.1f} s, allowed by --timeout {self.cap:g} s"
        if cpu is None:
            if wall >= self.wall_allowance:
                return f"no answer after {wall:.1f} s, allowed by {self.wall_why}"
            return None
        if self.spin and cpu > self.cpu_allowance:
            return (f"still computing after {cpu:.2f} s of CPU ({wall:.1f} s), allowed by "
                    f"{self.cpu_why} (spinning?)")
        self._samples.append((wall, cpu))
        while len(self._samples) > 1 and self._samples[1][0] <= wall - STALL_WINDOW_S:
            self._samples.popleft()
        if wall >= self.wall_allowance:
            first_wall, first_cpu = self._samples[0]
            span = wall - first_wall
            if span >= STALL_WINDOW_S and (cpu - first_cpu) < STALL_RATE * span:
                return (f"no answer after {wall:.1f} s and no CPU used in the last "
                        f"{span:.1f} s, allowed by {self.wall_why} (blocked?)")
        return None

    def idle(self, window: float) -> bool:
        """Whether the samples so far span `window` seconds or more with (almost) no CPU
        used: the call looks blocked (where the CPU time is read)."""
        if len(self._samples) < 2:
            return False
        (w0, c0), (w1, c1) = self._samples[0], self._samples[-1]
        span = w1 - w0
        return span >= window and (c1 - c0) < STALL_RATE * span


def watch(wall: CallClock, cpu: CallClock, size: int, first: bool, spin: bool = True
          ) -> CallWatch:
    """The watch of a call over `size` elements (`first`: a fresh worker's first call)
    from the run's wall-clock and CPU clocks; `spin`: the spinning rule applies."""
    wall_s, wall_why = wall.allowance(size, first)
    cpu_s, cpu_why = cpu.allowance(size, first)
    return CallWatch(wall_s, wall_why, cpu_s, f"{cpu_why} in CPU seconds", wall.cap, spin)
