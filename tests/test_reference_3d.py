"""The float64 reference of aclnnAdaptiveAvgPool3dBackward against an independent naive
loop and against PyTorch float64.

The naive loop shares nothing with the reference: its own window arithmetic (Python
floor/ceil on exact integers), one window at a time, terms added in (od, oh, ow) order onto
a -0.0 start (the IEEE additive identity, as the reference's padding slots are).

"Relative" agreement with PyTorch is measured against m = the sum of the magnitudes of
the terms reaching an element (the backward of |gradOutput|), not against |result|: where
windows overlap, terms of both signs cancel and the result can be far smaller than the
rounding errors of its terms. PyTorch float64 divides three times (g / kd / kh / kw) and
sums in (od, oh, ow) order; the reference divides once and sums W, then H, then D. Both
are within a few float64 unit roundoffs of m, never of |result| (research: 1.8e-12
pointwise relative on an overlapping shape, <= 2.2e-16 of m).
"""

from __future__ import annotations

import hashlib
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclcheck.ops.adaptive_avg_pool3d_backward.reference import (
    DEFAULT_CHUNK_ELEMS,
    backward,
    plans,
    term_counts,
)

U64 = 2.0**-53
#: The issue's agreement target: |reference - torch float64| <= TORCH_REL * m.
TORCH_REL = 1e-15


def _win(i: int, o: int, n: int) -> tuple[int, int]:
    return (i * n) // o, -((-(i + 1) * n) // o)


def naive_backward(grad: np.ndarray, in_dhw: tuple[int, int, int]) -> np.ndarray:
    """Textbook backward: every window adds g / (kd * kh * kw) onto its input region."""
    g = np.asarray(grad, dtype=np.float64)
    d, h, w = in_dhw
    do, ho, wo = g.shape[-3:]
    out = np.full(g.shape[:-3] + (d, h, w), -0.0)
    if out.size == 0 or g.size == 0:
        return np.zeros(out.shape)
    with np.errstate(invalid="ignore"):
        for i in range(do):
            d0, d1 = _win(i, do, d)
            for j in range(ho):
                h0, h1 = _win(j, ho, h)
                for k in range(wo):
                    w0, w1 = _win(k, wo, w)
                    term = g[..., i, j, k] / ((d1 - d0) * (h1 - h0) * (w1 - w0))
                    out[..., d0:d1, h0:h1, w0:w1] += term[..., None, None, None]
    return out


def naive_counts(out_dhw: tuple[int, int, int], in_dhw: tuple[int, int, int]) -> np.ndarray:
    k = np.zeros(in_dhw, dtype=np.int64)
    for i in range(out_dhw[0]):
        d0, d1 = _win(i, out_dhw[0], in_dhw[0])
        for j in range(out_dhw[1]):
            h0, h1 = _win(j, out_dhw[1], in_dhw[1])
            for m in range(out_dhw[2]):
                w0, w1 = _win(m, out_dhw[2], in_dhw[2])
                k[d0:d1, h0:h1, w0:w1] += 1
    return k


def magnitudes(grad: np.ndarray, in_dhw: tuple[int, int, int]) -> np.ndarray:
    return naive_backward(np.abs(np.asarray(grad, dtype=np.float64)), in_dhw)


def assert_specials_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isposinf(got), np.isposinf(want))
    assert np.array_equal(np.isneginf(got), np.isneginf(want))


def assert_close_to_naive(grad: np.ndarray, in_dhw: tuple[int, int, int],
                          got: np.ndarray) -> None:
    """got == naive within the float64 rounding bound of two k-term sums, specials exact."""
    want = naive_backward(grad, in_dhw)
    assert got.shape == want.shape and got.dtype == np.float64
    assert_specials_equal(got, want)
    finite = np.isfinite(want)
    k = naive_counts(tuple(np.shape(grad)[-3:]), in_dhw)
    bound = (2 * k + 4) * U64 * magnitudes(grad, in_dhw)
    err = np.abs(got[finite] - want[finite])
    assert np.all(err <= np.broadcast_to(bound, want.shape)[finite])


def fixed_grad(shape: tuple[int, ...]) -> np.ndarray:
    """Platform-independent dyadic values (integer arithmetic, one exact division)."""
    n = math.prod(shape)
    v = ((np.arange(n, dtype=np.int64) * 7919) % 2001 - 1000).astype(np.float64) / 64.0
    return v.reshape(shape)


