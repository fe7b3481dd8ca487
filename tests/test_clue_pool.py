"""Failing cases' diagnosis evidence computed in a helper process (aclcheck.running.
clue_pool): the same evidence as in this process, a broken helper leaves the work here,
and the runner ends the helper when it closes."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from aclcheck.cases import CaseData
from aclcheck.impls.registry import create
from aclcheck.running import schedule
from aclcheck.running.calls import CaseRunner, RunOptions
from aclcheck.running.clue_pool import CluePool, case_evidence
from aclcheck.running.schedule import iter_verdicts
from aclcheck.running.session import GoldenSource
from aclcheck.store.dispatch import open_golden


@pytest.fixture(scope="module")
def failing(valid_3d_4d_golden: Path) -> list[tuple[CaseData, np.ndarray]]:
    """Valid cases with a wrong output each (the golden off by one part in a hundred,
    its last row dropped)."""
    out = []
    with open_golden(valid_3d_4d_golden) as gf:
        for case_id in list(gf.ids())[:6]:
            data = gf.data(case_id)
            if data.golden is None or not data.golden.size:
                continue
            dtype, shape = data.case.expected_output()
            wrong = np.asarray(data.golden, dtype=np.float64) * 1.01
            wrong[..., -1, :] = 0.0
            out.append((data, wrong.astype(dtype).reshape(shape)))
    assert out
    return out


def test_the_helper_gives_the_evidence_this_process_gives(
        failing: list[tuple[CaseData, np.ndarray]]) -> None:
    with_helper = CluePool()
    try:
        futures = [with_helper.submit(d, o) for d, o in failing]
        got = [with_helper.result(f, d, o) for f, (d, o) in zip(futures, failing, strict=True)]
    finally:
        with_helper.close()
    here = [case_evidence(d, o) for d, o in failing]
    assert got == here
    assert any(e is not None and e.judged for e in here)


def test_a_broken_helper_leaves_the_evidence_to_this_process(
        failing: list[tuple[CaseData, np.ndarray]]) -> None:
    pool = CluePool()
    try:
        data, output = failing[0]
        pool.result(pool.submit(data, output), data, output)  # the helper runs
        assert pool._pool is not None
        for process in list(pool._pool._processes.values()):
            process.kill()  # the helper dies: the pool is broken
            process.join()
        future = pool.submit(data, output)  # the pool may or may not know it yet
        assert pool.result(future, data, output) == case_evidence(data, output)
        assert pool._broken
    finally:
        pool.close(interrupted=True)


def test_a_future_the_dead_helper_never_answers_is_not_awaited_forever(
        failing: list[tuple[CaseData, np.ndarray]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A future submitted as the helper died may never be answered: the wait looks at the
    helper and computes the evidence here once it is gone."""
    from concurrent.futures import Future

    from aclcheck.running import clue_pool

    monkeypatch.setattr(clue_pool, "HELPER_LOOK_S", 0.01)
    pool = CluePool()
    try:
        data, output = failing[0]
        pool.result(pool.submit(data, output), data, output)  # the helper runs
        assert pool._pool is not None
        for process in list(pool._pool._processes.values()):
            process.kill()
            process.join()
        orphan: Future = Future()  # never answered
        assert pool.result(orphan, data, output) == case_evidence(data, output)
        assert pool._broken
    finally:
        pool.close(interrupted=True)


def test_the_runner_ends_its_helper_when_it_closes(
        failing: list[tuple[CaseData, np.ndarray]]) -> None:
    runner = CaseRunner(create("reference"), RunOptions())
    data, output = failing[0]
    runner.clues.result(runner.clues.submit(data, output), data, output)
    assert runner.clues._pool is not None
    helpers = [p.pid for p in runner.clues._pool._processes.values()]
    assert helpers and all(pid != os.getpid() for pid in helpers)
    runner.close()
    assert runner.clues._pool is None
    for pid in helpers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _fail_clues(golden: Path) -> dict[str, object]:
    """Each FAIL's evidence in an isolated run of a kernel that fails many cases."""
    impl = create("kernels_zoo:end_floor")
    with open_golden(golden) as gf:
        cases = [gf.case(i) for i in gf.ids()]
        verdicts = list(iter_verdicts(impl, cases, GoldenSource(gf), RunOptions()))
    return {v.case_id: v.clues for v in verdicts if v.verdict.value == "FAIL"}


def test_verdicts_wait_for_their_evidence_within_the_bounds(
        valid_3d_4d_golden: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One case's evidence at a time (the bounds force a wait at every FAIL) gives the
    same evidence as the default bounds: the order and the attachment do not depend on
    how many are out at once."""
    default = _fail_clues(valid_3d_4d_golden)
    assert len(default) >= 2 and all(c is not None for c in default.values())
    monkeypatch.setattr(schedule, "MAX_CLUES_ASKED", 1)
    monkeypatch.setattr(schedule, "MAX_CLUES_ELEMENTS", 1)
    assert _fail_clues(valid_3d_4d_golden) == default
