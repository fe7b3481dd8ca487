"""The CI gate: known-failure lists, baselines and diffs, sharding and merging, parallel
and distributed runs, all end to end on real golden files and reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from aclcheck.suite import sharding

#: the `cli_run` fixture: run the CLI in-process -> (exit code, output)
CliRun = Callable[..., tuple[int, str]]

FAMILIES = ("divisible", "nondivisible", "upsampling", "global", "layout", "invalid")


@pytest.fixture
def golden(gate_golden: Path) -> Path:
    return gate_golden


def report_cases(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cases"]


def comparable(case: dict) -> dict:
    """A case entry without what legitimately differs between two runs (timing)."""
    return {k: v for k, v in case.items() if k != "time_s"}


# -- known-failure lists ----------------------------------------------------------------


def test_xfail_list_turns_known_failures_into_xfail(
        cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    xf = tmp_path / "known.toml"
    xf.write_text('[[xfail]]\nid = "*-nondiv*"\nreason = "off-by-one end index, bug 42"\n'
                  'impl = "kernels:*"\n')
    args = ["verify", str(golden), "--impl", "kernels:off_by_one_end", "--dtype", "float32",
            "--family", "nondivisible", "--family", "divisible"]
    code, out = cli_run(*args)
    assert code == 1
    code, out = cli_run(*args, "--xfail", str(xf), "--json", str(tmp_path / "r.json"))
    verdicts = {c["id"]: c["verdict"] for c in report_cases(tmp_path / "r.json")}
    assert {v for k, v in verdicts.items() if "-nondiv" in k} <= {"XFAIL", "XPASS"}
    assert "XFAIL" in verdicts.values()
    failing_elsewhere = [v for k, v in verdicts.items() if "-nondiv" not in k and v == "FAIL"]
    assert code == (1 if failing_elsewhere else 0), out


def test_xpass_fails_only_when_strict(cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    xf = tmp_path / "known.toml"
    xf.write_text('[[xfail]]\nid = "*-div*"\nreason = "was broken once"\n')
    args = ["verify", str(golden), "--impl", "reference", "--family", "divisible",
            "--xfail", str(xf)]
    code, out = cli_run(*args)
    assert code == 0 and "xpassed" in out
    code, out = cli_run(*args, "--strict-xfail")
    assert code == 1


def test_bad_xfail_file_is_a_usage_error(cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    xf = tmp_path / "bad.toml"
    xf.write_text('[[xfail]]\nid = "x"\nwhy = "typo"\n')
    code, out = cli_run("verify", str(golden), "--xfail", str(xf))
    assert code == 2 and "bad.toml" in out and "why" in out


# -- baselines and diffs -----------------------------------------------------------------


def test_baseline_and_diff_show_new_failures_and_fixes(
        cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    common = ["--dtype", "float32", "--family", "nondivisible", "--family", "divisible"]
    assert cli_run("verify", str(golden), "--impl", "kernels:window_sum", *common,
                   "--json", str(old))[0] == 0
    code, out = cli_run("verify", str(golden), "--impl", "kernels:off_by_one_end", *common,
                        "--json", str(new), "--baseline", str(old))
    assert code == 1 and "NEW FAILURE" in out
    code, out = cli_run("diff", str(old), str(new))
    assert code == 1 and "new failures:" in out
    code, out = cli_run("diff", str(new), str(old))
    assert code == 0 and "fixed" in out
    # the same failures again: nothing new, the baseline gate passes
    code, out = cli_run("verify", str(golden), "--impl", "kernels:off_by_one_end", *common,
                        "--baseline", str(new))
    assert code == 0 and "new failures: 0" in out


def test_diff_of_a_non_report_exits_3(cli_run: CliRun, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    code, out = cli_run("diff", str(bad), str(bad))
    assert code == 3 and "bad.json" in out


# -- sharding and merging ----------------------------------------------------------------


def test_shards_are_balanced_deterministic_and_complete() -> None:
    sizes = [(f"c{i}", (i * 7919) % 1000 + 1) for i in range(500)]
    parts = [sharding.select(sizes, k, 4) for k in range(1, 5)]
    assert set().union(*parts) == {cid for cid, _ in sizes}
    assert sum(len(p) for p in parts) == len(sizes)
    loads = [sum(s for cid, s in sizes if cid in p) for p in parts]
    assert max(loads) - min(loads) <= max(s for _, s in sizes)
    assert parts == [sharding.select(list(reversed(sizes)), k, 4) for k in range(1, 5)]


def test_merged_shard_reports_equal_the_unsharded_run(
        cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    full = tmp_path / "full.json"
    impl = ["--impl", "kernels:window_sum"]
    cli_run("verify", str(golden), *impl, "--json", str(full))
    shards = []
    for k in range(1, 4):
        path = tmp_path / f"shard{k}.json"
        cli_run("verify", str(golden), *impl, "--shard", f"{k}/3", "--json", str(path))
        shards.append(str(path))
    merged = tmp_path / "merged.json"
    code, out = cli_run("merge", "-o", str(merged), *shards)
    full_cases, merged_cases = report_cases(full), report_cases(merged)
    assert [comparable(c) for c in merged_cases] == [comparable(c) for c in full_cases]
    assert json.loads(merged.read_text())["summary"] == json.loads(full.read_text())["summary"]
    code_again, _ = cli_run("merge", "-o", str(merged), *shards)
    assert code_again == 2  # exists without --force
    dup = cli_run("merge", "-o", str(tmp_path / "dup.json"), shards[0], shards[0])
    assert dup[0] == 2 and "given twice" in dup[1]


def test_bad_shard_spec_is_a_usage_error(cli_run: CliRun, golden: Path) -> None:
    code, out = cli_run("verify", str(golden), "--shard", "5/4")
    assert code == 2


# -- parallel and distributed ------------------------------------------------------------


def test_jobs_equal_serial(cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    serial, parallel = tmp_path / "s.json", tmp_path / "p.json"
    args = ["verify", str(golden), "--impl", "kernels:off_by_one_end", "--family",
            "nondivisible", "--family", "upsampling", "--family", "invalid"]
    code_s, _ = cli_run(*args, "--json", str(serial))
    code_p, _ = cli_run(*args, "--jobs", "2", "--json", str(parallel))
    assert code_s == code_p == 1
    assert [comparable(c) for c in report_cases(parallel)] == [
        comparable(c) for c in report_cases(serial)]


def test_dask_executor_equals_serial(cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    serial, remote = tmp_path / "s.json", tmp_path / "d.json"
    args = ["verify", str(golden), "--impl", "kernels:window_sum", "--family",
            "nondivisible", "--family", "layout"]
    cli_run(*args, "--json", str(serial))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        address = cluster.scheduler_address.removeprefix("tcp://")
        code, out = cli_run(*args, "--executor", f"dask://{address}", "--json", str(remote))
    assert code == 0, out
    assert [comparable(c) for c in report_cases(remote)] == [
        comparable(c) for c in report_cases(serial)]


def test_unreachable_dask_scheduler_is_a_usage_error(cli_run: CliRun, golden: Path) -> None:
    pytest.importorskip("distributed")
    code, out = cli_run("verify", str(golden), "--executor", "dask://127.0.0.1:9",
                        "--family", "divisible")
    assert code == 2 and "scheduler" in out


def test_xfail_entries_match_by_verdict_and_may_pass(tmp_path: Path) -> None:
    from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
    from aclcheck.judging.gate import xfail

    xf = tmp_path / "k.toml"
    xf.write_text('[[xfail]]\nid = "a2-*"\nreason = "precision"\nverdicts = ["FAIL"]\n'
                  'may_pass = true\n\n'
                  '[[xfail]]\nid = "*-empty*"\nreason = "rejects empty"\nverdicts = ["ERROR"]\n')
    known = xfail.load_xfails(xf)
    verdicts = [CaseVerdict("a2-x-empty0", Verdict.ERROR, "raised"),
                CaseVerdict("a2-y-div0", Verdict.FAIL, "off"),
                CaseVerdict("a2-z-div1", Verdict.PASS, "ok"),
                CaseVerdict("a3-w-empty1", Verdict.PASS, "ok"),
                CaseVerdict("a2-v-div2", Verdict.WRONG_STATUS, "accepted")]
    out = {v.case_id: v for v in xfail.apply(verdicts, known, "torch")}
    assert out["a2-x-empty0"].verdict == Verdict.XFAIL  # second entry, by verdict
    assert "rejects empty" in out["a2-x-empty0"].message
    assert out["a2-y-div0"].verdict == Verdict.XFAIL
    assert out["a2-z-div1"].verdict == Verdict.PASS  # may_pass: no XPASS
    assert out["a3-w-empty1"].verdict == Verdict.XPASS  # must fail, passed
    assert out["a2-v-div2"].verdict == Verdict.WRONG_STATUS  # verdict not listed
    combined = known.combined("a2-x-empty0", "torch")
    assert combined is not None and set(combined.verdicts) == {Verdict.FAIL, Verdict.ERROR}
    assert not combined.may_pass
