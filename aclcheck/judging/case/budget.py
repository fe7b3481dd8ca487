"""The per-element error budget of aclcheck's default standard.

A correct kernel computes out[x] = sum of k terms g_i / (kh_i * kw_i), each term and each
partial sum rounded in the accumulation format, then rounds once to the output dtype.
Its error is bounded per element by

    budget(x) = ulp_out(|g| + E) / 2 + E
    E         = (c * k * u_acc + rho_r) * m  +  eps_scale * m  +  c * k * eta  +  atol

with g the float64 golden, m the same backward applied to the inputs' magnitudes (for
pooling, the incoming gradient's: cancellation never shrinks the budget to zero), k the
number of terms reaching x, u_acc the unit roundoff of the accumulation format, rho_r the
relative error of the r roundings a term takes on its product's path beyond the
accumulation itself (r * u_acc; (1 + u_in)^r - 1 where the path rounds them to a narrower
inner format, as the training/inference matmuls do for FLOAT32), eta the smallest
subnormal of the narrowest format on the path, and eps_scale the relative error of the
window scale 1/(kh*kw) as the path rounds it (docs/contract.md section 6). The half ULP
is taken at |g| + E, so a sum that crosses into the next binade is covered.

Generic over operators: the path and k come from the case's NumericModel (aclcheck.cases.
model), built once by its operator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aclcheck.dtypes import FloatFormat, half_ulp
from aclcheck.judging.case.model import AxisTables, NumericModel, NumericPath


@dataclass(frozen=True)
class BudgetModel:
    """The budget coefficients of one case: E = coef * m + floor, where coef and floor
    depend on the element only through k (terms: a product of per-axis vectors, so a
    plane of any size costs nothing until a row/column window of it is asked for).
    `planes`: per plane of a block, the factor the leading axes add to k (None: 1)."""

    fmt: FloatFormat  # output format
    path: NumericPath
    c: float
    atol: float
    terms: AxisTables

    @classmethod
    def of(cls, numbers: NumericModel, c: float, atol: float) -> BudgetModel:
        return cls(numbers.fmt, numbers.path, float(c), float(atol), numbers.terms)

    @property
    def acc_overflow(self) -> float:
        """Sum-of-magnitudes at or above which a partial sum may overflow the accumulator."""
        return self.path.overflow_format.overflow_threshold

    def k(self, rows: slice = slice(None), cols: slice = slice(None),
          planes: np.ndarray | None = None) -> np.ndarray:
        """Terms reaching each element of the (rows, cols) window of a plane (int64;
        (P, rows, cols) with per-plane factors)."""
        k = self.terms.grid(rows, cols)
        return k if planes is None else np.multiply.outer(planes, k)

    def coef(self, rows: slice = slice(None), cols: slice = slice(None), *,
             with_scale: bool = True, planes: np.ndarray | None = None) -> np.ndarray:
        """c*k*u_acc + r*u (+ eps_scale): the multiplier of m, float64 (rows, cols);
        u of the accumulation, or of the path's narrower inner format (NumericPath)."""
        u = self.path.accumulate.unit_roundoff
        res = self.k(rows, cols, planes).astype(np.float64)
        res *= self.c * u
        res += self.path.roundoff + (self.path.scale_error if with_scale else 0.0)
        return res

    def floor(self, rows: slice = slice(None), cols: slice = slice(None), *,
              planes: np.ndarray | None = None) -> np.ndarray:
        """c * k * eta + atol: the absolute part (underflow of the terms; eta of the
        narrowest format on the path), float64."""
        res = self.k(rows, cols, planes).astype(np.float64)
        res *= self.c * self.path.underflow_unit
        res += self.atol
        return res

    def extra(self, m: np.ndarray, rows: slice = slice(None), cols: slice = slice(None), *,
              with_scale: bool = True) -> np.ndarray:
        """E for m shaped (..., rows, cols) of a case whose planes are alike;
        with_scale=False leaves out eps_scale * m."""
        res = np.multiply(m, self.coef(rows, cols, with_scale=with_scale))
        res += self.floor(rows, cols)
        return res


def element_budget(reach: np.ndarray, extra: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """The budget ulp_out(|g| + E) / 2 + E, from reach = |g| + E and E (float64 arrays).

    The one home of the formula: the comparison calls it chunk by chunk, an operator's
    whole-array `budget` helper on a whole array.
    """
    res = half_ulp(reach, fmt)
    res += extra
    return res