# -- against the naive loop ------------------------------------------------------------------

sizes = st.integers(1, 9)


def _strided_view(g: np.ndarray, kind: int) -> np.ndarray:
    """The same logical values in another memory layout (numpy view)."""
    if kind == 1 and g.ndim == 5:  # channels-last-3d: C innermost
        return np.ascontiguousarray(np.moveaxis(g, 1, -1)).transpose(0, 4, 1, 2, 3)
    if kind == 2:  # every other element of a padded buffer, with an offset
        buf = np.full((2 * g.size + 7,), np.nan)
        view = buf[3:3 + 2 * g.size:2].reshape(g.shape)
        view[...] = g
        return view
    if kind == 3:  # H and W swapped in memory
        return np.ascontiguousarray(np.swapaxes(g, -1, -2)).swapaxes(-1, -2)
    return g


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple),
    do=sizes, ho=sizes, wo=sizes, d=sizes, h=sizes, w=sizes,
    seed=st.integers(0, 2**32 - 1),
    layout=st.integers(0, 3),
    chunk=st.sampled_from([1, 50, 1000, DEFAULT_CHUNK_ELEMS]),
)
def test_matches_naive_random_shapes(lead, do, ho, wo, d, h, w, seed, layout, chunk):
    """Down-, up-sampling, identity and global in any mix per axis, rank 3..5, layouts."""
    g = np.random.default_rng(seed).normal(0.0, 10.0, lead + (do, ho, wo))
    got = backward(_strided_view(g, layout), (d, h, w), chunk_elems=chunk)
    assert got.flags.c_contiguous
    assert_close_to_naive(g, (d, h, w), got)


@pytest.mark.parametrize(
    ("grad_shape", "in_dhw"),
    [
        ((2, 3, 2, 3, 4), (6, 9, 8)),  # divisible
        ((2, 3, 3, 4, 5), (7, 10, 13)),  # non-divisible
        ((1, 2, 6, 8, 6), (3, 4, 2)),  # upsampling, divisible
        ((1, 2, 5, 7, 6), (3, 4, 5)),  # upsampling, non-divisible
        ((2, 3, 1, 1, 1), (5, 7, 6)),  # global
        ((2, 3, 4, 5, 6), (4, 5, 6)),  # identity
        ((3, 2, 4, 5), (5, 3, 7)),  # rank 4 (CDHW)
        ((1, 1, 5, 3, 2), (2, 9, 2)),  # mixed: D up, H down, W identity
        ((1, 1, 1, 1, 40), (1, 1, 3)),
    ],
)
def test_matches_naive_named_shapes(grad_shape, in_dhw):
    g = np.random.default_rng(7).uniform(-5.0, 5.0, grad_shape)
    assert_close_to_naive(g, in_dhw, backward(g, in_dhw))


def test_exact_terms_are_bit_identical_to_naive():
    """Integer terms: every sum is exact, so any order gives the same bits."""
    gs, dhw = (2, 2, 3, 4, 3), (5, 9, 7)
    p = plans(gs[-3:], dhw)
    vol = np.multiply.outer(np.multiply.outer(p[0].sizes, p[1].sizes), p[2].sizes)
    g = np.random.default_rng(1).integers(-3, 4, gs) * vol.astype(np.float64)
    got, want = backward(g, dhw), naive_backward(g, dhw)
    assert np.array_equal(got, want) and got.dtype == np.float64


def test_identity_is_an_exact_copy_and_global_a_scaled_broadcast():
    g = np.random.default_rng(2).normal(size=(2, 3, 4, 5, 6))
    assert np.array_equal(backward(g, (4, 5, 6)), g)
    g1 = np.random.default_rng(3).normal(size=(2, 3, 1, 1, 1))
    got = backward(g1, (3, 5, 7))
    assert np.array_equal(got, np.broadcast_to(g1 / 105.0, (2, 3, 3, 5, 7)))


def test_term_counts_match_brute_force():
    for out_dhw, in_dhw in (((3, 4, 5), (7, 5, 13)), ((5, 2, 1), (2, 5, 4)),
                            ((1, 1, 1), (3, 3, 3))):
        assert np.array_equal(term_counts(plans(out_dhw, in_dhw)),
                              naive_counts(out_dhw, in_dhw))


