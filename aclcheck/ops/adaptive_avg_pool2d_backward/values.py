"""The values of aclnnAdaptiveAvgPool2dBackward's inputs: the distributions of its
families, exact-integer and tie-making gradOutputs (aclcheck.ops.adaptive.ties),
and the logical values of each input role of a case."""

from __future__ import annotations

import math

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.values import SPECIAL_DISTS, other_values, random_floats, special_floats
from aclcheck.dtypes import FLOAT_FORMATS, round_to
from aclcheck.ops.adaptive.ties import tie_grad
from aclcheck.ops.adaptive.windows import spread_plan

#: Value distributions. The first four are the vendor suites' random ones; the rest are
#: special-purpose (exact golden, IEEE special values, overflow edge).
DISTRIBUTIONS: tuple[str, ...] = (
    "normal",
    "uniform",
    "small",
    "outliers",
    "exact-int",
    "special",
    "inf-fill",
    "nan-fill",
    "subnormal",
    "near-max",
    "ones",
    "ties",
)


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
    stream = {"grad_output": 1, "self": 2}[name]
    rng = np.random.default_rng([case.seed, stream])
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
    elif dist in SPECIAL_DISTS:
        vals = special_floats(rng, shape, dist, dtype)
    else:
        vals = random_floats(rng, shape, dist, dtype)
    with np.errstate(over="ignore"):
        return round_to(vals, FLOAT_FORMATS[dtype])


