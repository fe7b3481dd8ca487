"""The 3D operator through the commands, end to end: `generate --op aapool3d-bwd`, then
`inspect` (--check, --ties) and `verify` taking the operator from the file, with the
reference, PyTorch, and deliberately broken 3D kernels (tests/kernels3d.py) that must FAIL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.ops import operator
from aclcheck.store.dispatch import open_golden

OP = "adaptive_avg_pool3d_backward"
ALIAS = "aapool3d-bwd"
#: A small A2 suite: windowed, tie, index-boundary and global geometry, and the invalid calls.
SUITE_ARGS = ("--op", ALIAS, "--product", "atlas-a2", "--dtype", "float16",
              "--dtype", "float32", "--family", "nondivisible", "--family", "rounding",
              "--family", "index", "--family", "global", "--family", "empty",
              "--family", "invalid", "--seed", "3")
NUMERIC = ("--family", "!invalid", "--family", "!empty")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def suite3d(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("s3") / "s3.h5"
    code, out = run("generate", "-o", str(path), *SUITE_ARGS)
    assert code == 0, out
    return path


def verdicts(tmp_path: Path, suite: Path, impl: str, *extra: str) -> tuple[int, list[dict]]:
    report = tmp_path / f"{impl.replace(':', '_')}.json"
    code, out = run("verify", str(suite), "--impl", impl, "--json", str(report), *extra)
    assert code in (0, 1), out
    return code, json.loads(report.read_text())["cases"]


def test_the_alias_names_the_3d_operator_and_the_file_carries_it(suite3d: Path) -> None:
    assert operator(ALIAS).name == OP and operator(OP).api == "aclnnAdaptiveAvgPool3dBackward"
    with open_golden(suite3d) as gf:
        assert gf.meta["operator"] == OP
        cases = [gf.case(i) for i in gf.ids()]
    assert {c.family for c in cases} >= {"nondivisible", "rounding", "index", "invalid"}
    assert all(len(c.self_shape) in (4, 5) or c.family == "invalid" for c in cases)
    # an empty self is invalid (161002), unlike the 2D operator
    assert all(c.expected_status == 161002 for c in cases if c.family == "empty")


def test_inspect_check_and_ties(suite3d: Path) -> None:
    code, out = run("inspect", str(suite3d), "--check")
    assert code == 0 and "checksums verified" in out, out
    code, out = run("inspect", str(suite3d), "--ties", "--family", "rounding", "--json")
    assert code == 0, out
    rows = json.loads(out)["cases"]
    assert rows and all(r["ties"] > 0 for r in rows if r["dtype"] == "float16"), rows


def test_the_reference_passes_everything(tmp_path: Path, suite3d: Path) -> None:
    code, cases = verdicts(tmp_path, suite3d, "reference")
    assert code == 0 and {c["verdict"] for c in cases} == {"PASS"}


def test_the_reference_passes_special_values_in_each_products_overflow_mode(
        tmp_path: Path) -> None:
    """Every product's special-value cases of the 3D suite, the saturating products
    (training, inference) included: the judge and the reference agree on the mode."""
    path = tmp_path / "special.h5"
    code, out = run("generate", "-o", str(path), "--op", ALIAS, "--family", "special")
    assert code == 0, out
    code, cases = verdicts(tmp_path, path, "reference")
    products = {c["id"].split("-")[0] for c in cases}
    assert {"train", "infer", "a2", "a3"} <= products, products
    assert code == 0 and {c["verdict"] for c in cases} == {"PASS"}, [
        (c["id"], c["message"]) for c in cases if c["verdict"] != "PASS"]


def test_a_bit_exact_a2_emulation_passes(tmp_path: Path, suite3d: Path) -> None:
    code, cases = verdicts(tmp_path, suite3d, "tests.kernels3d:window_order", *NUMERIC)
    assert code == 0 and {c["verdict"] for c in cases} == {"PASS"}


@pytest.mark.parametrize(("kernel", "family", "words"), [
    ("forgets_kd", "nondivisible", "over budget"),  # a divisor without kd
    ("ties_away", "rounding", "exact ties rounded away from zero"),  # not RNE
    ("float_bounds", "index", "over budget"),  # float32 window bounds past 2^24
    ("fp16_accumulation", "nondivisible", "over budget"),  # PyTorch CPU's model
])
def test_broken_3d_kernels_fail(tmp_path: Path, suite3d: Path, kernel: str, family: str,
                                words: str) -> None:
    code, cases = verdicts(tmp_path, suite3d, f"tests.kernels3d:{kernel}", *NUMERIC,
                           "--no-probe")  # the verdicts: the probe's calls of these
    failed = [c for c in cases if c["verdict"] == "FAIL"]  # loop kernels are slow
    assert code == 1 and failed
    assert any(c["family"] == family and words in c["message"] for c in failed), failed


def test_torch_fp32_passes_and_its_known_divergences_show(tmp_path: Path,
                                                          suite3d: Path) -> None:
    pytest.importorskip("torch")
    code, cases = verdicts(tmp_path, suite3d, "torch", "--dtype", "float32", *NUMERIC)
    assert code == 0 and {c["verdict"] for c in cases} == {"PASS"}
    _, cases = verdicts(tmp_path, suite3d, "torch", "--family", "invalid")
    wrong = {c["id"].split("_", 1)[1].split("-")[0] for c in cases
             if c["verdict"] == "WRONG_STATUS"}
    # PyTorch checks neither gradOutput's leading dims nor self's emptiness
    assert {"n_grad", "c_grad", "empty_self"} <= wrong, wrong


def test_products_and_tolerances_show_the_3d_operator() -> None:
    code, out = run("products", "--op", ALIAS)
    assert code == 0 and "aclnnAdaptiveAvgPool3dBackward" in out and "NCDHW" in out, out
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        cli, ["tolerances", "--op", ALIAS, "--standard", "aclcheck"])
    code, out = result.exit_code, result.output
    assert code == 0, out
    assert "fill 1/(D*H*W) in bfloat16" in out and "none on this product" in out, out
    # DOUBLE's 1x1x1 path (contract code): accumulates in float64, the fill in float32
    assert "│ float64  │ float64 (u=2^-53)" in out and "none for this dtype" in out, out


def test_families_lists_every_3d_family_and_coverage_reports(suite3d: Path) -> None:
    op = operator(ALIAS)
    assert set(op.family_notes) == set(op.families)
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["families", "--op", ALIAS])
    assert result.exit_code == 0 and "aclnnAdaptiveAvgPool3dBackward" in result.output
    assert all(name in result.output for name in op.families)
    code, out = run("inspect", str(suite3d), "--coverage")  # tests/test_coverage_3d.py
    assert code == 0 and "edges not reached" in out and "Traceback" not in out, out
