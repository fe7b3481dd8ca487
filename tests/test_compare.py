"""compare(): metrics, the aclcheck budget, special values, chunking, worst elements."""

from __future__ import annotations

import json
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from aclcheck.dtypes import (
    BFLOAT16,
    FLOAT16,
    FLOAT32,
    correctly_rounded,
    float_format,
    half_ulp,
    scale_error,
)
from aclcheck.judging.case import compare as compare_mod
from aclcheck.judging.case.hints import WORST_COUNT
from aclcheck.judging.case.judge import discriminating
from aclcheck.judging.case.overrides import parse_overrides
from aclcheck.judging.case.standards import STANDARDS_BY_NAME
from aclcheck.ops.adaptive_avg_pool2d_backward.compare import Context, compare
from aclcheck.ops.adaptive_avg_pool2d_backward.numerics import budget, budget_model, product_path
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward
from tests import kernels

NP = {"float16": np.float16, "float32": np.float32, "bfloat16": ml_dtypes.bfloat16}
ALL = tuple(STANDARDS_BY_NAME)


def setup(grad: np.ndarray, in_hw: tuple[int, int], dtype: str = "float32",
          product: str = "atlas-a2", accumulate: str | None = None
          ) -> tuple[np.ndarray, Context, np.ndarray]:
    """(golden, context, correctly rounded output) of gradOutput values `grad`."""
    g = np.asarray(grad, dtype=np.float64).astype(NP[dtype])
    golden = backward(g, in_hw)
    with np.errstate(over="ignore"):
        rounded = correctly_rounded(golden, float_format(dtype)).astype(NP[dtype])
    return golden, Context(product, dtype, g, in_hw, accumulate), rounded


def identity(values: np.ndarray, dtype: str = "float32", product: str = "atlas-a2"):
    values = np.asarray(values, dtype=np.float64)
    return setup(values, values.shape[-2:], dtype, product)


def randn(shape: tuple[int, ...], seed: int = 0, scale: float = 10.0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape) * scale


# -- metrics ------------------------------------------------------------------------------


def test_correctly_rounded_output_passes_everything() -> None:
    golden, ctx, rounded = setup(randn((2, 3, 4, 5)), (9, 7))
    res = compare(golden, rounded, ctx, ALL)
    assert res.passed and all(s.passed for s in res.standards)
    assert [s.name for s in res.standards] == list(ALL)
    m = res.metrics
    assert m["max_ulp"] == 0 and m["nan_mismatch"] == 0 and m["inf_mismatch"] == 0
    assert m["mismatch_ratio"] == 0.0 and m["mismatches"] == 0
    assert m["cosine"] == pytest.approx(1.0) and m["elements"] == golden.size
    assert 0 < m["max_budget_ratio"] <= 0.5
    assert 1 <= len(res.worst) <= WORST_COUNT
    json.dumps(m, allow_nan=False)


def test_metric_values_by_hand() -> None:
    golden, ctx, rounded = identity(np.array([[[[1.0, 2.0], [-4.0, 0.5]]]]))
    actual = rounded.copy()
    actual[0, 0, 0, 0] = np.nextafter(np.float32(1.0), np.float32(2))  # +1 ULP (2^-23)
    actual[0, 0, 1, 0] = np.nextafter(np.float32(-4.0), np.float32(-8))  # -1 ULP (2^-21)
    m = compare(golden, actual, ctx).metrics
    d = np.array([2.0**-23, 0.0, -(2.0**-21), 0.0])
    g = np.array([1.0, 2.0, -4.0, 0.5])
    assert m["max_abs_err"] == 2.0**-21
    assert m["max_rel_err"] == 2.0**-23
    assert m["max_ulp"] == 1
    assert m["rmse"] == pytest.approx(math.sqrt(np.mean(d * d)))
    assert m["mere"] == pytest.approx(np.mean(np.abs(d) / (np.abs(g) + 1e-7)))
    assert m["mare"] == pytest.approx(np.max(np.abs(d) / (np.abs(g) + 1e-7)))
    assert m["error_balance"] == pytest.approx(np.mean(d / (np.abs(g) + 1e-7)))
    a = g + d
    assert m["cosine"] == pytest.approx(a @ g / np.linalg.norm(a) / np.linalg.norm(g))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ulp_distance_is_bit_level(dtype: str) -> None:
    golden, ctx, rounded = identity(np.array([[[[1.0, 0.0, -2.0]]]]), dtype)
    bits = rounded.view(np.uint16).copy()
    bits[0, 0, 0, 0] += 3  # three ULPs above 1.0
    bits[0, 0, 0, 1] = 0x8001  # -smallest subnormal: one ULP from +0
    res = compare(golden, bits.view(NP[dtype]), ctx)
    assert res.metrics["max_ulp"] == 3
    assert not res.passed


