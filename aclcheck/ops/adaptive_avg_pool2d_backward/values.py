"""The values of aclnnAdaptiveAvgPool2dBackward's inputs: the distributions of its
families, exact-integer and tie-making gradOutputs (aclcheck.ops.adaptive.ties),
and the logical values of each input role of a case."""

from __future__ import annotations

import math

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.values import other_values
from aclcheck.dtypes import FLOAT_FORMATS, round_to
from aclcheck.ops.adaptive.ties import tie_grad
from aclcheck.ops.adaptive.values import AVERAGE_DISTRIBUTIONS, drawn_floats, role_rng
from aclcheck.ops.adaptive.windows import spread_plan

#: Value distributions: the average-pooling operators' (aclcheck.ops.adaptive.values).
DISTRIBUTIONS: tuple[str, ...] = AVERAGE_DISTRIBUTIONS


def _exact_int_grad(rng: np.random.Generator, grad_shape: tuple[int, ...],
                    in_hw: tuple[int, int]) -> np.ndarray:
    """gradOutput with every term g / (kh * kw) a small integer, so the golden is exact."""
    ho, wo = grad_shape[-2:]
    kh = spread_plan(ho, in_hw[0]).sizes.astype(np.float64)
    kw = spread_plan(wo, in_hw[1]).sizes.astype(np.float64)
    t = rng.integers(-2, 3, math.prod(grad_shape)).reshape(grad_shape).astype(np.float64)
    return t * np.multiply.outer(kh, kw)


def tensor_values(case: Case, name: str) -> np.ndarray:
    """The logical values of grad_output or self, in that tensor's numpy dtype."""
    desc = case.tensor_desc(name)
    shape, dtype = tuple(desc.shape), desc.dtype
    rng = role_rng(case, name)
    if dtype not in FLOAT_FORMATS:
        return other_values(rng, shape, dtype)
    dist = case.distribution if name == "grad_output" else "uniform"
    ties = None
    if dist == "ties":  # exact rounding ties of the output dtype (see ties.py)
        ties = tie_grad(rng, shape, tuple(case.self_shape[-2:]), FLOAT_FORMATS[dtype])
        dist = "ties" if ties is not None else "exact-int"  # no tie layout for this shape
    if ties is not None:
        vals = ties
    elif dist == "exact-int":
        if len(shape) >= 2 and len(case.self_shape) >= 2:
            vals = _exact_int_grad(rng, shape, tuple(case.self_shape[-2:]))
        else:
            vals = rng.integers(-2, 3, math.prod(shape)).reshape(shape).astype(np.float64)
    else:
        vals = drawn_floats(rng, shape, dist, dtype)
    with np.errstate(over="ignore"):
        return round_to(vals, FLOAT_FORMATS[dtype])


