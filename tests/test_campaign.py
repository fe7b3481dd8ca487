"""Hunt campaigns, the parts: call i a pure function of (seed, i), batches, the tally that
deduplicates failures, the checkpoint folder that survives a restart (a torn last line,
another campaign, a second runner), one batch judged against a broken kernel, and the
driver over an executor (interrupted at a known batch, resumed). The command end to end,
on a Dask LocalCluster: tests/test_campaign_cli.py."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from aclcheck.errors import InputFileError, UsageError
from aclcheck.running.calls import RunOptions
from aclcheck.running.live import BatchTask, judge_batch
from aclcheck.triage.campaign import (
    LOST_KEY,
    BatchResult,
    Campaign,
    Failure,
    Tally,
    call_case,
    remaining,
)
from aclcheck.triage.campaign_run import Inline, run_campaign
from aclcheck.triage.checkpoint import JOURNAL_NAME, SPEC_NAME, Checkpoint

CAMPAIGN = Campaign(seed=5, budget=10, impl="reference", products=("atlas-a2",),
                    dtypes=("float32",), batch=4)


def _failure(i: int, key: str) -> Failure:
    return Failure(i, call_case(CAMPAIGN, i).to_record(), "FAIL", key, "off")


def test_call_i_is_a_pure_function_of_seed_and_index() -> None:
    forward = [call_case(CAMPAIGN, i) for i in range(6)]
    backward = [call_case(CAMPAIGN, i) for i in reversed(range(6))][::-1]
    assert forward == backward  # any order, any worker
    assert len({c.id for c in forward}) == 6
    assert all(c.positive and c.product == "atlas-a2" and c.dtype == "float32"
               for c in forward)
    other = Campaign(**{**CAMPAIGN.__dict__, "seed": 6})
    assert call_case(other, 0) != forward[0]


def test_batches_cover_the_budget_once() -> None:
    assert CAMPAIGN.batches == 3
    calls = [i for b in range(CAMPAIGN.batches) for i in CAMPAIGN.calls(b)]
    assert calls == list(range(10))
    assert list(remaining(CAMPAIGN, [0, 2])) == [1]


def test_campaign_json_round_trip_and_differences() -> None:
    data = json.loads(json.dumps(CAMPAIGN.to_json()))
    assert Campaign.from_json(data) == CAMPAIGN
    changed = Campaign(**{**CAMPAIGN.__dict__, "budget": 20, "impl": "torch"})
    assert changed.differences(CAMPAIGN) == ["budget 20, the checkpoint's 10",
                                             "impl 'torch', the checkpoint's 'reference'"]
    with pytest.raises(ValueError, match="campaign version"):
        Campaign.from_json({**data, "version": 99})


def test_tally_counts_a_batch_once_and_keeps_the_first_failure_per_key() -> None:
    late = BatchResult(2, {"PASS": 1, "FAIL": 1}, (_failure(9, "a"),))
    early = BatchResult(0, {"FAIL": 2, "PASS": 2}, (_failure(1, "a"), _failure(3, "b")))
    tally = Tally()
    assert tally.add(late) and tally.add(early) and not tally.add(early)
    assert tally.calls == 6 and tally.counts["FAIL"] == 3
    assert [f.index for f in tally.distinct()] == [1, 3]  # lowest index, whatever the order
    assert tally.seen == {"a": 2, "b": 1}
    assert BatchResult.from_json(json.loads(early.line())) == early


def test_checkpoint_resumes_and_judges_no_recorded_batch_again(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    with Checkpoint(folder, CAMPAIGN) as ckpt:
        assert not ckpt.resumed and (folder / SPEC_NAME).exists()
        ckpt.record(BatchResult(0, {"PASS": 4}))
        ckpt.record(BatchResult(2, {"PASS": 1, "FAIL": 1}, (_failure(9, "k"),)))
        ckpt.record(BatchResult(2, {"PASS": 1, "FAIL": 1}))  # again: not written twice
    with Checkpoint(folder, CAMPAIGN) as again:
        assert again.resumed and again.tally.done == {0, 2}
        assert again.tally.calls == 6 and list(remaining(CAMPAIGN, again.tally.done)) == [1]
        assert [f.index for f in again.tally.distinct()] == [9]
    assert len((folder / JOURNAL_NAME).read_text().splitlines()) == 2


def test_a_torn_last_line_is_dropped(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    with Checkpoint(folder, CAMPAIGN) as ckpt:
        ckpt.record(BatchResult(1, {"PASS": 4}))
    journal = folder / JOURNAL_NAME
    whole = journal.read_bytes()
    journal.write_bytes(whole + BatchResult(0, {"PASS": 4}).line().encode()[:17])  # killed
    with Checkpoint(folder, CAMPAIGN) as again:
        assert again.torn and again.tally.done == {1}
    assert journal.read_bytes() == whole


def test_another_campaign_or_a_damaged_journal_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    Checkpoint(folder, CAMPAIGN).close()
    other = Campaign(**{**CAMPAIGN.__dict__, "seed": 6})
    with pytest.raises(UsageError, match="holds another campaign.*seed 6, the checkpoint's 5"):
        Checkpoint(folder, other)
    with pytest.raises(UsageError, match="--budget 4: .* has 10 calls .*cannot shrink"):
        Checkpoint(folder, Campaign(**{**CAMPAIGN.__dict__, "budget": 4}))
    (folder / JOURNAL_NAME).write_text('{"batch": 0}\n')
    with pytest.raises(InputFileError, match="line 1: not a batch record"):
        Checkpoint(folder, CAMPAIGN)
    (folder / JOURNAL_NAME).write_text(BatchResult(7, {"PASS": 1}).line() + "\n")
    with pytest.raises(InputFileError, match="batch 7 is not one of this campaign's 3"):
        Checkpoint(folder, CAMPAIGN)


def test_a_larger_budget_extends_a_campaign_keeping_its_batches(tmp_path: Path) -> None:
    longer = CAMPAIGN.extended(15)  # batches of 4 over 10 calls, then over 5 more
    assert longer.earlier == (10,) and longer.batches == 5
    assert [longer.calls(b) for b in range(6)] == [range(0, 4), range(4, 8), range(8, 10),
                                                   range(10, 14), range(14, 15), range(0)]
    assert Campaign.from_json(json.loads(json.dumps(longer.to_json()))) == longer
    folder = tmp_path / "ckpt"
    with Checkpoint(folder, CAMPAIGN) as ckpt:
        for b in range(3):
            ckpt.record(BatchResult(b, {"PASS": len(CAMPAIGN.calls(b))}))
        assert ckpt.complete
    with Checkpoint(folder, Campaign(**{**CAMPAIGN.__dict__, "budget": 15})) as ckpt:
        assert ckpt.campaign == longer and ckpt.extended_from == 10 and not ckpt.complete
        assert list(remaining(longer, ckpt.tally.done)) == [3, 4]
        assert json.loads((folder / SPEC_NAME).read_text())["budget"] == 10  # not yet
        ckpt.record(BatchResult(3, {"PASS": 4}))
    assert json.loads((folder / SPEC_NAME).read_text())["earlier"] == [10]
    with Checkpoint(folder, Campaign(**{**CAMPAIGN.__dict__, "budget": 15})) as ckpt:
        assert ckpt.extended_from is None and ckpt.tally.done == {0, 1, 2, 3}


def test_the_journal_keeps_one_failing_call_per_key_of_a_batch(tmp_path: Path) -> None:
    result = BatchResult(0, {"FAIL": 4}, (_failure(3, "a"), _failure(1, "a"), _failure(2, "b"),
                                          _failure(0, "a")))
    compact = result.compact()
    assert [f.index for f in compact.failures] == [0, 2] and compact.others == {"a": 2}
    with Checkpoint(tmp_path / "c", CAMPAIGN) as ckpt:
        ckpt.record(result)
    with Checkpoint(tmp_path / "c", CAMPAIGN) as again:
        assert again.tally.seen == {"a": 3, "b": 1} and again.tally.counts == {"FAIL": 4}
        assert [f.index for f in again.tally.distinct()] == [0, 2]


def test_one_campaign_at_a_time_holds_a_checkpoint(tmp_path: Path) -> None:
    with Checkpoint(tmp_path / "c", CAMPAIGN), pytest.raises(UsageError,
                                                             match="another campaign"):
        Checkpoint(tmp_path / "c", CAMPAIGN)
    Checkpoint(tmp_path / "c", CAMPAIGN).close()  # free again


def test_a_checkpoint_the_file_system_refuses_is_one_usage_error(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")  # a file where the folder's parent should be
    with pytest.raises(UsageError, match=r"--checkpoint .*plain/c: cannot use it"):
        Checkpoint(tmp_path / "plain" / "c", CAMPAIGN)


def test_a_batch_against_a_broken_kernel_finds_and_keys_failures() -> None:
    campaign = Campaign(seed=3, budget=8, impl="kernels:off_by_one_end",
                        products=("atlas-a2",), dtypes=("float32",), batch=8)
    result = judge_batch(BatchTask(campaign, 0, RunOptions(isolate=False)))
    assert sum(result.counts.values()) == 8 and result.counts.get("FAIL", 0) >= 1
    for f in result.failures:
        assert f.verdict == "FAIL" and f.key.startswith("FAIL|0-valid")
        assert f.case(campaign.op) == call_case(campaign, f.index)
    clean = judge_batch(BatchTask(Campaign(**{**campaign.__dict__, "impl": "reference"}), 0,
                                  RunOptions(isolate=False)))
    assert clean.counts == {"PASS": 8} and not clean.failures


# -- driving a campaign over an executor -----------------------------------------------------


def _task(campaign: Campaign) -> Callable[[int], BatchTask]:
    return lambda batch: BatchTask(campaign, batch, RunOptions())


def _fake_work(calls: list[int]) -> Callable[[BatchTask], BatchResult]:
    def work(task: BatchTask) -> BatchResult:
        calls.append(task.batch)
        indices = list(task.campaign.calls(task.batch))
        fails = tuple(_failure(i, f"k{i % 3}") for i in indices if i % 4 == 3)
        return BatchResult(task.batch, {"PASS": len(indices) - len(fails),
                                        "FAIL": len(fails)}, fails)
    return work


@pytest.mark.parametrize("executor", ["inline", "threads"])
def test_a_campaign_resumes_after_an_interrupt_and_judges_each_batch_once(
        tmp_path: Path, executor: str) -> None:
    campaign = Campaign(**{**CAMPAIGN.__dict__, "budget": 40, "batch": 3})
    calls: list[int] = []
    work = _fake_work(calls)

    def interrupting(task: BatchTask) -> BatchResult:
        if len(calls) == 5:
            raise KeyboardInterrupt
        return work(task)

    pool = ThreadPoolExecutor(2) if executor == "threads" else Inline()
    with Checkpoint(tmp_path / "c", campaign) as ckpt, pytest.raises(KeyboardInterrupt):
        run_campaign(ckpt, pool, _task(campaign), interrupting, window=1)
    first = len(calls)
    with Checkpoint(tmp_path / "c", campaign) as ckpt:
        assert ckpt.resumed and len(ckpt.tally.done) == first
        tally = run_campaign(ckpt, pool, _task(campaign), work)
    assert sorted(calls) == list(range(campaign.batches))  # every batch judged once
    assert tally.calls == 40 and tally.counts["FAIL"] == 10
    assert [f.key for f in tally.distinct()] == ["k0", "k1", "k2"]
    if isinstance(pool, ThreadPoolExecutor):
        pool.shutdown()


def test_a_failing_batch_stops_the_campaign_and_keeps_the_others(tmp_path: Path) -> None:
    campaign = Campaign(**{**CAMPAIGN.__dict__, "budget": 12, "batch": 3})
    calls: list[int] = []
    work = _fake_work(calls)

    def broken(task: BatchTask) -> BatchResult:
        if task.batch == 2:
            raise RuntimeError("the adapter is missing on this worker")
        return work(task)

    with Checkpoint(tmp_path / "c", campaign) as ckpt:
        with pytest.raises(RuntimeError, match="missing on this worker"):
            run_campaign(ckpt, Inline(), _task(campaign), broken, window=4)
        assert ckpt.tally.done == {0, 1, 3}  # what finished beside it is kept


class BrokenProcessPool(Exception):
    """Named as the exception a process pool's future raises when its worker died."""


