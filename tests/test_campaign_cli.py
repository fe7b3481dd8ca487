"""`aclcheck hunt --budget N --checkpoint DIR` end to end: on a Dask LocalCluster of two
workers a broken zoo kernel is found, shrunk, deduplicated and written, and `verify`
FAILS it on the written golden and passes the reference; a campaign stopped after k
batches (an injected stop, no clock) resumes, judges no recorded call again and loses
nothing; a checkpoint of another campaign is refused; malformed --executor values are
one-line usage errors; crashes and hangs stay per case on Dask workers."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from aclcheck.cli import hunt as hunt_cli
from aclcheck.errors import UsageError
from aclcheck.executors import ExecutorSpec, open_executor, parse_executor
from aclcheck.store.dispatch import open_golden
from aclcheck.suite.casefile import load_case_file
from aclcheck.triage.campaign import BatchResult, Tally
from aclcheck.triage.checkpoint import JOURNAL_NAME
from tests.hostile_modules import CORRECT, write_module

CliRun = Callable[..., tuple[int, str]]
BROKEN = "kernels_zoo:end_floor"  # window end floor((i+1)*I/O) instead of ceil
A2_FP32 = ("--product", "atlas-a2", "--dtype", "float32")


def _journal(checkpoint: Path) -> list[BatchResult]:
    return [BatchResult.from_json(json.loads(line))
            for line in (checkpoint / JOURNAL_NAME).read_text().splitlines()]


def _tally(results: list[BatchResult]) -> Tally:
    tally = Tally()
    for r in results:
        assert tally.add(r), f"batch {r.batch} recorded twice"
    return tally


def _without_time(results: list[BatchResult]) -> dict[int, tuple]:
    return {r.batch: (r.counts, r.failures) for r in results}


def test_a_campaign_on_two_dask_workers_finds_shrinks_dedups_and_writes(
        cli_run: CliRun, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    out = tmp_path / "found"
    code, text = cli_run("hunt", "--impl", BROKEN, "--budget", "48", "--batch", "8", *A2_FP32,
                         "--seed", "3", "--executor", "dask-local:2", "--shrink-time", "30",
                         "-o", str(out))
    assert code == 1, text
    assert "new campaign" in text and "2 worker(s) at dask-local:2" in text
    journal = _journal(out / "checkpoint")
    assert sorted(r.batch for r in journal) == list(range(6))  # every batch once
    tally = _tally(journal)
    assert tally.calls == 48
    failing = sum(tally.seen.values())
    assert failing > len(tally.first) >= 1  # many failing calls, few distinct ways
    assert all(key.startswith("FAIL|0-valid|") for key in tally.first)
    assert "diagnosis kept: window-end-floor" in text
    written = load_case_file(out / "cases.toml").cases
    assert 1 <= len(written) <= len(tally.first)
    assert all(c.family != "hunt" or "hunt" in c.id for c in written)
    golden = out / "golden.h5"
    assert f"regression: aclcheck verify {golden} --impl {BROKEN}" in text
    with open_golden(golden) as gf:
        assert sorted(e.id for e in gf.index) == sorted(c.id for c in written)
    code, verdicts = cli_run("verify", str(golden), "--impl", BROKEN)
    assert code == 1 and "failed: 0" not in verdicts, verdicts
    code, remote = cli_run("verify", str(golden), "--impl", BROKEN,  # verify on Dask too
                           "--executor", "dask-local:2")
    assert code == 1 and remote.splitlines()[-1] == verdicts.splitlines()[-1], remote
    code, verdicts = cli_run("verify", str(golden))  # the reference passes it
    assert code == 0, verdicts


def _stop_after(batches: int) -> Callable[[Tally], None]:
    def stop(tally: Tally) -> None:
        if len(tally.done) == batches:
            raise KeyboardInterrupt
    return stop


@pytest.mark.parametrize("executor", [
    pytest.param((), id="here"),
    pytest.param(("--executor", "dask-local:2"), id="dask-local-2", marks=pytest.mark.slow),
])
def test_a_stopped_campaign_resumes_judges_no_call_twice_and_loses_nothing(
        cli_run: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        executor: tuple[str, ...]) -> None:
    if executor:
        pytest.importorskip("distributed")
    args = ("hunt", "--impl", BROKEN, "--budget", "30", "--batch", "5", *A2_FP32, "--seed",
            "11", "--shrink-time", "30", *executor)
    stopped, whole = tmp_path / "stopped", tmp_path / "whole"
    monkeypatch.setattr(hunt_cli, "STOP", _stop_after(2))
    code, text = cli_run(*args, "-o", str(stopped))
    assert code == 130, text
    first = _journal(stopped / "checkpoint")
    assert len(first) >= 2 and "rerun the same command to resume" in text
    assert not (stopped / "cases.toml").exists()  # nothing written before the end
    before = _tally(first).calls
    monkeypatch.setattr(hunt_cli, "STOP", None)
    code, text = cli_run(*args, "-o", str(stopped))
    assert code == 1, text
    assert (f"resuming the campaign in {stopped / 'checkpoint'}: {len(first)} of 6 batches "
            f"({before} of 30 calls) judged already") in text
    assert f"this run: {30 - before} calls" in text  # only the calls not recorded
    resumed = _journal(stopped / "checkpoint")
    assert resumed[:len(first)] == first  # the recorded lines stay as they were
    assert _tally(resumed).calls == 30  # each batch once (_tally refuses a repeat)
    code, _ = cli_run(*args, "-o", str(whole))  # the same campaign, never stopped
    assert code == 1
    assert _without_time(resumed) == _without_time(_journal(whole / "checkpoint"))
    assert (stopped / "cases.toml").read_text() == (whole / "cases.toml").read_text()


def test_a_checkpoint_of_another_campaign_is_refused(cli_run: CliRun, tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    base = ("hunt", "--budget", "4", "--batch", "2", "--checkpoint", str(ckpt))
    code, text = cli_run(*base, "--op", "aapool3d-bwd", "-o", str(tmp_path / "a"))
    assert code == 0 and "nothing failed" in text, text  # the 3-D reference passes
    for other, said in ((("--op", "aapool3d-bwd", "--seed", "9"), "seed 9, the checkpoint's 0"),
                        (("--op", "aapool3d-bwd", "--impl", "kernels:window_sum"),
                         "impl 'kernels:window_sum', the checkpoint's 'reference'"),
                        ((), "op 'adaptive_avg_pool2d_backward', the checkpoint's "
                             "'adaptive_avg_pool3d_backward'")):
        code, text = cli_run(*base, *other, "-o", str(tmp_path / "b"))
        assert code == 2 and "holds another campaign" in text and said in text, text
        assert len([line for line in text.splitlines() if "aclcheck" in line]) == 1
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("spec", ["dask-local:0", "dask-local:-1", "dask-local:x",
                                  "dask-local:", "dask-local:٣", "spark://h:1", "dask://h",
                                  "dask://h:0", "dask://:8786"])
def test_a_malformed_executor_is_a_one_line_usage_error(
        cli_run: CliRun, tmp_path: Path, spec: str, a2_fp32_golden: Path) -> None:
    with pytest.raises(UsageError, match="--executor"):
        parse_executor(spec)
    code, text = cli_run("hunt", "--budget", "4", "--executor", spec, "-o", str(tmp_path))
    assert code == 2 and "--executor" in text, text
    code, text = cli_run("verify", str(a2_fp32_golden), "--executor", spec)
    assert code == 2 and "--executor" in text, text


def test_executor_specs_and_a_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_executor("dask-local:3") == ExecutorSpec(local_workers=3)
    assert parse_executor("dask://10.0.0.5:8786") == ExecutorSpec(address="10.0.0.5:8786")
    monkeypatch.setitem(sys.modules, "distributed", None)  # the extra is not installed
    with pytest.raises(UsageError, match=r"pip install 'aclcheck\[dask\]'"), \
            open_executor(1, "dask-local:2"):
        pass


@pytest.mark.parametrize("flag", [("--checkpoint", "c"), ("--executor", "dask-local:2")])
def test_campaign_options_need_a_budget(cli_run: CliRun, tmp_path: Path,
                                        flag: tuple[str, str]) -> None:
    code, text = cli_run("hunt", *flag, "-o", str(tmp_path / "o"))
    assert code == 2 and "add --budget N" in text


HANG_OR_CRASH = CORRECT + '''
import os
import time


def fn(grad_output, self):
    if grad_output.size == CRASH:
        os.abort()
    if grad_output.size == HANG:
        time.sleep(3600)
    return correct(grad_output, self)
'''


@pytest.mark.slow
def test_crashes_and_hangs_stay_per_case_on_dask_workers(
        cli_run: CliRun, tmp_path: Path, a2_fp32_golden: Path) -> None:
    pytest.importorskip("distributed")
    with open_golden(a2_fp32_golden) as gf:
        cases = [gf.case(e.id) for e in gf.index]
        sizes = sorted({gf.data(c.id).values()[c.inputs()[0].name].size for c in cases
                        if c.positive})
    crash, hang = sizes[0], sizes[-1]
    spec = write_module(tmp_path, f"CRASH, HANG = {crash}, {hang}\n" + HANG_OR_CRASH)
    args = ("verify", str(a2_fp32_golden), "--impl", spec, "--timeout", "3",
            "--no-stale-check")
    serial, remote = tmp_path / "s.json", tmp_path / "d.json"
    cli_run(*args, "--json", str(serial))
    code, text = cli_run(*args, "--executor", "dask-local:2", "--json", str(remote))
    assert code == 1, text
    judged = {c["id"]: c["verdict"] for c in json.loads(remote.read_text())["cases"]}
    assert judged == {c["id"]: c["verdict"] for c in json.loads(serial.read_text())["cases"]}
    verdicts = list(judged.values())
    assert verdicts.count("ERROR") >= 2 and verdicts.count("PASS") >= 1


def test_a_batch_that_raises_stops_with_one_line_and_keeps_the_others(
        cli_run: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aclcheck.cli import hunt_campaign

    real = hunt_campaign.judge_calls

    def broken(judge, campaign, batch):  # type: ignore[no-untyped-def]
        if batch == 2:
            raise RuntimeError("the adapter is missing on this worker")
        return real(judge, campaign, batch)

    monkeypatch.setattr(hunt_campaign, "judge_calls", broken)
    args = ("hunt", "--budget", "8", "--batch", "2", *A2_FP32, "-o", str(tmp_path / "o"))
    code, text = cli_run(*args)
    assert code == 4, text
    assert "a batch failed on its worker (RuntimeError: the adapter is missing" in text
    assert sorted(r.batch for r in _journal(tmp_path / "o" / "checkpoint")) == [0, 1]
    monkeypatch.setattr(hunt_campaign, "judge_calls", real)
    code, text = cli_run(*args)
    assert code == 0 and "2 of 4 batches (4 of 8 calls) judged already" in text, text
