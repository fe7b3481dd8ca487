"""An isolated run with one call in flight: the parent loads the next case and judges
the previous one while the worker computes, and a call that looks blocked is set aside
with its worker (aclcheck.running.parked) while the next cases run in a fresh one. Same
verdicts, same order as one call after the other."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from aclcheck.cases import Case
from aclcheck.cases.call import Capabilities, Outcome
from aclcheck.judging.verdicts import CaseVerdict
from aclcheck.running.parked import Parked
from aclcheck.running.runner import (
    CaseRunner,
    CaseSource,
    Prepared,
    call_again,
    conclude,
    judge_first,
    prepare,
    send_again,
)

#: most calls set aside at once (each keeps its worker process)
MAX_PARKED = 2


@dataclass
class _Waiting:
    """A case whose call was set aside: its verdict comes once the call is settled."""

    prepared: Prepared
    parked: Parked


def pipelined(runner: CaseRunner, cases: Iterable[Case], source: CaseSource,
              caps: Capabilities) -> Iterator[CaseVerdict]:
    """Verdicts in case order (see the module docstring). Calls are set aside only where
    a fresh worker is a fork away and the stale-state check has its own worker."""
    worker = runner.isolated()
    apart = runner.separate_recall  # the check's calls overlap with the next case's
    pending: Prepared | None = None
    order: deque[CaseVerdict | _Waiting] = deque()

    def collect() -> tuple[Prepared, Outcome, Outcome | None] | None:
        """The pending call's outcome (and its second one where the check shares the
        worker: its calls run now, before the next case is submitted); None: set aside."""
        nonlocal pending
        assert pending is not None
        first, pending = pending, None
        got = worker.collect(park_idle=apart and len(worker.parked) < MAX_PARKED)
        if isinstance(got, Parked):
            order.append(_Waiting(first, got))
            return None
        runner.after_isolated(first.call, got)
        return first, got, None if apart else call_again(runner, first, got)

    def finish(first: Prepared, outcome: Outcome, again: Outcome | None) -> CaseVerdict:
        if not apart:
            return conclude(runner, first, outcome, caps, again)
        # the check's calls go to the recall worker, while the worker computes the next
        # case and this process judges the first answer
        sent = send_again(runner, first, outcome)
        judged = judge_first(runner, first, outcome, caps)
        again = runner.recall_answer() if sent else call_again(runner, first, outcome)
        return conclude(runner, first, outcome, caps, again, judged)

    def ready(block: bool = False) -> Iterator[CaseVerdict]:
        """The verdicts at the front of the order that are settled (all, with `block`)."""
        for entry in order:  # settle what has answered (or hung) meanwhile
            if isinstance(entry, _Waiting):
                entry.parked.poll()
        while order:
            head = order[0]
            if isinstance(head, _Waiting):
                outcome = head.parked.wait() if block else head.parked.poll()
                if outcome is None:
                    return
                order[0] = finish(head.prepared, outcome, None)
            yield order.popleft()  # type: ignore[misc]

    for case in cases:
        loaded = source.load(case)  # overlaps with the worker computing `pending`
        prepared = prepare(runner, loaded, caps)
        if isinstance(prepared, CaseVerdict):
            if pending is not None and (done := collect()) is not None:
                order.append(finish(*done))
            order.append(prepared)
        elif pending is None:
            worker.submit(prepared.call)
            pending = prepared
        else:
            done = collect()
            worker.submit(prepared.call)  # the worker starts on this one...
            pending = prepared
            if done is not None:  # ...while we judge (and check) the previous one
                order.append(finish(*done))
        yield from ready()
    if pending is not None and (done := collect()) is not None:
        order.append(finish(*done))
    yield from ready(block=True)
