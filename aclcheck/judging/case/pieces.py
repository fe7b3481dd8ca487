"""One piece of a comparison: the per-element quantities every standard's rule reads.

The comparison (compare.py) cuts a case into cache-sized pieces and builds each once
(`make_piece`); each standard (rule.py) turns a piece into the error it allows per
element. Quantities a rule may or may not need (|a|, ULP of the golden, the budget) are
computed on first use and kept (pure values of the piece's fields).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from aclcheck.dtypes import BFLOAT16, FloatFormat, half_ulp
from aclcheck.judging.case.budget import element_budget
from aclcheck.judging.case.exactness import Prover
from aclcheck.judging.case.overflow import OverflowMode, classify_specials


def float64_values(src: np.ndarray) -> np.ndarray:
    """Any-strided output values as a contiguous float64 array (bf16 decoded by bits)."""
    out = np.empty(src.shape, dtype=np.float64)
    if src.dtype == BFLOAT16.np_dtype:
        out[...] = np.left_shift(src.view(np.uint16), 16, dtype=np.uint32).view(np.float32)
    else:
        out[...] = src
    return out


@dataclass(frozen=True, eq=False)
class Piece:
    """Golden, actual and E (the budget's extra term) of one piece, as flat float64.

    Elements that are not compared numerically (special values) hold 0 in g and a, so
    every rule passes them numerically; `bad` marks the special-value failures, which
    every rule then adds as infinite errors. `raw_g` / `raw_a` keep the values before that
    zeroing (the exact-rounding check needs them, infinities included).
    """

    g: np.ndarray
    a: np.ndarray
    extra: np.ndarray
    fmt: FloatFormat
    bad: np.ndarray | None
    numeric: int  # number of elements compared numerically
    raw_g: np.ndarray
    raw_a: np.ndarray
    mask: np.ndarray | None = None  # elements compared numerically (None: all)
    exact: Prover | None = None  # which elements are proven exact
    extra0: np.ndarray | None = None  # E without the scale term (path notes)
    saturating: bool = False  # saturation mode: RNE past the threshold is the largest value

    @cached_property
    def d(self) -> np.ndarray:
        return self.a - self.g

    @cached_property
    def err(self) -> np.ndarray:
        return np.abs(self.d)

    @cached_property
    def absg(self) -> np.ndarray:
        return np.abs(self.g)

    @cached_property
    def absa(self) -> np.ndarray:
        return np.abs(self.a)

    @cached_property
    def maxabs(self) -> np.ndarray:
        return np.maximum(self.absa, self.absg)

    @cached_property
    def ulp_g(self) -> np.ndarray:
        """ULP of the output dtype at |g| (twice the half ULP)."""
        return self.half_ulp_g * 2.0

    @cached_property
    def rel(self) -> np.ndarray:
        """|a - g| / |g| (inf or NaN where g is 0)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(self.err, self.absg)

    @cached_property
    def half_ulp_g(self) -> np.ndarray:
        """Half the ULP of the output dtype at |g|."""
        return half_ulp(self.absg, self.fmt)

    @cached_property
    def off_nearest(self) -> np.ndarray:
        """Flat indices where the output may not be the RNE value of the raw golden.

        A value closer to g than half its ULP is the nearest one, and half the ULP at |g|
        is more than |g| * 2**-(p+1): so |a - g| / |g| <= 2**-(p+1) proves a == RNE(g)
        (one comparison of the relative error the metrics compute anyway, instead of a
        rounding). The rest, ties included, are suspects; non-finite goldens are left
        out.
        """
        if self.mask is None:
            rel = self.rel  # shared with the max relative error metric
        else:
            finite = np.isfinite(self.raw_g)
            g = np.where(finite, self.raw_g, 0.0)
            err = np.where(finite, np.abs(self.raw_a - g), 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.divide(err, np.abs(g))
        far = np.greater(rel, 2.0 ** -(self.fmt.precision + 1))  # NaN (0/0): no
        return np.flatnonzero(far) if far.any() else np.empty(0, dtype=np.intp)

    @cached_property
    def reach(self) -> np.ndarray:
        """|g| + E: the largest magnitude a correct result may have."""
        return np.add(self.absg, self.extra)

    @cached_property
    def budget(self) -> np.ndarray:
        """aclcheck's budget ulp_out(|g| + E)/2 + E (budget.element_budget)."""
        return element_budget(self.reach, self.extra, self.fmt)

    def with_bad(self, fail: np.ndarray) -> np.ndarray:
        if self.bad is not None:
            fail |= self.bad
        return fail


@dataclass(frozen=True)
class SpecialCounts:
    """How the special values of one piece were judged (the comparison adds them up)."""

    nan_bad: int = 0  # NaN where the golden has none, or the other way round
    inf_bad: int = 0  # other special-value failures
    matched: int = 0  # special values that follow the rules
    near_threshold: int = 0  # inf accepted for a finite golden within budget of overflow
    acc_overflow: int = 0  # inf/NaN (saturation: any finite value) accepted where the
    #                        accumulator can overflow
    saturated: int = 0  # saturation: the largest finite value where the golden overflows
    unjudged: int = 0  # saturation: elements of planes with inf/NaN, not judged


def make_piece(g: np.ndarray, a: np.ndarray, extra: np.ndarray, fmt: FloatFormat, *,
               m: np.ndarray, acc_overflow: float, exact: Prover | None,
               extra0: np.ndarray | None, mode: OverflowMode = OverflowMode.INF_NAN,
               unjudged: np.ndarray | None = None) -> tuple[Piece, SpecialCounts | None]:
    """The piece of flat golden `g`, actual `a` and budget term `extra` (m: the terms'
    summed magnitude, acc_overflow: where the accumulator can overflow; mode: the
    product's overflow mode, unjudged: elements it does not judge); with the special
    values' counts when the piece holds any (or values beyond the overflow threshold)."""
    piece = Piece(g, a, extra, fmt, None, g.size, g, a, None, exact, extra0,
                  mode == OverflowMode.SATURATION)
    if (math.isfinite(float(piece.err.max()))
            and float(piece.reach.max()) < fmt.overflow_threshold
            and (unjudged is None or not unjudged.any())
            # a path whose intermediates are narrower than the output can saturate them
            # below the output's own threshold
            and (acc_overflow >= fmt.overflow_threshold or not float(m.max()) >= acc_overflow)):
        return piece, None
    return _special(g, a, extra, fmt, m, acc_overflow, exact, extra0, mode, unjudged)


def _special(g: np.ndarray, a: np.ndarray, extra: np.ndarray, fmt: FloatFormat,
             m: np.ndarray, acc_overflow: float, exact: Prover | None,
             extra0: np.ndarray | None, mode: OverflowMode,
             unjudged: np.ndarray | None) -> tuple[Piece, SpecialCounts]:
    """Classify special values by the overflow mode's rules (judging.case.overflow); zero
    them out of the numeric comparison and mark the failures."""
    s = classify_specials(g, a, extra, m, fmt, acc_overflow, mode, unjudged)
    numeric, ok, bad = s.numeric, s.ok, s.bad
    nan_bad = int(np.count_nonzero(bad & (np.isnan(g) | np.isnan(a))))
    counts = SpecialCounts(
        nan_bad=nan_bad,
        inf_bad=int(np.count_nonzero(bad)) - nan_bad,
        matched=int(np.count_nonzero(ok)),
        near_threshold=s.near_threshold,
        acc_overflow=s.acc_overflow,
        saturated=s.saturated,
        unjudged=s.unjudged,
    )
    gz = np.where(numeric, g, 0.0)
    az = np.where(numeric, a, 0.0)
    ez = np.where(numeric, extra, 0.0)
    piece = Piece(gz, az, ez, fmt, bad if bad.any() else None, int(np.count_nonzero(numeric)),
                  g, a, numeric, exact,
                  None if extra0 is None else np.where(numeric, extra0, 0.0),
                  mode == OverflowMode.SATURATION)
    return piece, counts
