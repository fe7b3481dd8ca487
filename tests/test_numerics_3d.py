"""The 3D operator's numeric paths: the error budget holds for bit-exact emulations of
every product path in any summation order, the exactness proof is sound (proven elements
of a correct kernel are the correctly rounded golden), and broken kernels break one or
the other."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aclcheck.dtypes import FLOAT16, FLOAT32, FLOAT64, correctly_rounded, float_format
from aclcheck.judging.case.compare import compare_output
from aclcheck.judging.case.default_standard import DEFAULT_C
from aclcheck.judging.case.exactness import is_tie, proven_mask
from aclcheck.ops.adaptive_avg_pool3d_backward import families, numerics
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool3d_backward.reference import backward
from aclcheck.ops.adaptive_avg_pool3d_backward.values import tensor_values
from tests import kernels3d

CORRECT = {"window": kernels3d.window_order, "reversed": kernels3d.reversed_order,
           "shuffled1": kernels3d.shuffled(1), "shuffled2": kernels3d.shuffled(2)}


def inputs(case: Case) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """gradOutput, a self of the right shape and dtype, and the golden."""
    grad = tensor_values(case, "grad_output")
    self_ = tensor_values(case, "self")
    return grad, self_, backward(grad, tuple(case.self_shape[-3:]))


def verdict(case: Case, out: np.ndarray) -> tuple[int, int]:
    """(elements over budget, proven elements not the RNE golden) of an output."""
    grad, _, g = inputs(case)
    a = out.astype(np.float64)
    finite = np.isfinite(g) & np.isfinite(a)
    allowed = numerics.budget(g, grad, case.product, case.dtype, c=DEFAULT_C)
    with np.errstate(invalid="ignore"):
        over = int(np.count_nonzero(np.abs(a - g)[finite] > allowed[finite]))
    numbers = numerics.numeric_model(case.product, case.dtype, grad.shape, g.shape[-3:])
    plan = None if numbers is None else numbers.exact
    if plan is None:
        return over, 0
    inputs_ = {"grad_output": grad}
    h, w = g.shape[-2:]
    m3 = numbers.numerics.magnitudes(inputs_, ()).reshape(-1, h, w)
    bounds = plan.plane_bounds(numbers.numerics.quanta(inputs_, ()))
    proven = proven_mask(plan, m3, bounds, g.shape[:-2]).reshape(g.shape)
    rne = numerics.rne(g, case.dtype)
    wrong = proven & np.isfinite(g) & (a != rne)
    return over, int(np.count_nonzero(wrong))


def family_cases(product: str, names: tuple[str, ...], dtypes: tuple[str, ...],
                 count: int = 2) -> list[Case]:
    out = []
    for family in names:
        for dtype in dtypes:
            for fmt in ("NCDHW", "ND"):
                for index in range(count):
                    case = families.shape_case(family, product, dtype, fmt, index, 21)
                    if case is not None and case.positive:
                        out.append(case)
    return out


# -- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("product", "out_dhw", "in_dhw", "name"), [
    ("atlas-a2", (1, 1, 1), (3, 4, 5), numerics.GLOBAL),
    ("atlas-training", (1, 1, 1), (3, 4, 5), numerics.GLOBAL),
    ("atlas-inference", (1, 1, 1), (3, 4, 5), numerics.GLOBAL),
    ("atlas-a3", (2, 2, 5), (4, 6, 5), numerics.DISJOINT),  # identity on W counts too
    ("atlas-a2", (2, 2, 2), (4, 6, 5), numerics.ATOMIC),
    ("atlas-a2", (3, 2, 2), (2, 4, 4), numerics.ATOMIC),  # upsampling never tiles
    ("atlas-training", (2, 2, 2), (4, 4, 4), None),  # 161002: no path to judge
    ("atlas-inference", (2, 2, 2), (4, 4, 4), None),  # no kernel: unspecified
])
def test_the_path_of_each_product(product, out_dhw, in_dhw, name):
    path = numerics.product_path(product, "float16", out_dhw, in_dhw)
    assert (path.name if path else None) == name
    if path is not None and name != numerics.GLOBAL:
        assert path.accumulate is FLOAT32 and path.scale_format is FLOAT32
        assert path.extra_roundings == 1
    if name == numerics.GLOBAL:
        assert path.scale_format is FLOAT16 and path.extra_roundings == 0
        assert path.scale_note and "1/60" in path.scale_note


def test_no_path_for_non_float_dtypes_and_an_accumulation_override():
    assert numerics.product_path("atlas-a2", "int32", (2, 2, 2), (3, 3, 3)) is None
    # DOUBLE: the 1x1x1 path only (another output is 161002 or unspecified)
    assert numerics.product_path("atlas-a2", "float64", (2, 2, 2), (3, 3, 3)) is None
    path = numerics.product_path("atlas-a2", "bfloat16", (2, 2, 2), (3, 3, 3), "input")
    assert path is not None and path.accumulate.name == "bfloat16"
    with pytest.raises(ValueError, match="unknown accumulation"):
        numerics.resolve_accumulate("atlas-a2", "float16", "int8")
    windowed, glob = numerics.paths("atlas-training", "float16")
    assert windowed is None and glob is not None and glob.name == numerics.GLOBAL


def test_global_factor_is_rounded_to_the_dtype():
    """FLOAT16: 1/(D*H*W) is subnormal from 16393 elements: a large scale error, which
    the budget carries (the kernel's own error, by design)."""
    path = numerics.product_path("atlas-a2", "float16", (1, 1, 1), (20, 25, 41))
    assert path is not None and path.scale_error > 2.0**-11
    case = Case("g", "global", "atlas-a2", "float16", "NCDHW", (1, 2, 20, 25, 41),
                (1, 2, 1, 1, 1), 5)
    grad, self_, g = inputs(case)
    out = kernels3d.window_order(grad, self_).astype(np.float64)
    exact_rne = correctly_rounded(g, FLOAT16)
    assert np.any(out != exact_rne)  # the path is not correctly rounded here
    assert verdict(case, kernels3d.window_order(grad, self_)) == (0, 0)


# -- DOUBLE: the 1x1x1 path, contract code ----------------------------------------------------

FP64_PLANES = ((2, 2, 2), (1, 1, 3), (3, 5, 7), (7, 11, 13), (20, 25, 41), (64, 64, 64))


@pytest.mark.parametrize("product", ["atlas-a2", "atlas-a3", "atlas-training",
                                     "atlas-inference"])
def test_double_budget_is_derived_from_the_global_path(product):
    """F = fl32(1/n) widened exactly, the product rounded once in double: a budget of
    eps(F) + about 2^-52 relative, eps(F) = |F*n - 1| <= 2^-24 (0 for a power of two)."""
    rng = np.random.default_rng(3)
    for dhw in FP64_PLANES:
        n = math.prod(dhw)
        path = numerics.product_path(product, "float64", (1, 1, 1), dhw)
        assert path is not None and path.name == numerics.GLOBAL
        assert path.accumulate is FLOAT64 and path.extra_roundings == 0
        assert path.scale_format is FLOAT32
        eps = abs(float(np.float32(1.0 / n)) * n - 1.0)
        assert path.scale_error == eps <= 2.0**-24
        grad = rng.uniform(-5.0, 5.0, (2, 3, 1, 1, 1))
        g = backward(grad, dhw)
        rel = numerics.budget(g, grad, product, "float64", c=DEFAULT_C) / np.abs(g)
        assert np.all(rel >= eps) and np.all(rel <= eps + 2.0**-51), dhw
        numbers = numerics.numeric_model(product, "float64", grad.shape, dhw)
        assert numbers is not None and numbers.fmt is FLOAT64 and numbers.exact is None


def _fp64_verdict(kernel: kernels3d.Kernel, dhw: tuple[int, int, int]) -> bool:
    grad = np.random.default_rng(5).uniform(-5.0, 5.0, (2, 3, 1, 1, 1))
    self_ = np.zeros((2, 3, *dhw))
    numbers = numerics.numeric_model("atlas-a2", "float64", grad.shape, dhw)
    assert numbers is not None
    return compare_output(numbers, {"grad_output": grad}, backward(grad, dhw),
                          kernel(grad, self_)).passed


@pytest.mark.parametrize("dhw", FP64_PLANES)
def test_double_correct_kernels_pass(dhw):
    for kernel in (kernels3d.double_global, kernels3d.double_exact_factor,
                   kernels3d.double_three_divisions):
        assert _fp64_verdict(kernel, dhw), (kernel, dhw)


@pytest.mark.parametrize("dhw", [(3, 5, 7), (7, 11, 13), (20, 25, 41)])
def test_double_wrong_factors_fail(dhw):
    """A float16 factor (relative error up to 2^-11) and a divisor without W."""
    assert not _fp64_verdict(kernels3d.double_fp16_factor, dhw)
    assert not _fp64_verdict(kernels3d.double_dh_divisor, dhw)


# -- the budget holds for every correct order ------------------------------------------------

VALID_FAMILIES = ("divisible", "nondivisible", "upsampling", "global", "identity", "rank4",
                  "alignment", "exactint", "layout", "index")


@pytest.mark.parametrize(("product", "dtype"), [
    ("atlas-a2", "float16"), ("atlas-a2", "bfloat16"), ("atlas-a2", "float32"),
    ("atlas-training", "float16"), ("atlas-training", "float32"),
])
def test_correct_kernels_are_within_budget_and_exact_where_proven(product, dtype):
    cases = family_cases(product, VALID_FAMILIES, (dtype,))
    assert len(cases) >= 10
    for case in cases:
        grad, self_, _ = inputs(case)
        for name, kernel in CORRECT.items():
            assert verdict(case, kernel(grad, self_)) == (0, 0), (case.id, name)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rounding_family_holds_exact_ties_and_correct_kernels_round_them_to_even(dtype):
    cases = family_cases("atlas-a2", ("rounding", "exactint"), (dtype,), count=4)
    ties = 0
    for case in cases:
        grad, self_, g = inputs(case)
        proven, tie = numerics.exact_ties(case.product, case.dtype, grad, g)
        ties += tie
        if case.family == "rounding":
            assert tie > 0 and proven >= tie, case.id
        for name, kernel in CORRECT.items():
            assert verdict(case, kernel(grad, self_)) == (0, 0), (case.id, name)
    assert ties > 100


def test_special_values_propagate_like_the_reference():
    for case in family_cases("atlas-a2", ("special",), ("float32", "float16"), count=5):
        grad, self_, g = inputs(case)
        out = kernels3d.window_order(grad, self_).astype(np.float64)
        assert np.array_equal(np.isnan(out), np.isnan(g)), case.id
        assert np.array_equal(np.isinf(out), np.isinf(g)), case.id


# -- broken kernels break the budget or the exactness check -------------------------------------


def _index_case(axis: int) -> Case:
    ins, outs = [1, 1, 1], [1, 1, 1]
    ins[axis], outs[axis] = 5999, 3000
    return Case("i", "index", "atlas-a2", "float32", "NCDHW", (1, 1, *ins), (1, 1, *outs), 3,
                "uniform")


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_float_window_bounds_fail_where_i_times_in_crosses_2_24(axis):
    case = _index_case(axis)
    grad, self_, _ = inputs(case)
    assert verdict(case, kernels3d.window_order(grad, self_)) == (0, 0)
    over, _ = verdict(case, kernels3d.float_bounds(grad, self_))
    assert over >= 1


def test_a_divisor_without_kd_fails():
    case = Case("k", "divisible", "atlas-a2", "float32", "NCDHW", (1, 2, 6, 4, 4),
                (1, 2, 3, 2, 2), 4)
    grad, self_, _ = inputs(case)
    over, _ = verdict(case, kernels3d.forgets_kd(grad, self_))
    assert over == math.prod(case.self_shape)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ties_rounded_away_from_zero_are_caught_only_by_the_exactness_check(dtype):
    caught = 0
    for case in family_cases("atlas-a2", ("rounding",), (dtype,), count=4):
        grad, self_, g = inputs(case)
        out = kernels3d.ties_away(grad, self_)
        over, wrong = verdict(case, out)
        assert over == 0, case.id  # within half an ULP: no budget sees it
        fmt = float_format(dtype)
        finite = np.isfinite(g)
        assert np.count_nonzero(is_tie(g[finite], fmt)) > 0
        caught += wrong
    assert caught > 50


def test_float16_accumulation_fails_where_terms_meet():
    case = Case("u", "upsampling", "atlas-a2", "float16", "NCDHW", (2, 3, 3, 4, 3),
                (2, 3, 7, 9, 7), 8, "uniform")
    grad, self_, _ = inputs(case)
    assert verdict(case, kernels3d.window_order(grad, self_)) == (0, 0)
    over, _ = verdict(case, kernels3d.fp16_accumulation(grad, self_))
    assert over > 0
