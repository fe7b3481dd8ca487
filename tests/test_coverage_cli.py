"""`aclcheck inspect FILE --coverage`: what a suite's valid cases reach, and what a
trimmed suite no longer does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.suite.selection import Selection


@pytest.fixture(scope="module")
def hardware_golden(tmp_path_factory: pytest.TempPathFactory, write_golden) -> Path:
    """A2 FLOAT16 in NCHW: the hardware-edge families and the plain divisible one."""
    return write_golden(tmp_path_factory.mktemp("coverage"), Selection(
        products=("atlas-a2",), dtypes=("float16",), formats=("NCHW",),
        families=("divisible", "cores", "ubpass", "ncslice", "bigglobal", "tall",
                  "layoutnc", "invalid")), "coverage")


def _coverage(golden: Path, *args: str) -> dict:
    res = CliRunner().invoke(cli, ["inspect", str(golden), "--coverage", "--json", *args])
    assert res.exit_code == 0, res.output
    return {e["label"]: e for e in json.loads(res.output)["coverage"]["edges"]}


def test_the_hardware_families_reach_their_edges(hardware_golden: Path) -> None:
    edges = _coverage(hardware_golden)
    for label in ("second UB pass on 40 cores", "N·C sliced, short last slice",
                  "1x1 plane >= 16393 in FLOAT16 (subnormal fill)",
                  "N·C > 40, not a multiple (plane split)", "i·in > 2^24 with W > 1"):
        assert edges[label]["cases"] > 0, label
        assert edges[label]["example"]
    assert edges["i·in > 2^31"]["cases"] == 0  # stress only


def test_a_trimmed_suite_shows_what_it_no_longer_covers(hardware_golden: Path) -> None:
    edges = _coverage(hardware_golden, "--family", "!ubpass")
    assert edges["second UB pass on 40 cores"]["cases"] == 0
    assert edges["N·C sliced, short last slice"]["cases"] > 0


def test_the_table_marks_missing_edges_and_counts_valid_cases(hardware_golden: Path) -> None:
    res = CliRunner().invoke(cli, ["inspect", str(hardware_golden), "--coverage",
                                   "--family", "divisible"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "none" in res.output and "second UB pass on 40 cores" in res.output
    assert "valid cases" in res.output and "edges not reached" in res.output


def test_coverage_is_exclusive_with_check(hardware_golden: Path) -> None:
    res = CliRunner().invoke(cli, ["inspect", str(hardware_golden), "--coverage", "--check"])
    assert res.exit_code == 2


def test_the_committed_default_suite_lost_no_hardware_edge() -> None:
    """The CI gate (.ci/run): golden/ci-suite.h5, the default 2D suite, reaches every
    hardware edge but those only the on-request stress family reaches."""
    golden = Path(__file__).parent.parent / "golden" / "ci-suite.h5"
    res = CliRunner().invoke(cli, ["inspect", str(golden), "--coverage", "--json",
                                   "--require-edges"])
    assert res.exit_code == 0, res.output
    edges = json.loads(res.output)["coverage"]["edges"]
    stress = {e["label"] for e in edges if e["group"] == "hardware" and not e["cases"]}
    assert stress and all(e["on_request"] for e in edges if e["label"] in stress)


def test_a_suite_that_lost_an_edge_fails_the_gate_naming_it(hardware_golden: Path) -> None:
    res = CliRunner().invoke(cli, ["inspect", str(hardware_golden), "--coverage",
                                   "--require-edges", "--family", "!ubpass"])
    assert res.exit_code == 1
    assert "second UB pass on 40 cores (§9.3)" in res.output
    assert "i·in > 2^31" not in res.output.split("reached by no case")[-1]  # stress only
    res = CliRunner().invoke(cli, ["inspect", str(hardware_golden), "--require-edges"])
    assert res.exit_code == 2 and "goes with --coverage" in res.output
