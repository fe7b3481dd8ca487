"""The checker on aclnnAdaptiveMaxPool2dBackward kernels, end to end: `aclcheck generate --op
ampool2d-bwd`, then `aclcheck verify --impl tests.kernels_maxpool:NAME --json`.

Correct kernels (tests/kernels_maxpool.py) pass: the FLOAT32 scatter-add rounded once
passes every valid case of a small default suite, the same adds in reverse cell order
never FAIL (order-only differences are budgeted), every zero turned to -0 passes (signs
of zero are not compared), and an empty call may be written or not (gradInput is
documented as unwritten: the verdict says what the kernel did). Broken kernels make
verify exit 1 with their cases FAIL (never ERROR), in the families built to catch them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.dtypes import FLOAT_FORMATS, correctly_rounded
from aclcheck.ops.adaptive_max_pool2d_backward import contract, families
from aclcheck.ops.materialize import make_tensors
from tests import kernels_maxpool

ALIAS = "ampool2d-bwd"
#: every default family but the invalid calls (a Python callable has no status codes)
VALID_FAMILIES = tuple(f for f in families.DEFAULT_FAMILIES if f != "invalid")
SUITE_ARGS = ("--op", ALIAS, "--product", "atlas-a2", "--seed", "5",
              *(a for f in VALID_FAMILIES for a in ("--family", f)))
#: the verdicts only: no probe, no second calls, in this process (these kernels neither
#: crash nor write outside their arrays); the correct kernel runs with every default
FAST = ("--no-probe", "--no-stale-check", "--sequences", "0", "--no-isolate")
LAYOUT_TAGS = ("-cl", "-strided", "-hwT")
#: bugs that do not depend on the dtype: FLOAT16 cases only (judged exactly where the
#: sums fit FLOAT32; its three formats still rotate the layouts and the index dtypes)
ONE_DTYPE = ("--dtype", "float16")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mp") / "mp.h5"
    code, out = run("generate", "-o", str(path), *SUITE_ARGS)
    assert code == 0, out
    return path


def verdicts(tmp_path: Path, suite: Path, kernel: str, *extra: str
             ) -> tuple[int, list[dict]]:
    report = tmp_path / f"{kernel}.json"
    code, out = run("verify", str(suite), "--impl", f"tests.kernels_maxpool:{kernel}",
                    "--json", str(report), *extra)
    assert code in (0, 1), out
    return code, json.loads(report.read_text())["cases"]


def families_of(cases: list[dict], *verdicts_: str) -> set[str]:
    return {c["family"] for c in cases if c["verdict"] in verdicts_}


# -- correct kernels --------------------------------------------------------------------------


def test_the_fp32_scatter_add_passes_every_valid_case(tmp_path: Path, suite: Path) -> None:
    code, cases = verdicts(tmp_path, suite, "correct")
    assert code == 0 and cases
    assert {c["verdict"] for c in cases} == {"PASS"}, [
        (c["id"], c["message"]) for c in cases if c["verdict"] != "PASS"]
    assert {c["family"] for c in cases} == set(VALID_FAMILIES)
    assert {c["dtype"] for c in cases} == set(contract.COMPUTE_DTYPES)
    assert any(c["id"].endswith("-i32") for c in cases)
    assert any(not c["id"].endswith("-i32") for c in cases)
    # judged against goldens, not waved through: the numeric families compare elements
    judged = [c for c in cases if c["family"] in ("nondivisible", "shared", "widesums")]
    assert judged and all(c["metrics"].get("numeric_elements", 0) > 0 for c in judged)
    # badindex: unspecified, reported, never judged
    bad = [c for c in cases if c["family"] == "badindex"]
    assert bad and all(c["expected_status"] == -1 for c in bad)
    assert all("unspecified call" in c["message"] for c in bad)


def test_reverse_cell_order_is_never_a_failure(tmp_path: Path, suite: Path) -> None:
    adding = ("nondivisible", "upsampling", "shared", "widesums", "exactint", "special")
    code, cases = verdicts(tmp_path, suite, "reversed_order",
                           *(a for f in adding for a in ("--family", f)), *FAST)
    assert code == 0 and families_of(cases, "PASS") == set(adding)
    assert not [c for c in cases if c["verdict"] in ("FAIL", "ERROR")]


def test_signs_of_zero_are_not_compared(tmp_path: Path, suite: Path) -> None:
    """Every zero of gradInput written as -0 (unnamed positions included): PASS."""
    picked = ("divisible", "nondivisible", "global", "special")
    code, cases = verdicts(tmp_path, suite, "negative_zeros",
                           *(a for f in picked for a in ("--family", f)), *FAST)
    assert code == 0 and {c["verdict"] for c in cases} == {"PASS"}
    assert families_of(cases, "PASS") == set(picked)


def test_negative_zeros_really_writes_negative_zeros() -> None:
    g = np.array([[[1.0, 2.0]]], dtype=np.float16)  # (1, 1, 2) over a (1, 2, 4) plane
    idx = np.array([[[0, 6]]], dtype=np.int32)
    out = kernels_maxpool.negative_zeros(g, np.zeros((1, 2, 4), np.float16), idx)
    zero = out == 0
    assert zero.sum() == 6 and np.all(np.signbit(out[zero]))
    assert out[0, 0, 0] == 1.0 and out[0, 1, 2] == 2.0


@pytest.mark.parametrize(("kernel", "state"), [
    ("zeros_when_empty", "zeroed by the implementation"),
    ("ones_when_empty", "holds values the implementation wrote"),
])
def test_empty_calls_are_unwritten_whatever_the_kernel_writes(tmp_path: Path, suite: Path,
                                                              kernel: str, state: str) -> None:
    """An empty call succeeds with gradInput not written (spec, status 6): writing zeros
    (the mathematical answer for Ho = 0) or anything else is reported, not failed."""
    code, cases = verdicts(tmp_path, suite, kernel, "--family", "empty", *FAST)
    assert code == 0 and cases and {c["verdict"] for c in cases} == {"PASS"}
    assert all("gradInput is not written" in c["message"] for c in cases)
    notes = [n for c in cases for n in c["notes"]]
    # N = 0 gives an empty gradInput; Ho = 0 with a non-empty self does not
    assert "out is empty" in notes
    assert any(state in n for n in notes), notes


# -- broken kernels ---------------------------------------------------------------------------


def _fails(tmp_path: Path, suite: Path, kernel: str, picked: tuple[str, ...],
           *extra: str) -> tuple[list[dict], list[dict]]:
    code, cases = verdicts(tmp_path, suite, kernel,
                           *(a for f in picked for a in ("--family", f)), *FAST, *extra)
    failed = [c for c in cases if c["verdict"] == "FAIL"]
    assert code == 1 and failed, kernel
    # caught by the numbers, never an ERROR (no kernel here raises or crashes)
    assert {c["verdict"] for c in cases} <= {"PASS", "FAIL"}, kernel
    assert families_of(cases, "PASS", "FAIL") == set(picked)
    return cases, failed


def test_accumulating_in_fp16_and_bf16_is_caught_by_widesums(tmp_path: Path,
                                                             suite: Path) -> None:
    """2048 + 1 + 1 = 2048 in FLOAT16; A2/A3 add in FLOAT32 (2050)."""
    cases, failed = _fails(tmp_path, suite, "dtype_accumulation",
                           ("widesums", "shared", "divisible"))
    assert "widesums" in families_of(failed, "FAIL")
    assert {c["dtype"] for c in failed if c["family"] == "widesums"} == {"float16",
                                                                        "bfloat16"}
    # FLOAT32 accumulates in FLOAT32 anyway; a copy (one term a position) has no sum
    assert all(c["dtype"] != "float32" for c in failed)
    assert all(c["family"] != "divisible" for c in failed)


def test_every_fp16_and_bf16_widesums_case_tells_fp32_from_dtype_accumulation() -> None:
    """2^p goes to the first cell naming each position (values.py), so every shared
    position sums 2^p + 1 + ... in the kernels' order: exact in FP32, not in the dtype."""
    blind = []
    for dtype in ("float16", "bfloat16"):
        for fmt in contract.FORMATS:
            for index in range(4):
                case = families.shape_case("widesums", "atlas-a2", dtype, fmt, index, 5)
                assert case is not None
                data = make_tensors(case)
                v = {k: t.view() for k, t in data.inputs.items()}
                got = kernels_maxpool.dtype_accumulation(v["grad_output"], v["self"],
                                                         v["indices"]).astype(np.float64)
                assert data.golden is not None
                want = correctly_rounded(data.golden, FLOAT_FORMATS[dtype])
                if np.array_equal(got, want):
                    blind.append(case.id)
    assert not blind, blind


