"""One fan-out for generate's batches, verify's cases and the campaign's batches: work sent
to an executor, at most a window of it in flight (sized by the executor's slots), each
piece sent once more where the worker running it was lost, the results handed back in
the order they were sent or as they finish. What a loss means (an error, a case's ERROR,
a batch's calls ERROR) is the caller's: a loss comes back as a `Lost` record."""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from aclcheck import interrupts

if TYPE_CHECKING:  # concurrent.futures only once work is sent: a serial run skips it
    from concurrent.futures import Future

K = TypeVar("K")

#: seconds between interrupt checks while an unordered fan-out waits
POLL_S = 0.5

#: the exceptions an executor's future raises when the worker running it died (Dask's
#: KilledWorker, a process pool broken by a worker's end): by name, Dask being optional
LOST_WORKER = frozenset({"KilledWorker", "BrokenProcessPool"})


class Executor(Protocol):
    """What a fan-out needs of an executor: concurrent.futures' submit. An executor may
    also say how many tasks it runs at once (`slots`, see `slots()`)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]: ...


def slots(executor: object) -> int:
    """How many tasks an executor runs at once (1: serial): its `slots` (a Dask cluster's
    threads, any executor that says), a process pool's workers, else 1. The one answer
    generate, verify and the campaign size their windows by."""
    if executor is None:
        return 1
    said = getattr(executor, "slots", None)
    if isinstance(said, int) and not isinstance(said, bool):
        return max(1, said)
    count = getattr(executor, "_max_workers", 1)  # concurrent.futures' pools
    return max(1, count) if isinstance(count, int) else 1


def worker_lost(exc: BaseException) -> bool:
    """Whether a future failed because its worker died, not because its task raised."""
    return any(t.__name__ in LOST_WORKER for t in type(exc).__mro__)


class LostHow(Enum):
    """How a piece of work was lost on its last try."""

    WORKER_DIED = "worker died"  # the executor lost the worker running it
    TOO_LATE = "too late"  # it did not come back within the fan-out's allowance


@dataclass(frozen=True)
class Lost:
    """A piece of work that never came back. `error`: what the executor raised on the
    last try (None: TOO_LATE); `refused`: what it raised when the piece was sent again
    (None: it was sent again, and lost again)."""

    how: LostHow
    error: BaseException | None = None
    refused: BaseException | None = None


@dataclass(frozen=True)
class Done(Generic[K]):
    """A piece of work come back: its key (the caller's), its result, or how it was lost."""

    key: K
    result: Any = None
    lost: Lost | None = None


@dataclass
class _Flight(Generic[K]):
    """A piece on the executor: what it is, how to send it again, its order and tries."""

    key: K
    args: tuple[Any, ...]
    future: Future[Any]
    order: int
    tries: int = 0


class FanOut(Generic[K]):
    """`work(*args)` for each piece sent, on `executor`. `ordered`: `next()` hands the
    pieces back in the order they were sent (waiting at most `allowance` seconds for
    each, None: for as long as it takes); else as they finish (the earliest sent first
    among those finished together). A piece whose worker died (or that outlasted the
    allowance) is sent once more; lost twice, it comes back with a `Lost`. Any other
    exception its work raised is raised by `next()`. The window is the caller's: it
    sends while `len(fan)` is under it."""

    def __init__(self, executor: Executor, work: Callable[..., Any], *, ordered: bool = True,
                 allowance: float | None = None) -> None:
        self.executor = executor
        self.work = work
        self.ordered = ordered
        self.allowance = allowance
        self._flying: deque[_Flight[K]] = deque()
        self._ready: list[_Flight[K]] = []
        self._sent = 0

    def __len__(self) -> int:
        """How many pieces are out and not yet handed back."""
        return len(self._flying) + len(self._ready)

    def send(self, key: K, *args: Any, ahead: bool = False) -> None:
        """Send `work(*args)`; `ahead`: handed back before every piece sent so far (the
        rest of a piece cut short, in an ordered fan-out)."""
        self._sent += 1
        flight = _Flight(key, args, self.executor.submit(self.work, *args),
                         -self._sent if ahead else self._sent)
        if ahead:
            self._flying.appendleft(flight)
        else:
            self._flying.append(flight)

    def next(self) -> Done[K]:
        """The next piece back (see the class); call it only while `len(self)`."""
        while True:
            interrupts.check()  # before blocking: a Ctrl-C swallowed on the way stops here
            flight = self._oldest() if self.ordered else self._first_finished()
            if flight is None:
                continue
            done = self._settle(flight)
            if done is not None:
                return done

    def stop(self) -> list[Done[K]]:
        """Cancel what is still out; the pieces that had finished with a result, in the
        order they were sent (nothing finished is lost)."""
        flights = sorted([*self._ready, *self._flying], key=lambda f: f.order)
        self._ready.clear()
        self._flying.clear()
        for flight in flights:
            flight.future.cancel()
        return [Done(f.key, f.future.result()) for f in flights
                if f.future.done() and not f.future.cancelled()
                and f.future.exception() is None]

    def _oldest(self) -> _Flight[K]:
        return self._flying.popleft()

    def _first_finished(self) -> _Flight[K] | None:
        from concurrent.futures import FIRST_COMPLETED, wait

        if not self._ready:
            done, _ = wait([f.future for f in self._flying], timeout=POLL_S,
                           return_when=FIRST_COMPLETED)
            finished = [f for f in self._flying if f.future in done]
            for flight in finished:
                self._flying.remove(flight)
            self._ready = sorted(finished, key=lambda f: f.order)
        return self._ready.pop(0) if self._ready else None

    def _settle(self, flight: _Flight[K]) -> Done[K] | None:
        """The piece's Done, or None where it was sent once more (and is out again)."""
        from concurrent.futures import TimeoutError as FutureTimeout

        try:
            timeout = self.allowance if self.ordered else None
            return Done(flight.key, flight.future.result(timeout=timeout))
        except FutureTimeout:
            with contextlib.suppress(Exception):
                flight.future.cancel()
            lost = Lost(LostHow.TOO_LATE)
        except Exception as exc:
            if not worker_lost(exc):  # the work's own error, or one of the executor's
                raise
            lost = Lost(LostHow.WORKER_DIED, exc)
        if flight.tries:
            return Done(flight.key, lost=lost)
        try:
            future = self.executor.submit(self.work, *flight.args)
        except Exception as exc:  # noqa: BLE001 - a pool that cannot take work
            return Done(flight.key, lost=Lost(lost.how, lost.error, refused=exc))
        again = _Flight(flight.key, flight.args, future, flight.order, flight.tries + 1)
        if self.ordered:
            self._flying.appendleft(again)
        else:
            self._flying.append(again)
        return None