@pytest.mark.parametrize(("do", "d"), [(2, 3), (5, 2), (1, 4)])
def test_special_values_follow_ieee(do, d):
    g = np.random.default_rng(4).uniform(-5, 5, (2, do, 3, 4))
    g[0, 0, 0, 0] = np.inf
    g[0, -1, -1, -1] = -np.inf
    g[1, 0, 1, 2] = np.nan
    g[1, -1, 0, 0] = 0.0
    with np.errstate(all="raise"):  # no warnings escape
        got = backward(g, (d, 5, 3))
    want = naive_backward(g, (d, 5, 3))
    assert_specials_equal(got, want)


def test_all_negative_zero_window_stays_negative_zero():
    g = np.full((1, 2, 2, 2), -0.0)
    got = backward(g, (3, 3, 3))
    assert np.all(got == 0) and np.all(np.signbit(got))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, ml_dtypes.bfloat16, np.float64])
def test_input_dtypes_are_read_exactly(dtype):
    g = np.random.default_rng(5).normal(size=(2, 3, 4, 2)).astype(dtype)
    assert np.array_equal(backward(g, (5, 3, 6)), backward(g.astype(np.float64), (5, 3, 6)))


@pytest.mark.parametrize("chunk", [1, 13, 200, 4096])
def test_chunking_is_bit_identical(chunk):
    g = np.random.default_rng(6).normal(size=(3, 4, 3, 5, 4))
    assert np.array_equal(backward(g, (5, 7, 9), chunk_elems=chunk), backward(g, (5, 7, 9)))


def test_absolute_is_the_backward_of_abs_and_out_is_used():
    g = np.random.default_rng(8).normal(size=(2, 2, 3, 3, 2))
    assert np.array_equal(backward(g, (4, 5, 5), absolute=True), backward(np.abs(g), (4, 5, 5)))
    out = np.empty((2, 2, 4, 5, 5))
    res = backward(g, (4, 5, 5), out=out)
    assert res is out and np.array_equal(out, backward(g, (4, 5, 5)))


def test_input_is_not_modified():
    g = np.random.default_rng(9).normal(size=(2, 3, 2, 3))
    before = g.copy()
    backward(g, (4, 5, 6), absolute=True)
    assert np.array_equal(g, before)


def test_empty_and_bad_arguments():
    assert backward(np.zeros((0, 3, 2, 2, 2)), (4, 4, 4)).shape == (0, 3, 4, 4, 4)
    assert np.array_equal(backward(np.zeros((1, 0, 2, 2)), (3, 3, 3)), np.zeros((1, 3, 3, 3)))
    with pytest.raises(ValueError, match="rank >= 3"):
        backward(np.zeros((2, 2)), (2, 2, 2))
    with pytest.raises(ValueError, match="three non-negative"):
        backward(np.zeros((1, 2, 2, 2)), (2, 2))
    with pytest.raises(ValueError, match="shape"):
        backward(np.zeros((1, 2, 2, 2)), (2, 2, 2), out=np.empty((1, 3, 2, 2)))


@pytest.mark.parametrize(
    ("grad_shape", "in_dhw", "digest"),
    [
        ((2, 3, 3, 4, 5), (7, 10, 13), "9abe20034c82ecee36b4cbdf7c19c595"),
        ((1, 2, 5, 7, 6), (3, 4, 5), "c65ac274ff449bd8bb2ad1bac3989897"),
        ((2, 1, 1, 1), (5, 6, 7), "e02f21c666e7a16473e2487e0d9ac1cf"),
    ],
)
def test_pinned_golden_bits(grad_shape, in_dhw, digest):
    """The same bits on every machine: digests pinned from one run (dyadic inputs)."""
    got = backward(fixed_grad(grad_shape), in_dhw)
    assert hashlib.blake2b(got.tobytes(), digest_size=16).hexdigest() == digest


# -- against PyTorch float64 -------------------------------------------------------------------


def _torch_backward(g: np.ndarray, in_dhw: tuple[int, int, int],
                    channels_last: bool = False) -> np.ndarray:
    torch = pytest.importorskip("torch")
    tg = torch.from_numpy(g)
    ts = torch.empty(g.shape[:-3] + tuple(in_dhw), dtype=torch.float64)
    if channels_last:
        tg = tg.contiguous(memory_format=torch.channels_last_3d)
        ts = ts.contiguous(memory_format=torch.channels_last_3d)
    return torch.ops.aten._adaptive_avg_pool3d_backward(tg, ts).numpy()


