"""Kernels of aclnnAdaptiveAvgPool3dBackward for the tests: bit-exact emulations of the
products' paths (docs/contract-3d.md §6) and deliberately broken ones.

Each kernel has the adapter signature `fn(grad_output, self) -> out`: numpy arrays of the
case dtype (ml_dtypes.bfloat16 for bf16), 4-D (C, D, H, W) or 5-D (N, C, D, H, W), any
strides; the output has self's shape and dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import ml_dtypes
import numpy as np

from aclcheck.dtypes import FLOAT_FORMATS, correctly_rounded, ulp
from aclcheck.judging.case.exactness import is_tie
from aclcheck.ops.adaptive.windows import window_bounds

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]
Bounds = Callable[[int, int], tuple[np.ndarray, np.ndarray]]
F32 = np.float32


def _exact_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    return window_bounds(out_size, in_size)


def _float_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """floor(float32(i*in)/out), ceil(float32((i+1)*in)/out): MindSpore CPU's bounds."""
    i = np.arange(out_size, dtype=np.int64)
    start = np.floor((i * in_size).astype(F32) / F32(out_size)).astype(np.int64)
    end = np.ceil(((i + 1) * in_size).astype(F32) / F32(out_size)).astype(np.int64)
    return np.clip(start, 0, in_size), np.clip(end, 0, in_size)