def test_zero_golden_excluded_from_max_rel_err() -> None:
    golden, ctx, rounded = identity(np.array([[[[0.0, 4.0]]]]))
    actual = rounded.copy()
    actual[0, 0, 0, 0] = 1e-30
    m = compare(golden, actual, ctx, ("assert-close",)).metrics
    assert m["max_rel_err"] == 0.0 and m["max_abs_err"] == pytest.approx(1e-30)
    assert math.isfinite(m["mare"])


def test_empty_passes_with_zero_metrics() -> None:
    golden = np.zeros((0, 3, 4, 4))
    ctx = Context("atlas-a2", "float16", np.zeros((0, 3, 2, 2), np.float16), (4, 4))
    res = compare(golden, np.zeros((0, 3, 4, 4), np.float16), ctx, ALL)
    assert res.passed and all(s.passed for s in res.standards)
    assert res.metrics["max_abs_err"] == 0 and res.metrics["elements"] == 0
    assert res.worst == ()


def test_unknown_standard_and_shape_mismatch() -> None:
    golden, ctx, rounded = identity(np.ones((1, 1, 2, 2)))
    with pytest.raises(ValueError, match="unknown standard 'x'"):
        compare(golden, rounded, ctx, ("x",))
    with pytest.raises(ValueError, match="shape mismatch"):
        compare(golden, rounded[..., :1], ctx)


def test_discriminating() -> None:
    assert not discriminating(np.zeros((2, 3)))
    assert not discriminating(np.zeros((0, 3)))
    assert discriminating(np.array([0.0, -1e-300]))
    assert discriminating(np.array([np.nan, 0.0]))


# -- the aclcheck budget ------------------------------------------------------------------


def test_budget_formula_on_a2_fp32() -> None:
    grad = randn((1, 2, 3, 4), seed=3)
    golden, ctx, _ = setup(grad, (8, 9))
    b = budget(golden, ctx.grad_output, "atlas-a2", "float32", c=2.0)
    model = budget_model("atlas-a2", "float32", (3, 4), (8, 9), c=2.0)
    m = backward(ctx.grad_output, (8, 9), absolute=True)
    k = model.k().astype(np.float64)
    eps = model.path.scale_error
    assert 0 < eps <= 2.0**-24
    extra = ((2 * k + 1) * 2.0**-24 + eps) * m + 2 * k * 2.0**-149
    ulp = np.ldexp(1.0, np.frexp(np.abs(golden) + extra)[1] - 24)
    np.testing.assert_allclose(b, ulp / 2 + extra, rtol=1e-15)


def test_half_ulp_matches_dtypes_ulp() -> None:
    from aclcheck.dtypes import ulp

    x = np.abs(randn((1000,), seed=1, scale=1.0)) * np.exp2(np.arange(1000) % 60 - 40)
    x = np.concatenate([x, [2.0**-149, 2.0**-130, 65504.0, 1e-8]])
    for fmt in (FLOAT16, FLOAT32, BFLOAT16):
        np.testing.assert_array_equal(half_ulp(x, fmt), ulp(x, fmt) / 2)
        assert half_ulp(np.zeros(1), fmt)[0] == fmt.smallest_subnormal / 2


def test_paths_and_accumulation() -> None:
    a2 = product_path("atlas-a2", "float16", (3, 3), (7, 7))
    assert (a2.name, a2.accumulate, a2.extra_roundings, a2.scale_format) == (
        "fp32-atomic", FLOAT32, 1, FLOAT32)
    train = product_path("atlas-training", "float16", (3, 3), (7, 7))
    assert (train.name, train.accumulate, train.scale_format) == ("matmul", FLOAT16, FLOAT16)
    assert train.scale_note and "matmul path" in train.scale_note
    assert product_path("atlas-training", "float16", (3, 3), (7, 7), "float32").accumulate \
        is FLOAT32
    assert product_path("atlas-a2", "bfloat16", (3, 3), (7, 7), "input").accumulate is BFLOAT16
    with pytest.raises(ValueError, match="unknown accumulation"):
        product_path("atlas-a2", "float16", (3, 3), (7, 7), "float64")


