"""Special values under each overflow mode: which elements are right, wrong or not judged.

A device computes either in inf-nan mode (IEEE 754: overflow gives inf, invalid operations
NaN) or in saturation mode (what would be inf becomes the dtype's largest finite value,
NaN becomes 0). Which mode a product uses is a product fact (docs/contract.md section
10); this module only says, element by element, what each mode accepts. Arrays in, masks
and counts out; no operator, no product.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from aclcheck.cases.acl import PRODUCTS
from aclcheck.dtypes import FloatFormat


class OverflowMode(StrEnum):
    """How a device treats overflow and invalid operations."""

    INF_NAN = "inf-nan"
    SATURATION = "saturation"


MODES: tuple[str, ...] = tuple(m.value for m in OverflowMode)


def product_modes(product: str) -> tuple[OverflowMode, ...]:
    """The modes a product's devices offer, its default first (inf-nan where unknown)."""
    known = PRODUCTS.get(product)
    return tuple(OverflowMode(m) for m in known.overflow_modes) if known else (
        OverflowMode.INF_NAN,)


def judged_mode(product: str, selected: str | None) -> tuple[OverflowMode, str | None]:
    """The mode a case of `product` is judged in: the product's default, or the one the
    user selected (`--overflow-mode`) where the product offers it; with a note where the
    selection does not apply."""
    modes = product_modes(product)
    if selected is None or OverflowMode(selected) == modes[0]:
        return modes[0], None
    if OverflowMode(selected) in modes:
        return OverflowMode(selected), None
    return modes[0], (f"--overflow-mode {selected} does not apply: {product} offers only "
                      f"{', '.join(modes)} (judged in {modes[0]} mode)")


def saturate(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Results in the output dtype as saturation mode leaves them: inf -> the largest
    finite value of its sign, NaN -> 0 (a model of a saturating device's conversion)."""
    with np.errstate(invalid="ignore"):
        wide = values.astype(np.float64)
        wide = np.where(np.isinf(wide), np.copysign(fmt.max_value, wide), wide)
        return np.where(np.isnan(wide), 0.0, wide).astype(values.dtype)


@dataclass(frozen=True)
class Specials:
    """The classification of one piece of output.

    numeric: compared with the budget as ordinary numbers; ok: a special case that is
    right; bad: a special-value failure; the counts feed the comparison's notes.
    """

    numeric: np.ndarray
    ok: np.ndarray
    bad: np.ndarray
    near_threshold: int = 0  # inf-nan: inf accepted within the budget of the threshold
    acc_overflow: int = 0  # the accumulator may overflow or saturate: inf/NaN (inf-nan) or
    #                        any finite value (saturation) accepted
    saturated: int = 0  # saturation: the largest finite value where the golden overflows
    unjudged: int = 0  # saturation: planes with inf/NaN inputs, not judged


def classify_specials(g: np.ndarray, a: np.ndarray, extra: np.ndarray, m: np.ndarray,
                      fmt: FloatFormat, acc_threshold: float, mode: OverflowMode,
                      unjudged: np.ndarray | None = None) -> Specials:
    """Classify each element of a piece (flat float64 arrays of one shape).

    g golden, a actual (as float64), extra the budget's E, m the sum of the term
    magnitudes, fmt the output format, acc_threshold the magnitude from which a partial
    sum may overflow the accumulator; `unjudged` marks elements whose inputs hold inf or
    NaN (saturation mode judges nothing there; None: only a non-finite golden says so).
    """
    if mode is OverflowMode.SATURATION:
        return _saturation(g, a, extra, m, fmt, acc_threshold, unjudged)
    return _inf_nan(g, a, extra, m, fmt, acc_threshold)


def _inf_nan(g: np.ndarray, a: np.ndarray, extra: np.ndarray, m: np.ndarray,
             fmt: FloatFormat, acc_threshold: float) -> Specials:
    gfin, afin = np.isfinite(g), np.isfinite(a)
    gnan, anan = np.isnan(g), np.isnan(a)
    absg = np.abs(g)
    thr = fmt.overflow_threshold
    inf_possible = gfin & (absg + extra >= thr)
    must_inf = gfin & (absg - extra >= thr)
    acc_over = gfin & (m >= acc_threshold)
    numeric = gfin & afin & ~must_inf
    same_inf = np.isinf(a) & (np.sign(a) == np.sign(g))
    near = inf_possible & ~must_inf & same_inf
    acc_ok = ~afin & acc_over & ~near & ~(must_inf & same_inf)
    ok = (gnan & anan) | (np.isinf(g) & (a == g)) | (must_inf & same_inf) | near | acc_ok
    return Specials(numeric, ok, ~numeric & ~ok, int(np.count_nonzero(near)),
                    int(np.count_nonzero(acc_ok)))


def _saturation(g: np.ndarray, a: np.ndarray, extra: np.ndarray, m: np.ndarray,
                fmt: FloatFormat, acc_threshold: float,
                unjudged: np.ndarray | None) -> Specials:
    gfin, afin = np.isfinite(g), np.isfinite(a)
    free = ~gfin if unjudged is None else (unjudged | ~gfin)
    acc_free = ~free & afin & (m >= acc_threshold)
    must_sat = ~free & ~acc_free & (np.abs(g) - extra >= fmt.overflow_threshold)
    sat_ok = must_sat & (a == np.copysign(fmt.max_value, g))
    numeric = ~free & afin & ~must_sat & ~acc_free
    ok = free | acc_free | sat_ok
    return Specials(numeric, ok, ~numeric & ~ok, 0, int(np.count_nonzero(acc_free)),
                    int(np.count_nonzero(sat_ok)), int(np.count_nonzero(free)))
