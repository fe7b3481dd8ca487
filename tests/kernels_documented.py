"""Correct kernels of every documented product path, each one function told its call's
product and overflow mode (`product=`, `overflow_mode=`: aclcheck passes them to a
callable whose signature names them, docs/verify.md).

2-D operator (docs/contract.md sections 6 and 10):
- Atlas A2/A3: the tiled FLOAT32 atomic-add kernel (cores adding in a random order), one
  round-to-nearest-even to the dtype; IEEE (inf-nan) by default;
- Atlas training/inference: Mul by the weights, two batch matmuls fed FLOAT16 (FLOAT32
  calls included: cubeMathType ALLOW_FP32_DOWN_PRECISION), FLOAT32 sums, saturating
  casts; saturation mode (their only one);
- every product, Ho = Wo = 1: the fill path (1/(H·W) rounded to float, then the dtype).

3-D operator (docs/contract-3d.md section 6): A2/A3 the FLOAT32 atomic kernel (a random
order of the cells), every product the 1x1x1 fill path; Atlas training/inference run only
the fill path and reject the rest (a raise, which is how a callable rejects).

`documented_slow` is `documented` with the A2/A3 windowed path written as plain Python
loops over every term (a debug build, a port of the reference): the same results, about
ten times slower (its largest default-suite call, 47 617 terms, takes 0.14 s against the
vectorised kernel's milliseconds). tests/test_cpu_watch.py holds a kernel slower still
(0.8 s of CPU on one call, past the spinning rule's floor), which passes too.

Each kernel converts its result as the overflow mode it is told does: saturation turns
inf into the largest finite value of its sign and NaN into 0.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from aclcheck.ops.adaptive.windows import window_bounds
from tests import kernels3d
from tests import kernels_hardware as K

F32 = np.float32
MATMUL_PRODUCTS = ("atlas-training", "atlas-inference")


def _saturate(out: np.ndarray, overflow_mode: str) -> np.ndarray:
    """The output as the device's overflow mode leaves it."""
    floating = out.dtype.kind == "f" or out.dtype == ml_dtypes.bfloat16
    if overflow_mode != "saturation" or not floating:
        return out
    big = float(ml_dtypes.finfo(out.dtype).max)
    with np.errstate(invalid="ignore"):
        wide = out.astype(np.float64)
        wide = np.where(np.isinf(wide), np.copysign(big, wide), wide)
        return np.where(np.isnan(wide), 0.0, wide).astype(out.dtype)


def documented(grad_output: np.ndarray, self: np.ndarray, *, product: str,
               overflow_mode: str) -> np.ndarray:
    """aclnnAdaptiveAvgPool2dBackward as `product` documents it (see the module)."""
    if grad_output.shape[-2:] == (1, 1):
        out = K.global_fill(grad_output, self)
    elif product in MATMUL_PRODUCTS:
        out = K.matmul_fp16(grad_output, self)
    else:
        out = K.a2_tiled_shuffled(grad_output, self)
    return _saturate(out, overflow_mode)


def _loops_2d(grad: np.ndarray, self_: np.ndarray) -> np.ndarray:
    """The FLOAT32 atomic path, one term at a time in Python (order: output cells)."""
    ho, wo = grad.shape[-2:]
    h, w = self_.shape[-2:]
    (sh, eh), (sw, ew) = window_bounds(ho, h), window_bounds(wo, w)
    lead = grad.shape[:-2]
    out = np.zeros(self_.shape, dtype=F32)
    g32 = np.asarray(grad, dtype=F32)
    for plane in np.ndindex(*lead):
        gp, op = g32[plane], out[plane]
        for i in range(ho):
            for j in range(wo):
                k = F32(1) / F32((int(eh[i]) - int(sh[i])) * (int(ew[j]) - int(sw[j])))
                with np.errstate(over="ignore", invalid="ignore"):
                    term = F32(gp[i, j] * k)
                    for y in range(int(sh[i]), int(eh[i])):
                        for x in range(int(sw[j]), int(ew[j])):
                            op[y, x] = F32(op[y, x] + term)
    return K._cast(out, self_.dtype)


def documented_slow(grad_output: np.ndarray, self: np.ndarray, *, product: str,
                    overflow_mode: str) -> np.ndarray:
    """`documented` with the windowed A2/A3 path in plain loops (see the module)."""
    empty = K._empty(grad_output, self)
    if empty is not None:
        return empty
    if grad_output.shape[-2:] != (1, 1) and product not in MATMUL_PRODUCTS:
        return _saturate(_loops_2d(grad_output, self), overflow_mode)
    return documented(grad_output, self, product=product, overflow_mode=overflow_mode)


def documented_3d(grad_output: np.ndarray, self: np.ndarray, *, product: str,
                  overflow_mode: str) -> np.ndarray:
    """aclnnAdaptiveAvgPool3dBackward as `product` documents it (see the module)."""
    g = np.asarray(grad_output)
    if any(d == 0 for d in (*g.shape, *self.shape)):
        return np.zeros(self.shape, dtype=self.dtype)
    if g.shape[-3:] != (1, 1, 1) and product in MATMUL_PRODUCTS:
        raise ValueError(f"{product} runs only the 1x1x1 output (the global path)")
    seed = math.prod(g.shape) + 7
    out = kernels3d.shuffled(seed)(g, self)
    return _saturate(out, overflow_mode)
