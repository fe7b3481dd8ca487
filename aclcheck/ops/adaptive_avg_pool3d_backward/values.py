"""Ids and input values of aclnnAdaptiveAvgPool3dBackward cases.

The value distributions are the 2D operator's (the vendor suites' random ones plus exact,
special-value and overflow-edge ones); what is 3D here is where exact values come from
(window volumes kd*kh*kw) and how rounding ties are laid out (the 2D tie layout on every
D plane, D an identity axis).
"""

from __future__ import annotations

import math

import numpy as np

from aclcheck.cases import (
    DISTRIBUTIONS,
    NUMPY_DTYPES,
    _random_floats,
    _special_floats,
    dtype_tag,
)
from aclcheck.dtypes import FLOAT_FORMATS, round_to
from aclcheck.layouts import LAYOUT_TAGS
from aclcheck.ops.adaptive_avg_pool3d_backward import contract
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool3d_backward.reference import plans, window_volumes
from aclcheck.ties import tie_grad

__all__ = ["DISTRIBUTIONS", "make_id", "shape_tag", "tensor_values"]

#: Product tags in case ids (the hardware products' tags).
PRODUCT_TAGS: dict[str, str] = {"atlas-training": "train", "atlas-inference": "infer",
                                "atlas-a2": "a2", "atlas-a3": "a3"}
#: Random-number stream of each input role (independent draws per tensor).
STREAMS: dict[str, int] = {"grad_output": 1, "self": 2}


def shape_tag(shape: tuple[int, ...]) -> str:
    """n2c3d4h17w9 for 5-D, c3d4h17w9 for 4-D, s5x6 for other ranks."""
    if len(shape) == 5:
        return "n{}c{}d{}h{}w{}".format(*shape)
    if len(shape) == 4:
        return "c{}d{}h{}w{}".format(*shape)
    return "s" + "x".join(str(d) for d in shape)


def make_id(product: str, dtype: str, fmt: str, label: str, self_shape: tuple[int, ...],
            grad_shape: tuple[int, ...], distribution: str, layout: str = "contiguous") -> str:
    """Readable, stable id, e.g. a2-bf16-NCDHW-nondiv0-n2c3d5h7w9-o3x4x5-normal."""
    tag = PRODUCT_TAGS.get(product, product)
    out = "x".join(str(d) for d in grad_shape[-contract.SPATIAL_RANK:])
    parts = [tag, dtype_tag(dtype), fmt, label, shape_tag(self_shape), f"o{out}", distribution]
    if LAYOUT_TAGS.get(layout):
        parts.append(LAYOUT_TAGS[layout])
    return "-".join(parts)


def _spatial(shape: tuple[int, ...]) -> tuple[int, int, int] | None:
    if len(shape) < 3:
        return None
    return tuple(int(v) for v in shape[-3:])  # type: ignore[return-value]


def _exact_int_grad(rng: np.random.Generator, grad_shape: tuple[int, ...],
                    in_dhw: tuple[int, int, int]) -> np.ndarray:
    """gradOutput with every term g / (kd*kh*kw) a small integer: the golden is exact."""
    vol = window_volumes(plans(tuple(grad_shape[-3:]), in_dhw))
    t = rng.integers(-2, 3, math.prod(grad_shape)).reshape(grad_shape).astype(np.float64)
    return t * vol


def _other_dtype(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    n = math.prod(shape)
    if dtype == "float64":
        return rng.uniform(-5.0, 5.0, n).reshape(shape)
    if dtype == "bool":
        return rng.integers(0, 2, n).reshape(shape).astype(np.bool_)
    np_dtype = NUMPY_DTYPES[dtype]
    info = np.iinfo(np_dtype)
    lo, hi = max(info.min, -5), min(info.max, 5)
    return rng.integers(lo, hi + 1, n).reshape(shape).astype(np_dtype)


def tensor_values(case: Case, role: str) -> np.ndarray:
    """The logical values of an input role (grad_output or self) in its numpy dtype."""
    desc = case.tensor_desc(role)
    shape, dtype = tuple(desc.shape), desc.dtype
    rng = np.random.default_rng([case.seed, STREAMS[role]])
    if dtype not in FLOAT_FORMATS:
        return _other_dtype(rng, shape, dtype)
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
    elif dist in ("special", "inf-fill", "nan-fill", "subnormal", "near-max"):
        vals = _special_floats(rng, shape, dist, dtype)
    else:
        vals = _random_floats(rng, shape, dist, dtype)
    with np.errstate(over="ignore"):
        return round_to(vals, fmt)
