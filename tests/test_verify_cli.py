"""`aclcheck verify` end to end: real golden files, real adapters, every verdict kind."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.store.dispatch import GoldenFile, open_golden
from aclcheck.store.results import ResultRow, write_results

#: the `reference_rows` fixture: what a perfect implementation stores for one product
RefRows = Callable[[GoldenFile, str], list[ResultRow]]

POSITIVE = ("divisible", "nondivisible", "upsampling", "global", "identity", "rank3",
            "alignment", "exactint", "special", "empty", "layout")


@pytest.fixture
def golden(two_products_golden: Path) -> Path:
    return two_products_golden


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["verify", *args], catch_exceptions=False)
    return result.exit_code, result.output


def families(*names: str) -> list[str]:
    return [arg for name in names for arg in ("--family", name)]


def test_reference_passes_everything(golden: Path, tmp_path: Path) -> None:
    code, out = run(str(golden), "--impl", "reference", "--json", str(tmp_path / "r.json"))
    assert code == 0, out
    report = json.loads((tmp_path / "r.json").read_text())
    s = report["summary"]
    assert s["cases"] == len(open_golden(golden).ids())
    assert s["passed"] + s["mistrusted"] == s["cases"]
    assert "cases: " in out and "failed: 0" in out


def test_torch_float32_passes_every_positive_case(golden: Path) -> None:
    pytest.importorskip("torch")
    code, out = run(str(golden), "--impl", "torch", "--dtype", "float32",
                    *families(*[f for f in POSITIVE if f != "empty"]))
    assert code == 0, out


def test_broken_kernel_fails_with_index_golden_actual_and_repro(golden: Path) -> None:
    code, out = run(str(golden), "--impl", "kernels:off_by_one_end", "--product", "atlas-a2",
                    "--dtype", "float32", *families("nondivisible"))
    assert code == 1
    assert "FAIL" in out
    assert "worst elements" in out or "golden" in out
    assert "repro: aclcheck verify" in out and "--id" in out


def test_impl_may_be_a_file_path(golden: Path, tmp_path: Path) -> None:
    """--impl path/to/file.py:function (the README documents it), relative or absolute;
    the file's folder need not be on the import path, and its name is not a module's."""
    folder = tmp_path / "my kernels"
    folder.mkdir()
    (folder / "pool-v2.py").write_text(
        "from kernels import off_by_one_end, window_sum\n\n\n"
        "def good(g, s):\n    return window_sum(g, s)\n\n\n"
        "def bad(g, s):\n    return off_by_one_end(g, s)\n")
    args = ["--product", "atlas-a2", "--dtype", "float32", *families("nondivisible")]
    code, out = run(str(golden), "--impl", f"{folder / 'pool-v2.py'}:good", *args)
    assert code == 0, out
    code, out = run(str(golden), "--impl", f"{folder / 'pool-v2.py'}:bad", *args)
    assert code == 1 and "FAIL" in out


def test_reports_json_junit_html(golden: Path, tmp_path: Path) -> None:
    paths = {k: tmp_path / f"r.{k}" for k in ("json", "xml", "html")}
    code, _ = run(str(golden), "--impl", "impl_fixtures:raises", "--product", "atlas-a2",
                  "--dtype", "float32", *families("divisible", "invalid"),
                  "--json", str(paths["json"]), "--junit", str(paths["xml"]),
                  "--html", str(paths["html"]))
    assert code == 1
    report = json.loads(paths["json"].read_text())
    assert set(report["summary"]) >= {"cases", "passed", "failed", "wrong_status",
                                      "unimplemented", "nondeterministic", "error",
                                      "skipped", "mistrusted"}
    verdicts = {c["verdict"] for c in report["cases"]}
    assert "ERROR" in verdicts  # raising on valid calls
    assert "PASS" in verdicts  # raising on invalid calls is a rejection
    for case in report["cases"]:
        assert {"id", "verdict", "metrics", "repro"} <= set(case)
    tree = ET.parse(paths["xml"])  # control characters in messages must not break XML
    suite = tree.getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("tests", "0")) == report["summary"]["cases"]
    assert int(suite.get("errors", "0")) == report["summary"]["error"]
    assert "<html" in paths["html"].read_text().lower()


@pytest.mark.parametrize("fixture", ["returns_none", "returns_list", "returns_float64",
                                     "kernels:wrong_shape"])
def test_bad_outputs_are_errors_and_the_run_goes_on(golden: Path, fixture: str) -> None:
    spec = fixture if ":" in fixture else f"impl_fixtures:{fixture}"
    code, out = run(str(golden), "--impl", spec, "--product", "atlas-a2", "--dtype",
                    "float32", *families("divisible", "identity"), "-v")
    assert code == 1
    assert "ERROR" in out
    assert "error: " in out


def test_invalid_calls_rejected_pass_accepted_wrong_status(golden: Path, tmp_path: Path
                                                           ) -> None:
    rep = tmp_path / "ok.json"
    run(str(golden), "--impl", "impl_fixtures:correct", *families("invalid"), "--json",
        str(rep))
    good = {c["id"]: c for c in json.loads(rep.read_text())["cases"]}
    nc = [c for cid, c in good.items() if "_n_grad" in cid or "_c_grad" in cid]
    assert nc and all(c["verdict"] == "PASS" for c in nc)
    null = [c for cid, c in good.items() if "null_" in cid]
    assert null and all(c["verdict"] == "SKIP" and "null" in c["message"] for c in null)
    rep2 = tmp_path / "bad.json"
    code, _ = run(str(golden), "--impl", "impl_fixtures:accepts_everything",
                  *families("invalid"), "--json", str(rep2))
    assert code == 1
    bad = {c["id"]: c for c in json.loads(rep2.read_text())["cases"]}
    assert all(bad[c["id"]]["verdict"] == "WRONG_STATUS" for c in nc)
    unspecified = [c for c in bad.values() if c["expected_status"] == -1]
    assert all(c["verdict"] in ("PASS", "SKIP") for c in unspecified)


def test_unknown_impl_is_a_usage_error(golden: Path) -> None:
    code, out = run(str(golden), "--impl", "nope")
    assert code == 2
    assert "reference" in out and "torch" in out


def test_unknown_standard_is_a_usage_error(golden: Path) -> None:
    code, out = run(str(golden), "--standard", "strictest")
    assert code == 2 and "cann-mixed" in out


def test_not_a_golden_file_exits_3(tmp_path: Path) -> None:
    bad = tmp_path / "x.h5"
    bad.write_bytes(b"not hdf5 at all")
    code, out = run(str(bad))
    assert code == 3
    assert str(bad) in out


def test_results_file_judged_and_missing_cases_are_errors(
        reference_rows: RefRows, golden: Path, tmp_path: Path
                                                          ) -> None:
    with open_golden(golden) as gf:
        rows = reference_rows(gf, "atlas-a2")
    assert len(rows) > 3
    kept = rows[:-2]
    results = tmp_path / "results.h5"
    write_results(results, "board-run", kept)
    code, out = run(str(golden), "--results", str(results), "--product", "atlas-a2",
                    "-v", "--width", "200")
    assert code == 1
    assert "no result" in out
    assert f"error: {2}" in out


@pytest.mark.parametrize(
    ("fixture", "reason"),
    [("segfaults", "SIGSEGV"), ("aborts", "SIGABRT"), ("exits", "os._exit(7)"),
     ("exits_natively", "exited with code 7"), ("hangs", "allowed by --timeout 3 s")],
)
def test_isolate_turns_crashes_into_errors(golden: Path, tmp_path: Path, fixture: str,
                                           reason: str) -> None:
    rep = tmp_path / "r.json"
    code, out = run(str(golden), "--impl", f"impl_fixtures:{fixture}", "--isolate",
                    "--timeout", "3", "--product", "atlas-a2", "--dtype", "float32",
                    *families("nondivisible", "rank3"), "--json", str(rep))
    assert code == 1
    cases = json.loads(rep.read_text())["cases"]
    three_d = [c for c in cases if c["id"].split("-")[4].startswith("c")]  # c3h5w7: 3-D
    assert three_d, "suite must hold 3-D cases"
    for c in cases:
        if c in three_d:
            assert c["verdict"] == "ERROR" and reason in c["message"], c
        else:
            assert c["verdict"] == "PASS", c


def test_determinism_repeat(golden: Path, tmp_path: Path) -> None:
    rep = tmp_path / "r.json"
    code, _ = run(str(golden), "--impl", "impl_fixtures:noisy", "--product", "atlas-a2",
                  "--dtype", "float32", *families("divisible"), "--repeat", "3",
                  "--deterministic", "--json", str(rep))
    assert code == 1
    verdicts = {c["verdict"] for c in json.loads(rep.read_text())["cases"]}
    assert "NONDETERMINISTIC" in verdicts
    code, out = run(str(golden), "--impl", "impl_fixtures:noisy", "--product", "atlas-a2",
                    "--dtype", "float32", *families("divisible"), "--repeat", "3", "-v")
    assert code == 0, out
    assert "run-to-run variation" in out


@pytest.mark.slow  # heavy: runs in .ci/run's slow step (pytest -m slow)
def test_torch_repeat_is_deterministic(golden: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    rep = tmp_path / "r.json"
    code, out = run(str(golden), "--impl", "torch", "--dtype", "float32", "--product",
                    "atlas-a2", *families("nondivisible", "upsampling"), "--repeat", "5",
                    "--deterministic", "--json", str(rep))
    assert code == 0, out
    for c in json.loads(rep.read_text())["cases"]:
        assert c["metrics"].get("repeat_max_ulp") == 0


def test_reference_rows_helper_matches_golden_shapes(reference_rows: RefRows, golden: Path) -> None:
    with open_golden(golden) as gf:
        for row in reference_rows(gf, "atlas-a2")[:5]:
            if row.output is not None:
                assert row.output.shape == tuple(gf.entry(row.case_id).out_shape)


def test_memory_blow_up_is_an_error(golden: Path, tmp_path: Path) -> None:
    rep = tmp_path / "r.json"
    code, _ = run(str(golden), "--impl", "impl_fixtures:allocates_forever", "--isolate",
                  "--memory-limit", "1500", "--product", "atlas-a2", "--dtype", "float32",
                  *families("rank3", "divisible"), "--json", str(rep))
    assert code == 1
    cases = json.loads(rep.read_text())["cases"]
    for c in cases:
        if c["id"].split("-")[4].startswith("c"):  # 3-D: blows up
            assert c["verdict"] == "ERROR" and "MemoryError" in c["message"], c
        else:
            assert c["verdict"] == "PASS", c


def test_out_buffer_is_nan_prefilled(golden: Path, tmp_path: Path) -> None:
    args = ["--product", "atlas-a2", "--dtype", "float32", *families("divisible", "identity")]
    code, out = run(str(golden), "--impl", "impl_fixtures:writes_out", *args)
    assert code == 1 and "FAIL" in out and "nan" in out.lower()
    code, out = run(str(golden), "--impl", "impl_fixtures:writes_out_fully", *args)
    assert code == 0, out


def test_ignoring_strides_fails_on_the_layout_family(golden: Path, tmp_path: Path) -> None:
    rep = tmp_path / "r.json"
    code, _ = run(str(golden), "--impl", "kernels:ignores_strides", "--product", "atlas-a2",
                  "--dtype", "float32", *families("layout"), "--json", str(rep))
    assert code == 1
    layouts = [c for c in json.loads(rep.read_text())["cases"]]
    assert layouts and all(c["verdict"] == "FAIL" for c in layouts), layouts
    code, _ = run(str(golden), "--impl", "kernels:window_sum", "--product", "atlas-a2",
                  "--dtype", "float32", *families("layout"))
    assert code == 0


def test_empty_gradoutput_says_whether_out_was_written(golden: Path, tmp_path: Path) -> None:
    rep = tmp_path / "r.json"
    code, _ = run(str(golden), "--impl", "impl_fixtures:writes_out_fully", "--family", "empty",
                  "--json", str(rep))
    assert code == 0
    empty_grad = [c for c in json.loads(rep.read_text())["cases"]
                  if c["verdict"] == "PASS" and "not written" in c["message"]]
    assert empty_grad
    assert all(any(n.startswith("out ") for n in c["notes"]) for c in empty_grad)


def test_interrupted_run_still_reports_what_was_judged(golden: Path, tmp_path: Path) -> None:
    rep = tmp_path / "r.json"
    code, out = run(str(golden), "--impl", "impl_fixtures:interrupts", "--product",
                    "atlas-a2", "--dtype", "float32", "--format", "NCHW", "--format", "NCL",
                    *families("divisible", "nondivisible"), "--json", str(rep))
    assert code == 130
    report = json.loads(rep.read_text())
    assert report["interrupted"] is True
    assert 0 < report["summary"]["cases"] < 4  # the 4-D cases before the first 3-D one
    assert all(c["verdict"] == "PASS" for c in report["cases"])
