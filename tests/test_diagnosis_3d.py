"""The 3D operator's triage (issue 38, item 4): the facts a signature groups its cases by
(D, H and W window kinds), the window tables a printed case shows, the family a shrunk
case is named by, the evidence of one failing case (where its wrong elements sit), and a
verify run's summary tables and diagnosis list; a correct kernel gets none."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cases import CaseData
from aclcheck.cli import cli
from aclcheck.dtypes import correctly_rounded, float_format
from aclcheck.judging.diagnosis.codes import DiagnosisCode
from aclcheck.judging.diagnosis.signature import AxisKind
from aclcheck.ops import operator
from aclcheck.ops.adaptive.windows import window_bounds
from aclcheck.store.dispatch import open_golden
from aclcheck.suite.selection import Selection
from tests.conftest import write_golden

OP = "adaptive_avg_pool3d_backward"
HOOKS = operator(OP).diagnosis


@pytest.fixture(scope="module")
def golden_3d(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_golden(tmp_path_factory.mktemp("diag3d"), Selection(
        products=("atlas-a2",), dtypes=("float32", "float16"),
        families=("divisible", "nondivisible", "upsampling", "global"), seed=4, op=OP),
        "diag3d")


@pytest.fixture(scope="module")
def valid(golden_3d: Path) -> list[CaseData]:
    with open_golden(golden_3d) as gf:
        out = [gf.data(i) for i in gf.ids()]
    return [d for d in out if d.golden is not None and d.golden.size and np.any(d.golden)]


def _output(data: CaseData, values: np.ndarray) -> np.ndarray:
    dtype, shape = data.case.expected_output()
    return np.asarray(values).astype(dtype).reshape(shape)


def _codes(data: CaseData, values: np.ndarray) -> set[DiagnosisCode]:
    assert HOOKS is not None
    ev = HOOKS.evidence(data, _output(data, values))
    assert ev.judged
    return {f.code for f in ev.findings}


def test_the_3d_operator_has_diagnosis_hooks() -> None:
    assert HOOKS is not None and operator(OP).probe is not None


def test_facts_name_the_kind_of_each_of_d_h_w(valid: list[CaseData]) -> None:
    assert HOOKS is not None
    for data in valid:
        case = data.case
        ins = case.tensor_desc("self").shape[-3:]
        outs = case.tensor_desc("grad_output").shape[-3:]
        f = HOOKS.facts(case, "FAIL")
        assert [a for a, _ in f.axes] == ["D", "H", "W"]
        for (_, kind), i, o in zip(f.axes, ins, outs, strict=True):
            if o == 1:
                assert kind is AxisKind.GLOBAL or (i == 1 and kind is AxisKind.IDENTITY)
            elif i % o == 0:
                assert kind in (AxisKind.DIVISIBLE, AxisKind.IDENTITY)
            elif o > i:
                assert kind is AxisKind.UPSAMPLING
            else:
                assert kind is AxisKind.NONDIVISIBLE
        assert f.square == (len(set(ins)) == 1 and len(set(outs)) == 1)
        assert f.accumulation == "float32" and f.rank == len(case.tensor_desc("self").shape)


def test_window_tables_are_the_contracts_per_axis(valid: list[CaseData]) -> None:
    assert HOOKS is not None
    case = valid[0].case
    tables = HOOKS.windows(case)
    ins = case.tensor_desc("self").shape[-3:]
    outs = case.tensor_desc("grad_output").shape[-3:]
    assert [t[0] for t in tables] == ["D", "H", "W"]
    for (_, start, end), i, o in zip(tables, ins, outs, strict=True):
        s, e = window_bounds(o, i)
        assert start == tuple(s) and end == tuple(e)


def test_a_shrunk_case_is_named_by_its_shapes_now(valid: list[CaseData]) -> None:
    assert HOOKS is not None
    case = next(d.case for d in valid if d.case.family == "nondivisible")
    assert HOOKS.family(case) == "nondivisible"
    now = dataclasses.replace(case, self_shape=(1, 1, 4, 4, 4), grad_shape=(1, 1, 2, 2, 2))
    assert HOOKS.family(now) == "divisible"
    up = dataclasses.replace(case, self_shape=(1, 1, 2, 4, 4), grad_shape=(1, 1, 3, 2, 2))
    assert HOOKS.family(up) == "upsampling"
    kept = dataclasses.replace(now, family="special")
    assert HOOKS.family(kept) == "special"


def test_a_correct_output_has_no_findings(valid: list[CaseData]) -> None:
    for data in valid:
        fmt = float_format(data.case.dtype)
        assert _codes(data, correctly_rounded(np.asarray(data.golden), fmt)) == set()


def test_a_dropped_depth_slice_is_unwritten(valid: list[CaseData]) -> None:
    seen = 0
    for data in valid:
        g = np.asarray(data.golden, dtype=np.float64)
        if g.shape[-3] < 2 or not np.all(g[..., -1, :, :] != 0):
            continue
        wrong = g.copy()
        wrong[..., -1, :, :] = 0.0
        assert DiagnosisCode.UNWRITTEN in _codes(data, wrong), data.case.id
        seen += 1
    assert seen


def test_a_scaled_window_is_a_divisor_ratio(valid: list[CaseData]) -> None:
    data = next(d for d in valid if d.case.family == "divisible")
    g = np.asarray(data.golden, dtype=np.float64)
    assert DiagnosisCode.DIVISOR_RATIO in _codes(data, g * 3.0)


def _verify(golden: Path, tmp_path: Path, impl: str) -> dict:
    report = tmp_path / "r.json"
    result = CliRunner().invoke(cli, ["verify", str(golden), "--impl", impl, "--json",
                                      str(report), "--no-isolate", "--no-probe"],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return json.loads(report.read_text())


def test_a_broken_3d_kernel_gets_tables_findings_and_evidence(golden_3d: Path,
                                                              tmp_path: Path) -> None:
    report = _verify(golden_3d, tmp_path, "tests/kernels_probe_zoo.py:depth0_only_3d")
    summary = report["summary"]
    assert summary["failed"] > 0
    assert {"divisible", "nondivisible"} <= set(summary["by_family"])
    assert {"D", "H", "W"} <= set(summary["by_axis_kind"])
    assert summary["magnitude"]
    codes = [e["code"] for e in report["diagnosis"]]
    assert "unwritten" in codes, codes
    failing = [c for c in report["cases"] if c["verdict"] == "FAIL"]
    assert any(f["code"] == "unwritten" for c in failing
               for f in c.get("diagnosis", {}).get("findings", []))


def test_a_correct_3d_kernel_gets_no_diagnosis(golden_3d: Path, tmp_path: Path) -> None:
    report = _verify(golden_3d, tmp_path, "tests/kernels_probe_zoo.py:correct_3d")
    assert report["summary"]["failed"] == 0 and not report.get("diagnosis")


def test_shrink_prints_the_minimal_3d_case_with_its_window_tables(golden_3d: Path) -> None:
    with open_golden(golden_3d) as gf:
        case_id = next(i for i in gf.ids() if "nondiv" in i)
    result = CliRunner().invoke(cli, ["shrink", str(golden_3d), "--impl",
                                      "tests/kernels_probe_zoo.py:d_end_floor_3d", "--id",
                                      case_id, "--no-isolate"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    for axis in ("D", "H", "W"):
        assert f"windows along {axis}:" in result.output
    assert "shrunk [" in result.output
