"""Rounding modes of a float format: the two neighbours of a value and the roundings a
kernel may (wrongly) apply when it converts to the output dtype.

Float64 in, float64 values of the format out. RNE is dtypes.correctly_rounded; the others
pick between the two neighbours it brackets. Used by the what-if models (a broken cast)
and by the magnitude classes (is a wrong output a neighbour of the exact value?).
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np

from aclcheck.dtypes import FloatFormat, correctly_rounded, held, ordered_bits, signed_bits_dtype


class Rounding(StrEnum):
    """How values become values of the output format."""

    NEAREST = "nearest"  # round to nearest, ties to even (the contract's)
    TOWARD_ZERO = "toward-zero"
    TIES_AWAY = "ties-away"  # nearest, ties away from zero
    UP = "up"  # toward +inf
    DOWN = "down"  # toward -inf
    TO_ODD = "to-odd"  # an inexact value takes the neighbour whose last bit is odd
    NEAREST_FTZ = "nearest-ftz"  # nearest even, then subnormal results flushed to zero


def _step(values: np.ndarray, fmt: FloatFormat, steps: np.ndarray) -> np.ndarray:
    """values (of fmt, float64) moved by `steps` representable values (ordered bits)."""
    signed = signed_bits_dtype(fmt)
    width = signed.itemsize * 8
    order = ordered_bits(held(values, fmt), fmt).astype(np.int64) + steps
    limit = (1 << (width - 1)) - 1
    order = np.clip(order, -limit, limit).astype(signed)
    magnitude_mask = signed.type(limit)
    bits = np.where(order < 0, (-order) | ~magnitude_mask, order).astype(signed)
    return bits.view(fmt.bits_dtype).view(fmt.np_dtype).astype(np.float64)


def neighbours(values: np.ndarray, fmt: FloatFormat) -> tuple[np.ndarray, np.ndarray]:
    """(down, up): the largest value of fmt <= x and the smallest >= x, float64 (both x
    where x is a value of fmt; past the largest finite value, up is inf). NaN and inf
    give themselves."""
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        r = correctly_rounded(x, fmt)
        step = np.where(r < x, 1, np.where(r > x, -1, 0)).astype(np.int64)
        finite = np.isfinite(x)
        other = np.where(finite & (step != 0), _step(np.where(finite, r, 0.0), fmt, step), r)
    return np.where(finite, np.minimum(r, other), x), np.where(finite, np.maximum(r, other), x)


def rounded(values: np.ndarray, fmt: FloatFormat, mode: Rounding) -> np.ndarray:
    """values converted to fmt with `mode` (float64 results; NaN stays NaN)."""
    x = np.asarray(values, dtype=np.float64)
    if mode is Rounding.NEAREST:
        return correctly_rounded(x, fmt)
    if mode is Rounding.NEAREST_FTZ:
        r = correctly_rounded(x, fmt)
        with np.errstate(invalid="ignore"):
            return np.where(np.abs(r) < 2.0 ** fmt.min_exp, r * 0.0, r)
    down, up = neighbours(x, fmt)
    with np.errstate(invalid="ignore"):
        if mode is Rounding.TOWARD_ZERO:
            return np.where(x < 0, up, down)
        if mode is Rounding.UP:
            return up
        if mode is Rounding.DOWN:
            return down
        if mode is Rounding.TO_ODD:
            odd_down = (ordered_bits(_held(down, fmt), fmt).astype(np.int64) % 2) != 0
            return np.where(down == up, down, np.where(odd_down, down, up))
        # ties away: the nearer neighbour; at a tie the one away from zero
        nearer = np.where((x - down) < (up - x), down, up)
        tie = (x - down) == (up - x)
        away = np.where(x < 0, down, up)
        return np.where(tie & (down != up), away, nearer)


def _held(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """float64 values of fmt as fmt's own numpy dtype (for bit reads)."""
    return held(np.nan_to_num(values, nan=0.0), fmt)


#: the roundings of a final conversion that `explaining` tries, the contract's first
CONVERSIONS: tuple[Rounding, ...] = (Rounding.NEAREST, Rounding.TIES_AWAY,
                                     Rounding.TOWARD_ZERO, Rounding.UP, Rounding.DOWN,
                                     Rounding.TO_ODD)


def explaining(actual: np.ndarray, exact: np.ndarray, fmt: FloatFormat
               ) -> tuple[Rounding, ...]:
    """The roundings of CONVERSIONS under which `exact` (float64) becomes `actual` (values
    of fmt) at every element: what a one-ULP failure's final cast did (empty: none)."""
    a = np.asarray(actual, dtype=np.float64).ravel()
    x = np.asarray(exact, dtype=np.float64).ravel()
    keep = np.isfinite(a) & np.isfinite(x)
    a, x = a[keep], x[keep]
    return tuple(m for m in CONVERSIONS if np.array_equal(rounded(x, fmt, m), a))


def is_neighbour(actual: np.ndarray, exact: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """actual (values of fmt) is one of the two values of fmt bracketing `exact`."""
    down, up = neighbours(exact, fmt)
    a = np.asarray(actual, dtype=np.float64)
    return (a == down) | (a == up)