def test_global_path_scale_rounding() -> None:
    # 1/(H*W) rounded to fp16: exact for powers of two, subnormal from 16393, zero past 2^25
    assert product_path("atlas-a2", "float16", (1, 1), (64, 64)).scale_error == 0.0
    eps = product_path("atlas-a2", "float16", (1, 1), (100, 200)).scale_error
    fill = float(np.float16(1 / 20000))
    assert eps == pytest.approx(abs(fill * 20000 - 1))
    eps = product_path("atlas-a2", "float16", (1, 1), (1000, 1000)).scale_error
    assert eps == pytest.approx(abs(float(np.float16(1e-6)) * 1e6 - 1)) and eps > 2.0**-11
    assert product_path("atlas-a2", "float16", (1, 1), (2**13, 2**12 + 1)).scale_error == 1.0
    path = product_path("atlas-a3", "bfloat16", (1, 1), (5, 7))
    assert path.name == "global-1x1" and "1x1 path" in (path.scale_note or "")
    assert product_path("atlas-a2", "float32", (1, 1), (5, 7)).scale_note is None
    assert scale_error([3, 5, 15], FLOAT32) <= 2.0**-24


def test_global_path_note_when_only_the_path_saves_the_case() -> None:
    grad = np.array([3.0, -7.5, 0.3, 11.0]).reshape(1, 4, 1, 1)
    golden, ctx, _ = setup(grad, (100, 200), "float16")
    g16 = np.asarray(ctx.grad_output)
    self_ = np.empty((1, 4, 100, 200), np.float16)
    product_like = kernels.global_path(g16, self_)
    res = compare(golden, product_like, ctx, ("aclcheck", "assert-close"))
    assert res.passed
    assert any("only because of the 1x1 path" in n and "1/20000" in n for n in res.notes)
    # without the path term the same output would fail: the note is not decoration
    strict = parse_overrides({"aclcheck": {"accumulate": "float32"}})
    assert compare(golden, kernels.window_sum(g16, self_), ctx, overrides=strict).notes == ()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_truncation_flagged_rne_passes(dtype: str) -> None:
    golden, ctx, rounded = setup(randn((2, 3, 5, 4), seed=5), (11, 9), dtype)
    g = np.asarray(ctx.grad_output)
    self_ = np.empty(golden.shape, NP[dtype])
    assert compare(golden, kernels.window_sum(g, self_), ctx).passed
    assert compare(golden, rounded, ctx).passed
    res = compare(golden, kernels.window_sum_truncating(g, self_), ctx)
    assert not res.passed
    assert res.metrics["error_balance"] != 0


def test_fp32_budget_accepts_a_few_ulps_where_terms_pile_up() -> None:
    # 1 ULP off in fp32 is within c*k*u*m for an element reached by many terms
    golden, ctx, rounded = setup(randn((1, 1, 9, 9), seed=2), (2, 2))
    actual = rounded.copy()
    actual[0, 0, 1, 1] = np.nextafter(actual[0, 0, 1, 1], np.float32(np.inf))
    assert compare(golden, actual, ctx).passed
    actual[0, 0, 1, 1] += np.float32(abs(golden[0, 0, 1, 1]) * 1e-3)
    assert not compare(golden, actual, ctx).passed


def test_input_accumulation_override() -> None:
    golden, ctx, _ = setup(randn((1, 2, 16, 15), seed=9), (5, 4), "float16")
    g = np.asarray(ctx.grad_output)
    low = kernels.fp16_accumulation(g, np.empty(golden.shape, np.float16))
    assert not compare(golden, low, ctx).passed
    as_input = Context(ctx.product, ctx.dtype, g, ctx.in_hw, accumulate="input")
    assert compare(golden, low, as_input).passed
    ov = parse_overrides({"aclcheck": {"atlas-a2": {"float16": {"accumulate": "float16"}}}})
    assert compare(golden, low, ctx, overrides=ov).passed
    train = Context("atlas-training", "float16", g, ctx.in_hw)
    assert compare(golden, low, train).passed


# -- special values -----------------------------------------------------------------------


