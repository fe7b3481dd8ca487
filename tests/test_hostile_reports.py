"""Red team, gate side: exit 0 only when a correct kernel was judged, and reports anyone
can edit read with exit 3 (one line), never an internal error.

Probes: a fuzz of report fields (huge and non-finite numbers, wrong types, missing
fields) through every command that reads reports; merges of incomplete shard sets
(missing, repeated, interrupted, cut short, mixed with whole runs); diff categories
(only -> PASS is fixed); --baseline of another golden file or implementation; a
known-failure entry that matches every case; the pytest plugin under the same rules.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.report import json_report
from aclcheck.report.diff import diff
from aclcheck.suite.selection import Selection
from tests import hostile_modules as hm

#: the `cli_run` fixture: run the CLI in-process -> (exit code, output)
CliRun = Callable[..., tuple[int, str]]

pytest_plugins = ["pytester"]

SELECTION = Selection(products=("atlas-a2",), dtypes=("float32",),
                      families=("divisible", "nondivisible", "rank3"), seed=13)
FAST = ("--no-isolate",)  # reports are what is under test here, not the calls


@pytest.fixture(scope="module")
def golden(isolation_golden: Path) -> Path:
    return isolation_golden


@pytest.fixture(scope="module")
def failing_report(cli_run: CliRun, golden: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report with FAIL cases (and their evidence), PASS and ERROR ones."""
    path = tmp_path_factory.mktemp("reports") / "base.json"
    code, out = cli_run("verify", str(golden), "--impl", "kernels:off_by_one_end", *FAST,
                        "--json", str(path))
    assert code == 1 and path.exists(), out
    return path


# -- a fuzz of report fields -------------------------------------------------------------------

#: values that are not what a report writes (as JSON text: some are not Python floats)
HOSTILE = ["1e999", "-1e999", "NaN", str(10 ** 400), "-1", "true", "null", '"x"', "[]", "{}",
           '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
           '{"a": {"b": [1, {"c": 1e999}]}}', '"\\u001b[2J\\udc80"']
TOP = ["implementation", "golden", "standards", "standard", "shard", "interrupted", "selected",
       "planned", "selection", "isolation", "cases", "version", "command", "tool_version"]
CASE = ["id", "verdict", "message", "product", "dtype", "family", "detail", "metrics",
        "standards", "notes", "expected_status", "actual_status", "time_s", "repro", "index",
        "evidence"]
METRICS = ["max_ulp", "mismatch_ratio", "max_abs_err"]
EVIDENCE = ["shape", "map", "plane_fails", "plane_group", "hist", "hist_log2_edges",
            "standard"]
SENTINEL = '"@@HOSTILE@@"'


