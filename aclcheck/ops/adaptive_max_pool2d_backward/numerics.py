"""How Atlas A2/A3 compute aclnnAdaptiveMaxPool2dBackward (docs/contract-maxpool.md §5), as
the error budget and the exactness proof see it.

Two paths, chosen by the shapes:

- scatter-copy (H % Ho == 0 and W % Wo == 0): windows tile the plane, one term per
  position, copied: the output is the golden itself (every term is a value of the dtype).
- fp32-add (otherwise): the terms of a position added in FLOAT32 from +0 in row-major cell
  order (the page promises no order: budgeted as k terms in any order), one
  round-to-nearest-even to the dtype.

No scale multiplies a term, so the exactness proof needs no power-of-two windows: every
element whose terms' sum of magnitudes m stays below 2^24 times the plane's smallest
quantum is exact in FLOAT32 in any order, and its output must be RNE(golden) exactly:
what tells FLOAT32 accumulation from the dtype's own (2048 + 1 + 1 in FLOAT16).
The number of terms k of an element is bounded by the windows covering it (per axis, the
average-pooling table): the indices decide how many of them name it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from aclcheck.cases import Case
from aclcheck.dtypes import (
    FLOAT32,
    JUDGED_FORMATS,
    FloatFormat,
    accumulation_format,
    judged_format,
    quantum,
)
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
from aclcheck.ops.adaptive.windows import spread_plan
from aclcheck.ops.adaptive_max_pool2d_backward import contract
from aclcheck.ops.adaptive_max_pool2d_backward.reference import scatter

COPY = "scatter-copy"
ADD = "fp32-add"
PLANE_AXES = (Axis("h", "row"), Axis("w", "column"))


def resolve_accumulate(product: str, dtype: str, accumulate: str | None = None) -> FloatFormat:
    """The accumulation format: the product's own (FP32) or an override ("float32",
    "input" = the dtype itself, or a compute dtype name)."""
    choice = accumulate if accumulate is not None else contract.product(product).accumulate
    return accumulation_format(choice, dtype)


def product_path(product: str, dtype: str, out_hw: tuple[int, int], in_hw: tuple[int, int],
                 accumulate: str | None = None) -> NumericPath | None:
    """The path `product` takes for a valid call (None: no float format, or a product
    without the operator)."""
    if dtype not in JUDGED_FORMATS or dtype not in contract.product(product).dtypes:
        return None
    fmt = judged_format(dtype)
    acc = resolve_accumulate(product, dtype, accumulate)
    if contract.divisible(out_hw, in_hw):
        return NumericPath(COPY, f"windows tile the plane: each gradient copied to its "
                                 f"position, exactly, in {fmt.name}", acc, 0, FLOAT32, 0.0,
                          scaled=False)
    return NumericPath(ADD, f"gradients of a shared position added in {acc.name} from +0 "
                            f"in cell order, one round-to-nearest-even to {fmt.name}",
                       acc, 0, FLOAT32, 0.0, scaled=False)


def paths(product: str, dtype: str, accumulate: str | None = None
          ) -> tuple[NumericPath | None, NumericPath]:
    """(adding path, copy path) of a product and dtype on example shapes (a tolerance
    table): 2x2 over 3x3 adds, 1x1 over 3x3 copies."""
    copy = product_path(product, dtype, (1, 1), (3, 3), accumulate)
    if copy is None:
        raise ValueError(f"no numeric path for dtype {dtype!r} on {product}")
    return product_path(product, dtype, (2, 2), (3, 3), accumulate), copy


def exact_plan(path: NumericPath, fmt: FloatFormat, in_hw: tuple[int, int],
               lead: int) -> ExactPlan | None:
    """Which elements the path computes exactly: every element whose sum fits the
    accumulation (no scale, no window condition); the copy path's elements always (one
    term, a value of the dtype). None for FLOAT32 outputs (judged by the budget)."""
    if fmt.precision >= FLOAT32.precision:
        return None
    ok = AxisTables((None,) * lead + tuple(np.ones(n, dtype=bool) for n in in_hw))
    single = ok if path.name == COPY else None
    return ExactPlan(fmt, path.accumulate, ok, single, 1)


@dataclass(frozen=True)
class MaxPoolNumerics:
    """The reference on a case's inputs per block of the output's leading axes (N, C): m
    (the scatter of |gradOutput|) and each plane's smallest gradOutput quantum."""

    in_hw: tuple[int, int]

    def magnitudes(self, inputs: Mapping[str, np.ndarray], block: Block) -> np.ndarray:
        g, idx = np.asarray(inputs["grad_output"]), np.asarray(inputs["indices"])
        if block:
            g, idx = g[block], idx[block]
        return scatter(g, idx, self.in_hw, absolute=True)

    def quanta(self, inputs: Mapping[str, np.ndarray], block: Block) -> np.ndarray:
        g = np.asarray(inputs["grad_output"])
        if block:
            g = g[block]
        planes = math.prod(g.shape[:-2])
        if g.shape[-1] * g.shape[-2] == 0:
            return np.full(planes, np.inf)
        return quantum(g.astype(np.float64)).reshape(planes, -1).min(axis=1)


def axis_names(rank: int) -> tuple[str, ...]:
    """Names of an output's axes (NCHW or CHW), () for other ranks."""
    return {4: ("n", "c", "h", "w"), 3: ("c", "h", "w")}.get(rank, ())


def numeric_model(product: str, dtype: str, grad_shape: tuple[int, ...],
                  in_hw: tuple[int, int], accumulate: str | None = None
                  ) -> NumericModel | None:
    """What the comparison needs for an output of this shape (None: nothing to judge)."""
    if len(grad_shape) < 3 or min(grad_shape) <= 0 or min(in_hw) <= 0:
        return None
    out_hw = (int(grad_shape[-2]), int(grad_shape[-1]))
    hw = (int(in_hw[0]), int(in_hw[1]))
    path = product_path(product, dtype, out_hw, hw, accumulate)
    if path is None:
        return None
    fmt = judged_format(dtype)
    lead = len(grad_shape) - 2
    terms = AxisTables((None,) * lead + tuple(spread_plan(o, i).counts
                                              for o, i in zip(out_hw, hw, strict=True)))
    return NumericModel(product, fmt, path, axis_names(lead + 2), PLANE_AXES, terms,
                        exact_plan(path, fmt, hw, lead), MaxPoolNumerics(hw), (),
                        product_modes(product)[0])


def model(case: Case, accumulate: str | None = None) -> CaseModel:
    """The per-case model judging reads (see aclcheck.judging.case.model)."""
    exp = case.expectation
    numbers = None
    if exp.success and not exp.unwritten:
        grad = tuple(case.tensor_desc("grad_output").shape)
        hw = tuple(case.tensor_desc("self").shape[-2:])
        numbers = numeric_model(case.product, case.dtype, grad, (hw[0], hw[1]), accumulate)
    rules = contract.PRODUCTS.get(case.product)
    return CaseModel(case, exp, rules.dtypes if rules is not None else None,
                     contract.FORMATS, numbers)
