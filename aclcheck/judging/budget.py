"""The per-element error budget of aclcheck's default standard.

A correct kernel computes out[x] = sum of k terms g_i / (kh_i * kw_i), each term and each
partial sum rounded in the accumulation format, then rounds once to the output dtype.
Its error is bounded per element by

    budget(x) = ulp_out(|g| + E) / 2 + E
    E         = (c * k + r) * u_acc * m  +  eps_scale * m  +  c * k * eta_acc  +  atol

with g the float64 golden, m the same backward applied to |gradOutput| (so cancellation
never shrinks the budget to zero), k the number of terms reaching x, u_acc and eta_acc the
unit roundoff and smallest subnormal of the accumulation format, r the roundings a term
takes on its product's path beyond the accumulation itself, and eps_scale the relative
error of the window scale 1/(kh*kw) as the path rounds it (docs/contract.md section 6). The
half ULP is taken at |g| + E, so a sum that crosses into the next binade is covered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aclcheck.dtypes import (
    FLOAT32,
    FloatFormat,
    float_format,
    half_ulp,
    normalize_dtype,
    scale_error,
)
from aclcheck.ops.adaptive.windows import spread_plan
from aclcheck.ops.adaptive_avg_pool2d_backward import contract

#: Values --accumulate accepts besides a dtype name.
ACCUMULATE_CHOICES: tuple[str, ...] = ("float32", "input", "float16", "bfloat16")


@dataclass(frozen=True)
class ProductPath:
    """How one product computes one case (docs/contract.md section 6), as the budget sees it."""

    name: str  # "fp32-atomic", "matmul" or "global-1x1"
    description: str
    accumulate: FloatFormat  # format of terms and partial sums
    extra_roundings: int  # r: roundings per term beyond the accumulation's k - 1 adds
    scale_format: FloatFormat  # format the scale 1/(kh*kw) (or 1/(H*W)) is rounded to
    scale_error: float  # eps_scale: largest relative error of that rounded scale
    #: Set when the scale rounding is a product-path effect worth reporting (the scale is
    #: rounded to a 16-bit input dtype): what to say when only this term saves an element.
    scale_note: str | None = None


def resolve_accumulate(product: str, dtype: str, accumulate: str | None = None) -> FloatFormat:
    """The accumulation format: the product's own (contract.PRODUCTS) or an override.

    accumulate: None (the product's), "float32", "input" (the input dtype), or a compute
    dtype name or alias (fp16, bf16, ...).
    """
    choice = accumulate if accumulate is not None else contract.product(product).accumulate
    key = str(choice).strip().lower()
    if key == "input":
        return float_format(dtype)
    try:
        name = normalize_dtype(key)
        return float_format(name)
    except (ValueError, KeyError):
        raise ValueError(
            f"unknown accumulation {choice!r}; valid: {', '.join(ACCUMULATE_CHOICES)}"
        ) from None




def _window_products(out_hw: tuple[int, int], in_hw: tuple[int, int]) -> np.ndarray:
    kh = spread_plan(int(out_hw[0]), int(in_hw[0])).sizes
    kw = spread_plan(int(out_hw[1]), int(in_hw[1])).sizes
    return np.unique(np.multiply.outer(np.unique(kh), np.unique(kw)))


def product_path(
    product: str,
    dtype: str,
    out_hw: tuple[int, int],
    in_hw: tuple[int, int],
    accumulate: str | None = None,
) -> ProductPath:
    """The path `product` takes for a case of `dtype` with gradOutput (Ho, Wo) and self
    (H, W): the global 1x1 path, the A2/A3 FP32 atomic path, or the matmul path."""
    fmt = float_format(dtype)
    acc = resolve_accumulate(product, dtype, accumulate)
    ho, wo = int(out_hw[0]), int(out_hw[1])
    h, w = int(in_hw[0]), int(in_hw[1])
    if ho == 1 and wo == 1:
        eps = scale_error([h * w], fmt)
        note = None
        if fmt is not FLOAT32 and h * w > 1:
            note = (f"within budget only because of the 1x1 path (scale 1/(H*W) = 1/{h * w} "
                    f"rounded to {fmt.name}, relative error {eps:.3g})")
        return ProductPath(
            "global-1x1",
            f"out = gradOutput x fill(1/(H*W)) with the fill rounded to {fmt.name}",
            acc, 0, fmt, eps, note,
        )
    sizes = _window_products(out_hw, in_hw)
    if contract.product(product).accumulate == "float32":
        return ProductPath(
            "fp32-atomic",
            "terms g * fl32(1/(kh*kw)) accumulated in "
            f"{acc.name}, one round-to-nearest-even to {fmt.name}",
            acc, 1, FLOAT32, scale_error(sizes, FLOAT32),
        )
    eps = scale_error(sizes, fmt)
    note = None
    if fmt is not FLOAT32:
        note = (f"within budget only because of the matmul path (weights 1/(kh*kw) rounded "
                f"to {fmt.name}, relative error {eps:.3g})")
    return ProductPath(
        "matmul",
        f"Mul by weights 1/(kh*kw) and two batch matmuls in {acc.name} "
        f"(intermediates rounded to {fmt.name})",
        acc, 2, fmt, eps, note,
    )


@dataclass(frozen=True)
class BudgetModel:
    """The budget coefficients of one case: E = coef * m + floor, where coef and floor
    depend on the element only through k = counts_h[h] * counts_w[w].

    Kept separable (two 1-D count vectors) so a plane of any size costs nothing until a
    row/column window of it is asked for.
    """

    fmt: FloatFormat  # output format
    path: ProductPath
    c: float
    atol: float
    counts_h: np.ndarray  # windows covering each input row, int64 (H,)
    counts_w: np.ndarray  # windows covering each input column, int64 (W,)

    @property
    def acc_overflow(self) -> float:
        """Sum-of-magnitudes at or above which a partial sum may overflow the accumulator."""
        return self.path.accumulate.overflow_threshold

    def k(self, rows: slice = slice(None), cols: slice = slice(None)) -> np.ndarray:
        """Terms reaching each element of the (rows, cols) window of a plane (int64)."""
        return np.multiply.outer(self.counts_h[rows], self.counts_w[cols])

    def coef(self, rows: slice = slice(None), cols: slice = slice(None), *,
             with_scale: bool = True) -> np.ndarray:
        """(c*k + r) * u_acc (+ eps_scale): the multiplier of m, float64 (rows, cols)."""
        u = self.path.accumulate.unit_roundoff
        res = self.k(rows, cols).astype(np.float64)
        res *= self.c * u
        res += self.path.extra_roundings * u + (self.path.scale_error if with_scale else 0.0)
        return res

    def floor(self, rows: slice = slice(None), cols: slice = slice(None)) -> np.ndarray:
        """c * k * eta_acc + atol: the absolute part (underflow of the terms), float64."""
        res = self.k(rows, cols).astype(np.float64)
        res *= self.c * self.path.accumulate.smallest_subnormal
        res += self.atol
        return res

    def extra(self, m: np.ndarray, rows: slice = slice(None), cols: slice = slice(None), *,
              with_scale: bool = True) -> np.ndarray:
        """E for m shaped (..., rows, cols); with_scale=False leaves out eps_scale * m."""
        res = np.multiply(m, self.coef(rows, cols, with_scale=with_scale))
        res += self.floor(rows, cols)
        return res


def budget_model(
    product: str,
    dtype: str,
    out_hw: tuple[int, int],
    in_hw: tuple[int, int],
    *,
    c: float,
    accumulate: str | None = None,
    atol: float = 0.0,
) -> BudgetModel:
    """The budget model of one case (cheap: 1-D window counts only)."""
    path = product_path(product, dtype, out_hw, in_hw, accumulate)
    counts_h = spread_plan(int(out_hw[0]), int(in_hw[0])).counts
    counts_w = spread_plan(int(out_hw[1]), int(in_hw[1])).counts
    return BudgetModel(float_format(dtype), path, float(c), float(atol), counts_h, counts_w)


def element_budget(reach: np.ndarray, extra: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """The budget ulp_out(|g| + E) / 2 + E, from reach = |g| + E and E (float64 arrays).

    The one home of the formula: the comparison calls it chunk by chunk, `budget` on a
    whole array.
    """
    res = half_ulp(reach, fmt)
    res += extra
    return res


def budget(
    golden: np.ndarray,
    grad_output: np.ndarray,
    product: str,
    dtype: str,
    *,
    c: float,
    accumulate: str | None = None,
    atol: float = 0.0,
) -> np.ndarray:
    """Whole-array budget of a case (float64, golden's shape): for tests and studies.

    The comparison computes the same thing chunk by chunk.
    """
    from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward

    g = np.asarray(golden, dtype=np.float64)
    in_hw = (int(g.shape[-2]), int(g.shape[-1]))
    out_hw = (int(grad_output.shape[-2]), int(grad_output.shape[-1]))
    model = budget_model(product, dtype, out_hw, in_hw, c=c, accumulate=accumulate, atol=atol)
    m = backward(grad_output, in_hw, absolute=True)
    extra = model.extra(m)
    with np.errstate(invalid="ignore"):
        return element_budget(np.abs(g) + extra, extra, model.fmt)
