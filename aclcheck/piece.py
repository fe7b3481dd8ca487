"""One piece of a comparison: the per-element quantities every standard's rule reads.

The comparison (compare.py) cuts a case into cache-sized pieces; each standard
(standards.py) turns a piece into the error it allows per element. Quantities a rule may
or may not need (|a|, ULP of the golden, the budget) are computed on first use.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from aclcheck.budget import element_budget
from aclcheck.dtypes import FloatFormat, half_ulp


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
        self.exact: np.ndarray | None = None  # flat indices proven exact (exactness.py)
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
        res = half_ulp(self.absg, self.fmt)
        res *= 2.0
        return res

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
