"""The pytest plugin (aclcheck.pytest_plugin) under pytester: one item per case, -k,
--junitxml, failure text identical to verify's, known-failure lists, usage errors,
and pytest-xdist (-n 2) giving the same outcomes as a serial run."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import h5py
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.store.dispatch import open_golden

pytest_plugins = ["pytester"]

BROKEN = '''
import numpy as np

def zeros(grad_output, self):
    return np.zeros(self.shape, dtype=self.dtype)
'''
KNOWN = '''
[[xfail]]
id = "*-div0-*"
reason = "zeros kernel"

[[xfail]]
id = "*-nondiv0-*"
reason = "only crashes are known here"
verdicts = ["ERROR"]
'''
NO_CACHE = ("-p", "no:cacheprovider", "-p", "no:benchmark")


@pytest.fixture
def golden(a2_fp32_golden: Path) -> Path:
    return a2_fp32_golden


@pytest.fixture
def ids(golden: Path) -> list[str]:
    with open_golden(golden) as gf:
        return gf.ids()


@pytest.fixture
def broken(pytester: pytest.Pytester) -> str:
    """A module:function implementation that returns zeros, importable by spec."""
    pytester.makepyfile(zeros_kernel=BROKEN)
    pytester.syspathinsert()
    return "zeros_kernel:zeros"


def gate(golden: Path, *args: str, impl: str = "reference") -> list[str]:
    """Plugin arguments; `--opt=value` keeps the golden's folder out of pytest's rootdir
    choice, so the rootdir is pytester's folder and the golden sits outside it."""
    return [f"--aclcheck-golden={golden}", "--aclcheck-impl", impl, *NO_CACHE, *args]


def junit_cases(path: Path) -> list[tuple[str, str, str]]:
    """(classname, name, outcome) per testcase, in file order."""
    out = []
    for tc in ET.parse(path).iter("testcase"):
        kinds = [c.tag for c in tc if c.tag in ("failure", "error", "skipped")]
        out.append((tc.get("classname", ""), tc.get("name", ""), kinds[0] if kinds else "pass"))
    return out


