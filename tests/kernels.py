"""Kernels for the comparison's tests: correct ones, truncating ones and broken ones.

Each kernel has the adapter signature `fn(grad_output, self) -> out`: inputs are numpy
arrays of the case dtype (ml_dtypes.bfloat16 for bf16), 3-D (C, H, W) or 4-D (N, C, H, W),
possibly non-contiguous views; the output has self's shape and dtype.

CORRECT kernels accumulate in FP32 in different orders and round once (RNE) to the
output dtype: what the A2/A3 products do (docs/contract.md section 6), up to summation order.
TRUNCATING kernels do the same but round toward zero at the end (a rounding-mode bug
visible only in FP16/BF16); ROUNDING kernels convert with other wrong modes (ties away
from zero, toward +inf, a tiny bias first), visible only at exact ties. BROKEN kernels
each carry one bug class of docs/contract.md section 8.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import ml_dtypes
import numpy as np

from aclcheck.ops.adaptive.windows import window_bounds

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]
Bounds = Callable[[int, int], tuple[np.ndarray, np.ndarray]]

F32 = np.float32


# -- building blocks ----------------------------------------------------------------------


def _plan(start: np.ndarray, end: np.ndarray, in_size: int) -> np.ndarray:
    """index[r, p]: the r-th window covering position p, or len(start) (a zero pad slot).

    Works for any monotone bounds, correct or not.
    """
    out_size = len(start)
    pos = np.arange(in_size)
    lo = np.searchsorted(end, pos, side="right")
    hi = np.searchsorted(start, pos, side="right")
    counts = np.maximum(hi - lo, 0)
    depth = int(counts.max()) if in_size and out_size else 0
    r = np.arange(depth)[:, None]
    return np.where(r < counts[None, :], lo[None, :] + r, out_size)


def _exact_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    return window_bounds(out_size, in_size)


def _terms(g32: np.ndarray, sizes_h: np.ndarray, sizes_w: np.ndarray, *,
           reciprocal: bool = False, dtype: type = F32) -> np.ndarray:
    """Terms g / (kh*kw) in `dtype`, padded with one zero row and column (pad slots)."""
    area = np.multiply.outer(sizes_h, sizes_w).astype(dtype)
    g = g32.astype(dtype)
    terms = g * (dtype(1) / area) if reciprocal else g / area
    pad = [(0, 0)] * (terms.ndim - 2) + [(0, 1), (0, 1)]
    return np.pad(terms, pad)


def _gathers(terms: np.ndarray, ih: np.ndarray, iw: np.ndarray,
             order: str = "window") -> Iterator[np.ndarray]:
    """(…, H, W) slices of terms, one per (r_h, r_w) window rank: window order visits the
    windows covering each element in (i, j) order; "column" visits j before i."""
    pairs = [(rh, rw) for rh in range(ih.shape[0]) for rw in range(iw.shape[0])]
    if order == "reversed":
        pairs.reverse()
    elif order == "column":
        pairs.sort(key=lambda p: (p[1], p[0]))
    for rh, rw in pairs:
        yield terms[..., ih[rh], :][..., iw[rw]]


def _geometry(g: np.ndarray, self_: np.ndarray, bounds: Bounds = _exact_bounds):
    ho, wo = g.shape[-2:]
    h, w = self_.shape[-2:]
    sh, eh = bounds(ho, h)
    sw, ew = bounds(wo, w)
    return (eh - sh, ew - sw, _plan(sh, eh, h), _plan(sw, ew, w))


def _sequential(terms: np.ndarray, ih: np.ndarray, iw: np.ndarray, shape: tuple[int, ...],
                order: str = "window", acc: type = F32) -> np.ndarray:
    out = np.zeros(shape, dtype=acc)
    for part in _gathers(terms, ih, iw, order):
        out += part
    return out


def _to_dtype(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round float32 results to the output dtype (round-to-nearest-even; past the
    overflow threshold: inf, as the conversion should)."""
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=F32).astype(dtype)