def mutations(report: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, JSON text) of the report with one field replaced by a hostile value or
    removed; each field gets four of the values (seeded)."""
    rng = random.Random(26)
    failing = next(i for i, c in enumerate(report["cases"]) if "evidence" in c)
    targets: list[tuple[str, list[Any], str]] = [(k, [], k) for k in TOP]
    targets += [(k, ["cases", failing], f"case.{k}") for k in CASE]
    targets += [(k, ["cases", failing, "metrics"], f"metrics.{k}") for k in METRICS]
    targets += [(k, ["cases", failing, "evidence"], f"evidence.{k}") for k in EVIDENCE]
    out = []
    for key, where, label in targets:
        for value in [*rng.sample(HOSTILE, 4), None]:
            copy = json.loads(json.dumps(report))
            node = copy
            for step in where:
                node = node[step]
            if value is None:
                node.pop(key, None)
                out.append((f"{label}=missing", json.dumps(copy)))
            else:
                node[key] = "@@HOSTILE@@"
                out.append((f"{label}={value[:12]}", json.dumps(copy).replace(SENTINEL, value)))
    return out


def test_hostile_reports_are_bad_input_never_an_internal_error(cli_run: CliRun,
        golden: Path, failing_report: Path, tmp_path: Path) -> None:
    base = json.loads(failing_report.read_text())
    other = tmp_path / "other.json"
    other.write_text(failing_report.read_text())
    seen: dict[int, int] = {}
    for label, text in mutations(base):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        for args in (["diff", str(failing_report), str(bad)],
                     ["diff", str(bad), str(failing_report)],
                     ["report", str(bad), "--html", str(tmp_path / "page.html")],
                     ["merge", "-o", str(tmp_path / "m.json"), "--force", str(bad),
                      str(other)]):
            code, out = cli_run(*args)
            seen[code] = seen.get(code, 0) + 1
            assert code in (0, 1, 2, 3), (label, args[0], out)
            assert "Traceback" not in out and "internal error" not in out, (label, out)
            if code == 3:
                errors = [ln for ln in out.splitlines() if ln.startswith("aclcheck: error:")]
                assert len(errors) == 1, (label, out)
    assert seen.get(3, 0) > 100  # most hostile values are refused as bad input


@pytest.mark.parametrize("label", ["case.time_s=1e999", "case.index=huge", "metrics=NaN",
                                   "interrupted=x"])
def test_a_hostile_baseline_is_bad_input_before_the_run(
        cli_run: CliRun, golden: Path, failing_report: Path,
                                                        tmp_path: Path, label: str) -> None:
    data = json.loads(failing_report.read_text())
    case = data["cases"][0]
    if label == "case.time_s=1e999":
        text = json.dumps(data).replace(f'"time_s": {json.dumps(case["time_s"])}',
                                        '"time_s": 1e999', 1)
    elif label == "case.index=huge":
        case["index"] = 10 ** 400
        text = json.dumps(data)
    elif label == "metrics=NaN":
        case["metrics"]["max_ulp"] = float("nan")
        text = json.dumps(data)
    else:
        data["interrupted"] = "x"
        text = json.dumps(data)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    code, out = cli_run("verify", str(golden), *FAST, "--baseline", str(bad))
    assert code == 3, out
    assert len([ln for ln in out.splitlines() if ln.startswith("aclcheck: error:")]) == 1


# -- merge: only whole runs --------------------------------------------------------------------


@pytest.fixture(scope="module")
def shards(cli_run: CliRun, golden: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("shards")
    paths = []
    for k in (1, 2, 3):
        path = folder / f"shard{k}.json"
        code, out = cli_run("verify", str(golden), *FAST, "--shard", f"{k}/3", "--json",
                            str(path))
        assert code == 0, out
        paths.append(path)
    return paths


def merged(cli_run: CliRun, tmp_path: Path, *paths: Path | str) -> tuple[int, str]:
    return cli_run("merge", "-o", str(tmp_path / "merged.json"), "--force",
                   *map(str, paths))


def test_merge_of_every_shard_passes(cli_run: CliRun, shards: list[Path], tmp_path: Path) -> None:
    code, out = merged(cli_run, tmp_path, *shards)
    assert code == 0, out
    report = json.loads((tmp_path / "merged.json").read_text())
    assert report["planned"] == report["selected"] == len(report["cases"])


def test_merge_refuses_a_missing_or_repeated_shard(
        cli_run: CliRun, shards: list[Path], tmp_path: Path) -> None:
    code, out = merged(cli_run, tmp_path, shards[0], shards[2])
    assert code == 2 and "shards 2/3 missing" in out
    copy = tmp_path / "again.json"
    copy.write_text(shards[0].read_text().replace('"id": "', '"id": "x'))
    code, out = merged(cli_run, tmp_path, shards[0], copy, shards[1], shards[2])
    assert code == 2 and "given twice" in out


def test_merge_refuses_an_interrupted_or_cut_shard(
        cli_run: CliRun, golden: Path, shards: list[Path],
                                                   tmp_path: Path) -> None:
    parts, codes = [], []
    for k in (1, 2, 3):  # a 3-D case interrupts its shard's run (Ctrl-C in the kernel)
        parts.append(tmp_path / f"part{k}.json")
        codes.append(cli_run("verify", str(golden), "--impl", "impl_fixtures:interrupts",
                             *FAST, "--shard", f"{k}/3", "--json", str(parts[-1]))[0])
    assert 130 in codes
    code, out = merged(cli_run, tmp_path, *parts)
    assert code == 2 and "interrupted run" in out
    cut = json.loads(shards[1].read_text())
    cut["cases"] = cut["cases"][:-1]
    (tmp_path / "cut.json").write_text(json.dumps(cut))
    code, out = merged(cli_run, tmp_path, shards[0], tmp_path / "cut.json", shards[2])
    assert code == 2 and "cases its run was to judge" in out


def test_merge_refuses_shards_mixed_with_a_whole_run(
        cli_run: CliRun, golden: Path, shards: list[Path],
                                                     tmp_path: Path) -> None:
    whole = tmp_path / "whole.json"
    cli_run("verify", str(golden), *FAST, "--family", "rank3", "--json", str(whole))
    code, out = merged(cli_run, tmp_path, *shards, whole)
    assert code == 2 and "mix" in out


def test_a_merge_that_judged_nothing_fails(cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    spec = hm.write_module(tmp_path, hm.DECLARES_NOTHING)
    paths = []
    for k in (1, 2):
        path = tmp_path / f"s{k}.json"
        code, _ = cli_run("verify", str(golden), "--impl", spec, *FAST, "--shard", f"{k}/2",
                          "--json", str(path))
        assert code == 1
        paths.append(path)
    code, out = merged(cli_run, tmp_path, *paths)
    assert code == 1 and "no case was judged" in out


# -- diff and baselines ---------------------------------------------------------------------


def _verdict(cid: str, v: Verdict) -> CaseVerdict:
    return CaseVerdict(cid, v, "m")


def test_only_a_pass_is_fixed() -> None:
    old = [_verdict(c, Verdict.FAIL) for c in "abcd"]
    new = [_verdict("a", Verdict.PASS), _verdict("b", Verdict.XFAIL),
           _verdict("c", Verdict.SKIP), _verdict("d", Verdict.MISTRUSTED)]
    d = diff(old, new)
    assert [n.case_id for _, n in d.fixed] == ["a"]
    assert [n.case_id for _, n in d.now_known] == ["b"]
    assert [n.case_id for _, n in d.unjudged] == ["c", "d"]


def _write(path: Path, verdicts: list[CaseVerdict], **extra: Any) -> Path:
    json_report.write(path, json_report.build(verdicts, implementation="k",
                                              standards=["aclcheck"], golden="other.h5",
                                              extra=extra))
    return path


def test_diff_counts_known_failures_as_known_and_fails_on_nothing_judged(cli_run: CliRun,
        tmp_path: Path) -> None:
    old = _write(tmp_path / "old.json", [_verdict("a", Verdict.FAIL),
                                         _verdict("b", Verdict.FAIL)])
    new = _write(tmp_path / "new.json", [_verdict("a", Verdict.PASS),
                                         _verdict("b", Verdict.XFAIL)])
    code, out = cli_run("diff", str(old), str(new))
    assert code == 0 and "fixed: 1 now known: 1" in out
    skipped = _write(tmp_path / "skip.json", [_verdict("a", Verdict.SKIP),
                                              _verdict("b", Verdict.SKIP)])
    code, out = cli_run("diff", str(old), str(skipped))
    assert code == 1 and "no case was judged" in out and "fixed: 0" in out
    cut = _write(tmp_path / "cut.json", [_verdict("a", Verdict.PASS)], interrupted=True)
    code, out = cli_run("diff", str(old), str(cut))
    assert code == 1 and "interrupted run" in out


def test_baseline_of_another_golden_file_is_refused(
        cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    other = _write(tmp_path / "other.json", [_verdict("a", Verdict.PASS)])
    code, out = cli_run("verify", str(golden), *FAST, "--baseline", str(other))
    assert code == 2 and "another golden file" in out
    data = json.loads(other.read_text())
    data["golden"] = str(golden)
    other.write_text(json.dumps(data))
    code, out = cli_run("verify", str(golden), *FAST, "--baseline", str(other))
    assert code == 0, out
    assert "warning: --baseline is a report of another run (implementation" in out


def test_rejections_and_undocumented_calls_alone_are_not_a_pass() -> None:
    """An adapter with status codes can skip every valid call and answer the invalid
    ones right (the dtype probes of dtypes no product has, which it cannot decline):
    a run needs a judged valid call when it has valid calls. Undocumented calls never
    fail: they judge nothing."""
    from aclcheck.judging.gate.gate import decide

    def v(cid: str, verdict: Verdict, status: int) -> CaseVerdict:
        return CaseVerdict(cid, verdict, "m", expected_status=status)

    only_rejections = [v("valid", Verdict.SKIP, 0), v("dtype-probe", Verdict.PASS, 161002)]
    gate = decide(only_rejections)
    assert gate.failed and gate.findings[0].valid_only
    assert decide([v("u1", Verdict.PASS, -1), v("u2", Verdict.PASS, -1)]).failed
    assert not decide([v("valid", Verdict.PASS, 0), v("probe", Verdict.PASS, 161002)]).failed
    assert not decide([v("probe", Verdict.PASS, 161002)]).failed  # --family invalid


# -- known-failure lists --------------------------------------------------------------------


def test_an_xfail_entry_matching_every_case_warns_and_fails_when_strict(cli_run: CliRun,
        golden: Path, tmp_path: Path) -> None:
    known = tmp_path / "known.toml"
    known.write_text('[[xfail]]\nid = "*"\nreason = "everything is known"\n')
    broken = ("--impl", "kernels:off_by_one_end", *FAST, "--xfail", str(known))
    code, out = cli_run("verify", str(golden), *broken)
    assert code == 0 and "matches every case of this run" in out
    code, out = cli_run("verify", str(golden), *broken, "--strict-xfail")
    assert code == 1 and "gate failed: the known-failure entry id = '*'" in out
    code, out = cli_run("verify", str(golden), *broken, "--id", "*-div0-*")
    assert "matches every case" in out  # two cases or more: an entry naming one is fine


# -- the pytest plugin follows the same rules -----------------------------------------------


def test_plugin_fails_a_session_that_judged_nothing(pytester: pytest.Pytester, golden: Path,
                                                    tmp_path: Path) -> None:
    spec = hm.write_module(tmp_path, hm.DECLARES_NOTHING)
    result = pytester.runpytest(f"--aclcheck-golden={golden}", "--aclcheck-impl", spec,
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*gate failed: no case was judged*"])


def test_plugin_refuses_a_module_that_exits_on_import(pytester: pytest.Pytester,
                                                      golden: Path, tmp_path: Path) -> None:
    spec = hm.write_module(tmp_path, hm.EXIT_ON_IMPORT)
    result = pytester.runpytest_subprocess(f"--aclcheck-golden={golden}", "--aclcheck-impl",
                                           spec, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tried to end the process while imported*"])


def test_plugin_fails_a_strict_session_with_a_catch_all_xfail(
        pytester: pytest.Pytester, golden: Path, tmp_path: Path) -> None:
    known = tmp_path / "known.toml"
    known.write_text('[[xfail]]\nid = "*"\nreason = "everything"\nmay_pass = true\n')
    args = [f"--aclcheck-golden={golden}", "--aclcheck-xfail", str(known), "-p",
            "no:cacheprovider", "--aclcheck-no-isolate"]
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*warning: the known-failure entry*matches every case*"])
    result = pytester.runpytest(*args, "--aclcheck-strict-xfail")
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_plugin_never_lets_pytest_write_over_the_golden_file(pytester: pytest.Pytester,
                                                             golden: Path, tmp_path: Path
                                                             ) -> None:
    copy = tmp_path / "suite.h5"
    copy.write_bytes(golden.read_bytes())
    before = copy.read_bytes()
    result = pytester.runpytest(f"--aclcheck-golden={copy}", "--junitxml", str(copy),
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert copy.read_bytes() == before
