"""Input values of aclnnAdaptiveAvgPool3dBackward cases.

The value distributions are the 2D operator's (the vendor suites' random ones plus exact,
special-value and overflow-edge ones); what is 3D here is where exact values come from
(window volumes kd*kh*kw) and how rounding ties are laid out (the 2D tie layout on every
D plane, D an identity axis).
"""

from __future__ import annotations

import math

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.values import other_values
from aclcheck.dtypes import FLOAT_FORMATS, round_to
from aclcheck.ops.adaptive.ties import tie_grad
from aclcheck.ops.adaptive.values import AVERAGE_DISTRIBUTIONS, drawn_floats, role_rng
from aclcheck.ops.adaptive.windows import spread_plan

#: Value distributions: the average-pooling operators' (the 2D operator's too).
DISTRIBUTIONS: tuple[str, ...] = AVERAGE_DISTRIBUTIONS


def _spatial(shape: tuple[int, ...]) -> tuple[int, int, int] | None:
    if len(shape) < 3:
        return None
    return tuple(int(v) for v in shape[-3:])  # type: ignore[return-value]


def _exact_int_grad(rng: np.random.Generator, grad_shape: tuple[int, ...],
                    in_dhw: tuple[int, int, int]) -> np.ndarray:
    """gradOutput with every term g / (kd*kh*kw) a nonzero small integer: the golden is
    exact."""
    sizes = [spread_plan(int(o), int(i)).sizes.astype(np.float64)
             for o, i in zip(grad_shape[-3:], in_dhw, strict=True)]
    vol = np.multiply.outer(np.multiply.outer(sizes[0], sizes[1]), sizes[2])
    # nonzero: a one-element gradOutput must not make an all-zero golden (no signal)
    n = math.prod(grad_shape)
    t = (rng.integers(1, 3, n) * rng.choice((-1, 1), n)).reshape(grad_shape).astype(np.float64)
    return t * vol


def tensor_values(case: Case, role: str) -> np.ndarray:
    """The logical values of an input role (grad_output or self) in its numpy dtype."""
    desc = case.tensor_desc(role)
    shape, dtype = tuple(desc.shape), desc.dtype
    rng = role_rng(case, role)
    if dtype not in FLOAT_FORMATS:
        return other_values(rng, shape, dtype)
    fmt = FLOAT_FORMATS[dtype]
    dist = case.distribution if role == "grad_output" else "uniform"
    in_dhw, out_dhw = _spatial(tuple(case.self_shape)), _spatial(shape)
    vals = None
    if dist == "ties" and in_dhw is not None and out_dhw is not None:
        # exact ties of the output dtype: the 2D layout on every D plane (D identity)
        if in_dhw[0] == out_dhw[0]:
            vals = tie_grad(rng, shape, in_dhw[1:], fmt)
        dist = "ties" if vals is not None else "exact-int"  # no tie layout for this shape
    if vals is not None:
        pass
    elif dist == "exact-int":
        if in_dhw is not None and out_dhw is not None and min(in_dhw) > 0:
            vals = _exact_int_grad(rng, shape, in_dhw)
        else:
            vals = rng.integers(-2, 3, math.prod(shape)).reshape(shape).astype(np.float64)
    else:
        vals = drawn_floats(rng, shape, dist, dtype)
    with np.errstate(over="ignore"):
        return round_to(vals, fmt)
