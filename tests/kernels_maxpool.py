"""Kernels of aclnnAdaptiveMaxPool2dBackward for the tests (tests/test_maxpool_catches.py):
two correct ones and deliberately broken ones.

Each kernel has the adapter signature `fn(grad_output, self, indices) -> gradInput`: numpy
arrays of the case dtypes (ml_dtypes.bfloat16 for bf16; indices int32 or int64), rank 3
(C, H, W) or 4 (N, C, H, W), any strides (real views into read-only storage); the result
has self's shape and grad_output's dtype. Indices outside the plane (invalid ones, or the
misread ones of the broken kernels) are dropped, as the vector kernels do, so no kernel
raises or writes outside its planes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import ml_dtypes
import numpy as np

from aclcheck.dtypes import FLOAT_FORMATS, correctly_rounded
from aclcheck.ops.adaptive.windows import window_bounds

Kernel = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
#: (flat positions (P, Ho, Wo) int64, H, W) -> the positions a kernel writes (-1: dropped)
Positions = Callable[[np.ndarray, int, int], np.ndarray]
F32 = np.float32


def _dtype_name(dtype: np.dtype) -> str:
    return "bfloat16" if np.dtype(dtype) == ml_dtypes.bfloat16 else np.dtype(dtype).name


def _round(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """FLOAT32 values rounded once (RNE) to the output dtype."""
    if np.dtype(dtype) == np.float32:
        return x.astype(F32)
    with np.errstate(over="ignore", invalid="ignore"):
        return correctly_rounded(x.astype(np.float64), FLOAT_FORMATS[_dtype_name(dtype)]
                                 ).astype(dtype)


def _as_contiguous(x: np.ndarray) -> np.ndarray:
    """The memory at x's first element read with row-major strides (ignores the view)."""
    strides, step = [], x.itemsize
    for d in reversed(x.shape):
        strides.append(step)
        step *= max(d, 1)
    return np.lib.stride_tricks.as_strided(x, x.shape, tuple(reversed(strides)),
                                           writeable=False)


def _exact(flat: np.ndarray, h: int, w: int) -> np.ndarray:
    return flat


def scatter_kernel(order: str = "row-major", accumulate: str = "float32",
                   combine: str = "add", positions: Positions = _exact,
                   read_indices: Callable[[np.ndarray], np.ndarray] | None = None,
                   zeros: str = "as-computed") -> Kernel:
    """gradInput[plane, p] (+)= gradOutput[plane, cell] for every cell in `order`
    (row-major, reversed), in `accumulate` ("float32": one rounding at the end; "dtype":
    every add rounded to the tensor dtype); `combine` "store" keeps the last cell instead
    of adding; `positions` maps the indices to the written positions; `read_indices`
    misreads the indices' memory; `zeros` "negative" turns every zero into -0."""

    def kernel(grad_output: np.ndarray, self: np.ndarray, indices: np.ndarray) -> np.ndarray:
        dtype = grad_output.dtype
        if min(grad_output.shape + self.shape + indices.shape, default=1) == 0:
            return np.zeros(self.shape, dtype=dtype)  # an empty call (documented unwritten)
        idx = read_indices(indices) if read_indices is not None else np.asarray(indices)
        lead = self.shape[:-2]
        h, w = (int(v) for v in self.shape[-2:])
        ho, wo = (int(v) for v in grad_output.shape[-2:])
        planes, cells = math.prod(lead), ho * wo
        g = np.asarray(grad_output).astype(F32).reshape(planes, cells)
        flat = np.asarray(idx).astype(np.int64).reshape(planes, ho, wo)
        pos = positions(flat, h, w).reshape(planes, cells)
        acc = np.zeros((planes, h * w), dtype=F32 if accumulate == "float32" else dtype)
        rows = np.arange(planes)
        order_ = range(cells - 1, -1, -1) if order == "reversed" else range(cells)
        with np.errstate(over="ignore", invalid="ignore"):
            for k in order_:
                p = pos[:, k]
                ok = (p >= 0) & (p < h * w)
                r, p, v = rows[ok], p[ok], g[ok, k]
                if combine == "store":
                    acc[r, p] = v.astype(acc.dtype)
                elif accumulate == "float32":
                    acc[r, p] += v
                else:  # each add rounded to the dtype (FLOAT32 sum of two 16-bit values)
                    acc[r, p] = _round(acc[r, p].astype(F32) + v, dtype)
            out = acc.astype(F32) if accumulate == "float32" else acc
            if zeros == "negative":
                out = np.where(out.astype(F32) == 0, F32(-0.0), out.astype(F32))
        return _round(np.asarray(out, dtype=F32), dtype).reshape(self.shape)

    return kernel


# -- correct ----------------------------------------------------------------------------------

