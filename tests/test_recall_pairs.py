"""The stale-state check's two calls travel to the recall worker in one message
(IsolatedRunner.submit(twin, then=call), as CaseRunner.send_recall sends them): each is
still watched and blamed on its own. A twin that crashes or hangs takes only its own
worker down and the case's second call runs in a fresh one; a second call that crashes
after a good twin is that call's crash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aclcheck.impls.base import CallInputs
from aclcheck.running.workers.hangs import CallClock
from aclcheck.running.workers.lifetime import start_zygote
from aclcheck.running.workers.parent import IsolatedRunner
from aclcheck.store.dispatch import open_golden


@pytest.fixture(scope="module")
def calls(valid_3d_4d_golden: Path) -> dict[str, CallInputs]:
    """One 3-D call (where the fixture kernels misbehave) and one 4-D call."""
    with open_golden(valid_3d_4d_golden) as gf:
        cases = [gf.case(i) for i in gf.ids()]
        pick = {"3d": next(c for c in cases if len(c.self_shape) == 3),
                "4d": next(c for c in cases if len(c.self_shape) == 4)}
        return {k: CallInputs(c, gf.data(c.id).inputs) for k, c in pick.items()}


def _sent_together(worker: IsolatedRunner, before: CallInputs, call: CallInputs
                   ):  # type: ignore[no-untyped-def]
    """Both outcomes of two calls sent in one message, as the recall worker gets them
    (CaseRunner.send_recall, then recall_answer's two collects)."""
    worker.submit(before, then=call)
    first = worker.collect()
    return first, worker.collect()


def _pair(spec: str, before: CallInputs, call: CallInputs):  # type: ignore[no-untyped-def]
    zygote = start_zygote(spec)
    # only the wall allowance of a blocked call can fire (the fixture sleeps 600 s)
    worker = IsolatedRunner(spec, timeout=300, zygote=zygote,
                            clock=CallClock(cap=300, floor=1.0, first_floor=1.0))
    try:
        first, second = _sent_together(worker, before, call)
        return first, second, worker.started, worker.run(call)
    finally:
        worker.close()
        if zygote is not None:
            zygote.close()


def _right(outcome) -> bool:  # type: ignore[no-untyped-def]
    return (outcome.crashed is None and outcome.raised is None
            and isinstance(outcome.output, np.ndarray) and outcome.output.size > 0)


def test_both_answers_come_back_in_order_from_one_worker(
        calls: dict[str, CallInputs]) -> None:
    first, second, started, again = _pair("impl_fixtures:correct", calls["3d"], calls["4d"])
    assert _right(first) and _right(second) and started == 1
    assert first.output.shape == tuple(calls["3d"].case.self_shape)
    assert second.output.shape == tuple(calls["4d"].case.self_shape)
    assert _right(again)  # the worker serves single calls after a pair


@pytest.mark.parametrize("spec,why", [("impl_fixtures:segfaults", "SIGSEGV"),
                                      ("impl_fixtures:hangs", "timeout")])
def test_a_twin_that_dies_is_blamed_alone(calls: dict[str, CallInputs], spec: str,
                                          why: str) -> None:
    first, second, started, _ = _pair(spec, calls["3d"], calls["4d"])
    assert first.crashed is not None and why in first.crashed
    assert _right(second) and started == 2  # the second call ran in a fresh worker


def test_a_second_call_that_dies_is_its_own(calls: dict[str, CallInputs]) -> None:
    first, second, started, again = _pair("impl_fixtures:segfaults", calls["4d"],
                                          calls["3d"])
    assert _right(first)
    assert second.crashed is not None and "SIGSEGV" in second.crashed
    assert again.crashed is not None and started == 1


def test_a_worker_that_cannot_start_fails_both_calls(calls: dict[str, CallInputs]) -> None:
    worker = IsolatedRunner("impl_fixtures:no_such_function", timeout=300)
    try:
        first, second = _sent_together(worker, calls["4d"], calls["4d"])
    finally:
        worker.close()
    for outcome in (first, second):
        assert outcome.crashed is not None and "could not start" in outcome.crashed
