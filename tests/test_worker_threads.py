"""Workers that compute at once share the cores (aclcheck/cores.py): the case
worker and the recall worker of an isolated run with the stale-state check each get
their share of the kernels' threads, unless the user set OMP_NUM_THREADS."""

from __future__ import annotations

import pytest

from aclcheck.cores import available_cores, worker_threads
from aclcheck.impls import create
from aclcheck.running.calls import CaseRunner, RunOptions


@pytest.mark.parametrize("concurrent,cores,threads", [(2, 2, 1), (2, 16, 8), (2, 3, 1),
                                                     (3, 2, 1), (1, 16, None)])
def test_the_cores_are_split_between_the_workers(concurrent: int, cores: int,
                                                 threads: int | None) -> None:
    assert worker_threads(concurrent, cores, env={}) == threads


def test_omp_num_threads_set_by_the_user_is_left_alone() -> None:
    assert worker_threads(2, 16, env={"OMP_NUM_THREADS": "4"}) is None
    assert worker_threads(2, 16, env={"OMP_NUM_THREADS": ""}) == 8  # set but empty: unset


def test_available_cores_is_at_least_one() -> None:
    assert available_cores() >= 1


@pytest.mark.parametrize("recall,shared", [(True, True), (False, False)])
def test_the_runner_splits_the_cores_only_when_the_recall_worker_runs(
        recall: bool, shared: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    impl = create("reference")
    with CaseRunner(impl, RunOptions(isolate=True, recall=recall)) as runner:
        assert runner.isolated().threads == (worker_threads(2) if shared else None)
        assert (runner.isolated().threads is not None) == shared


def test_the_torch_adapter_sets_its_intra_op_threads() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        create("torch").set_threads(1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