def _toward_zero(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round results to `dtype` toward zero (truncation): round to a neighbour, then step
    back one ULP where that neighbour is larger in magnitude."""
    x64 = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        r = x64.astype(F32).astype(dtype)
    away = np.abs(r.astype(np.float64)) > np.abs(x64)
    bits = r.view(np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint32).copy()
    bits[away] -= 1  # sign-magnitude: one step toward zero (inf steps back to max)
    return bits.view(dtype)


def _empty_out(g: np.ndarray, self_: np.ndarray) -> np.ndarray | None:
    if 0 in g.shape or 0 in self_.shape:
        return np.zeros(self_.shape, dtype=self_.dtype)
    return None


# -- correct kernels ----------------------------------------------------------------------


def _fp32_kernel(order: str = "window", reciprocal: bool = False) -> Kernel:
    def kernel(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
        empty = _empty_out(grad_output, self)
        if empty is not None:
            return empty
        kh, kw, ih, iw = _geometry(grad_output, self)
        terms = _terms(grad_output.astype(F32), kh, kw, reciprocal=reciprocal)
        if order == "pairwise":
            stack = np.stack(list(_gathers(terms, ih, iw)), axis=-1)
            out = np.add.reduce(stack, axis=-1, dtype=F32)
        else:
            out = _sequential(terms, ih, iw, self.shape, order)
        return _to_dtype(out, self.dtype)

    return kernel


def window_sum(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """FP32 terms g/(kh*kw), summed in window (i, j) order, one RNE rounding."""
    return _fp32_kernel("window")(grad_output, self)


def reversed_order(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """As window_sum, windows summed in reverse order."""
    return _fp32_kernel("reversed")(grad_output, self)


def pairwise(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """FP32 terms stacked per element and summed by np.add.reduce (pairwise/unrolled)."""
    return _fp32_kernel("pairwise")(grad_output, self)


def reciprocal_multiply(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Terms g * fl32(1/(kh*kw)), summed column-major (j before i)."""
    return _fp32_kernel("column", reciprocal=True)(grad_output, self)


def a2_like(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """A2/A3 model: terms g * fl32(1/(kh*kw)) added in FP32 in a random order per element
    (atomic adds), then one RNE rounding to the output dtype."""
    empty = _empty_out(grad_output, self)
    if empty is not None:
        return empty
    kh, kw, ih, iw = _geometry(grad_output, self)
    terms = _terms(grad_output.astype(F32), kh, kw, reciprocal=True)
    stack = np.stack(list(_gathers(terms, ih, iw)), axis=0)
    rng = np.random.default_rng(stack.size)
    order = np.argsort(rng.random(stack.shape), axis=0)
    shuffled = np.take_along_axis(stack, order, axis=0)
    out = np.zeros(self.shape, dtype=F32)
    for part in shuffled:
        out += part
    return _to_dtype(out, self.dtype)


def reference_rounded(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """The float64 reference, correctly rounded to the output dtype."""
    from aclcheck.dtypes import correctly_rounded, float_format
    from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward

    out = backward(grad_output, tuple(self.shape[-2:]))
    name = "bfloat16" if self.dtype == ml_dtypes.bfloat16 else np.dtype(self.dtype).name
    with np.errstate(over="ignore"):
        return correctly_rounded(out, float_format(name)).astype(self.dtype)


def torch_cpu(grad_output: np.ndarray, self: np.ndarray, compute: str | None = None
              ) -> np.ndarray:
    """PyTorch CPU (torch.ops.aten._adaptive_avg_pool2d_backward) in the case dtype, or
    in `compute` ("float32") with the result rounded (RNE) to the case dtype."""
    import torch

    empty = _empty_out(grad_output, self)
    if empty is not None:
        return empty
    dtype = self.dtype
    name = "bfloat16" if dtype == ml_dtypes.bfloat16 else np.dtype(dtype).name
    tdt = getattr(torch, compute or name)
    g = torch.from_numpy(np.ascontiguousarray(grad_output).astype(F32)).to(tdt)
    s = torch.empty(self.shape, dtype=tdt)
    out = torch.ops.aten._adaptive_avg_pool2d_backward(g, s)
    return out.to(torch.float32).numpy().astype(dtype)


def torch_cpu_native(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """PyTorch CPU in the case dtype (fp16/bf16 accumulate in low precision)."""
    return torch_cpu(grad_output, self)


def torch_cpu_float32(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """PyTorch CPU in float32, rounded to the case dtype."""
    return torch_cpu(grad_output, self, "float32")


# -- product-path models (docs/contract.md section 6) -------------------------------------------


def _global_path(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """out = g x fill(1/(H*W)): the fill rounded to the input dtype, one product."""
    h, w = self.shape[-2:]
    scale = np.asarray(F32(1.0) / F32(h * w)).astype(self.dtype).astype(F32)
    out = grad_output.astype(F32) * scale
    return np.broadcast_to(_to_dtype(out, self.dtype), self.shape).copy()


def global_path(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Every product's 1x1 path (scale rounded to the input dtype) where Ho == Wo == 1,
    window_sum elsewhere."""
    if grad_output.shape[-2:] == (1, 1) and _empty_out(grad_output, self) is None:
        return _global_path(grad_output, self)
    return window_sum(grad_output, self)


def matmul_path(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Atlas training/inference model: Mul by weights 1/(kh*kw) (FP32, cast to the input
    dtype), then the two assist matmuls accumulating sequentially in the input dtype."""
    empty = _empty_out(grad_output, self)
    if empty is not None:
        return empty
    if grad_output.shape[-2:] == (1, 1):
        return _global_path(grad_output, self)
    dt = self.dtype
    kh, kw, ih, iw = _geometry(grad_output, self)
    weights = (F32(1) / np.multiply.outer(kh, kw).astype(F32)).astype(dt)
    x = (grad_output.astype(F32) * weights.astype(F32)).astype(dt)
    x = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(0, 1), (0, 0)])
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.zeros(self.shape[:-1] + (x.shape[-1],), dtype=dt)
        for r in range(ih.shape[0]):
            y += x[..., ih[r], :]
        y = np.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, 1)])
        out = np.zeros(self.shape, dtype=dt)
        for r in range(iw.shape[0]):
            out += y[..., iw[r]]
    return out


# -- truncating kernels -------------------------------------------------------------------


def window_sum_truncating(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """window_sum rounded toward zero instead of to nearest even (FP16/BF16 only)."""
    empty = _empty_out(grad_output, self)
    if empty is not None:
        return empty
    kh, kw, ih, iw = _geometry(grad_output, self)
    out = _sequential(_terms(grad_output.astype(F32), kh, kw), ih, iw, self.shape)
    return _toward_zero(out, self.dtype)


def exact_truncating(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """The float64 reference rounded toward zero (truncation of an exact sum)."""
    from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward

    return _toward_zero(backward(grad_output, tuple(self.shape[-2:])), self.dtype)


# -- rounding-mode mutants: the FP32 result converted with the wrong rounding -------------


def _convert(x32: np.ndarray, dtype: np.dtype, mode: str) -> np.ndarray:
    """FP32 values converted to a 16-bit dtype with a rounding mode: "away" (ties away
    from zero), "up" (toward +inf) or "nearest" (RNE); from the RNE result, step one ULP
    (sign-magnitude bits) to the other neighbour where the mode picks it."""
    x = np.asarray(x32, dtype=F32)
    r = x.astype(dtype)
    if np.dtype(dtype).itemsize != 2 or mode == "nearest":
        return r
    x64, r64 = x.astype(np.float64), r.astype(F32).astype(np.float64)
    finite = np.isfinite(x64) & np.isfinite(r64)
    bits = r.view(np.uint16).copy()
    outward = finite & (np.abs(r64) < np.abs(x64))  # RNE went toward zero
    other = bits + np.where(outward, 1, -1).astype(np.uint16)  # the other neighbour
    o64 = other.view(dtype).astype(F32).astype(np.float64)
    inexact = finite & (r64 != x64)
    if mode == "away":
        pick = inexact & outward & (np.abs(o64 - x64) == np.abs(r64 - x64))
    else:  # "up": the larger neighbour
        pick = inexact & (o64 > r64)
    bits[pick] = other[pick]
    return bits.view(dtype)


def _fp32_then(mode: str, bias: float = 0.0) -> Kernel:
    def kernel(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
        empty = _empty_out(grad_output, self)
        if empty is not None:
            return empty
        kh, kw, ih, iw = _geometry(grad_output, self)
        out = _sequential(_terms(grad_output.astype(F32), kh, kw), ih, iw, self.shape)
        if bias:
            out = out + np.abs(out) * F32(bias)
        with np.errstate(over="ignore", invalid="ignore"):
            return _convert(out, self.dtype, mode)

    return kernel


def ties_away(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """ROUNDING: window_sum converted with ties rounded away from zero."""
    return _fp32_then("away")(grad_output, self)


def round_up(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """ROUNDING: window_sum converted rounding toward +inf."""
    return _fp32_then("up")(grad_output, self)


def biased(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """ROUNDING: window_sum plus a tiny consistent bias (|x| * 2**-20, far below the
    output's half ULP) before an RNE conversion: only exact ties move."""
    return _fp32_then("nearest", 2.0**-20)(grad_output, self)


# -- broken kernels: one per bug class ----------------------------------------------------


def _float_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Bounds computed in float32 as i*in*(1/out): off by one where rounding crosses an
    integer (and for any i*in > 2**24)."""
    i = np.arange(out_size, dtype=F32)
    r = F32(1) / F32(out_size)
    start = np.floor(i * F32(in_size) * r).astype(np.int64)
    end = np.ceil((i + F32(1)) * F32(in_size) * r).astype(np.int64)
    return np.clip(start, 0, in_size), np.clip(end, 0, in_size)


def _half_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Bounds computed in float16 arithmetic: i*in/out with every step rounded to FP16
    (wrong once i*in passes 2**11, inf past 65504)."""
    f16 = np.float16
    with np.errstate(over="ignore", invalid="ignore"):
        i = np.arange(out_size).astype(f16)
        start = np.floor(i * f16(in_size) / f16(out_size))
        end = np.ceil((i + f16(1)) * f16(in_size) / f16(out_size))
    return _clean(start, in_size), _clean(end, in_size)


def _int16_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The products i*in and (i+1)*in held in int16 (they wrap past 32767)."""
    i = np.arange(out_size, dtype=np.int64)
    lo = (i * in_size).astype(np.int16).astype(np.int64)
    hi = ((i + 1) * in_size).astype(np.int16).astype(np.int64)
    return np.clip(lo // out_size, 0, in_size), np.clip(-(-hi // out_size), 0, in_size)


def _clean(bound: np.ndarray, in_size: int) -> np.ndarray:
    """Float bounds as indices in [0, in]: inf/NaN clamp to the end."""
    b = np.nan_to_num(bound.astype(np.float64), nan=in_size, posinf=in_size, neginf=0)
    return np.clip(b, 0, in_size).astype(np.int64)


def _floor_end(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """End index floor((i+1)*in/out) instead of the ceiling."""
    start, _ = window_bounds(out_size, in_size)
    i = np.arange(out_size, dtype=np.int64)
    return start, ((i + 1) * in_size) // out_size


def _with_bounds(bounds: Bounds) -> Kernel:
    def kernel(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
        empty = _empty_out(grad_output, self)
        if empty is not None:
            return empty
        kh, kw, ih, iw = _geometry(grad_output, self, bounds)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = _terms(grad_output.astype(F32), kh, kw)
        return _to_dtype(_sequential(terms, ih, iw, self.shape), self.dtype)

    return kernel


def float_bounds(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN: window bounds in float32 arithmetic."""
    return _with_bounds(_float_bounds)(grad_output, self)


def half_bounds(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN: window bounds in float16 arithmetic."""
    return _with_bounds(_half_bounds)(grad_output, self)


def int16_bounds(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN: window-bound products i*in held in 16-bit integers."""
    return _with_bounds(_int16_bounds)(grad_output, self)


def off_by_one_end(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN: end index rounded down (floor) instead of up."""
    return _with_bounds(_floor_end)(grad_output, self)


def wrong_divisor(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN: the vector tail (last channel when C is odd) divides by kw*kw, not kh*kw."""
    empty = _empty_out(grad_output, self)
    if empty is not None:
        return empty
    kh, kw, ih, iw = _geometry(grad_output, self)
    g32 = grad_output.astype(F32)
    terms = _terms(g32, kh, kw)
    if g32.shape[-3] % 2 == 1:
        ones = np.ones_like(kh)
        terms[..., -1:, :, :] = _terms(g32[..., -1:, :, :], ones, kw * kw)
    return _to_dtype(_sequential(terms, ih, iw, self.shape), self.dtype)


def dropped_last(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN: the last row and the last column of each plane are never written (0)."""
    out = window_sum(grad_output, self).copy()
    if out.size:
        out[..., -1, :] = 0
        out[..., :, -1] = 0
    return out


def _as_contiguous(x: np.ndarray) -> np.ndarray:
    """The memory at x's first element read with contiguous strides (ignores the view)."""
    strides, acc = [], x.itemsize
    for d in reversed(x.shape):
        strides.append(acc)
        acc *= max(d, 1)
    return np.lib.stride_tricks.as_strided(x, shape=x.shape, strides=tuple(reversed(strides)),
                                           writeable=False)


def channels_last_as_contiguous(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN: a channels-last gradOutput (C innermost) is read as if NCHW-contiguous."""
    g = grad_output
    if g.ndim >= 3 and g.shape[-3] > 1 and g.strides[-3] == g.itemsize and g.size:
        g = _as_contiguous(g)
    return window_sum(g, self)


def ignores_strides(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN: any non-contiguous gradOutput (strided, transposed, channels-last) is read
    as contiguous memory from its first element."""
    g = grad_output if grad_output.flags.c_contiguous or not grad_output.size else (
        _as_contiguous(grad_output))
    return window_sum(g, self)


def fp16_accumulation(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN where FP32 accumulation is promised: terms and sums in FP16 (BF16 for bf16
    inputs), as the Atlas training/inference matmul path does."""
    empty = _empty_out(grad_output, self)
    if empty is not None:
        return empty
    acc = ml_dtypes.bfloat16 if self.dtype == ml_dtypes.bfloat16 else np.float16
    kh, kw, ih, iw = _geometry(grad_output, self)
    with np.errstate(over="ignore", invalid="ignore"):
        terms = _terms(grad_output.astype(F32), kh, kw, dtype=acc)
        out = _sequential(terms, ih, iw, self.shape, acc=acc)
    return out.astype(F32).astype(self.dtype)


def nan_unwritten(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN: output pre-filled with NaN and its last element never written."""
    out = window_sum(grad_output, self).copy()
    if out.size:
        out.reshape(-1)[-1] = np.nan
    return out


def wrong_shape(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN: returns the output without its last row (shape (..., H-1, W))."""
    return window_sum(grad_output, self)[..., :-1, :]


CORRECT: dict[str, Kernel] = {
    "window_sum": window_sum,
    "reversed": reversed_order,
    "pairwise": pairwise,
    "reciprocal": reciprocal_multiply,
    "a2_like": a2_like,
}
#: Models of the products' own paths: correct for the products that take them.
PRODUCT_PATHS: dict[str, Kernel] = {
    "global_path": global_path,
    "matmul_path": matmul_path,
}
TRUNCATING: dict[str, Kernel] = {
    "window_sum_trunc": window_sum_truncating,
    "exact_trunc": exact_truncating,
}
#: Rounding-mode mutants: correct sums, a wrong conversion (FP16/BF16 only).
ROUNDING: dict[str, Kernel] = {
    "ties_away": ties_away,
    "truncate": window_sum_truncating,
    "round_up": round_up,
    "biased": biased,
}
BROKEN: dict[str, Kernel] = {
    "float_bounds": float_bounds,
    "half_bounds": half_bounds,
    "int16_bounds": int16_bounds,
    "off_by_one_end": off_by_one_end,
    "wrong_divisor": wrong_divisor,
    "dropped_last": dropped_last,
    "channels_last_as_contiguous": channels_last_as_contiguous,
    "ignores_strides": ignores_strides,
    "fp16_accumulation": fp16_accumulation,
    "nan_unwritten": nan_unwritten,
    "wrong_shape": wrong_shape,
}
