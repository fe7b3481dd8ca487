"""Red team, file side: no output ever replaces an input, and every file aclcheck
rewrites is replaced whole (a temporary file, read back where it is a case file, renamed
into place). Each probe names an output that is an input (the same path, a symbolic
link, a hard link, a path inside a folder the command reads or replaces) and asserts
exit 2 with one line before any work, the input byte for byte intact."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from aclcheck.store.file_guard import Role, Snapshot, check_apart
from aclcheck.suite import casefile as casewriter
from aclcheck.suite.casefile import load_case_file, parse_case_entries
from aclcheck.suite.selection import Selection

#: the `cli_run` fixture: run the CLI in-process -> (exit code, output)
CliRun = Callable[..., tuple[int, str]]

SELECTION = Selection(products=("atlas-a2",), dtypes=("float32",), families=("divisible",),
                      seed=9)


@pytest.fixture(scope="module")
def pristine(a2_fp32_golden: Path) -> Path:
    return a2_fp32_golden


@pytest.fixture
def golden(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(pristine, tmp_path / "suite.h5"))


@pytest.fixture
def report(cli_run: CliRun, golden: Path, tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    code, out = cli_run("verify", str(golden), "--json", str(path))
    assert code == 0, out
    return path


def refused(cli_run: CliRun, *args: str, keep: Path) -> str:
    """The command exits 2 with one error line and `keep` is unchanged."""
    before = keep.read_bytes()
    code, out = cli_run(*args)
    assert code == 2, out
    errors = [line for line in out.splitlines() if line.startswith("aclcheck: error:")]
    assert len(errors) == 1 and "Traceback" not in out, out
    assert keep.read_bytes() == before
    return errors[0]


Link = Callable[[Path, Path], None]
LINKS: dict[str, Link] = {
    "same path": lambda src, dst: None,
    "symbolic link": lambda src, dst: dst.symlink_to(src),
    "hard link": lambda src, dst: os.link(src, dst),
}


def alias(path: Path, how: str) -> Path:
    """`path` itself, or a new link to it."""
    if how == "same path":
        return path
    other = path.with_name(f"{how.replace(' ', '-')}-{path.name}")
    LINKS[how](path, other)
    return other


@pytest.mark.parametrize("how", LINKS)
@pytest.mark.parametrize("flag", ["--json", "--junit", "--html"])
def test_verify_never_writes_a_report_over_its_golden_file(cli_run: CliRun, golden: Path, flag: str,
                                                           how: str) -> None:
    line = refused(cli_run, "verify", str(golden), flag, str(alias(golden, how)), keep=golden)
    assert "the same file as the input GOLDEN" in line


@pytest.mark.parametrize("flag", ["--baseline", "--xfail", "--tolerances"])
def test_verify_never_writes_a_report_over_its_other_inputs(
        cli_run: CliRun, golden: Path, report: Path,
                                                            tmp_path: Path, flag: str) -> None:
    source = report if flag == "--baseline" else tmp_path / "list.toml"
    if flag == "--xfail":
        source.write_text('[[xfail]]\nid = "x"\nreason = "r"\n')
    elif flag == "--tolerances":
        source.write_text("[aclcheck]\n")
    line = refused(cli_run, "verify", str(golden), flag, str(source), "--json", str(source),
                   keep=source)
    assert f"the input {flag}" in line


def test_verify_never_writes_two_reports_to_one_file(
        cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.out"
    out.write_text("keep")
    line = refused(cli_run, "verify", str(golden), "--json", str(out), "--junit",
                   str(alias(out, "symbolic link")), keep=out)
    assert "one would replace the other" in line


def test_verify_never_writes_over_the_kernel_or_into_library_folders(cli_run: CliRun, golden: Path,
                                                                     tmp_path: Path) -> None:
    kernel = tmp_path / "mykernel.py"
    kernel.write_text("def fn(g, s):\n    return s\n")
    refused(cli_run, "verify", str(golden), "--impl", f"{kernel}:fn", "--json", str(kernel),
            keep=kernel)
    libs = tmp_path / "libs"
    libs.mkdir()
    lib = libs / "libopapi.so"
    lib.write_bytes(b"\x7fELF")
    line = refused(cli_run, "verify", str(golden), "--impl", "aclnn", "--aclnn-lib-dir", str(libs),
                   "--json", str(lib), keep=lib)
    assert "--aclnn-lib-dir" in line


@pytest.mark.parametrize("how", LINKS)
def test_report_never_draws_a_page_over_its_report(cli_run: CliRun, report: Path, how: str) -> None:
    refused(cli_run, "report", str(report), "--html", str(alias(report, how)), keep=report)


def test_merge_never_writes_over_an_input(cli_run: CliRun, report: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(report.read_text())
    refused(cli_run, "merge", "-o", str(report), "--force", str(report), str(other), keep=report)


def test_generate_never_writes_over_its_case_file(cli_run: CliRun, tmp_path: Path) -> None:
    cases = tmp_path / "cases.toml"
    cases.write_text('[[cases]]\nproduct = "atlas-a2"\ndtype = "float32"\nformat = "NCHW"\n'
                     "self_shape = [1, 1, 4, 4]\ngrad_shape = [1, 1, 2, 2]\n")
    refused(cli_run, "generate", "--cases-file", str(cases), "-o", str(alias(cases, "hard link")),
            "--force", keep=cases)


def test_shrink_never_appends_to_an_input(cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    tolerances = tmp_path / "tolerances.toml"
    tolerances.write_text("[aclcheck]\n")
    refused(cli_run, "shrink", str(golden), "--id", "x", "--tolerances", str(tolerances),
            "--append", str(tolerances), keep=tolerances)


def test_hunt_never_writes_over_an_input(cli_run: CliRun, tmp_path: Path) -> None:
    found = tmp_path / "found"
    found.mkdir()
    tolerances = found / "cases.toml"
    tolerances.write_text("[aclcheck]\n")
    refused(cli_run, "hunt", "-o", str(found), "--force", "--tolerances", str(tolerances),
            "--max-time", "1", keep=tolerances)


def test_export_never_writes_over_its_golden_file(
        cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    folder = tmp_path / "xfer"
    folder.mkdir()
    inside = folder / "manifest.json"
    shutil.copy(golden, inside)
    refused(cli_run, "export", str(inside), str(folder), "--force", keep=inside)


def test_import_never_writes_over_what_it_reads(
        cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    folder = tmp_path / "xfer"
    code, out = cli_run("export", str(golden), str(folder))
    assert code == 0, out
    manifest = folder / "manifest.json"
    refused(cli_run, "import", str(folder), "-o", str(manifest), "--force", keep=manifest)
    case_dir = next(p for p in folder.iterdir() if p.is_dir())
    grad = case_dir / "grad_output.bin"
    refused(cli_run, "import", str(folder), "-o", str(grad), "--force", keep=grad)


# -- rewrites are whole-file replacements ------------------------------------------------------


def _case():
    return parse_case_entries([{"product": "atlas-a2", "dtype": "float32", "format": "NCHW",
                                "self_shape": [1, 1, 4, 4], "grad_shape": [1, 1, 2, 2]}],
                              "t")[0]


def test_a_failed_append_leaves_the_case_file_as_it_was(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cases = tmp_path / "regressions.toml"
    casewriter.append(cases, _case(), "first")
    before = cases.read_bytes()

    def disk_full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(OSError):
        casewriter.append(cases, _case(), "second")
    monkeypatch.undo()
    assert cases.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["regressions.toml"]  # no temp left


def test_an_append_through_a_link_rewrites_the_file_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    casewriter.append(real, _case(), "first")
    real.chmod(0o640)
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    casewriter.append(link, _case(), "second\x1b[2J\n[[cases]]\nid = 'injected'")
    assert link.is_symlink() and real.stat().st_mode & 0o777 == 0o640
    ids = [c.id for c in load_case_file(real).cases]
    assert len(ids) == 2 and "injected" not in ids


def test_a_case_file_that_would_not_read_back_is_never_written(tmp_path: Path) -> None:
    from aclcheck.errors import AclcheckError

    cases = tmp_path / "cases.toml"
    cases.write_text("# keep\n")
    with pytest.raises(AclcheckError, match="would not read back"):
        casewriter.write_case_file(cases, "[[cases]]\nthis is not toml = = =\n")
    assert cases.read_text() == "# keep\n"


# -- the guard itself ------------------------------------------------------------------------


def test_check_apart_sees_links_and_folders(tmp_path: Path) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(b"x")
    check_apart([Role("IN", src)], [Role("-o", tmp_path / "out.bin")])
    for out in (src, alias(src, "symbolic link"), alias(src, "hard link")):
        with pytest.raises(Exception, match="the same file as the input IN"):
            check_apart([Role("IN", src)], [Role("-o", out)])
    with pytest.raises(Exception, match="the same file"):
        check_apart([Role("IN", tmp_path, tree=True)], [Role("-o", tmp_path / "new")])
    with pytest.raises(Exception, match="the same file"):
        check_apart([Role("IN", src)], [Role("-o", tmp_path, tree=True)])


def test_snapshot_notices_rewrites_and_replacements(tmp_path: Path) -> None:
    path = tmp_path / "g.h5"
    path.write_bytes(b"abc")
    snap = Snapshot([Role("GOLDEN", path)])
    assert snap.changed() == []
    with open(path, "r+b") as f:  # the same bytes again: only the change time moves
        f.write(b"a")
    assert [r.flag for r in snap.changed()] == ["GOLDEN"]
    snap = Snapshot([Role("GOLDEN", path)])
    replacement = tmp_path / "new.h5"
    replacement.write_bytes(b"abc")
    os.replace(replacement, path)
    assert [r.flag for r in snap.changed()] == ["GOLDEN"]


def test_reports_still_follow_the_umask(cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    umask = os.umask(0o027)
    try:
        code, _ = cli_run("verify", str(golden), "--json", str(out))
    finally:
        os.umask(umask)
    assert code == 0 and out.stat().st_mode & 0o777 == 0o640
    assert json.loads(out.read_text())["isolation"] == "workers"
