"""Kernels for the 3D hardware-edge families: a correct model of the products' paths and
one broken kernel per family, each with one defect at its family's edge
(aclcheck/ops/adaptive_avg_pool3d_backward/hardware.py, docs/contract-3d.md §9).

Adapter signature `fn(grad_output, self) -> out` (numpy arrays of the case dtype, 4-D or
5-D, possibly channels-last or strided views). The windowed path is vectorised: terms
fl32(g · fl32(1/(kd·kh·kw))) spread along D, H and W, summed exactly, rounded once; the
1x1x1 path is RN_T(g · RN_T(fl32(1/n))).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import ml_dtypes
import numpy as np

from aclcheck.dtypes import FLOAT_FORMATS, correctly_rounded
from aclcheck.ops.adaptive.tiling import core_split

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]
Bounds = Callable[[int, int], tuple[np.ndarray, np.ndarray]]
F32 = np.float32
#: The broken fill's chunk of elements (a UB's worth of an elementwise kernel).
FILL_CHUNK = 2**14


def _int_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(out_size, dtype=np.int64)
    return (i * in_size) // out_size, -((-(i + 1) * in_size) // out_size)


def _float_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """floor(f32(i·in)/out), ceil(f32((i+1)·in)/out): right below 2^24 only."""
    i = np.arange(out_size, dtype=np.int64)
    start = np.floor((i * in_size).astype(F32) / F32(out_size)).astype(np.int64)
    end = np.ceil(((i + 1) * in_size).astype(F32) / F32(out_size)).astype(np.int64)
    return np.clip(start, 0, in_size), np.clip(end, 0, in_size)


def _int32_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """i·in held in int32: wraps past 2^31 (clipped to the axis, as a guarded load)."""
    i = np.arange(out_size, dtype=np.int64)
    with np.errstate(over="ignore"):
        lo = (i * in_size).astype(np.int32).astype(np.int64)
        hi = ((i + 1) * in_size).astype(np.int32).astype(np.int64)
    start, end = lo // out_size, -((-hi) // out_size)
    return np.clip(start, 0, in_size), np.clip(np.maximum(end, start), 0, in_size)


def _round(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    name = "bfloat16" if np.dtype(dtype) == ml_dtypes.bfloat16 else np.dtype(dtype).name
    return correctly_rounded(x, FLOAT_FORMATS[name]).astype(dtype)


def _spread(t: np.ndarray, axis: int, start: np.ndarray, end: np.ndarray, n: int) -> np.ndarray:
    """Sum of the terms of every window covering each of the n input positions of `axis`."""
    t0 = np.moveaxis(t, axis, 0)
    res = np.zeros((n,) + t0.shape[1:], dtype=np.float64)
    for k in range(int((end - start).max(initial=0))):
        idx = start + k
        ok = idx < end
        np.add.at(res, idx[ok], t0[ok])
    return np.moveaxis(res, 0, axis)


def _global(g: np.ndarray, self_: np.ndarray, flush: bool = False) -> np.ndarray:
    n = math.prod(self_.shape[-3:])
    factor = _round(np.asarray([F32(1.0 / n)], dtype=F32), g.dtype).astype(np.float64)[0]
    if flush and abs(factor) < 2.0**-14:
        factor = 0.0  # FLOAT16 subnormals flushed to zero
    return _round(np.broadcast_to(g.astype(np.float64) * factor, self_.shape), g.dtype)


def _windowed(g: np.ndarray, self_: np.ndarray, bounds: Callable[[tuple[int, int, int],
              tuple[int, int, int]], list[tuple[np.ndarray, np.ndarray]]],
              divisors: Callable[[list[tuple[np.ndarray, np.ndarray]], np.ndarray],
                                 np.ndarray] | None = None) -> np.ndarray:
    outs, ins = tuple(g.shape[-3:]), tuple(self_.shape[-3:])
    b = bounds(outs, ins)  # type: ignore[arg-type]
    sizes = [e - s for s, e in b]
    vol = np.multiply.outer(np.multiply.outer(sizes[0], sizes[1]), sizes[2])
    if divisors is not None:
        vol = divisors(b, vol)
    with np.errstate(all="ignore"):
        factor = (F32(1) / vol.astype(F32)).astype(F32)
        t = (g.astype(F32) * factor).astype(np.float64)
    lead = g.ndim - 3
    for k in (2, 1, 0):
        t = _spread(t, lead + k, b[k][0], b[k][1], ins[k])
    return _round(t, g.dtype)


def _exact(outs: tuple[int, int, int], ins: tuple[int, int, int]) -> list:
    return [_int_bounds(o, i) for o, i in zip(outs, ins, strict=True)]


def model(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """The products' paths: the 1x1x1 fill, else the A2/A3 kernel (correct)."""
    g = np.asarray(grad_output)
    if g.shape[-3:] == (1, 1, 1):
        return _global(g, self)
    return _windowed(g, self, _exact)