def test_a_store_instead_of_an_add_is_caught_on_shared_positions(tmp_path: Path,
                                                                 suite: Path) -> None:
    picked = ("shared", "nondivisible", "divisible", "global", "identity")
    cases, failed = _fails(tmp_path, suite, "store_not_add", picked, *ONE_DTYPE)
    assert {"shared", "nondivisible"} <= families_of(failed, "FAIL")
    # every shared case has a position two cells name
    assert all(c["verdict"] == "FAIL" for c in cases if c["family"] == "shared")
    # one term a position: a store is an add
    assert families_of(failed, "FAIL") <= {"shared", "nondivisible"}


@pytest.mark.parametrize(("kernel", "caught", "clean"), [
    # the index read relative to its window: wrong wherever a window starts past 0
    ("window_relative", {"divisible", "nondivisible", "shared", "identity"}, set()),
    # the window start one late: gradients at a window's first row/column dropped
    ("start_off_by_one", {"divisible", "nondivisible", "shared", "identity"}, set()),
    # end floor((i+1)H/Ho): wrong only where windows overlap (the shared row dropped)
    ("floor_end", {"nondivisible", "shared"}, {"divisible", "identity", "global"}),
])
def test_wrong_windows_are_caught(tmp_path: Path, suite: Path, kernel: str,
                                  caught: set[str], clean: set[str]) -> None:
    picked = ("divisible", "nondivisible", "shared", "identity", "global")
    _, failed = _fails(tmp_path, suite, kernel, picked, *ONE_DTYPE)
    assert caught <= families_of(failed, "FAIL"), kernel
    assert not clean & families_of(failed, "FAIL"), kernel