def test_inert_without_golden_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain='''
import sys

def test_nothing_of_aclcheck_loaded():
    assert "aclcheck.pytest_plugin" in sys.modules      # registered via pytest11
    assert not any(m in sys.modules for m in ("aclcheck.store", "h5py", "numpy"))
''')
    result = pytester.runpytest_subprocess(*NO_CACHE, "-p", "no:xdist",
                                           "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1)
    assert "aclcheck: " not in result.stdout.str()  # no report header: the gate is off


def test_options_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help", *NO_CACHE)
    out = result.stdout.str()
    for flag in ("--aclcheck-golden", "--aclcheck-impl", "--aclcheck-standard",
                 "--aclcheck-xfail", "--aclcheck-strict-xfail", "--aclcheck-isolate",
                 "--aclcheck-timeout", "--aclcheck-tolerances"):
        assert flag in out


def test_reference_passes_one_item_per_case_in_index_order(
        pytester: pytest.Pytester, golden: Path, ids: list[str]) -> None:
    result = pytester.runpytest(*gate(golden, "--collect-only", "-q"))
    collected = [line for line in result.outlines if "::" in line]
    assert collected == [f"suite.h5::{cid}" for cid in ids]
    result = pytester.runpytest(*gate(golden))
    result.assert_outcomes(passed=len(ids))
    assert result.ret == pytest.ExitCode.OK
    assert f"aclcheck: {golden} ({len(ids)} cases), impl reference" in result.stdout.str()


def test_k_selection_and_junit_testcase_names_are_case_ids(
        pytester: pytest.Pytester, golden: Path, ids: list[str]) -> None:
    xml = pytester.path / "junit.xml"
    result = pytester.runpytest(*gate(golden, "-k", "nondiv0", "--junitxml", str(xml)))
    want = [cid for cid in ids if "nondiv0" in cid]
    result.assert_outcomes(passed=len(want), deselected=len(ids) - len(want))
    assert junit_cases(xml) == [("suite.h5", cid, "pass") for cid in want]
    # product / dtype / family are keywords too
    result = pytester.runpytest(*gate(golden, "-k", "nondivisible and atlas-a2 and float32"))
    result.assert_outcomes(passed=len(want), deselected=len(ids) - len(want))


def test_golden_file_inside_rootdir_is_collected_once(
        pytester: pytest.Pytester, golden: Path, ids: list[str]) -> None:
    shutil.copy(golden, pytester.path / "suite.h5")
    for extra in ((), ("suite.h5",)):  # found by the directory walk, or named as an argument
        result = pytester.runpytest("--aclcheck-golden", "suite.h5", *NO_CACHE,
                                    "--collect-only", "-q", *extra)
        assert [ln for ln in result.outlines if "::" in ln] == [f"suite.h5::{c}" for c in ids]


def test_broken_kernel_fails_with_verify_text(pytester: pytest.Pytester, golden: Path,
                                              broken: str, tmp_path: Path) -> None:
    result = pytester.runpytest(*gate(golden, "-k", "div0", impl=broken))
    failures = {r.head_line: r.longreprtext for r in result.reprec.getfailures()}
    result.assert_outcomes(failed=6, deselected=19)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = tmp_path / "verify.json"
    run = CliRunner().invoke(cli, ["verify", str(golden), "--impl", broken, "--id", "*div0*",
                                   "--json", str(report)], catch_exceptions=False)
    assert run.exit_code == 1
    cases = json.loads(report.read_text())["cases"]
    assert sorted(failures) == sorted(c["id"] for c in cases)
    for case in cases:
        text = failures[case["id"]]
        assert text.startswith(f"FAIL: {case['message']}\n")
        assert case["detail"].rstrip("\n") in text and "worst elements" in text
        assert text.endswith(f"repro: {case['repro']}")
        assert case["repro"].endswith(f"--id {case['id']}")
        assert "Traceback" not in text and "pytest_plugin.py" not in text


def test_known_failures_are_xfailed_only_for_listed_verdicts(
        pytester: pytest.Pytester, golden: Path, broken: str) -> None:
    known = pytester.makefile(".toml", known=KNOWN)
    result = pytester.runpytest(*gate(golden, "-k", "div0", "-rxf",
                                      f"--aclcheck-xfail={known}", impl=broken))
    result.assert_outcomes(xfailed=3, failed=3, deselected=19)  # nondiv0: FAIL, not ERROR
    result.stdout.fnmatch_lines(["XFAIL suite.h5::a2-fp32-*-div0-* - zeros kernel (was FAIL: *"])
    failed = [r.head_line for r in result.reprec.getfailures()]
    assert failed and all("-nondiv0-" in name for name in failed)


def test_listed_case_that_passes_is_xpass_and_fails_when_strict(
        pytester: pytest.Pytester, golden: Path) -> None:
    known = pytester.makefile(".toml", known=KNOWN)
    args = gate(golden, "-k", "div0", "-rX",
                f"--aclcheck-xfail={known}")
    lenient = pytester.runpytest(*args)  # every listed case passes, whatever its verdicts
    lenient.assert_outcomes(xpassed=6, deselected=19)
    assert lenient.ret == pytest.ExitCode.OK
    lenient.stdout.fnmatch_lines(["XPASS *-div0-* - listed in *known.toml (zeros kernel) "
                                  "but passed: remove it from the list"])
    strict = pytester.runpytest(*args, "--aclcheck-strict-xfail")
    strict.assert_outcomes(failed=6, deselected=19)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    texts = [r.longreprtext for r in strict.reprec.getfailures()]
    assert len(texts) == 6 and all(t.startswith("[XPASS(strict)] listed in ") for t in texts)


def test_damaged_case_fails_that_item_with_one_line(pytester: pytest.Pytester, golden: Path,
                                                    ids: list[str]) -> None:
    damaged = pytester.path / "damaged.h5"
    shutil.copy(golden, damaged)
    with h5py.File(damaged, "r+") as f:  # its golden moved past the end of its pool
        rows = f["index"][()]
        rows["golden_start"][rows["id"] == ids[0].encode()] = 10**9
        del f["index"]
        f.create_dataset("index", data=rows, chunks=True, fletcher32=True)
    result = pytester.runpytest(*gate(damaged, "-k", "div0"))
    result.assert_outcomes(failed=1, passed=5, deselected=19)
    (report,) = result.reprec.getfailures()
    assert report.longreprtext.startswith(f"{damaged}: case {ids[0]}: golden: elements ")
    assert "lie past the end of /data/float64" in report.longreprtext
    assert "\n" not in report.longreprtext


@pytest.mark.parametrize(("args", "message"), [
    (("--aclcheck-golden", "nope.h5"), "ERROR: */nope.h5: no such file"),
    (("--aclcheck-golden", "notes.txt"), "ERROR: */notes.txt: not an HDF5 file"),
    (("--aclcheck-golden", "GOLDEN", "--aclcheck-impl", "nope"),
     "ERROR: --aclcheck-impl nope: unknown implementation 'nope'*"),
    (("--aclcheck-golden", "GOLDEN", "--aclcheck-standard", "nope"),
     "ERROR: --aclcheck-standard: unknown standard 'nope'*"),
    (("--aclcheck-golden", "GOLDEN", "--aclcheck-xfail", "nope.toml"),
     "ERROR: nope.toml: cannot read known-failure list*"),
    (("--aclcheck-xfail", "known.toml"), "ERROR: --aclcheck-xfail needs --aclcheck-golden FILE"),
])
def test_bad_arguments_are_usage_errors(pytester: pytest.Pytester, golden: Path,
                                        args: tuple[str, ...], message: str) -> None:
    pytester.makefile(".txt", notes="not a golden file")
    pytester.makefile(".toml", known=KNOWN)
    argv = [str(golden) if a == "GOLDEN" else a for a in args]
    result = pytester.runpytest(*argv, *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.slow  # heavy: runs in .ci/run's slow step (pytest -m slow)
def test_xdist_gives_the_serial_outcomes(pytester: pytest.Pytester, golden: Path,
                                         broken: str, ids: list[str]) -> None:
    """Each worker collects the same node ids and opens the file itself; reports
    (including the xfail reasons rewritten on the worker) reach the controller intact."""
    known = pytester.makefile(".toml", known=KNOWN)
    runs = {}
    for name, extra in (("serial", ()), ("xdist", ("-n", "2"))):
        xml = pytester.path / f"{name}.xml"
        args = gate(golden, "-rxf", f"--aclcheck-xfail={known}", "--junitxml", str(xml),
                    *extra, impl=broken)
        result = (pytester.runpytest_subprocess(*args) if extra
                  else pytester.runpytest(*args))
        runs[name] = (result, sorted(junit_cases(xml)))
    (serial, serial_cases), (xdist, xdist_cases) = runs["serial"], runs["xdist"]
    outcomes = serial.parseoutcomes()
    assert outcomes.get("xfailed") == 3 and outcomes.get("failed", 0) > 3
    assert xdist.parseoutcomes() == outcomes
    assert xdist_cases == serial_cases and {c[1] for c in xdist_cases} == set(ids)
    assert "2 workers" in xdist.stdout.str()
    xdist.stdout.fnmatch_lines(["XFAIL suite.h5::*-div0-* - zeros kernel (was FAIL: *"])
    assert xdist.ret == serial.ret == pytest.ExitCode.TESTS_FAILED


HOSTILE = '''
def raises(grad_output, self):
    raise ValueError("cannot open [/tmp/x] [bold]b[/] \\x1b[2J")
'''


def test_hostile_exception_text_is_escaped(pytester: pytest.Pytester, golden: Path) -> None:
    pytester.makepyfile(hostile_kernel=HOSTILE)
    pytester.syspathinsert()
    result = pytester.runpytest(*gate(golden, "-k", "div0", impl="hostile_kernel:raises"))
    result.assert_outcomes(failed=6, deselected=19)
    texts = [r.longreprtext for r in result.reprec.getfailures()]
    assert all("cannot open [/tmp/x] [bold]b[/] \\x1b[2J" in t for t in texts)
    assert not any("\x1b" in t for t in texts)
