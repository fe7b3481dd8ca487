"""A call set aside while it looked blocked (its worker used no CPU for a while): the
worker keeps it and runs out its allowance apart, while the next cases run in a fresh
worker (a fork of the zygote), so a call that blocks does not stall the run. Its outcome
is exactly what waiting for it would have given: its answer, or the hang verdict of its
watch (aclcheck.running.cpu_watch). The isolated runner (aclcheck.running.isolation)
sets calls aside and reads their answers; the caller keeps its verdicts in order."""

from __future__ import annotations

import select
from typing import TYPE_CHECKING

from aclcheck.cases.call import Outcome
from aclcheck.running.inflight import _Live, _Pending

if TYPE_CHECKING:
    from aclcheck.running.isolation import IsolatedRunner

#: seconds between two looks at a set-aside call's CPU time
LOOK_EVERY_S = 0.1


class Parked:
    """One set-aside call: `poll()` without waiting, `wait()` until it is settled."""

    def __init__(self, runner: IsolatedRunner, live: _Live, pending: _Pending) -> None:
        self.runner = runner
        self.live = live
        self.pending = pending
        self.outcome: Outcome | None = None
        self._next_look = 0.0

    @property
    def case_id(self) -> str:
        return self.pending.call.case.id

    def _settle(self, hung: str | None) -> Outcome:
        self.outcome = self.runner.settle(self.live, self.pending, hung)
        if self in self.runner.parked:
            self.runner.parked.remove(self)
        return self.outcome

    def poll(self) -> Outcome | None:
        """The outcome once the call has answered or is hung; None meanwhile."""
        if self.outcome is not None:
            return self.outcome
        try:
            answered = bool(select.select([self.live.channel.fileno()], [], [], 0)[0])
        except (OSError, ValueError):
            answered = True  # the connection is gone: settle says how
        if answered:
            return self._settle(None)
        r, p = self.runner, self.pending
        now = r.now()
        if now < self._next_look:
            return None
        self._next_look = now + LOOK_EVERY_S
        assert p.watch is not None
        hung = p.watch.observe(now - p.sent_at, r._cpu_used(self.live, p))
        return None if hung is None else self._settle(hung)

    def wait(self) -> Outcome:
        """The outcome, waiting for it (the call's watch decides when it is hung)."""
        if self.outcome is None:
            self._settle(self.runner._wait(self.live, self.pending))
        assert self.outcome is not None
        return self.outcome