# -- broken kernels: one defect at each family's edge ---------------------------------------


def float_bounds_multi(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """tall3d: integer bounds on the one-axis path (two axes 1 <- 1), float32 quotients
    on every axis of the multi-axis path."""
    g = np.asarray(grad_output)
    if g.shape[-3:] == (1, 1, 1):
        return _global(g, self)

    def bounds(outs: tuple[int, int, int], ins: tuple[int, int, int]) -> list:
        line = sum(o == i == 1 for o, i in zip(outs, ins, strict=True)) >= 2
        return _exact(outs, ins) if line else [_float_bounds(o, i) for o, i in
                                               zip(outs, ins, strict=True)]
    return _windowed(g, self, bounds)


def int32_bounds(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """tall3d: i·in in int32 on every axis (wraps past 2^31)."""
    g = np.asarray(grad_output)
    if g.shape[-3:] == (1, 1, 1):
        return _global(g, self)
    return _windowed(g, self, lambda o, i: [_int32_bounds(a, b) for a, b in
                                            zip(o, i, strict=True)])


def fill_chunk_straddle(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """bigglobal3d: planes of at least one chunk are filled chunk by chunk over the flat
    output, each chunk with the gradOutput value of the plane it starts in."""
    g = np.asarray(grad_output)
    out = model(g, self)
    n = math.prod(self.shape[-3:])
    if g.shape[-3:] != (1, 1, 1) or n < FILL_CHUNK:
        return out
    flat = out.reshape(-1).copy()
    for start in range(0, flat.size, FILL_CHUNK):
        stop = min(start + FILL_CHUNK, flat.size)
        flat[start:stop] = flat[start]
    return flat.reshape(out.shape)


def fill_flushed_fp16(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """bigglobal3d: the FLOAT16 factor flushed to zero once subnormal (D·H·W >= 16 393)."""
    g = np.asarray(grad_output)
    if g.shape[-3:] == (1, 1, 1):
        return _global(g, self, flush=g.dtype == np.float16)
    return model(g, self)


def _channels_last(a: np.ndarray) -> bool:
    return a.ndim == 5 and a.strides[1] == a.itemsize and a.shape[1] > 1


def lanes_merged_cl(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """lanes3d: a windowed channels-last call whose channel rows fill whole 32-byte lane
    blocks skips the transposes and reads its memory (N, D, H, W, C) as (D, H, W, N·C):
    right for N = 1 only."""
    g = np.asarray(grad_output)
    n, c = g.shape[:2] if g.ndim == 5 else (1, 1)
    lanes = 32 // g.itemsize
    if not (_channels_last(g) and n > 1 and c % lanes == 0) or g.shape[-3:] == (1, 1, 1):
        return model(g, self)
    outs, ins = g.shape[2:], self.shape[2:]
    mem = np.ascontiguousarray(np.moveaxis(g, 1, -1)).reshape(-1)  # its memory order
    wrong = np.moveaxis(mem.reshape(*outs, n * c), -1, 0).reshape(g.shape)
    res = model(wrong, np.empty(self.shape, dtype=g.dtype))
    back = np.moveaxis(res.reshape(n * c, *ins), 0, -1).reshape(-1)
    return np.moveaxis(back.reshape(n, *ins, c), -1, 1)


def kd_per_core(grad_output: np.ndarray, self: np.ndarray, cores: int = 40) -> np.ndarray:
    """unequal3d: kD taken once per core, from the first output cell of its span (kH and
    kW per cell): wrong where a span crosses into a D window of another size."""
    g = np.asarray(grad_output)
    if g.shape[-3:] == (1, 1, 1):
        return _global(g, self)

    def divisors(b: list, vol: np.ndarray) -> np.ndarray:
        do, ho, wo = vol.shape
        kd = (b[0][1] - b[0][0]).astype(np.int64)
        split = core_split(do * ho * wo, cores)
        cell_kd = np.empty(do * ho * wo, dtype=np.int64)
        for k in range(split.used):
            lo, hi = split.span(k)
            cell_kd[lo:hi] = kd[lo // (ho * wo)]
        per = (vol // kd[:, None, None]).reshape(-1)
        return (per * cell_kd).reshape(vol.shape)
    return _windowed(g, self, _exact, divisors)


#: family -> its broken kernels (each caught by that family alone in the default suite).
BROKEN: dict[str, tuple[Kernel, ...]] = {
    "tall3d": (float_bounds_multi,),
    "bigglobal3d": (fill_chunk_straddle, fill_flushed_fp16),
    "lanes3d": (lanes_merged_cl,),
    "unequal3d": (kd_per_core,),
}
#: Caught only past the default suite (--count 2 / stress: the 2^31 crossings).
BROKEN_BEYOND_DEFAULT: dict[str, tuple[Kernel, ...]] = {"tall3d": (int32_bounds,)}