def _round(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float32/float64 values rounded once (RNE) to the output dtype."""
    name = np.dtype(dtype).name if np.dtype(dtype) != ml_dtypes.bfloat16 else "bfloat16"
    if name == "float32" and x.dtype == np.float32:
        return x
    return correctly_rounded(x, FLOAT_FORMATS[name]).astype(dtype)


def _cells(do: int, ho: int, wo: int, order: str, seed: int) -> Iterator[tuple[int, int, int]]:
    cells = [(a, b, c) for a in range(do) for b in range(ho) for c in range(wo)]
    if order == "reversed":
        cells.reverse()
    elif order == "shuffled":
        np.random.default_rng(seed).shuffle(cells)
    yield from cells


def _global(g: np.ndarray, self_: np.ndarray) -> np.ndarray:
    """out = RN_T(g * RN_T(fl32(fl64(1/n)))): every product's 1x1x1 path."""
    n = math.prod(self_.shape[-3:])
    factor = _round(np.asarray([F32(1.0 / n)], dtype=F32), g.dtype).astype(np.float64)[0]
    prod = g.astype(np.float64) * factor  # exact: two 24-bit significands fit in 53
    return _round(np.broadcast_to(prod, self_.shape), g.dtype)


def a2_kernel(order: str = "window", seed: int = 0, bounds: Bounds = _exact_bounds,
              convert: Callable[[np.ndarray, np.dtype], np.ndarray] = _round,
              divisor_axes: tuple[int, ...] = (0, 1, 2)) -> Kernel:
    """The A2/A3 paths: global as above; otherwise terms fl32(g * fl32(1/k)) added in FP32
    from +0 in cell order (window: (od, oh, ow), the deterministic order; shuffled: one
    order atomics may take), then `convert` to the dtype. bounds / divisor_axes inject
    bugs (window bounds; a divisor that forgets an axis)."""

    def kernel(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
        g = np.asarray(grad_output)
        do, ho, wo = g.shape[-3:]
        d, h, w = self.shape[-3:]
        if (do, ho, wo) == (1, 1, 1) and bounds is _exact_bounds:
            return _global(g, self)
        b = [bounds(o, i) for o, i in ((do, d), (ho, h), (wo, w))]
        out = np.zeros(self.shape, dtype=F32)
        g32 = g.astype(F32)
        for cd, ch, cw in _cells(do, ho, wo, order, seed):
            (d0, d1), (h0, h1), (w0, w1) = ((int(s[c]), int(e[c])) for (s, e), c in
                                            zip(b, (cd, ch, cw), strict=True))
            sizes = (d1 - d0, h1 - h0, w1 - w0)
            k = math.prod(sizes[a] for a in divisor_axes)
            with np.errstate(invalid="ignore", over="ignore"):
                term = g32[..., cd, ch, cw] * (F32(1) / F32(k))
                out[..., d0:d1, h0:h1, w0:w1] += term[..., None, None, None]
        return convert(out, g.dtype)

    return kernel


window_order = a2_kernel()
reversed_order = a2_kernel("reversed")


def shuffled(seed: int) -> Kernel:
    return a2_kernel("shuffled", seed)


def _ties_away(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round half away from zero (a wrong final conversion, visible only at ties)."""
    name = "bfloat16" if np.dtype(dtype) == ml_dtypes.bfloat16 else np.dtype(dtype).name
    fmt = FLOAT_FORMATS[name]
    x64 = x.astype(np.float64)
    near = correctly_rounded(x64, fmt)
    with np.errstate(invalid="ignore"):
        up = is_tie(x64, fmt) & (np.abs(near) < np.abs(x64))
        away = near + np.copysign(ulp(near, fmt), x64)
    return np.where(up, away, near).astype(dtype)


float_bounds = a2_kernel(bounds=_float_bounds)
ties_away = a2_kernel(convert=_ties_away)
forgets_kd = a2_kernel(divisor_axes=(1, 2))


def fp16_accumulation(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """PyTorch CPU's model: delta = RN_T(RN_T(RN_T(g/kd)/kh)/kw), out = RN_T(out + delta)
    in (od, oh, ow) order: 16-bit dtypes accumulate in the dtype."""
    g = np.asarray(grad_output)
    dt = g.dtype
    do, ho, wo = g.shape[-3:]
    d, h, w = self.shape[-3:]
    b = [_exact_bounds(o, i) for o, i in ((do, d), (ho, h), (wo, w))]
    out = np.zeros(self.shape, dtype=dt)
    for cd, ch, cw in _cells(do, ho, wo, "window", 0):
        (d0, d1), (h0, h1), (w0, w1) = ((int(s[c]), int(e[c])) for (s, e), c in
                                        zip(b, (cd, ch, cw), strict=True))
        delta = g[..., cd, ch, cw]
        for k in (d1 - d0, h1 - h0, w1 - w0):
            delta = _round(delta.astype(np.float64) / k, dt)
        region = out[..., d0:d1, h0:h1, w0:w1].astype(np.float64)
        out[..., d0:d1, h0:h1, w0:w1] = _round(region + delta.astype(np.float64)[
            ..., None, None, None], dt)
    return out


# -- DOUBLE (contract code: the 1x1x1 path only) ----------------------------------------------


def _double_fill(factor: Callable[[int, int, int], float]) -> Kernel:
    """A DOUBLE 1x1x1 kernel: out = g * factor(D, H, W), the product rounded once in
    double, broadcast over each plane (gradOutput (..., 1, 1, 1))."""

    def kernel(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
        g = np.asarray(grad_output, dtype=np.float64)
        d, h, w = (int(v) for v in self.shape[-3:])
        return np.ascontiguousarray(np.broadcast_to(g * factor(d, h, w), self.shape))

    return kernel


#: the vendor's path: 1.0/(D*H*W) in double, narrowed to float, widened back exactly
double_global = _double_fill(lambda d, h, w: float(F32(1.0 / (d * h * w))))
#: the exact double factor: correct too (closer than the product)
double_exact_factor = _double_fill(lambda d, h, w: 1.0 / (d * h * w))
#: broken: the factor rounded to float16 (relative error up to 2^-11)
double_fp16_factor = _double_fill(lambda d, h, w: float(np.float16(F32(1.0 / (d * h * w)))))
#: broken: the divisor forgets W
double_dh_divisor = _double_fill(lambda d, h, w: float(F32(1.0 / (d * h))))


def double_three_divisions(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """PyTorch CPU's float64 1x1x1 backward: g / D / H / W, three double roundings."""
    g = np.asarray(grad_output, dtype=np.float64)
    d, h, w = (int(v) for v in self.shape[-3:])
    return np.ascontiguousarray(np.broadcast_to(g / d / h / w, self.shape))
