"""Float-format facts (aclcheck.dtypes): correct rounding, ULPs, ordered bits.

The bfloat16 cases pin the round-to-odd step: a float64 value just off a bfloat16 tie
keeps its side only if the float32 intermediate is rounded to odd; a plain
float64 -> float32 -> bfloat16 path (round to nearest twice) lands on the tie and then on
the even neighbour, the wrong side.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from aclcheck.dtypes import (
    BFLOAT16,
    FLOAT16,
    FLOAT32,
    FLOAT64,
    bfloat16_rounded,
    correctly_rounded,
    half_ulp,
    max_ulp_distance,
    ordered_bits,
    quantum,
    quantum_exponent,
    round_to_odd_f32,
    ulp,
    ulp_distance,
)

#: (float64 value, its correctly rounded bfloat16 value): each is 2**-30 off a bfloat16
#: tie, so float32 (24 bits) rounds it onto the tie and RNE then picks the even side.
DOUBLE_ROUNDING = [
    (1 + 2**-8 + 2**-30, 1 + 2**-7),  # just above the tie after 1.0 (even): round up
    (1 + 2**-7 + 2**-8 - 2**-30, 1 + 2**-7),  # just below the tie after 1+2**-7 (odd)
    (-(1 + 2**-8 + 2**-30), -(1 + 2**-7)),
    (2.0**100 * (1 + 2**-8 + 2**-30), 2.0**100 * (1 + 2**-7)),  # far from 1: same trap
]


def naive_bf16(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float64).astype(np.float32).astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize(("value", "expected"), DOUBLE_ROUNDING)
def test_bfloat16_rounding_is_single(value: float, expected: float) -> None:
    x = np.array([value])
    assert float(naive_bf16(x)[0]) != expected  # the case really is a double-rounding trap
    assert correctly_rounded(x, BFLOAT16)[0] == expected
    assert float(bfloat16_rounded(x)[0]) == expected


def test_max_ulp_distance_uses_the_single_rounding() -> None:
    g = np.array([1 + 2**-8 + 2**-30])  # correctly rounded: 1 + 2**-7
    assert max_ulp_distance(np.array([1 + 2**-7]), g, BFLOAT16) == 0
    assert max_ulp_distance(np.array([1.0]), g, BFLOAT16) == 1


def test_round_to_odd_keeps_the_side_and_specials() -> None:
    x = np.array([1 + 2**-30, 1 - 2**-40, -(1 + 2**-30), 1.0, np.inf, -np.inf, 1e39, np.nan])
    r = round_to_odd_f32(x).astype(np.float64)
    assert r[0] == 1 + 2**-23 and r[1] == 1 - 2**-24 and r[2] == -(1 + 2**-23)
    assert r[3] == 1.0 and r[4] == np.inf and r[5] == -np.inf
    assert r[6] == float(np.finfo(np.float32).max) and np.isnan(r[7])
    assert np.isinf(correctly_rounded(np.array([1e39]), BFLOAT16)[0])


def test_bfloat16_rounding_matches_exact_rounding_on_random_values() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(20000) * 2.0 ** rng.integers(-140, 120, 20000)
    mine = correctly_rounded(x, BFLOAT16)
    # reference: the two bfloat16 neighbours around x, nearest wins, ties to even bits
    lo = naive_bf16(x).astype(np.float64)
    step = ulp(lo, BFLOAT16)
    cand = np.stack([lo - step, lo, lo + step])
    best = cand[np.argmin(np.abs(cand - x), axis=0), np.arange(x.size)]
    assert np.array_equal(mine, best)
    assert np.all(np.abs(mine - x) <= ulp(x, BFLOAT16) / 2)


@pytest.mark.parametrize("fmt", [FLOAT16, BFLOAT16, FLOAT32, FLOAT64])
def test_half_ulp_is_half_of_ulp_and_ordered_bits_step_by_one(fmt) -> None:
    x = np.array([0.0, fmt.smallest_subnormal, 1.0, 1.5, fmt.max_value])
    np.testing.assert_array_equal(half_ulp(x, fmt) * 2, ulp(x, fmt))
    vals = np.array([-1.0, -0.0, 0.0, 1.0]).astype(fmt.np_dtype)
    ob = ordered_bits(vals, fmt).astype(np.int64)
    assert ob[1] == ob[2] and ob[2] - ob[0] == ob[3] - ob[2]
    assert ulp_distance(vals[:1], vals[3:], fmt)[0] == 2 * (ob[3] - ob[2])


def test_float64_distances_are_exact_and_never_wrap() -> None:
    """64-bit ordered integers of opposite signs would overflow int64 when subtracted."""
    big = np.finfo(np.float64).max
    assert ulp_distance(np.array([1.0]), np.array([np.nextafter(1.0, 2.0)]), FLOAT64)[0] == 1
    assert ulp_distance(np.array([-big]), np.array([big]), FLOAT64)[0] == np.iinfo(np.int64).max
    far = max_ulp_distance(np.array([-big]), np.array([big]), FLOAT64)
    assert far == 2 * int(ordered_bits(np.array([big]), FLOAT64)[0]) > 2**63
    assert max_ulp_distance(np.array([-1.0, 1.0]), np.array([-1.0, 1.0 + 2**-52]), FLOAT64) == 1
    assert correctly_rounded(np.array([1 + 2**-60]), FLOAT64)[0] == 1 + 2**-60



@pytest.mark.parametrize("fmt", [FLOAT16, BFLOAT16])
def test_quantum_from_bits_matches_the_float64_quantum(fmt) -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(20000) * 2.0 ** rng.integers(-30, 30, 20000))
    with np.errstate(over="ignore"):
        x = x.astype(np.float32).astype(fmt.np_dtype)
    x[:5] = np.array([0.0, -0.0, np.inf, np.nan, fmt.smallest_subnormal]).astype(fmt.np_dtype)
    e = quantum_exponent(x, fmt)
    q = quantum(x.astype(np.float64))
    finite = np.isfinite(q)
    assert not finite[:4].any() and q[4] == fmt.smallest_subnormal
    np.testing.assert_array_equal(np.ldexp(1.0, e[finite]), q[finite])
    assert (e[~finite] > 1000).all()
    assert quantum(np.array([3.0, 0.75, 6.0]))[[0, 1, 2]].tolist() == [1.0, 0.25, 2.0]
