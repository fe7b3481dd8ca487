"""The float64 reference backward against an independent naive loop (and PyTorch float64).

The naive loop below shares nothing with the operator's reference.py: its own window
arithmetic, one window at a time, terms added in (i, j) order onto a -0.0 start (the IEEE additive
identity, so an all -0.0 window sum stays -0.0 as the reference's does).
"""

from __future__ import annotations

import hashlib
import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclcheck.cases.layouts import LAYOUTS, place
from aclcheck.ops.adaptive.windows import spread_plan, term_counts
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import DEFAULT_CHUNK_ELEMS, backward

U64 = 2.0**-53  # unit roundoff of float64


def naive_backward(grad: np.ndarray, in_hw: tuple[int, int]) -> np.ndarray:
    """Textbook backward: every window adds g / (kh * kw) onto its input region."""
    g = np.asarray(grad, dtype=np.float64)
    h, w = in_hw
    ho, wo = g.shape[-2:]
    out = np.full(g.shape[:-2] + (h, w), -0.0)
    if out.size == 0 or g.size == 0:
        return np.zeros(out.shape)
    with np.errstate(invalid="ignore"):
        for i in range(ho):
            hs, he = (i * h) // ho, -((-(i + 1) * h) // ho)  # floor / ceil
            for j in range(wo):
                ws, we = (j * w) // wo, -((-(j + 1) * w) // wo)
                term = g[..., i, j] / ((he - hs) * (we - ws))
                out[..., hs:he, ws:we] += term[..., None, None]
    return out


def naive_counts(out_hw: tuple[int, int], in_hw: tuple[int, int]) -> np.ndarray:
    """Number of windows covering each input element, by brute force."""
    (ho, wo), (h, w) = out_hw, in_hw
    k = np.zeros((h, w), dtype=np.int64)
    for i in range(ho):
        hs, he = (i * h) // ho, -((-(i + 1) * h) // ho)
        for j in range(wo):
            ws, we = (j * w) // wo, -((-(j + 1) * w) // wo)
            k[hs:he, ws:we] += 1
    return k


def assert_close_to_naive(grad: np.ndarray, in_hw: tuple[int, int], got: np.ndarray) -> None:
    """got == naive within the float64 rounding bound of a k-term sum, specials exact."""
    want = naive_backward(grad, in_hw)
    assert got.shape == want.shape and got.dtype == np.float64
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isposinf(got), np.isposinf(want))
    assert np.array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    mag = naive_backward(np.abs(np.asarray(grad, dtype=np.float64)), in_hw)
    k = term_counts(tuple(np.shape(grad)[-2:]), in_hw)
    bound = (2 * k + 4) * U64 * mag
    err = np.abs(got[finite] - want[finite])
    assert np.all(err <= bound[finite]), float(np.max(err - bound[finite]))


def fixed_grad(shape: tuple[int, ...]) -> np.ndarray:
    """Platform-independent dyadic values (integer arithmetic, one exact division)."""
    n = math.prod(shape)
    v = ((np.arange(n, dtype=np.int64) * 7919) % 2001 - 1000).astype(np.float64) / 64.0
    return v.reshape(shape)


# -- random shapes against the naive loop --------------------------------------------------

sizes = st.integers(1, 24)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple),
    ho=sizes, wo=sizes, h=sizes, w=sizes,
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(LAYOUTS),
    chunk=st.sampled_from([1, 7, 100, DEFAULT_CHUNK_ELEMS]),
)
def test_matches_naive_random_shapes(lead, ho, wo, h, w, seed, layout, chunk):
    """Down-, up-sampling, identity and 1x1 in any mix, rank 2..5, any layout."""
    g = np.random.default_rng(seed).normal(0.0, 10.0, lead + (ho, wo))
    view = place(g, layout).view()
    got = backward(view, (h, w), chunk_elems=chunk)
    assert got.flags.c_contiguous
    assert_close_to_naive(g, (h, w), got)