def special(golden_values: list[float], actual_values: list[float], dtype: str = "float16"):
    golden, ctx, _ = identity(np.array([[[golden_values]]]), dtype)
    actual = np.array([[[actual_values]]], dtype=NP[dtype])
    return compare(golden, actual, ctx, ALL)


def test_nan_must_match() -> None:
    ok = special([np.nan, 1.0], [np.nan, 1.0])
    assert ok.passed and ok.metrics["special_matched"] == 1
    for gold, act in (([np.nan, 1.0], [0.0, 1.0]), ([2.0, 1.0], [np.nan, 1.0])):
        res = special(gold, act)
        assert not res.passed and res.metrics["nan_mismatch"] == 1
        assert not any(s.passed for s in res.standards if s.name in ("assert-close",
                                                                      "cann-mere"))
        json.dumps(res.metrics, allow_nan=False)


def test_inf_must_match() -> None:
    assert special([np.inf, -np.inf], [np.inf, -np.inf]).passed
    res = special([np.inf, 1.0], [-np.inf, 1.0])
    assert not res.passed and res.metrics["inf_mismatch"] == 1
    res = special([np.inf, 1.0], [65504.0, 1.0])
    assert not res.passed and res.metrics["inf_mismatch"] == 1
    res = special([3.0, 1.0], [np.inf, 1.0])
    assert not res.passed and res.metrics["inf_mismatch"] == 1
    assert res.worst[0].index == (0, 0, 0, 0) and math.isinf(res.worst[0].error)


def two_terms(value: float, dtype: str = "float16", n: int = 2, values=None):
    """Upsampling H=1 <- Ho=n: every window covers the one element, out = sum of terms."""
    vals = np.full(n, value) if values is None else np.asarray(values, dtype=np.float64)
    return setup(vals.reshape(1, 1, n, 1), (1, 1), dtype)


def test_finite_golden_beyond_the_dtype_must_be_inf() -> None:
    golden, ctx, rounded = two_terms(40000.0)
    assert golden[0, 0, 0, 0] == 80000.0 and np.isinf(rounded).all()
    assert compare(golden, rounded, ctx).passed
    res = compare(golden, np.full((1, 1, 1, 1), 65504, np.float16), ctx)
    assert not res.passed and res.metrics["inf_mismatch"] == 1


def test_near_the_overflow_threshold_the_training_path_saturates() -> None:
    # 65520 (fp16's threshold) as a sum the FP16-accumulating matmul path cannot hold:
    # Atlas training computes in saturation mode (docs/contract.md section 10), so the
    # largest finite value is right and inf (from finite inputs) is not
    golden, _, _ = two_terms(0, values=[32752.0, 32768.0])
    ctx = Context("atlas-training", "float16", np.array([32752.0, 32768.0], np.float16)
                  .reshape(1, 1, 2, 1), (1, 1))
    assert golden[0, 0, 0, 0] == FLOAT16.overflow_threshold
    assert not compare(golden, np.full((1, 1, 1, 1), np.inf, np.float16), ctx).passed
    assert compare(golden, np.full((1, 1, 1, 1), 65504, np.float16), ctx).passed


def test_exact_sum_at_the_overflow_threshold_must_be_inf() -> None:
    # A2 adds 32752 + 32768 exactly in FP32: 65520 is a tie, RNE gives inf (even)
    golden, ctx, rounded = two_terms(0, values=[32752.0, 32768.0])
    assert np.isinf(rounded).all() and compare(golden, rounded, ctx).passed
    res = compare(golden, np.full((1, 1, 1, 1), 65504, np.float16), ctx)
    assert not res.passed
    assert "1 exact ties rounded toward zero" in res.gating.detail
    assert not compare(golden, np.full((1, 1, 1, 1), -np.inf, np.float16), ctx).passed


def test_accumulator_overflow_accepts_inf_or_nan() -> None:
    golden, ctx, rounded = two_terms(0, "bfloat16", 3, [3e38, 3e38, -3e38])
    assert np.isfinite(golden).all() and np.isfinite(rounded.astype(np.float32)).all()
    for value in (np.inf, np.nan):
        res = compare(golden, np.full((1, 1, 1, 1), value, ml_dtypes.bfloat16), ctx)
        assert res.passed and any("accumulator" in n for n in res.notes)
    golden, ctx, _ = two_terms(0, "bfloat16", 3, [3e30, 3e30, -3e30])
    assert not compare(golden, np.full((1, 1, 1, 1), np.inf, ml_dtypes.bfloat16), ctx).passed