@pytest.mark.parametrize(
    ("grad_shape", "in_dhw", "seed", "channels_last"),
    [
        ((2, 2, 3, 4, 4), (5, 7, 6), 0, False),  # upsampling: cancellation where windows overlap
        ((2, 3, 3, 4, 5), (7, 10, 13), 1, True),
        ((1, 4, 5, 5, 5), (5, 5, 5), 2, False),
        ((2, 3, 4, 5), (9, 11, 2), 3, False),  # rank 4 (CDHW)
        ((2, 3, 1, 1, 1), (6, 5, 7), 4, True),
        ((1, 1, 7, 9, 11), (3, 4, 5), 5, False),
    ],
)
def test_matches_torch_float64_relative_to_the_magnitude_sum(grad_shape, in_dhw, seed,
                                                             channels_last):
    g = np.random.default_rng(seed).normal(0.0, 10.0, grad_shape)
    want = _torch_backward(g, in_dhw, channels_last)
    got = backward(g, in_dhw)
    m = magnitudes(g, in_dhw)
    assert np.all(np.abs(got - want) <= TORCH_REL * m)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lead=st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple),
       do=sizes, ho=sizes, wo=sizes, d=sizes, h=sizes, w=sizes,
       seed=st.integers(0, 2**32 - 1))
def test_matches_torch_float64_within_the_rounding_bound(lead, do, ho, wo, d, h, w, seed):
    """Any shape: within the proven bound of the two orders (torch: three roundings per
    term and a k-term sum; the reference: one rounding and three nested sums)."""
    g = np.random.default_rng(seed).normal(0.0, 10.0, lead + (do, ho, wo))
    want = _torch_backward(g, (d, h, w))
    got = backward(g, (d, h, w))
    k = naive_counts((do, ho, wo), (d, h, w))
    assert np.all(np.abs(got - want) <= (2 * k + 4) * U64 * magnitudes(g, (d, h, w)))


def test_matches_torch_float64_specials():
    g = np.random.default_rng(10).uniform(-5, 5, (2, 3, 3, 4, 2))
    g[0, 0, 0, 0, 0], g[1, 2, 2, 3, 1], g[0, 1, 1, 1, 1] = np.inf, -np.inf, np.nan
    want = _torch_backward(g, (4, 7, 3))
    got = backward(g, (4, 7, 3))
    assert_specials_equal(got, want)
    finite = np.isfinite(want)
    err = np.abs(got[finite] - want[finite])
    assert np.all(err <= TORCH_REL * magnitudes(g, (4, 7, 3))[finite])


def test_matches_torch_float64_on_every_valid_case_of_the_default_suite():
    """The issue's acceptance: on every valid call of the default 3D suite (its gradOutput
    values read as float64), |reference - torch float64| <= 1e-15 * m, special values
    equal."""
    torch = pytest.importorskip("torch")
    from aclcheck.ops.adaptive_avg_pool3d_backward import contract, families
    from aclcheck.ops.adaptive_avg_pool3d_backward.values import tensor_values

    checked, worst = 0, 0.0
    for product, rules in contract.PRODUCTS.items():
        for family in families.DEFAULT_FAMILIES:
            if family == "invalid":
                continue
            for dtype in rules.dtypes:
                for fmt in contract.FORMATS:
                    case = families.shape_case(family, product, dtype, fmt, 0, 0)
                    if case is None or not case.positive:
                        continue
                    g = tensor_values(case, "grad_output").astype(np.float64)
                    dhw = tuple(case.self_shape[-3:])
                    ts = torch.empty(tuple(case.self_shape), dtype=torch.float64)
                    want = torch.ops.aten._adaptive_avg_pool3d_backward(
                        torch.from_numpy(g), ts).numpy()
                    got = backward(g, dhw)
                    assert_specials_equal(got, want)
                    m = backward(g, dhw, absolute=True)
                    finite = np.isfinite(want) & (m > 0) & np.isfinite(m)
                    rel = np.abs(got[finite] - want[finite]) / m[finite]
                    assert np.all(got[np.isfinite(want) & (m == 0)] == 0), case.id
                    worst = max(worst, float(rel.max(initial=0.0)))
                    checked += 1
    assert checked > 150
    assert worst <= TORCH_REL, worst
    print(f"{checked} valid cases, max |reference - torch| / m = {worst:.3g}")
