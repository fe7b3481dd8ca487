"""When is a call hung? An allowance that adapts to the calls of this run.

A fixed timeout is either too short for a big case or far too long for the small calls
that hang in practice (PyTorch CPU spins forever on some invalid calls). Here a call is
hung when it runs `factor` times longer than the slowest answered call of this run,
scaled to its size, never less than `floor` seconds; the first call of a worker (which
may compile or load kernels) is compared with earlier first calls, and the very first
one gets `first_floor`. `cap` (--timeout) bounds everything. Pure bookkeeping: the
isolated runner asks and records, nothing here touches a process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: a call may run this many times longer than comparable calls of this run
HANG_FACTOR = 50.0
#: ...but never less than this (scheduling noise on a busy machine, a page-in)
HANG_FLOOR_S = 5.0
#: the run's very first call (nothing to compare with; may compile kernels)
FIRST_CALL_FLOOR_S = 30.0


def size_class(size: int) -> int:
    """Calls within a factor of two share a class (log2 of the element count)."""
    return max(size, 1).bit_length()


def _reference(slowest: dict[int, float], size: int, scale: bool = True) -> float:
    """Slowest answered call of similar size (classes within a factor of four); else the
    nearest class, scaled up linearly when this call is bigger (`scale`: first calls
    are mostly start-up cost, which does not grow with the size); 0 with no history."""
    if not slowest:
        return 0.0
    c = size_class(size)
    similar = [t for k, t in slowest.items() if abs(k - c) <= 2]
    if similar:
        return max(similar)
    nearest = min(slowest, key=lambda k: abs(k - c))
    grow = 2.0 ** (c - nearest) if scale and nearest < c else 1.0
    return slowest[nearest] * grow


@dataclass
class CallClock:
    """The hang allowance of the next call, from the answered calls recorded so far."""

    cap: float
    factor: float = HANG_FACTOR
    floor: float = HANG_FLOOR_S
    first_floor: float = FIRST_CALL_FLOOR_S
    #: slowest answered call per size class: later calls, and first calls of a worker
    _steady: dict[int, float] = field(default_factory=dict)
    _first: dict[int, float] = field(default_factory=dict)
    #: allowances by (size class, first) since the tables last changed (every call asks
    #: two clocks; the slowest calls change rarely)
    _known: dict[tuple[int, bool], tuple[float, str]] = field(default_factory=dict)

    def allowance(self, size: int, first: bool) -> tuple[float, str]:
        """(seconds, why) for a call over `size` elements; `first`: a fresh worker's."""
        key = (size_class(size), first)
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = self._allowance(size, first)
        return known

    def _allowance(self, size: int, first: bool) -> tuple[float, str]:
        ref = _reference(self._steady, size)
        if first:
            ref = max(ref, _reference(self._first, size, scale=False))
        if first and not self._first:
            floor, what = self.first_floor, "the first call's allowance"
        else:
            floor, what = self.floor, "the hang floor"
        seconds, why = floor, what + f" ({floor:g} s)"
        if self.factor * ref > floor:
            seconds = self.factor * ref
            why = (f"{self.factor:g}x the slowest comparable call of this run "
                   f"({ref:.3g} s)")
        if seconds >= self.cap:
            return self.cap, f"--timeout {self.cap:g} s"
        return seconds, why

    def record(self, size: int, seconds: float, first: bool) -> None:
        """An answered call (any answer but a crash or a hang)."""
        table = self._first if first else self._steady
        c = size_class(size)
        if seconds > table.get(c, -1.0):
            table[c] = seconds
            self._known.clear()