# -- layout, chunking, worst elements, message --------------------------------------------


def test_non_contiguous_actual_same_result() -> None:
    golden, ctx, rounded = setup(randn((2, 3, 4, 4), seed=4), (7, 6), "bfloat16")
    noisy = rounded.copy()
    noisy.reshape(-1)[::7] = (noisy.reshape(-1)[::7].astype(np.float32) * 1.01).astype(
        ml_dtypes.bfloat16)
    storage = np.ascontiguousarray(noisy.transpose(0, 2, 3, 1))  # channels-last memory
    view = storage.transpose(0, 3, 1, 2)
    assert not view.flags.c_contiguous
    a = compare(golden, noisy, ctx, ALL)
    b = compare(golden, view, ctx, ALL)
    assert a.metrics == b.metrics and a.worst == b.worst and not a.passed


@pytest.mark.parametrize(("chunk", "block"), [(7, 100), (5, 30), (200, 10), (1, 1)])
def test_chunking_does_not_change_anything(monkeypatch: pytest.MonkeyPatch, chunk: int,
                                           block: int) -> None:
    grad = randn((3, 2, 5, 3), seed=6)
    grad[1, 1, 2, 2] = np.nan
    golden, ctx, rounded = setup(grad, (11, 7), "float16")
    actual = rounded.copy()
    actual[2, 0, 4, 5] += np.float16(0.5)
    actual[0, 1, 0, 0] = np.inf
    whole = compare(golden, actual, ctx, ALL)
    monkeypatch.setattr(compare_mod, "CHUNK_ELEMS", chunk)  # rows, row pieces, planes
    monkeypatch.setattr(compare_mod, "BLOCK_ELEMS", block)
    pieces = compare(golden, actual, ctx, ALL)
    assert whole.metrics.keys() == pieces.metrics.keys()
    for key, value in whole.metrics.items():
        assert pieces.metrics[key] == pytest.approx(value, rel=1e-12), key
    assert whole.worst == pieces.worst
    assert [s.passed for s in whole.standards] == [s.passed for s in pieces.standards]


def test_worst_element_and_message() -> None:
    golden, ctx, rounded = setup(randn((2, 3, 5, 6), seed=7), (5, 6))
    actual = rounded.copy()
    actual[1, 2, 3, 4] += np.float32(0.25)
    res = compare(golden, actual, ctx, ("aclcheck", "cann-mixed"))
    assert not res.passed
    top = res.worst[0]
    assert top.index == (1, 2, 3, 4)
    assert top.golden == golden[1, 2, 3, 4] and top.actual == float(actual[1, 2, 3, 4])
    assert top.error == pytest.approx(0.25, rel=1e-5) and 0 < top.budget < 1e-4
    text = res.message()
    assert "aclcheck: FAIL" in text and "[n=1, c=2, h=3, w=4]" in text
    assert "cann-mixed:" in text and "worst elements under aclcheck" in text
    three = compare(golden[0], actual[0], Context("atlas-a2", "float32",
                                                  np.asarray(ctx.grad_output)[0], (5, 6)))
    assert "[c=2, h=3, w=4]" not in three.message()  # that error was in n=1


def test_hint_points_at_the_last_row() -> None:
    golden, ctx, rounded = setup(randn((1, 2, 4, 4), seed=8) + 50, (8, 8))
    actual = rounded.copy()
    actual[..., -1, :] = 0
    res = compare(golden, actual, ctx)
    assert any("last row" in h for h in res.hints)
    assert "hint: every failing element is in the last row" in res.message()


def test_gating_standard_picks_verdict_and_worst() -> None:
    golden, ctx, rounded = setup(randn((1, 1, 20, 10), seed=10), (20, 10), "float16")
    actual = rounded.copy()
    actual[0, 0, 0, :2] = (actual[0, 0, 0, :2].astype(np.float32) * 1.004).astype(np.float16)
    lenient = compare(golden, actual, ctx, ("cann-mixed", "aclcheck"))
    assert lenient.passed and not lenient.standards[1].passed
    assert lenient.metrics["mismatch_ratio"] == lenient.standards[0].mismatch_ratio