@pytest.mark.parametrize(
    ("grad_shape", "in_hw"),
    [
        ((2, 3, 7, 7), (56, 56)),  # divisible
        ((2, 3, 10, 13), (33, 47)),  # non-divisible
        ((2, 3, 40, 40), (20, 20)),  # upsampling, divisible
        ((2, 3, 11, 13), (7, 5)),  # upsampling, non-divisible
        ((2, 3, 1, 1), (9, 14)),  # global
        ((2, 3, 6, 9), (6, 9)),  # identity
        ((4, 5, 3), (17, 2)),  # 3-D (NCL)
        ((3, 1, 1), (1, 1)),  # 1x1 -> 1x1
        ((1, 1, 5, 3), (2, 9)),  # mixed: H up, W down
        ((1, 1, 1, 40), (1, 1)),
    ],
)
def test_matches_naive_named_shapes(grad_shape, in_hw):
    g = np.random.default_rng(7).uniform(-5.0, 5.0, grad_shape)
    assert_close_to_naive(g, in_hw, backward(g, in_hw))


def test_identity_is_exact_copy():
    g = np.random.default_rng(1).normal(size=(2, 3, 9, 5))
    out = backward(g, (9, 5))
    assert np.array_equal(out, g)


def test_global_is_broadcast_of_scaled_grad():
    g = np.random.default_rng(2).normal(size=(3, 4, 1, 1))
    out = backward(g, (6, 10))
    assert out.shape == (3, 4, 6, 10)
    assert np.all(out == out[..., :1, :1])  # constant over each plane
    np.testing.assert_allclose(out[..., 0, 0], g[..., 0, 0] / 60.0, rtol=4 * U64, atol=0)


def test_exact_for_integer_terms():
    """g = t * kh * kw with integer t: every term and every sum is exact in float64."""
    ho, wo, h, w = 5, 4, 17, 9
    kh = spread_plan(ho, h).sizes.astype(np.float64)
    kw = spread_plan(wo, w).sizes.astype(np.float64)
    t = np.random.default_rng(3).integers(-3, 4, (2, ho, wo)).astype(np.float64)
    out = backward(t * np.multiply.outer(kh, kw), (h, w))
    want = naive_backward(t * np.multiply.outer(kh, kw), (h, w))
    assert np.array_equal(out, want)
    assert np.array_equal(out, np.round(out))


# -- special values -------------------------------------------------------------------------


