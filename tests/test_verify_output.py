"""What `aclcheck verify` writes and prints: report paths checked before the run, reports
kept when one cannot be written, file modes, counts that add up, every failure's details
with -v, widths, and text from data that is printed literally, never as markup."""

from __future__ import annotations

import errno
import json
import os
import stat
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from aclcheck.cases.call import Outcome
from aclcheck.cli import cli
from aclcheck.cli.common import LOG_WIDTH, stdout_console
from aclcheck.judging.case.judge import judge_unspecified
from aclcheck.judging.case.verdicts import (
    SUMMARY_KEYS,
    CaseVerdict,
    Verdict,
    divergence_note,
    summarize,
)
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.report import console as console_report
from aclcheck.report import json_report
from aclcheck.report.safe_text import printable


@pytest.fixture
def golden(two_products_small_golden: Path) -> Path:
    return two_products_small_golden


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["verify", *args], catch_exceptions=False)
    return result.exit_code, result.output


# -- output paths ------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--json", "--junit", "--html"])
def test_missing_output_folder_is_a_usage_error_before_any_case(golden: Path, tmp_path: Path,
                                                                flag: str) -> None:
    target = tmp_path / "no-such-folder" / "r.out"
    result = CliRunner().invoke(cli, ["verify", str(golden), "--impl",
                                      "kernels:off_by_one_end", flag, str(target)])
    assert result.exit_code == 2, result.output
    assert flag in result.output and "does not exist" in result.output
    assert "cases:" not in result.output  # nothing ran


def test_output_path_that_is_a_folder_is_a_usage_error(golden: Path, tmp_path: Path) -> None:
    code, out = run(str(golden), "--json", str(tmp_path))
    assert code == 2 and str(tmp_path) in out and "cases:" not in out