# -- published standards: case rules -----------------------------------------------------


def perturbed(count: int, factor: float, dtype: str = "float16", n: int = 2000):
    values = np.random.default_rng(11).uniform(1.0, 2.0, n).reshape(1, 1, n // 50, 50)
    golden, ctx, rounded = identity(values, dtype)
    actual = rounded.astype(np.float64)
    actual.reshape(-1)[:count] *= factor
    return compare(golden, actual.astype(NP[dtype]), ctx, ALL)


def by_name(res) -> dict[str, bool]:
    return {s.name: s.passed for s in res.standards}


def test_ratio_rules_of_published_standards() -> None:
    one_percent = by_name(perturbed(20, 1.02))  # 1 % of elements 2 % off
    assert one_percent["cann-mixed"] and not one_percent["assert-close"]
    assert not by_name(perturbed(21, 1.02))["cann-mixed"]
    assert by_name(perturbed(100, 1.02))["msopst"]  # 5 % over 0.01 allowed
    assert not by_name(perturbed(101, 1.02))["msopst"]
    assert not by_name(perturbed(1, 1.2))["msopst"]  # one element >= 0.1 relative
    assert by_name(perturbed(1, 1.004))["msprobe-ulp"]  # 0.05 % over 1 ULP
    assert not by_name(perturbed(2, 1.004))["msprobe-ulp"]  # 0.1 %: not below 0.001
    assert by_name(perturbed(2, 1.004))["torch-npu"]  # 2 <= 2000 * 1e-3
    assert not by_name(perturbed(3, 1.004))["torch-npu"]
    assert not by_name(perturbed(1, 1.2))["cann-mere"]  # MARE over 10 T


def test_msprobe_fp32_mean_rule_and_cann_small_values() -> None:
    res = by_name(perturbed(200, 1 + 20 * 2**-23, "float32"))  # 10 % over 32 ULP? no: ~20
    assert res["msprobe-ulp"]
    res = by_name(perturbed(200, 1 + 60 * 2**-23, "float32"))  # 10 % at 40-60 ULP, mean ok
    assert res["msprobe-ulp"]
    res = by_name(perturbed(1000, 1 + 300 * 2**-23, "float32"))  # half at >150 ULP
    assert not res["msprobe-ulp"]
    golden, ctx, rounded = identity(np.array([[[[1e-5, 1.0]]]]))
    actual = rounded.copy()
    actual[0, 0, 0, 0] += np.float32(1e-9)  # small-value domain: > 2^-30 absolute
    assert not by_name(compare(golden, actual, ctx, ALL))["cann-mere"]


# -- property: correct kernels pass, a push past the budget fails -------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 9), st.integers(1, 9), st.integers(1, 12), st.integers(1, 12),
    st.sampled_from(["float16", "float32", "bfloat16"]), st.integers(0, 2**31),
    st.sampled_from(["atlas-a2", "atlas-training"]),
)
def test_property_correct_passes_push_fails(ho: int, wo: int, h: int, w: int, dtype: str,
                                            seed: int, product: str) -> None:
    if product == "atlas-training" and dtype == "bfloat16":
        product = "atlas-a3"
    golden, ctx, rounded = setup(randn((1, 2, ho, wo), seed=seed), (h, w), dtype, product)
    g = np.asarray(ctx.grad_output)
    self_ = np.empty(golden.shape, NP[dtype])
    for kernel in (kernels.window_sum, kernels.a2_like, kernels.pairwise):
        assert compare(golden, kernel(g, self_), ctx).passed
    b = budget(golden, g, product, dtype, c=2.0)
    pick = np.random.default_rng(seed).integers(golden.size)
    pushed = golden.copy().reshape(-1)
    pushed[pick] += 2.5 * b.reshape(-1)[pick] * (1 if pushed[pick] >= 0 else -1)
    actual = pushed.reshape(golden.shape)
    actual = correctly_rounded(actual, float_format(dtype)).astype(NP[dtype])
    # the push may round back onto the correct value (a golden on a tie of a coarse
    # binade, e.g. bf16 -31.9375 -> -32): then there is nothing to flag
    assume(actual.reshape(-1)[pick] != rounded.reshape(-1)[pick])
    res = compare(golden, actual, ctx)
    assert not res.passed
    assert res.worst[0].index == np.unravel_index(pick, golden.shape)
