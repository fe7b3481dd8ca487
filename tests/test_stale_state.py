"""The stale-state check of `verify` (aclcheck.running.recall, docs/contract.md section 11):
kernels that keep state between calls fail with the finding DEPENDS_ON_EARLIER_CALLS,
isolated and in-process; correct kernels pass with it on; --no-stale-check turns it off
(and then the stateful kernels' first call of a worker passes)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cases.call import CallInputs, Outcome
from aclcheck.cases.layouts import place
from aclcheck.cli import cli
from aclcheck.judging.case.hints import HintCode
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.options import STALE_CHECK
from aclcheck.running import recall
from aclcheck.running.config import VerifyConfig
from aclcheck.suite.selection import Selection

STATEFUL = ("stale_accumulator", "shape_keyed_plan", "partial_clear")


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory, write_golden) -> Path:
    """A2 float32 and float16, valid calls: small planes (idle cores for partial_clear),
    contiguous and channels-last (shape_keyed_plan)."""
    return write_golden(tmp_path_factory.mktemp("stale"), Selection(
        products=("atlas-a2",), dtypes=("float32", "float16"), formats=("NCHW",),
        families=("divisible", "nondivisible", "layout"), count=2, seed=4), "stale")


def _verify(golden: Path, tmp_path: Path, impl: str, *extra: str) -> tuple[int, dict]:
    report = tmp_path / f"{impl.rsplit(':', 1)[-1]}{len(extra)}.json"
    res = CliRunner().invoke(cli, ["verify", str(golden), "--impl", impl, "--json",
                                   str(report), *extra])
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, json.loads(report.read_text())


def _depends(report: dict) -> list[dict]:
    return [c for c in report["cases"]
            if c["metrics"].get("recall") == recall.Recall.DEPENDS.value]


#: In one process for the whole run (--no-isolate) a plan cached on a shape's first call
#: is the case's own plan: its twin, called after it, cannot show it (docs/verify.md).
IN_PROCESS_LIMIT = pytest.mark.xfail(strict=True, reason="a plan cached on the case's own "
                                     "first call needs a fresh worker to show")


@pytest.mark.parametrize(("kernel", "isolation"), [
    *((k, "--isolate") for k in STATEFUL),
    ("stale_accumulator", "--no-isolate"), ("partial_clear", "--no-isolate"),
    pytest.param("shape_keyed_plan", "--no-isolate", marks=IN_PROCESS_LIMIT)])
def test_stateful_kernels_fail_with_the_finding(golden: Path, tmp_path: Path, kernel: str,
                                                isolation: str) -> None:
    code, report = _verify(golden, tmp_path, f"tests.kernels_hardware:{kernel}", isolation)
    assert code == 1
    found = _depends(report)
    assert found, f"{kernel}: no case reported as depending on earlier calls"
    for case in found:
        assert case["verdict"] in ("FAIL", "ERROR")
        assert case["message"].startswith("depends on earlier calls")


@pytest.mark.parametrize("isolation", ["--isolate", "--no-isolate"])
def test_a_correct_kernel_passes_with_the_check_on(golden: Path, tmp_path: Path,
                                                   isolation: str) -> None:
    code, report = _verify(golden, tmp_path, "tests.kernels_hardware:a2_tiled_shuffled",
                           isolation)
    assert code == 0 and not _depends(report)
    assert report["summary"]["passed"] == report["summary"]["cases"]


def test_no_stale_check_turns_it_off(golden: Path, tmp_path: Path) -> None:
    # the sequence stage (running.sequences) catches partial_clear too: off here as well
    _, report = _verify(golden, tmp_path, "tests.kernels_hardware:partial_clear",
                        "--no-stale-check", "--sequences", "0")
    assert not _depends(report)
    assert "--no-stale-check" in report["cases"][0]["repro"]


def test_the_option_is_declared_once_and_repro_carries_it() -> None:
    assert STALE_CHECK.default is True
    on = VerifyConfig(golden="g.h5")
    off = VerifyConfig(golden="g.h5", stale_check=False)
    assert on.run_options().recall and not off.run_options().recall
    assert "--stale-check" not in on.repro("x") and "--no-stale-check" in off.repro("x")


# -- the pure parts ------------------------------------------------------------------------


def _call(layout: str) -> CallInputs:
    from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case

    case = Case("c", "divisible", "atlas-a2", "float32", "NCHW", (2, 3, 4, 4), (2, 3, 2, 2),
                1, "uniform", layout)
    g = np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2) - 5
    s = np.ones((2, 3, 4, 4), dtype=np.float32)
    return CallInputs(case, {"grad_output": place(g, layout), "self": place(s, layout)})


@pytest.mark.parametrize(("layout", "other"), [("contiguous", "channels_last"),
                                               ("channels_last", "contiguous"),
                                               ("strided", "channels_last")])
def test_the_twin_scales_by_minus_two_and_changes_the_layout(layout: str, other: str) -> None:
    call = _call(layout)
    twin = recall.twin(call, spatial_rank=2)
    assert twin.case.layout == other
    for role in ("grad_output", "self"):
        got, want = twin.inputs[role], call.inputs[role]
        assert got.shape == want.shape and got.strides != want.strides
        np.testing.assert_array_equal(got.view(), recall.TWIN_SCALE * want.view())


def _verdict(v: Verdict, detail: str = "") -> CaseVerdict:
    return CaseVerdict("c", v, v.value.lower(), detail=detail, metrics={"max_abs": 1.0})


def test_one_right_one_wrong_is_the_finding_either_way_round() -> None:
    first_right = recall.merged(_verdict(Verdict.PASS), _verdict(Verdict.FAIL, "worst"))
    assert first_right.verdict == Verdict.FAIL
    assert [h.code for h in first_right.hints] == [HintCode.DEPENDS_ON_EARLIER_CALLS]
    assert first_right.metrics["recall"] == "depends-on-earlier-calls"
    assert "worst" in first_right.detail
    first_wrong = recall.merged(_verdict(Verdict.FAIL), _verdict(Verdict.PASS))
    assert first_wrong.verdict == Verdict.FAIL
    assert first_wrong.hints[0].code == HintCode.DEPENDS_ON_EARLIER_CALLS
    crashed = recall.merged(_verdict(Verdict.PASS), _verdict(Verdict.ERROR))
    assert crashed.verdict == Verdict.ERROR and crashed.hints


def test_two_answers_judged_alike_are_not_the_finding() -> None:
    both = recall.merged(_verdict(Verdict.PASS), _verdict(Verdict.PASS))
    assert both.verdict == Verdict.PASS and not both.hints
    assert both.metrics["recall"] == "within"
    assert recall.merged(_verdict(Verdict.FAIL), _verdict(Verdict.FAIL)).hints == ()


def test_only_valid_calls_with_an_answer_are_called_again() -> None:
    call = _call("contiguous")
    out = np.zeros((2, 3, 4, 4), dtype=np.float32)
    assert recall.wanted(call, Outcome(status=0, output=out))
    assert not recall.wanted(call, Outcome(raised="boom"))
    assert not recall.wanted(call, Outcome(output=out[:0]))
    invalid = CallInputs(call.case.replace(grad_shape=(2, 4, 2, 2)), call.inputs)
    assert not recall.wanted(invalid, Outcome(output=out))
    assert recall.same_answer(out, out.copy()) and not recall.same_answer(out, out + 1)


def test_stored_results_are_not_called_twice() -> None:
    """A results file holds one answer per case: the stale-state check has nothing to
    call again, so it is off there, whatever the option says."""
    assert VerifyConfig(golden="x.h5").run_options().recall
    assert not VerifyConfig(golden="x.h5", stale_check=False).run_options().recall
    assert not VerifyConfig(golden="x.h5", results="r.h5").run_options().recall