def test_ignoring_the_indices_strides_is_caught_by_layout(tmp_path: Path,
                                                          suite: Path) -> None:
    cases, failed = _fails(tmp_path, suite, "indices_strides_ignored",
                           ("layout", "divisible", "nondivisible"), *ONE_DTYPE)
    assert families_of(failed, "FAIL") == {"layout"}
    assert all(any(t in c["id"] for t in LAYOUT_TAGS) for c in failed)
    # every layout (channels-last, strided, transposed) catches it somewhere
    assert {t for c in failed for t in LAYOUT_TAGS if t in c["id"]} == set(LAYOUT_TAGS)


@pytest.mark.parametrize(("kernel", "misread_int32"), [
    ("int64_read_as_int32", False),  # INT64 indices misread
    ("int32_read_as_int64", True),  # INT32 indices misread
])
def test_misreading_the_index_dtype_is_caught(tmp_path: Path, suite: Path, kernel: str,
                                              misread_int32: bool) -> None:
    """Every family draws INT32 and INT64 indices: the misread dtype's cases FAIL, the
    other dtype's pass."""
    cases, failed = _fails(tmp_path, suite, kernel,
                           ("divisible", "nondivisible", "shared", "global"), *ONE_DTYPE)
    assert all(c["id"].endswith("-i32") == misread_int32 for c in failed)
    assert all(c["verdict"] == "PASS" for c in cases
               if c["id"].endswith("-i32") != misread_int32)