@pytest.mark.parametrize(("ho", "wo", "h", "w"), [(4, 3, 9, 7), (7, 6, 3, 4), (1, 1, 5, 5)])
def test_special_values_follow_ieee(ho, wo, h, w):
    rng = np.random.default_rng(ho * 100 + h)
    g = rng.normal(size=(3, ho, wo))
    g[0, 0, 0] = np.inf  # plane 0: one inf -> inf over its window, finite elsewhere
    g[1, 0, 0] = np.inf  # plane 1: inf and -inf in overlapping/adjacent windows
    g[1, -1, -1] = -np.inf
    g[2, ho // 2, wo // 2] = np.nan  # plane 2: NaN propagates over its window
    out = backward(g, (h, w))
    assert_close_to_naive(g, (h, w), out)
    hs, he = 0, -(-h // ho)
    ws, we = 0, -(-w // wo)
    assert np.all(np.isposinf(out[0, hs:he, ws:we]))
    assert np.isfinite(out[0]).sum() == h * w - (he - hs) * (we - ws)
    i, j = ho // 2, wo // 2
    assert np.all(np.isnan(out[2, (i * h) // ho : -(-(i + 1) * h // ho),
                               (j * w) // wo : -(-(j + 1) * w // wo)]))


def test_inf_and_minus_inf_in_one_sum_give_nan():
    g = np.zeros((1, 1, 2, 2))
    g[0, 0, 0, 0], g[0, 0, 1, 1] = np.inf, -np.inf
    out = backward(g, (1, 1))  # both windows cover the only element
    assert np.isnan(out[0, 0, 0, 0])
    out = backward(g, (3, 3))  # centre element shared by all four windows
    assert np.isnan(out[0, 0, 1, 1])
    assert out[0, 0, 0, 0] == np.inf and out[0, 0, 2, 2] == -np.inf


def test_signed_zero_sum():
    """A sum of -0.0 terms is -0.0 (IEEE); mixed zeros give +0.0."""
    out = backward(np.full((1, 3, 4), -0.0), (7, 9))
    assert np.all(out == 0) and np.all(np.signbit(out))
    g = np.full((1, 2, 2), -0.0)
    g[0, 0, 0] = 0.0
    assert not np.signbit(backward(g, (1, 1))[0, 0, 0])


def test_no_warnings_on_special_values():
    g = np.array([[[np.inf, -np.inf], [np.nan, 1.0]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        backward(g, (3, 3))
        backward(g, (1, 1), absolute=True)


# -- empty tensors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grad_shape", "in_hw", "out_shape"),
    [
        ((0, 3, 4, 5), (8, 10), (0, 3, 8, 10)),
        ((2, 0, 4, 5), (8, 10), (2, 0, 8, 10)),
        ((0, 4, 5), (8, 10), (0, 8, 10)),
        ((2, 3, 0, 5), (8, 10), (2, 3, 8, 10)),  # no terms: zeros
        ((2, 3, 4, 0), (8, 10), (2, 3, 8, 10)),
        ((2, 3, 4, 5), (0, 10), (2, 3, 0, 10)),
        ((2, 3, 0, 0), (0, 0), (2, 3, 0, 0)),
    ],
)
def test_empty_tensors(grad_shape, in_hw, out_shape):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = backward(np.ones(grad_shape, dtype=np.float32), in_hw)
    assert out.shape == out_shape and out.dtype == np.float64
    assert np.all(out == 0)


# -- dtypes, layouts, chunking, arguments ----------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.float32, ml_dtypes.bfloat16, np.int32])
def test_input_dtypes_read_exactly(dtype):
    g = np.random.default_rng(4).uniform(-50, 50, (2, 3, 5, 6)).astype(dtype)
    got = backward(g, (13, 11))
    assert got.dtype == np.float64
    assert np.array_equal(got, backward(g.astype(np.float64), (13, 11)))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("grad_shape", [(2, 3, 5, 4), (3, 6, 7), (2, 2, 2, 3, 4)])
def test_layout_bit_identical(layout, grad_shape):
    g = np.random.default_rng(5).normal(size=grad_shape).astype(np.float32)
    base = backward(g, (11, 9))
    view = place(g, layout).view()
    assert np.array_equal(backward(view, (11, 9)).view(np.uint64), base.view(np.uint64))


def test_numpy_views_non_contiguous():
    g = np.random.default_rng(6).normal(size=(4, 6, 10, 8))
    for view in (g[:, ::2, 1::3, ::2], g.transpose(1, 0, 3, 2), g[::-1, :, ::-1]):
        assert_close_to_naive(view, (9, 7), backward(view, (9, 7)))


@pytest.mark.parametrize("lead", [(5,), (2, 3), (3, 1, 4), (2, 2, 2, 2)])
@pytest.mark.parametrize("chunk", [1, 30, 200, 500, 10_000])
def test_chunking_is_bit_identical(lead, chunk):
    g = np.random.default_rng(8).normal(size=lead + (6, 5))
    for hw in ((13, 12), (3, 2), (6, 5)):
        full = backward(g, hw)
        assert np.array_equal(backward(g, hw, chunk_elems=chunk).view(np.uint64),
                              full.view(np.uint64))


def test_absolute_is_backward_of_abs():
    g = np.random.default_rng(9).normal(size=(2, 3, 6, 7)).astype(np.float16)
    m = backward(g, (10, 15), absolute=True)
    assert np.array_equal(m, backward(np.abs(g), (10, 15)))
    assert np.all(m >= np.abs(backward(g, (10, 15))))


def test_input_not_modified():
    g = np.random.default_rng(10).normal(size=(2, 4, 3))
    before = g.copy()
    backward(g, (7, 7), absolute=True)
    assert np.array_equal(g, before)


def test_bad_arguments():
    with pytest.raises(ValueError, match="rank >= 2"):
        backward(np.ones(4), (2, 2))
    with pytest.raises(ValueError, match="negative"):
        backward(np.ones((2, 2)), (-1, 2))


# -- term counts and plans --------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(ho=st.integers(0, 30), wo=st.integers(0, 30), h=st.integers(0, 30), w=st.integers(0, 30))
def test_term_counts_match_brute_force(ho, wo, h, w):
    got = term_counts((ho, wo), (h, w))
    assert got.shape == (h, w)
    assert np.array_equal(got, naive_counts((ho, wo), (h, w)))


@settings(max_examples=60, deadline=None)
@given(out_size=st.integers(1, 60), in_size=st.integers(1, 60))
def test_spread_plan_lists_covering_windows(out_size, in_size):
    plan = spread_plan(out_size, in_size)
    assert plan.index.shape == (plan.depth, in_size)
    assert int(plan.sizes.sum()) == int(plan.counts.sum())
    for p in range(in_size):
        covering = [i for i in range(out_size)
                    if (i * in_size) // out_size <= p < -(-(i + 1) * in_size // out_size)]
        listed = [int(i) for i in plan.index[:, p] if i != out_size]
        assert listed == covering
    assert plan.uniform == (in_size % out_size == 0)


def test_spread_plan_is_read_only():
    plan = spread_plan(5, 17)
    for arr in (plan.sizes, plan.counts, plan.index):
        with pytest.raises(ValueError):
            arr[0] = 99


# -- pinned goldens: the reference must not drift (cross-machine, across optimisations) ----
# Last bumped on purpose (2026-11-29) when every term became g / (kh * kw) with one rounding
# instead of (g / kw) / kh: stored golden files made before differ in last bits.

PINNED: list[tuple[tuple[int, ...], tuple[int, int], str]] = [
    ((2, 3, 5, 4), (17, 9), "3664032669eca094"),
    ((3, 11, 13), (7, 5), "623ea68c62614a2d"),
    ((2, 2, 1, 1), (12, 12), "d69abf4dc073ad29"),
    ((1, 2, 4, 4), (16, 16), "761cf4ae881db4e8"),
    ((1, 1, 10, 13), (33, 47), "1e6ef7633061d435"),
    ((2, 4, 3, 5), (14, 14), "cb6f739366f435cd"),
]


@pytest.mark.parametrize(("grad_shape", "in_hw", "digest"), PINNED)
def test_pinned_golden_bits(grad_shape, in_hw, digest):
    """Bit-exact goldens: a change here changes every stored golden file."""
    out = backward(fixed_grad(grad_shape), in_hw)
    assert hashlib.sha256(out.astype("<f8").tobytes()).hexdigest()[:16] == digest


# -- PyTorch float64 -----------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    lead=st.sampled_from([(1,), (3,), (2, 3), (1, 5)]),
    ho=sizes, wo=sizes, h=sizes, w=sizes,
    seed=st.integers(0, 2**32 - 1),
    channels_last=st.booleans(),
)
def test_matches_torch_float64(lead, ho, wo, h, w, seed, channels_last):
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(seed).normal(0.0, 10.0, lead + (ho, wo))
    tg = torch.from_numpy(g)
    ts = torch.empty(lead + (h, w), dtype=torch.float64)
    if channels_last and len(lead) == 2:
        tg = tg.contiguous(memory_format=torch.channels_last)
        ts = ts.contiguous(memory_format=torch.channels_last)
    want = torch.ops.aten._adaptive_avg_pool2d_backward(tg, ts).numpy()
    got = backward(tg.numpy(), (h, w))  # numpy view with torch's strides
    mag = naive_backward(np.abs(g), (h, w))
    k = term_counts((ho, wo), (h, w))
    assert np.all(np.abs(got - want) <= (2 * k + 4) * U64 * mag)


def test_matches_torch_float64_specials():
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(11).normal(size=(2, 3, 5, 4))
    g[0, 0, 1, 1], g[0, 1, 2, 2], g[1, 2, 0, 3], g[1, 2, 1, 3] = np.inf, np.nan, np.inf, -np.inf
    want = torch.ops.aten._adaptive_avg_pool2d_backward(
        torch.from_numpy(g), torch.empty((2, 3, 11, 7), dtype=torch.float64)
    ).numpy()
    got = backward(g, (11, 7))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, equal_nan=True)
