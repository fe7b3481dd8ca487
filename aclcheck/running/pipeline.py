"""An isolated run with one call in flight: the parent loads the next case and judges
the previous one while the worker computes, and a call that looks blocked is set aside
with its worker (aclcheck.running.parked) while the next cases run in a fresh one. The
stale-state check's calls of a case run in the recall worker while this process judges
the case's first answer and goes on to the next case; their answer is collected when
the next case's check is due. Same verdicts, same order as one call after the other."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, wait
from dataclasses import dataclass, replace

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.cases.call import Capabilities, Outcome
from aclcheck.judging.case.verdicts import CaseVerdict
from aclcheck.judging.diagnosis.reproduce import CaseClues
from aclcheck.running.parked import Parked
from aclcheck.running.runner import (
    CaseRunner,
    CaseSource,
    Later,
    Prepared,
    call_again,
    conclude,
    judge_first,
    prepare,
    send_again,
)

#: most calls set aside at once (each keeps its worker process)
MAX_PARKED = 2
#: most failing cases whose evidence is asked of the helper and not yet attached, and
#: most output elements among them (each case's data is held until its evidence comes)
MAX_CLUES_ASKED = 64
MAX_CLUES_ELEMENTS = 1 << 20


@dataclass
class _Waiting:
    """A case whose call was set aside: its verdict comes once the call is settled."""

    prepared: Prepared
    parked: Parked


@dataclass
class _Clueing:
    """A FAIL whose diagnosis evidence the helper process computes."""

    verdict: CaseVerdict
    data: CaseData
    output: np.ndarray
    future: Future[CaseClues | None]


@dataclass
class _Rechecking:
    """A case whose first answer is judged while the stale-state check's calls run in the
    recall worker: its verdict comes once their answer is collected, which waits until
    the next case needs that worker (the worker computes while this process works on
    the next case)."""

    prepared: Prepared
    outcome: Outcome
    judged: CaseVerdict
    verdict: CaseVerdict | _Clueing | None = None


def pipelined(runner: CaseRunner, cases: Iterable[Case], source: CaseSource,
              caps: Capabilities) -> Iterator[CaseVerdict]:
    """Verdicts in case order (see the module docstring). Calls are set aside only where
    a fresh worker is a fork away and the stale-state check has its own worker."""
    worker = runner.isolated()
    apart = runner.separate_recall  # the check's calls overlap with the next case's
    pending: Prepared | None = None
    order: deque[CaseVerdict | _Waiting | _Rechecking | _Clueing] = deque()
    checking: _Rechecking | None = None  # the case whose check is in the recall worker
    clues = runner.clues  # failing cases' evidence, computed beside the run
    #: evidence asked for and not yet come, with its output's elements
    asked: deque[tuple[Future[CaseClues | None], int]] = deque()

    def concluded(first: Prepared, outcome: Outcome, again: Outcome | None,
                  judged: CaseVerdict | None = None) -> CaseVerdict | _Clueing:
        """conclude(), a FAIL's evidence asked of the helper (at most MAX_CLUES_ASKED
        cases and MAX_CLUES_ELEMENTS output elements at once: memory stays bounded, the
        oldest is awaited first)."""
        later: Later = []
        verdict = conclude(runner, first, outcome, caps, again, judged, later=later)
        if not later:
            return verdict
        data, output = later[0]
        while asked and (len(asked) >= MAX_CLUES_ASKED or output.size
                         + sum(n for _, n in asked) > MAX_CLUES_ELEMENTS):
            wait([asked.popleft()[0]])
        future = clues.submit(data, output)
        asked.append((future, output.size))
        return _Clueing(verdict, data, output, future)

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

    def settle_check() -> None:
        """The checked case's verdict, from the recall worker's answer (the worker is
        then free for the next case's check)."""
        nonlocal checking
        if checking is not None:
            done, checking = checking, None
            done.verdict = concluded(done.prepared, done.outcome, runner.recall_answer(),
                                     done.judged)

    def finish(first: Prepared, outcome: Outcome, again: Outcome | None
               ) -> CaseVerdict | _Rechecking | _Clueing:
        nonlocal checking
        if not apart:
            return concluded(first, outcome, again)
        # the check's calls go to the recall worker, while the worker computes the next
        # case and this process judges the first answer (and goes on to the next case)
        settle_check()
        sent = send_again(runner, first, outcome)
        judged = judge_first(runner, first, outcome, caps)
        if not sent:  # no check due
            return concluded(first, outcome, None, judged)
        checking = _Rechecking(first, outcome, judged)
        return checking

    def ready(block: bool = False, interrupted: bool = False) -> Iterator[CaseVerdict]:
        """The verdicts at the front of the order that are settled (all, with `block`;
        `interrupted`: a FAIL whose evidence has not come goes without it)."""
        for entry in order:  # settle what has answered (or hung) meanwhile
            if isinstance(entry, _Waiting):
                entry.parked.poll()
        while order:
            head = order[0]
            if isinstance(head, _Waiting):
                outcome = head.parked.wait() if block else head.parked.poll()
                if outcome is None:
                    return
                order[0] = head = finish(head.prepared, outcome, None)
            if isinstance(head, _Rechecking):
                if head.verdict is None:
                    if not block:
                        return
                    settle_check()
                assert head.verdict is not None
                order[0] = head = head.verdict
            if isinstance(head, _Clueing):
                if interrupted and not head.future.done():
                    head.future.cancel()
                    order[0] = head.verdict
                else:
                    if not block and not head.future.done():
                        return
                    order[0] = replace(head.verdict, clues=clues.result(
                        head.future, head.data, head.output))
            yield order.popleft()  # type: ignore[misc]

    try:
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
    except KeyboardInterrupt:
        # an interrupted run keeps what was judged: the checked case's check has
        # answered by now (or does within its allowance)
        try:
            settle_check()
        except KeyboardInterrupt:  # the check's own call raised it
            pass
        else:
            yield from ready(interrupted=True)
        raise
