"""Exact rounding ties: the tie values, the exactness proof, the RNE check and its report.

Unit tests on hand-made cases (the proof's boundaries, overrides, --accumulate), the
`rounding` family's construction, and `aclcheck inspect` / `verify` on real files. The
kernel-level proof (correct kernels pass, rounding mutants fail on every product) is in
test_discrimination.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.cli.inspect import list_lines
from aclcheck.dtypes import BFLOAT16, FLOAT16, correctly_rounded, float_format
from aclcheck.judging.case.exactness import is_tie
from aclcheck.judging.case.overrides import parse_overrides
from aclcheck.ops.adaptive_avg_pool2d_backward.compare import Context, compare
from aclcheck.ops.adaptive_avg_pool2d_backward.numerics import exact_ties
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward
from aclcheck.ops.materialize import make_tensors
from aclcheck.store.dispatch import open_golden
from aclcheck.suite.selection import Selection, build_suite

NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}


def case(values: list[float], in_hw: tuple[int, int] = (1, 1), dtype: str = "float16",
         product: str = "atlas-a2", accumulate: str | None = None, rows: int | None = None):
    """gradOutput (1, 1, len(values), 1) (or `rows` x n) over self in_hw: golden, ctx."""
    g = np.asarray(values, np.float64).reshape(1, 1, rows or len(values), -1)
    g = g.astype(NP[dtype])
    return backward(g, in_hw), Context(product, dtype, g, in_hw, accumulate)


def out(values: float | list[float], dtype: str = "float16") -> np.ndarray:
    return np.asarray(values, np.float64).reshape(1, 1, 1, -1).astype(NP[dtype])


# -- ties ---------------------------------------------------------------------------------


def test_is_tie_on_both_sides_binades_subnormals_and_overflow() -> None:
    x = np.array([1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 2 - 2**-11, 2**-25, 3 * 2**-25,
                  65520.0, 65519.0, 1.0, 1 + 2**-12, np.inf, np.nan])
    assert is_tie(x, FLOAT16).tolist() == [True, True, True, True, True, True,
                                           True, False, False, False, False, False]
    assert is_tie(np.array([1 + 2**-8, 1 + 2**-9, BFLOAT16.overflow_threshold]),
                  BFLOAT16).tolist() == [True, False, True]


# -- the RNE check on hand-made cases -----------------------------------------------------


def test_tie_rounded_away_fails_with_its_own_message() -> None:
    golden, ctx = case([1.0, 2**-11])  # A2: 1 + 2**-11 exact in FP32, a tie in FP16
    assert compare(golden, out(1.0), ctx).passed  # RNE: the even neighbour
    res = compare(golden, out(1 + 2**-10), ctx)  # away from zero: within the budget
    assert not res.passed
    assert res.gating.detail.startswith("1 exact ties rounded away from zero; RNE gives "
                                        "the even neighbour")
    assert any("round-half-away" in h for h in res.hints)
    assert res.worst and res.worst[0].golden == 1 + 2**-11
    assert "assert-close" not in res.gating.detail
    published = compare(golden, out(1 + 2**-10), ctx, ("cann-mixed", "msprobe-ulp"))
    assert published.passed  # what the published standards miss


def test_exact_non_tie_must_be_exact() -> None:
    golden, ctx = case([1.0, 2**-10])  # exactly 1 + 2**-10, a float16 value
    assert compare(golden, out(1 + 2**-10), ctx).passed
    res = compare(golden, out(1 + 2**-9), ctx)
    # one ULP from a representable exact value is not a neighbour: no rounding language
    assert not res.passed and res.gating.detail.startswith("1 of 1 elements over budget")
    assert "1 exactly computed elements not a neighbour of their exact value" \
        in res.gating.detail
    assert not any(h.code is not None and h.code.value in ("ties-away", "not-rne")
                   for h in res.hints)
    assert res.magnitude is not None and res.magnitude.cls.value == "few-ulp"


def test_tie_tally_counts_only_neighbours() -> None:
    """An output at a tie position that is far from the exact value is not a tie
    "rounded away" (issue 21: 32 such "ties" were >= 514 ULP off)."""
    golden, ctx = case([1.0, 2**-11])  # a tie in FP16
    res = compare(golden, out(1 + 2**-5), ctx)  # larger in magnitude, 32 ULP off
    assert not res.passed
    assert "ties rounded away" not in res.gating.detail
    assert res.gating.detail.startswith("1 of 1 elements over budget")
    assert res.magnitude is not None and res.magnitude.cls.value == "gross"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_correctly_rounded_passes_on_every_kind_of_tie(dtype: str) -> None:
    fmt = float_format(dtype)
    eps = 2.0 ** -(fmt.precision - 1)
    for pair in ([1.0, eps / 2], [-1.0, -eps / 2], [1 + eps, eps / 2],
                 [2 - eps, eps / 2], [fmt.max_value, fmt.overflow_threshold - fmt.max_value]):
        golden, ctx = case(pair, dtype=dtype)
        with np.errstate(over="ignore"):
            rne = correctly_rounded(golden, fmt).astype(NP[dtype])
        assert compare(golden, rne, ctx).passed, pair


def test_not_judged_where_the_path_cannot_be_proven_exact() -> None:
    # the training/inference matmul path adds in FP16: 1 + 2**-11 is not exact there
    golden, ctx = case([1.0, 2**-11], product="atlas-training")
    assert compare(golden, out(1 + 2**-10), ctx).passed
    # --accumulate input on A2: same
    golden, ctx = case([1.0, 2**-11], accumulate="input")
    assert compare(golden, out(1 + 2**-10), ctx).passed
    # a scale 1/3 is not a power of two: no proof, the budget alone
    g = np.array([[[[3.0, 3 * 2**-11]]]], np.float16).reshape(1, 1, 2, 1)
    golden = backward(g, (3, 1))
    ctx = Context("atlas-a2", "float16", g, (3, 1))
    near = correctly_rounded(golden, FLOAT16)
    assert compare(golden, near.astype(np.float16), ctx).passed
    # FLOAT32: no conversion from a wider accumulator
    golden, ctx = case([1.0, 2**-24], dtype="float32")
    assert compare(golden, out(1 + 2**-23, "float32"), ctx).passed


def test_single_term_path_judges_subnormal_ties_on_every_product() -> None:
    # one window of height 2 (scale 1/2): 3 * 2**-24 / 2 is a subnormal tie
    for product in ("atlas-training", "atlas-a2"):
        g = np.array([3 * 2**-24], np.float16).reshape(1, 1, 1, 1)
        golden = backward(g, (2, 1))
        ctx = Context(product, "float16", g, (2, 1))
        assert compare(golden, out([2 * 2**-24] * 2).reshape(1, 1, 2, 1), ctx).passed
        res = compare(golden, out([2**-24, 2 * 2**-24]).reshape(1, 1, 2, 1), ctx)
        assert not res.passed and "exact ties rounded toward zero" in res.gating.detail


def test_widening_override_turns_the_check_off_and_says_so() -> None:
    golden, ctx = case([1.0, 2**-11])
    for text in ("[aclcheck]\nc = 4\n", "[aclcheck.float16]\natol = 1e-6\n"):
        ov = parse_overrides(__import__("tomllib").loads(text))
        res = compare(golden, out(1 + 2**-10), ctx, overrides=ov)
        assert res.passed
        assert any("exact-rounding check off" in n for n in res.notes)
    ov = parse_overrides({"aclcheck": {"c": 1.0}})  # narrowing keeps the check
    assert not compare(golden, out(1 + 2**-10), ctx, overrides=ov).passed


# -- the family -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rounding_cases():
    return build_suite(Selection(families=("rounding",)))


def test_rounding_family_only_fp16_bf16_and_both_layouts(rounding_cases) -> None:
    assert {c.dtype for c in rounding_cases} == {"float16", "bfloat16"}
    assert {c.product for c in rounding_cases} == {"atlas-training", "atlas-inference",
                                                   "atlas-a2", "atlas-a3"}
    assert {c.self_shape[-2] for c in rounding_cases} == {1, 3}  # pair-up and pair-down


def test_rounding_cases_are_full_of_exact_ties(rounding_cases) -> None:
    for c in rounding_cases:
        t = make_tensors(c)
        g = t.golden
        proven, ties = exact_ties(c.product, c.dtype, t.grad_output.view(), g)
        fmt = float_format(c.dtype)
        w = c.self_shape[-1]
        paired = (g.size // (c.self_shape[-2] * w)) * w  # one paired row per plane
        assert int(is_tie(g, fmt).sum()) >= paired
        if c.product in ("atlas-a2", "atlas-a3"):
            assert ties >= paired, c.id  # FP32 accumulation: every paired tie is exact
        elif c.self_shape[-2] == 3:
            assert ties > 0, c.id  # one-term subnormal ties on the matmul path
        # odd and even lower neighbours, both signs
        tie_vals = g[is_tie(g, fmt)]
        low = np.sign(tie_vals) * np.abs(correctly_rounded(tie_vals, fmt))
        assert (tie_vals > 0).any() and (tie_vals < 0).any()
        assert proven >= ties and len(np.unique(low)) > 4


def test_rounding_family_reaches_every_zone() -> None:
    cases = build_suite(Selection(families=("rounding",), products=("atlas-a2",)))
    zones = set()
    for c in cases:
        g = make_tensors(c).golden
        fmt = float_format(c.dtype)
        ties = g[is_tie(g, fmt)]
        zones |= {"subnormal"} if (np.abs(ties) < 2.0 ** fmt.min_exp).any() else set()
        zones |= {"overflow"} if (np.abs(ties) == fmt.overflow_threshold).any() else set()
        zones |= {"crossing"} if (np.abs(correctly_rounded(ties, fmt)) == 2.0 ** np.round(
            np.log2(np.abs(ties)))).any() else set()
    assert zones == {"subnormal", "overflow", "crossing"}


# -- CLI ----------------------------------------------------------------------------------


@pytest.fixture
def golden_file(rounding_golden: Path) -> Path:
    return rounding_golden


def test_inspect_counts_ties(golden_file: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["inspect", str(golden_file), "--json", "--ties"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["cases"]
    tie_rows = [r for r in rows if r["family"] == "rounding"]
    assert tie_rows and all(r["ties"] > 10 for r in tie_rows)
    assert all(isinstance(r["ties"], int) for r in rows)
    plain = json.loads(runner.invoke(cli, ["inspect", str(golden_file), "--json"]).output)
    assert all("ties" not in r for r in plain["cases"])  # index-only listing by default
    res = runner.invoke(cli, ["inspect", str(golden_file), "--family", "rounding", "--ties"])
    assert res.exit_code == 0 and " ties " in res.output
    assert str(tie_rows[0]["ties"]) in res.output
    with open_golden(golden_file) as gf:  # the plain-lines form of long listings
        lines = list_lines(gf, gf.index, ties=True)
    assert lines[1].split() == ["id", "family", "expected", "ties", "KB"]
    assert any(line.startswith(tie_rows[0]["id"]) and f" {tie_rows[0]['ties']} " in line
               for line in lines)
    res = runner.invoke(cli, ["inspect", str(golden_file), "--case", tie_rows[0]["id"]])
    assert res.exit_code == 0 and "exact ties" in res.output
    assert f"{tie_rows[0]['ties']} (of" in " ".join(res.output.split())


def test_verify_reports_the_tie_failure_and_passes_the_correct_kernel(golden_file: Path
                                                                      ) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["verify", str(golden_file), "--impl", "tests.kernels:ties_away",
                              "--family", "rounding"])
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "exact ties rounded away from zero; RNE gives the even neighbour" in text
    assert "round-half-away" in text and "windows overlap" not in text
    res = runner.invoke(cli, ["verify", str(golden_file), "--impl",
                              "tests.kernels:a2_like"])
    assert res.exit_code == 0, res.output


def test_ties_on_a_shape_without_a_tie_layout_gives_exact_values() -> None:
    """A case file's or a shrunk case's `ties` on another shape: exact integers, no crash."""
    case = Case(id="t", family="file", product="atlas-a2", dtype="float16", format="NCHW",
                self_shape=(1, 2, 7, 5), grad_shape=(1, 2, 3, 4), seed=3, distribution="ties")
    grad = make_tensors(case).grad_output.view().astype(np.float64)
    assert np.all(np.isfinite(grad)) and np.array_equal(grad, np.round(grad))
