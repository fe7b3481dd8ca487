"""Judging raw arrays of aclnnAdaptiveAvgPool2dBackward without a golden file: tests,
benchmarks and studies hold a gradOutput, a float64 golden and an output, not a case.
`compare` builds the case's numbers from the shapes and runs aclcheck.judging.case.compare."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aclcheck.judging.case.compare import Comparison
from aclcheck.judging.case.compare import compare_output as compare_numbers
from aclcheck.judging.case.default_standard import accumulation
from aclcheck.judging.case.overrides import Overrides
from aclcheck.ops.adaptive_avg_pool2d_backward.numerics import numeric_model
from aclcheck.options import DEFAULT_STANDARD


@dataclass(frozen=True)
class Context:
    """What the comparison needs to know about the case."""

    product: str
    dtype: str  # output dtype name: float16 / float32 / bfloat16
    grad_output: np.ndarray  # logical gradOutput values (any layout): m and the 1x1 path
    in_hw: tuple[int, int]
    accumulate: str | None = None  # "float32" / "input" / a dtype name (--accumulate)


def compare(
    golden: np.ndarray,
    actual: np.ndarray,
    ctx: Context,
    standards: Sequence[str] = (DEFAULT_STANDARD,),
    overrides: Overrides | None = None,
) -> Comparison:
    """Metrics and verdicts of `actual` against the float64 `golden` (same shape), as
    aclcheck.judging.case.compare judges a case of this operator."""
    grad = np.asarray(ctx.grad_output)
    acc = accumulation(ctx.product, ctx.dtype, ctx.accumulate, overrides)
    numbers = numeric_model(ctx.product, ctx.dtype, tuple(grad.shape), ctx.in_hw, acc)
    if numbers is None:
        raise ValueError(f"no numeric comparison for dtype {ctx.dtype!r}")
    return compare_numbers(numbers, {"grad_output": grad}, golden, actual, standards,
                           overrides)
