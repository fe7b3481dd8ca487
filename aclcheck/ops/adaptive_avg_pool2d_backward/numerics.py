"""aclnnAdaptiveAvgPool2dBackward's numbers: the path each product takes
(docs/contract.md section 6), the per-case model judging reads (built once: window
tables, terms per element, the exactness plan, the reference on |gradOutput|), and the
raw-array helpers tests and studies use (budget, exact_ties).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from aclcheck.cases import Case
from aclcheck.dtypes import (
    FLOAT16,
    FLOAT32,
    FLOAT_FORMATS,
    FloatFormat,
    accumulation_format,
    float_format,
    plane_quanta,
    scale_error,
    scale_error_of,
)
from aclcheck.judging.case.budget import BudgetModel, element_budget
from aclcheck.judging.case.exactness import count_exact_ties as exact_ties_of
from aclcheck.judging.case.model import (
    Axis,
    AxisTables,
    Block,
    CaseModel,
    ExactPlan,
    NumericModel,
    NumericPath,
)
from aclcheck.judging.case.overflow import product_modes
from aclcheck.ops.adaptive.windows import SpreadPlan, pow2_positions, spread_plan
from aclcheck.ops.adaptive_avg_pool2d_backward import contract
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward


def resolve_accumulate(product: str, dtype: str, accumulate: str | None = None) -> FloatFormat:
    """The accumulation format: the product's own (contract.PRODUCTS) or an override.

    accumulate: None (the product's), "float32", "input" (the input dtype), or a compute
    dtype name or alias (fp16, bf16, ...).
    """
    choice = accumulate if accumulate is not None else contract.product(product).accumulate
    return accumulation_format(choice, dtype)


def _window_products(ph: SpreadPlan, pw: SpreadPlan) -> tuple[int, ...]:
    """The distinct window areas kh * kw of a plane."""
    rows = {int(k) for k in np.unique(ph.sizes)}
    cols = {int(k) for k in np.unique(pw.sizes)}
    return tuple(sorted({a * b for a in rows for b in cols}))


def _path(product: str, dtype: str, ph: SpreadPlan, pw: SpreadPlan,
          accumulate: str | None) -> NumericPath:
    fmt = float_format(dtype)
    acc = resolve_accumulate(product, dtype, accumulate)
    if ph.out_size == 1 and pw.out_size == 1:
        h, w = ph.in_size, pw.in_size
        eps = scale_error([h * w], fmt)
        note = None
        if fmt is not FLOAT32 and h * w > 1:
            note = (f"within budget only because of the 1x1 path (scale 1/(H*W) = 1/{h * w} "
                    f"rounded to {fmt.name}, relative error {eps:.3g})")
        return NumericPath(
            "global-1x1",
            f"out = gradOutput x fill(1/(H*W)) with the fill rounded to {fmt.name}",
            acc, 0, fmt, eps, note,
        )
    sizes = _window_products(ph, pw)
    if contract.product(product).accumulate == "float32":
        return NumericPath(
            "fp32-atomic",
            "terms g * fl32(1/(kh*kw)) accumulated in "
            f"{acc.name}, one round-to-nearest-even to {fmt.name}",
            acc, 1, FLOAT32, scale_error_of(sizes, FLOAT32),
        )
    eps = scale_error_of(sizes, fmt)
    note = None
    if fmt is not FLOAT32:
        note = (f"within budget only because of the matmul path (weights 1/(kh*kw) rounded "
                f"to {fmt.name}, relative error {eps:.3g})")
        return NumericPath(
            "matmul",
            f"Mul by weights 1/(kh*kw) and two batch matmuls in {acc.name} "
            f"(intermediates rounded to {fmt.name})",
            acc, 2, fmt, eps, note,
        )
    # FLOAT32 on these products: both matmuls are fed FLOAT16 (cubeMathType
    # ALLOW_FP32_DOWN_PRECISION): the Mul's result and the first matmul's result are
    # rounded to FLOAT16 (saturating past 65504), the products summed in FLOAT32
    inner = None if acc is FLOAT16 else FLOAT16
    return NumericPath(
        "matmul",
        f"Mul by weights 1/(kh*kw) in {fmt.name}, two batch matmuls fed FLOAT16 "
        f"(the Mul's and the first matmul's results rounded to float16), sums in {acc.name}",
        acc, 2, fmt, eps, note, inner,
    )


def _plans(out_hw: tuple[int, int], in_hw: tuple[int, int]) -> tuple[SpreadPlan, SpreadPlan]:
    return (spread_plan(int(out_hw[0]), int(in_hw[0])),
            spread_plan(int(out_hw[1]), int(in_hw[1])))


def product_path(
    product: str,
    dtype: str,
    out_hw: tuple[int, int],
    in_hw: tuple[int, int],
    accumulate: str | None = None,
) -> NumericPath:
    """The path `product` takes for a case of `dtype` with gradOutput (Ho, Wo) and self
    (H, W): the global 1x1 path, the A2/A3 FP32 atomic path, or the matmul path."""
    return _path(product, dtype, *_plans(out_hw, in_hw), accumulate)


def paths(product: str, dtype: str, accumulate: str | None
          ) -> tuple[NumericPath, NumericPath]:
    """The windowed and the global path of a product and dtype (`aclcheck tolerances`),
    on small example shapes (3x3 <- 2x2 and 3x3 <- 1x1)."""
    return (product_path(product, dtype, (2, 2), (3, 3), accumulate),
            product_path(product, dtype, (1, 1), (3, 3), accumulate))


def exact_plan(path: NumericPath, fmt: FloatFormat, ph: SpreadPlan, pw: SpreadPlan,
               lead: int) -> ExactPlan | None:
    """Which elements the path computes exactly (see aclcheck.judging.case.exactness), or
    None when none can be (FLOAT32 output, or no row or no column with power-of-two
    windows only). `lead`: the number of leading axes of the output."""
    if fmt is FLOAT32:
        return None
    rows, cols = pow2_positions(ph), pow2_positions(pw)
    if not rows.any() or not cols.any():
        return None
    area = int(ph.sizes.max()) * int(pw.sizes.max())
    if area <= 0 or 1.0 / area < path.scale_format.smallest_subnormal:
        return None
    single = None
    if path.name == "global-1x1" or path.accumulate is fmt:
        single = AxisTables((None,) * lead + (rows & (ph.counts == 1), cols & (pw.counts == 1)))
    return ExactPlan(fmt, path.accumulate, AxisTables((None,) * lead + (rows, cols)), single,
                     area)


@dataclass(frozen=True)
class Numerics2D:
    """The reference on a case's inputs: m (the backward of |gradOutput|) and the quanta
    of gradOutput's planes, per block of the leading axes."""

    in_hw: tuple[int, int]
    fmt: FloatFormat  # the input (= output) format

    def magnitudes(self, inputs: Mapping[str, np.ndarray], block: Block) -> np.ndarray:
        return backward(inputs["grad_output"][block], self.in_hw, absolute=True)

    def quanta(self, inputs: Mapping[str, np.ndarray], block: Block) -> np.ndarray:
        grad = np.asarray(inputs["grad_output"][block])
        return plane_quanta(grad, int(np.prod(grad.shape[:-2])), self.fmt)


#: the rows and columns of a plane: H and W
PLANE_AXES = (Axis("h", "row"), Axis("w", "column"))


def axis_names(rank: int) -> tuple[str, ...]:
    """Names of an output's axes (NCHW or CHW), () for other ranks."""
    return {4: ("n", "c", "h", "w"), 3: ("c", "h", "w")}.get(rank, ())


def numeric_model(product: str, dtype: str, grad_shape: tuple[int, ...],
                  in_hw: tuple[int, int], accumulate: str | None = None
                  ) -> NumericModel | None:
    """What the comparison needs for an output of this shape (None for a dtype without a
    float format). Built from raw shapes, so tests and studies judge arrays directly."""
    if dtype not in FLOAT_FORMATS or len(grad_shape) < 2:
        return None
    fmt = float_format(dtype)
    ph, pw = _plans((grad_shape[-2], grad_shape[-1]), in_hw)
    lead = len(grad_shape) - 2
    path = _path(product, dtype, ph, pw, accumulate)
    return NumericModel(product, fmt, path, axis_names(lead + 2), PLANE_AXES,
                        AxisTables((None,) * lead + (ph.counts, pw.counts)),
                        exact_plan(path, fmt, ph, pw, lead),
                        Numerics2D((int(in_hw[0]), int(in_hw[1])), fmt), (ph, pw),
                        product_modes(product)[0])


def model(case: Case, accumulate: str | None = None) -> CaseModel:
    """The per-case model judging reads (see aclcheck.judging.case.model)."""
    exp = case.expectation
    numbers = None
    if exp.success:
        grad = tuple(case.tensor_desc("grad_output").shape)
        hw = tuple(case.tensor_desc("self").shape[-2:])
        numbers = numeric_model(case.product, case.dtype, grad, (hw[0], hw[1]), accumulate)
    rules = contract.PRODUCTS.get(case.product)
    return CaseModel(case, exp, rules.dtypes if rules is not None else None,
                     contract.FORMATS, numbers)


# -- raw arrays (tests, studies, benchmarks) ------------------------------------------------


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
    """The budget model of a case with gradOutput (Ho, Wo) and self (H, W)."""
    ph, pw = _plans(out_hw, in_hw)
    path = _path(product, dtype, ph, pw, accumulate)
    return BudgetModel(float_format(dtype), path, float(c), float(atol),
                       AxisTables((ph.counts, pw.counts)))


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
    g = np.asarray(golden, dtype=np.float64)
    in_hw = (int(g.shape[-2]), int(g.shape[-1]))
    out_hw = (int(grad_output.shape[-2]), int(grad_output.shape[-1]))
    model = budget_model(product, dtype, out_hw, in_hw, c=c, accumulate=accumulate, atol=atol)
    m = backward(grad_output, in_hw, absolute=True)
    extra = model.extra(m)
    with np.errstate(invalid="ignore"):
        return element_budget(np.abs(g) + extra, extra, model.fmt)


def exact_ties(product: str, dtype: str, grad: np.ndarray, golden: np.ndarray,
               accumulate: str | None = None) -> tuple[int, int]:
    """(elements proven exact, of which exact ties) of one case on its product's path,
    from its gradOutput and golden (whole arrays: small cases)."""
    g = np.asarray(golden)
    numbers = numeric_model(product, dtype, np.shape(grad), (g.shape[-2], g.shape[-1]),
                            accumulate)
    if numbers is None:
        return 0, 0
    return exact_ties_of(numbers, {"grad_output": np.asarray(grad)}, g)