def test_merge_output_folder_checked_before_reading(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    json_report.write(report, json_report.build([], implementation="x",
                                                standards=("aclcheck",), golden="g.h5"))
    result = CliRunner().invoke(cli, ["merge", "-o", str(tmp_path / "nope" / "m.json"),
                                      str(report)])
    assert result.exit_code == 2, result.output
    assert "-o" in result.output and "does not exist" in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only folders")
def test_read_only_output_folder_is_a_usage_error(golden: Path, tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        code, out = run(str(golden), "--junit", str(folder / "r.xml"))
    finally:
        folder.chmod(0o700)
    assert code == 2 and "not writable" in out


def test_a_folder_that_refuses_new_files_is_a_usage_error_for_root_too(
        golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission bits pass (as for root, or a read-only mount): the folder is still
    tried with a real file before any case runs."""
    def read_only_mount(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr("aclcheck.report.files.tempfile.mkstemp", read_only_mount)
    code, out = run(str(golden), "--json", str(tmp_path / "r.json"))
    assert code == 2 and "not writable" in out and "Read-only file system" in out, out
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(("target", "flag"), [
    ("aclcheck.report.json_report.write", "--json"),
    ("aclcheck.report.junit.write", "--junit"),
    ("aclcheck.report.html.write", "--html")])
def test_a_report_that_cannot_be_written_keeps_the_others(
        golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str,
        flag: str) -> None:
    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(target, disk_full)
    paths = {"--json": tmp_path / "r.json", "--junit": tmp_path / "r.xml",
             "--html": tmp_path / "r.html"}
    code, out = run(str(golden), "--family", "divisible", "--width", "200",
                    *(word for f, p in paths.items() for word in (f, str(p))))
    assert code == 4, out
    assert f"{flag} {paths[flag]}: not written: No space left on device" in out
    assert "cases:" in out  # the console report is still printed
    assert not paths[flag].exists()
    written = {f: p for f, p in paths.items() if f != flag}
    if "--json" in written:
        assert json.loads(written["--json"].read_text())["summary"]["cases"] > 0
    if "--junit" in written:
        assert ET.parse(written["--junit"]).getroot().find("testsuite") is not None
    if "--html" in written:
        assert "<html" in written["--html"].read_text().lower()


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_reports_get_the_usual_mode(golden: Path, tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        paths = [tmp_path / "r.json", tmp_path / "r.xml", tmp_path / "r.html"]
        code, out = run(str(golden), "--family", "divisible", "--json", str(paths[0]),
                        "--junit", str(paths[1]), "--html", str(paths[2]))
    finally:
        os.umask(old)
    assert code == 0, out
    for p in paths:
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask, p
    assert not list(tmp_path.glob(".*.tmp"))


# -- selection -------------------------------------------------------------------------------


def _ids(report: Path) -> list[str]:
    return [c["id"] for c in json.loads(report.read_text())["cases"]]


def test_id_is_repeatable(golden: Path, tmp_path: Path) -> None:
    code, _ = run(str(golden), "--id", "a2-*-div*", "--id", "train-*-nondiv*", "--json",
                  str(tmp_path / "r.json"))
    ids = _ids(tmp_path / "r.json")
    assert code == 0 and ids
    assert {i.split("-")[0] for i in ids} == {"a2", "train"}
    assert all(("div" in i and i.startswith("a2")) or "nondiv" in i for i in ids)
    assert any("nondiv" in i for i in ids) and any("-div" in i for i in ids)


def test_family_can_be_excluded(golden: Path, tmp_path: Path) -> None:
    run(str(golden), "--family", "!invalid", "--json", str(tmp_path / "a.json"))
    families = {c["family"] for c in json.loads((tmp_path / "a.json").read_text())["cases"]}
    assert families == {"divisible", "nondivisible"}
    run(str(golden), "--family", "!invalid", "--family", "!divisible",
        "--json", str(tmp_path / "b.json"))
    families = {c["family"] for c in json.loads((tmp_path / "b.json").read_text())["cases"]}
    assert families == {"nondivisible"}


# -- invalid-call probes in a dtype the adapter lacks ----------------------------------------


def test_probe_in_an_unsupported_dtype_is_skip_not_pass(golden: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    code, out = run(str(golden), "--impl", "impl_fixtures:float32_only", "--family",
                    "invalid", "--json", str(report))
    assert code == 0, out
    cases = json.loads(report.read_text())["cases"]
    rank_probes = [c for c in cases if "_rank_grad3-" in c["id"] and c["product"] == "atlas-a2"]
    by_dtype = {c["dtype"]: c for c in rank_probes}
    assert set(by_dtype) == {"float16", "float32", "bfloat16"}
    assert by_dtype["float32"]["verdict"] == "PASS"
    for dtype in ("float16", "bfloat16"):
        assert by_dtype[dtype]["verdict"] == "SKIP"
        assert f"does not support dtype {dtype}" in by_dtype[dtype]["message"]
    # a probe of a dtype the product lacks is what it tests: never skipped for the adapter
    lacking = [c for c in cases if c["id"].startswith("train-bf16-")]
    assert lacking and all("does not support dtype" not in c["message"] for c in lacking)


# -- console ---------------------------------------------------------------------------------


def _verdict(i: int, verdict: Verdict, product: str = "atlas-a2") -> CaseVerdict:
    return CaseVerdict(case_id=f"case-{i:03d}", verdict=verdict, message=f"why {i}",
                       product=product, dtype="float32", format="ND", detail=f"detail {i:03d}",
                       repro=f"aclcheck verify s.h5 --id case-{i:03d}")


def _record(verdicts: list[CaseVerdict], **kw: object) -> str:
    console = Console(record=True, width=120, file=open(os.devnull, "w"))  # noqa: SIM115
    console_report.render(console, verdicts, implementation="impl", **kw)  # type: ignore[arg-type]
    return console.export_text()


def test_divergences_print_a_row_per_kind_and_every_case_with_verbose() -> None:
    """A large run passes thousands of cases with a divergence: the console shows how many
    of each family and kind with the first case; -v (and the JSON report) lists every one."""
    def divergent(i: int, family: str, kind: str) -> CaseVerdict:
        return CaseVerdict(case_id=f"{family}-{kind}-{i:03d}", verdict=Verdict.PASS,
                           message="ok", family=family, divergence=f"{kind} of case {i}",
                           divergence_kind=kind, notes=(divergence_note(f"{kind} {i}"),))
    verdicts = ([divergent(i, "invalid", "out-shape+accepted") for i in range(30)]
                + [divergent(i, "invalid", "undocumented-format+accepted") for i in range(20)]
                + [divergent(i, "boundary", "out-shape+accepted") for i in range(5)]
                + [_verdict(99, Verdict.PASS)])
    rows = console_report.Counted.of(verdicts).divergences.result()
    assert [(n, family, first) for n, family, first, _ in rows] == [
        (30, "invalid", "invalid-out-shape+accepted-000"),
        (20, "invalid", "invalid-undocumented-format+accepted-000"),
        (5, "boundary", "boundary-out-shape+accepted-000")]
    assert rows[0][3] == "out-shape+accepted of case 0"
    grouped = _record(verdicts)
    assert "grouped by kind" in grouped and "invalid-out-shape+accepted-000" in grouped
    assert "invalid-out-shape+accepted-001" not in grouped
    every = _record(verdicts, verbose=True)
    assert all(f"invalid-out-shape+accepted-{i:03d}" in every for i in range(30))
    assert "grouped by kind" not in every
    assert console_report.Counted.of(verdicts[-1:]).divergences.result() == []
    assert "documentation divergences" not in _record(verdicts[-1:])


def test_a_divergence_kind_names_what_the_documentation_leaves_open_and_the_answer() -> None:
    """The kinds come from the contract, the answer from the outcome (the console's groups;
    the words stay in `divergence`)."""
    case = Case("a2-fp32-NCHW-x", "invalid", "atlas-a2", "float32", "NCHW", (1, 2, 8, 6),
                (1, 2, 4, 3), 1, out_shape=(1, 2, 9, 6))
    assert case.expectation.kinds == ("out-shape",)
    v = judge_unspecified(case, Outcome(status=0))
    assert v.divergence_kind == "out-shape+accepted"
    assert v.divergence is not None and "(1, 2, 9, 6)" in v.divergence
    assert judge_unspecified(case, Outcome(raised="no")).divergence_kind == "out-shape+rejected"


def test_matrix_columns_are_the_summary_counts() -> None:
    kinds = [Verdict.PASS, Verdict.FAIL, Verdict.ERROR, Verdict.WRONG_STATUS, Verdict.SKIP]
    verdicts = [_verdict(i, kinds[i % len(kinds)], ("atlas-a2", "atlas-a3")[i % 2])
                for i in range(23)]
    table = console_report.matrix_table(console_report.Counted.of(verdicts))
    columns = {str(c.header): [int(str(x)) for x in c.cells] for c in table.columns[3:]}
    summary = summarize(verdicts)
    assert set(columns) == {k for k, v in SUMMARY_KEYS if v is None or summary[k]
                            or v == Verdict.PASS}
    for key, cells in columns.items():
        assert sum(cells) == summary[key], key


def test_details_of_every_failure_with_verbose() -> None:
    # 25 signature groups (one family each): one detail per group, the first 20 shown
    verdicts = [replace(_verdict(i, Verdict.FAIL), family=f"family{i:02d}")
                for i in range(25)]
    short = _record(verdicts)
    assert "detail 019" in short and "detail 020" not in short
    assert "5 more nonconforming cases" in short and "JSON report" not in short
    named = _record(verdicts, json_report="out/r.json")
    assert "the JSON report out/r.json has them all" in named
    full = _record(verdicts, verbose=True)
    assert all(f"detail {i:03d}" in full for i in range(25))
    assert "more nonconforming" not in full
    known = [_verdict(i, Verdict.XFAIL) for i in range(3)]
    assert "detail 002" in _record(known, verbose=True)
    assert "detail" not in _record(known)


def test_wide_layout_outside_a_terminal(monkeypatch: pytest.MonkeyPatch, golden: Path) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert stdout_console().width == LOG_WIDTH
    assert stdout_console(100).width == 100
    code, out = run(str(golden), "--impl", "kernels:off_by_one_end", "--family",
                    "nondivisible", "--width", "60")
    assert code == 1
    table_lines = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]
    assert table_lines and max(map(len, table_lines)) == 60
    code, wide = run(str(golden), "--impl", "kernels:off_by_one_end", "--family",
                     "nondivisible")
    assert max(len(line) for line in wide.splitlines() if line[:1] in "┏┃┡│└") > 80


# -- text from data --------------------------------------------------------------------------


def test_printable_escapes_controls_and_surrogates() -> None:
    assert printable("a\x1b[31mb\x07\x00\x7f\x9b") == "a\\x1b[31mb\\x07\\x00\\x7f\\x9b"
    assert printable("tab\tand\nnewline") == "tab\tand\nnewline"
    assert printable("lone \udc80 surrogate") == "lone \\udc80 surrogate"
    assert printable("bidi \u202eevil") == "bidi \\u202eevil"
    assert printable("[bold]x[/] é 漢") == "[bold]x[/] é 漢"


HOSTILE = "cannot open [/tmp/x] [bold]b[/bold] [link=javascript:alert(1)]l[/link] :smile:"


def test_kernel_exception_text_is_printed_literally(golden: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    code, out = run(str(golden), "--impl", "impl_fixtures:raises_markup", "--family",
                    "divisible", "--width", "200", "--json", str(report),
                    "--html", str(tmp_path / "r.html"),
                    "--junit", str(tmp_path / "r.xml"))
    assert code == 1, out
    assert "MarkupError" not in out and "internal error" not in out
    assert HOSTILE in out
    assert "\\x1b[2J" in out and "\\udc80" in out  # shown escaped
    assert "\x1b" not in out and "\U0001f604" not in out  # no raw escape, no emoji
    cases = json.loads(report.read_text())["cases"]
    assert all(c["verdict"] == "ERROR" for c in cases)
    html = (tmp_path / "r.html").read_text()
    assert "javascript:" not in html.replace("[link=javascript:alert(1)]", "")
    ET.parse(tmp_path / "r.xml")


def test_hostile_family_and_xfail_reason(tmp_path: Path) -> None:
    """Case files carry the family name; xfail files the reason; both reach the console."""
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"suite": "[red]suite[/]", "cases": [
        {"id": "c1", "family": "fam[/i]:smile:", "product": "atlas-a2", "dtype": "float32",
         "format": "ND", "self_shape": [1, 2, 5, 5], "grad_shape": [1, 2, 3, 3]},
        {"id": "c2", "product": "atlas-a2", "dtype": "float32", "format": "ND",
         "self_shape": [1, 1, 7, 5], "grad_shape": [1, 1, 2, 3]}]}))
    golden = tmp_path / "g.h5"
    gen = CliRunner().invoke(cli, ["generate", "-o", str(golden), "--cases-file", str(cases)])
    assert gen.exit_code == 0, gen.output
    known = tmp_path / "known.toml"
    known.write_text('[[xfail]]\nid = "c1"\nreason = "[/] tracked in [bold]BUG-1[/] \\u001b[2J"\n')
    code, out = run(str(golden), "--impl", "kernels:off_by_one_end", "--xfail", str(known),
                    "-v", "--width", "200", "--json", str(tmp_path / "r.json"))
    assert code == 1, out
    assert "MarkupError" not in out and "\x1b" not in out
    assert "[/] tracked in [bold]BUG-1[/] \\x1b[2J" in out.replace("\n", "")
    cases_out = json.loads((tmp_path / "r.json").read_text())["cases"]
    assert {c["family"] for c in cases_out} == {"fam[/i]:smile:", "file"}
    assert {c["verdict"] for c in cases_out} == {"XFAIL", "FAIL"}


def test_hostile_ids_in_reports_are_printed_literally(tmp_path: Path) -> None:
    """Reports (diff, baseline) are files anyone can edit: their ids reach the console."""
    ids = ["x[/]y[bold]z:smile:", "esc\x1b[2Jid", "lone\udc80id"]
    for name, verdict in (("old", "PASS"), ("new", "FAIL")):
        cases = [CaseVerdict(case_id=i, verdict=Verdict(verdict), message="m[/]")
                 for i in ids]
        json_report.write(tmp_path / f"{name}.json", json_report.build(
            cases, implementation="x[/]", standards=("aclcheck",), golden="g.h5"))
    result = CliRunner().invoke(cli, ["diff", str(tmp_path / "old.json"),
                                      str(tmp_path / "new.json")], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    flat = result.output.replace("\n", "")
    assert "NEW FAILURE" in flat and "new failures: 3" in flat
    assert "MarkupError" not in flat and "\x1b" not in flat
    assert "x[/]y[bold]z:smile:" in flat and "esc\\x1b[2Jid" in flat
    assert "lone\\udc80id" in flat


def test_render_never_reads_data_as_markup_even_on_a_markup_console() -> None:
    """Library users may pass their own console (markup on): data stays literal."""
    hostile = CaseVerdict(case_id="x[/]y", verdict=Verdict.FAIL, message="m [/bold]",
                          product="p[/]", dtype="[red]d", format="f", detail="d [/] \x1b[2J",
                          metrics={"max_ulp": "[/]"}, notes=("note [/]",
                                                             "documentation divergence: [/]"),
                          repro="aclcheck verify [/]")
    text = _record([hostile], verbose=True)
    for literal in ("x[/]y", "m [/bold]", "p[/]", "[red]d", "d [/] \\x1b[2J", "note [/]",
                    "repro: aclcheck verify [/]"):
        assert literal in text, literal
    assert "\x1b" not in text
