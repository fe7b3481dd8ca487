"""The vendor's corpora as shipped (golden/vendor/*.toml, imported from hicann/ops-nn at
commit e5c3fa93): every case reads, the unit tests' expected statuses agree with
aclcheck's contract wherever it predicts one (and with the code mode everywhere), and
ATK's cases make goldens the reference passes."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cases.acl import UNSPECIFIED
from aclcheck.cli import cli
from aclcheck.suite.casefile import load_case_file, toml_file

VENDOR = Path(__file__).resolve().parent.parent / "golden" / "vendor"
OPS = {"2d": "adaptive_avg_pool2d_backward", "3d": "adaptive_avg_pool3d_backward"}


@pytest.mark.parametrize(("name", "count"), [("ut-2d", 20), ("ut-3d", 33)])
def test_unit_tests_agree_with_the_contract_where_it_predicts(name: str, count: int) -> None:
    cases = load_case_file(VENDOR / f"{name}.toml", op=OPS[name[-2:]]).cases
    assert len(cases) == count and all(c.vendor_status is not None for c in cases)
    assert all(c.source.startswith("ut:test_aclnn_AdaptiveAvgPool") for c in cases)
    predicted = [c for c in cases if c.expected_status != UNSPECIFIED]
    assert [c.id for c in predicted if c.expected_status != c.vendor_status] == []
    assert len(cases) - len(predicted) == 2  # NHWC / NCL labels (2D), DOUBLE 1x1x1 (3D)
    coded = [c.following("code") for c in cases]
    assert [c.id for c in coded if c.expected_status != c.vendor_status] == []


@pytest.mark.parametrize("name", ["atk-2d", "atk-3d"])
def test_atk_cases_read_and_the_smallest_pass_the_reference(tmp_path: Path,
                                                             name: str) -> None:
    op = OPS[name[-2:]]
    cases = load_case_file(VENDOR / f"{name}.toml", op=op).cases
    assert len(cases) == 209 and {c.format for c in cases} == {"NCHW"}
    assert all(c.source.startswith("atk:") and c.vendor_status is None for c in cases)
    stated = [c for c in cases if c.grad_fill is not None or c.grad_normal is not None]
    assert len(stated) == 209
    small = sorted(cases, key=lambda c: math.prod(c.self_shape))[:6]
    src, golden = tmp_path / "small.toml", tmp_path / "small.h5"
    src.write_text(toml_file(small, "small"))
    runner = CliRunner()
    # ATK passes NCHW for 5-D tensors too: undocumented for the 3D operator (doc mode:
    # unspecified, nothing judged); the vendor's code accepts it, so judge in code mode
    made = runner.invoke(cli, ["generate", "--op", op, "--cases-file", str(src), "-o",
                               str(golden), "--contract", "code"])
    assert made.exit_code == 0, made.output
    judged = runner.invoke(cli, ["verify", str(golden), "--impl", "reference"])
    assert judged.exit_code == 0, judged.output


@pytest.mark.parametrize("v", ["2d", "3d"])
def test_the_aclnn_adapter_hands_the_vendor_calls_over_as_written(standin: Path,
                                                                  v: str) -> None:
    """Strided views with their storage shapes, negative dims, COMPLEX64, null tensors:
    through the ctypes adapter to the stand-in library, whose checks follow the vendor's
    code, every unit test's status comes back as the vendor expects."""
    golden = VENDOR.parent / f"vendor-ut-{v}.h5"
    result = CliRunner().invoke(cli, ["verify", str(golden), "--impl", "aclnn",
                                      "--aclnn-lib-dir", str(standin)])
    assert result.exit_code == 0, result.output
    assert f"implementation agrees {20 if v == '2d' else 33}, parts 0" \
        in result.output
