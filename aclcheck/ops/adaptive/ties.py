"""gradOutput values whose exact backward lands on rounding ties of the output dtype.

The `rounding` family (families.py) pairs two windows on every output element: along H
either two windows of height 2 overlapping on the middle row (H = 3 <- Ho = 2, scale
1/2 per row) or two windows of height 1 over one row (upsampling H = 1 <- Ho = 2, no
scale); along W windows of width 1 or 2 (identity or W = 2 Wo). The golden of a paired
element is (g0 + g1) / A, A = kh * kw a power of two, so every term and sum is exact in
FP32 (and the reference), and the values below put it exactly halfway between two
adjacent values of the output dtype:

    g0 = A * a,  g1 = A * s * d / 2     ->    golden = a + s * d / 2

with a a value of the dtype, s = +1 (toward the next value away from zero, d its spacing)
or -1 (toward zero, d the spacing below). Each plane (n, c) takes one zone, so the
exactness proof's per-plane quantum stays large: ordinary binades, binade crossings (a
at the top of a binade, or a power of two stepping down), the subnormal range (with odd
and even multiples so one-term rows are ties too) and, without a scale, the overflow
threshold (max + half an ULP must become inf). Lower neighbours are odd and even, signs
are both.
"""

from __future__ import annotations

import math

import numpy as np

from aclcheck.dtypes import FloatFormat, ulp

#: Zones by H geometry: pair-down (scale 1/2 per row) cannot reach the overflow
#: threshold (each term is at most max/2), pair-up (no scale) cannot hold the half
#: spacing of a subnormal.
ZONES_DOWN = ("binades", "crossing", "subnormal")
ZONES_UP = ("binades", "crossing", "overflow")


def _pairs(rng: np.random.Generator, n: int, zone: str, fmt: FloatFormat,
           area: int) -> tuple[np.ndarray, np.ndarray]:
    """(g0, g1) of n paired elements of one zone (float64, exact values of fmt)."""
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    mant_bits = fmt.precision - 1
    if zone == "subnormal":
        # one-term rows g0/A and g1/A are ties too: g0 = odd, g1 = even multiples
        unit = fmt.smallest_subnormal * area / 2
        odd = 2 * rng.integers(0, 2 ** (mant_bits - 2), n) + 1
        even = 2 * rng.integers(0, 2 ** (mant_bits - 2), n)
        return sign * odd * unit, np.where(rng.random(n) < 0.5, -1.0, 1.0) * even * unit
    if zone == "overflow":
        top = fmt.max_value
        a = np.where(rng.random(n) < 0.75, top,
                     top - ulp(top, fmt) * rng.integers(1, 8, n))
        step = np.where(rng.random(n) < 0.6, 1.0, -1.0)  # most toward the threshold
    else:
        # binades small enough that every sum of the plane stays exact in FP32
        lo_exp, hi_exp = (-4, 9) if zone == "binades" else (0, 7)
        if mant_bits < 10:
            lo_exp, hi_exp = max(lo_exp, -2), min(hi_exp, 7)
        exp = rng.integers(lo_exp, hi_exp, n).astype(np.float64)
        if zone == "crossing":  # the top of a binade going up, or a power of two going down
            up = rng.random(n) < 0.5
            top = (2.0 - 2.0 ** -mant_bits) * 2.0 ** exp
            a = np.where(up, top, 2.0 ** exp)
            step = np.where(up, 1.0, -1.0)
        else:
            mant = rng.integers(2 ** mant_bits, 2 ** (mant_bits + 1), n).astype(np.float64)
            a = mant * 2.0 ** (exp - mant_bits)
            step = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    d_up = ulp(a, fmt)
    d_down = ulp(np.nextafter(a, 0.0), fmt)
    d = np.where(step > 0, d_up, d_down)
    return sign * a * area, sign * step * d * area / 2


def tie_grad(rng: np.random.Generator, grad_shape: tuple[int, ...],
             in_hw: tuple[int, int], fmt: FloatFormat) -> np.ndarray | None:
    """gradOutput values (float64, exact in fmt) for a `rounding` case (see module doc).

    grad_shape ends in (2, Wo); in_hw is (3, W) (pair-down) or (1, W) (pair-up), with
    W = Wo or 2 Wo. None for any other shape (a case file's or a shrunk case's): the
    caller then draws other exact values.
    """
    ho, wo = int(grad_shape[-2]), int(grad_shape[-1])
    h, w = int(in_hw[0]), int(in_hw[1])
    if ho != 2 or h not in (1, 3) or w not in (wo, 2 * wo):
        return None
    area = (2 if h == 3 else 1) * (w // wo)
    zones = ZONES_DOWN if h == 3 else ZONES_UP
    planes = math.prod(grad_shape[:-2])
    out = np.empty((planes, 2, wo))
    for p in range(planes):
        g0, g1 = _pairs(rng, wo, zones[p % len(zones)], fmt, area)
        out[p, 0], out[p, 1] = g0, g1
    return out.reshape(grad_shape)
