"""shrink and hunt keep the diagnosis (issue 21): the code that names the bug survives
shrinking, the family is named anew, the minimal case is printed whole, hunt counts its
calls."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.impls import create
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.judging.diagnosis.codes import DiagnosisCode as C
from aclcheck.judging.diagnosis.reproduce import CaseClues, ModelResult
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.running.live import LiveJudge
from aclcheck.store.codec import run_meta
from aclcheck.suite.generate import generate
from aclcheck.triage.shrink import Signature, diagnosis_codes, shrink

#: A nondivisible case (H: 9 -> 6, W: 10 -> 9): the window-end bug shows everywhere.
NONDIV = Case(id="nondiv", family="nondivisible", product="atlas-a2", dtype="float16",
              format="NCHW", self_shape=(2, 3, 9, 10), grad_shape=(2, 3, 6, 9), seed=4)


@pytest.fixture(scope="module")
def nondiv_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shrinkdiag") / "nondiv.h5"
    generate(path, [NONDIV], run_meta("test", "shrink-diagnosis"))
    return path


def test_shrink_keeps_the_diagnosis_code_and_names_the_family_anew() -> None:
    with LiveJudge(create("tests/kernels_zoo.py:end_floor")) as judge:
        result = shrink(NONDIV, judge, max_time=60)
    assert Signature.of(NONDIV, result.first).code is C.WINDOW_END_FLOOR
    assert C.WINDOW_END_FLOOR in diagnosis_codes(result.verdict)
    assert result.verdict.magnitude is not None and result.verdict.magnitude.wrong > 0
    assert result.minimal.self_shape != NONDIV.self_shape
    h, w = result.minimal.self_shape[-2:]
    ho, wo = result.minimal.grad_shape[-2:]
    expected = "upsampling" if ho > h or wo > w else (
        "nondivisible" if h % ho or w % wo else result.minimal.family)
    assert result.minimal.family == expected


def test_a_case_whose_evidence_is_gone_does_not_keep_the_code() -> None:
    model = ModelResult(C.WINDOW_END_FLOOR, "end floor", explained=True, exact=True)
    named = CaseVerdict("c", Verdict.FAIL, "m", clues=CaseClues("c", (model,)))
    want = Signature.of(NONDIV, named)
    assert want.code is C.WINDOW_END_FLOOR and want.kept_by(NONDIV, named)
    cancelled = CaseVerdict("c", Verdict.FAIL, "m", clues=CaseClues("c", judged=False))
    assert not want.kept_by(NONDIV, cancelled)  # e.g. the golden cancelled to zero
    assert not want.kept_by(NONDIV, CaseVerdict("c", Verdict.FAIL, "m"))


def test_shrink_prints_the_minimal_case_whole(nondiv_golden: Path) -> None:
    result = CliRunner().invoke(cli, ["shrink", str(nondiv_golden), "--impl",
                                      "tests/kernels_zoo.py:end_floor", "--id", "nondiv",
                                      "--max-time", "60"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    out = result.output
    assert "diagnosis kept: window-end-floor" in out
    for title in ("gradOutput:", "golden (float64):", "actual (float16):", "error (ULP):",
                  "windows along H:", "windows along W:"):
        assert title in out, title


def test_hunt_reports_its_calls_and_time(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [
        "hunt", "--impl", "tests/kernels_zoo.py:kh_squared", "--product", "atlas-a2",
        "--dtype", "fp32", "--seed", "3", "--max-time", "60", "--shrink-time", "20",
        "-o", str(tmp_path / "found")], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    out = " ".join(result.output.split())
    assert "aclcheck: hunt made " in out and " calls in " in out
    assert "diagnosis kept: divisor-kh-kh" in out
