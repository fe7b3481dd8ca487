"""One piece of a comparison: the per-element quantities every standard's rule reads.

The comparison (compare.py) cuts a case into cache-sized pieces; each standard
(standards.py) turns a piece into the error it allows per element. Quantities a rule may
or may not need (|a|, ULP of the golden, the budget) are computed on first use.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from aclcheck.dtypes import FloatFormat, half_ulp
from aclcheck.judging.budget import element_budget
from aclcheck.judging.exactness import Prover


class Piece:
    """Golden, actual and E (the budget's extra term) of one piece, as flat float64.

    Elements that are not compared numerically (special values) hold 0 in g and a, so
    every rule passes them numerically; `bad` marks the special-value failures, which
    every rule then adds as infinite errors. `raw_g` / `raw_a` keep the values before that
    zeroing (the exact-rounding check needs them, infinities included).
    """

    def __init__(self, g: np.ndarray, a: np.ndarray, extra: np.ndarray, fmt: FloatFormat,
                 bad: np.ndarray | None, numeric: int) -> None:
        self.g, self.a, self.extra, self.fmt = g, a, extra, fmt
        self.bad = bad
        self.numeric = numeric  # number of elements compared numerically
        self.mask: np.ndarray | None = None  # elements compared numerically (None: all)
        self.raw_g, self.raw_a = g, a
        self.exact: Prover | None = None  # which elements are proven exact
        self.extra0: np.ndarray | None = None  # E without the scale term (path notes)
        self.d = a - g
        self.err = np.abs(self.d)
        self.absg = np.abs(g)

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