def test_a_batch_whose_worker_died_is_sent_again_then_recorded_as_error(
        tmp_path: Path) -> None:
    """Batch 1's worker dies once (sent again: judged), batch 2's every time (its calls
    ERROR, the first kept); the campaign goes on and its journal reads back."""
    campaign = Campaign(**{**CAMPAIGN.__dict__, "budget": 12, "batch": 3})
    calls: list[int] = []
    work = _fake_work(calls)
    deaths: Counter[int] = Counter()

    def dying(task: BatchTask) -> BatchResult:
        if task.batch == 2 or (task.batch == 1 and not deaths[1]):
            deaths[task.batch] += 1
            raise BrokenProcessPool("A process in the process pool was terminated abruptly")
        return work(task)

    with Checkpoint(tmp_path / "c", campaign) as ckpt:
        tally = run_campaign(ckpt, Inline(), _task(campaign), dying, window=4)
    assert deaths == {1: 1, 2: 2} and sorted(calls) == [0, 1, 3]
    assert tally.done == {0, 1, 2, 3} and tally.counts["ERROR"] == 3
    (lost,) = [f for f in tally.distinct() if f.key == LOST_KEY]
    assert lost.index == 6 and "BrokenProcessPool" in lost.message
    assert lost.case(campaign.op).to_record() == call_case(campaign, 6).to_record()
    with Checkpoint(tmp_path / "c", campaign) as ckpt:  # the journal reads back
        assert ckpt.tally.counts == tally.counts and ckpt.complete