#: the contract's model: FLOAT32 adds in row-major cell order, one rounding
correct = scatter_kernel()
#: the same adds in reverse cell order: an order-only difference (budgeted, never FAIL)
reversed_order = scatter_kernel(order="reversed")
#: every zero of the result as -0 (signs of zero are not compared)
negative_zeros = scatter_kernel(zeros="negative")


def zeros_when_empty(grad_output: np.ndarray, self: np.ndarray, indices: np.ndarray
                     ) -> np.ndarray:
    """Correct, and for an empty call (gradInput documented as unwritten) writes zeros,
    the mathematical answer where Ho = 0 and self is not empty (like `correct`)."""
    return correct(grad_output, self, indices)


def ones_when_empty(grad_output: np.ndarray, self: np.ndarray, indices: np.ndarray
                    ) -> np.ndarray:
    """Correct on non-empty calls; for an empty call it writes ones everywhere."""
    if min(grad_output.shape + self.shape + indices.shape, default=1) == 0:
        return np.ones(self.shape, dtype=grad_output.dtype)
    return correct(grad_output, self, indices)


# -- broken -----------------------------------------------------------------------------------

#: FLOAT16/BFLOAT16 accumulated in the dtype (PyTorch CPU's model: 2048 + 1 + 1 = 2048)
dtype_accumulation = scatter_kernel(accumulate="dtype")
#: a store, not an add: on a shared position the last cell wins (the divisible scatter
#: kernel's behaviour applied to overlapping windows)
store_not_add = scatter_kernel(combine="store")


def _window_relative(flat: np.ndarray, h: int, w: int) -> np.ndarray:
    """The index read as relative to its cell's window: the window start added again."""
    ho, wo = flat.shape[-2:]
    hs, _ = window_bounds(ho, h)
    ws, _ = window_bounds(wo, w)
    r, c = flat // w, flat % w
    r, c = r + hs[None, :, None], c + ws[None, None, :]
    return np.where((r < h) & (c < w), r * w + c, -1)


def _membership(start_shift: int = 0, floor_end: bool = False) -> Positions:
    """A vector kernel: a gradient lands only where its index lies in the window the
    kernel computes (others dropped); the window start shifted by `start_shift`, or its
    end floor((i+1)*H/Ho) instead of the ceiling."""

    def bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
        start, end = window_bounds(out_size, in_size)
        if floor_end:
            end = (np.arange(1, out_size + 1, dtype=np.int64) * in_size) // out_size
        return start + start_shift, end

    def positions(flat: np.ndarray, h: int, w: int) -> np.ndarray:
        ho, wo = flat.shape[-2:]
        (hs, he), (ws, we) = bounds(ho, h), bounds(wo, w)
        r, c = flat // w, flat % w
        inside = ((r >= hs[None, :, None]) & (r < he[None, :, None])
                  & (c >= ws[None, None, :]) & (c < we[None, None, :]))
        return np.where(inside, flat, -1)

    return positions


#: indices taken as window-relative positions: the window's start added again
window_relative = scatter_kernel(positions=_window_relative)
#: window start one row/column late: gradients at a window's first row/column dropped
start_off_by_one = scatter_kernel(positions=_membership(start_shift=1))
#: window end floor((i+1)*H/Ho): the last row/column of overlapping windows dropped
floor_end = scatter_kernel(positions=_membership(floor_end=True))


def _strides_ignored(indices: np.ndarray) -> np.ndarray:
    return indices if indices.flags.c_contiguous or not indices.size else (
        _as_contiguous(indices))


#: non-contiguous indices read as row-major memory from their first element
indices_strides_ignored = scatter_kernel(read_indices=_strides_ignored)


def _int64_as_int32(indices: np.ndarray) -> np.ndarray:
    """INT64 indices' memory read as INT32 (low word, high word, low word, ...)."""
    if indices.dtype != np.int64:
        return indices
    raw = np.ascontiguousarray(indices).reshape(-1).view(np.int32)
    return raw[:indices.size].reshape(indices.shape)


def _int32_as_int64(indices: np.ndarray) -> np.ndarray:
    """INT32 indices' memory read as INT64 (two positions in one: mostly out of the
    plane); the over-read past the buffer reads zeros."""
    if indices.dtype != np.int32:
        return indices
    raw = np.zeros(2 * indices.size, dtype=np.int32)
    raw[:indices.size] = np.ascontiguousarray(indices).reshape(-1)
    return raw.view(np.int64).reshape(indices.shape)


#: every indices tensor read as INT32 memory (INT64 ones misread)
int64_read_as_int32 = scatter_kernel(read_indices=_int64_as_int32)
#: every indices tensor read as INT64 memory (INT32 ones misread)
int32_read_as_int64 = scatter_kernel(read_indices=_int32_as_int64)
