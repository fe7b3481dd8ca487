"""Adaptive pooling's windows, shared by the 2-D and 3-D operators: the integer window
bounds of the documentation (docs/contract.md §1), how windows along one axis map onto
input positions (SpreadPlan), and the fixed-order spread of window values onto positions
along any axis, which both references compose axis by axis.

Integers only for the bounds (exact for any size); numpy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


def window_start(i: int, out_size: int, in_size: int) -> int:
    """floor(i * in / out), exact for any Python int sizes."""
    return (i // out_size) * in_size + ((i % out_size) * in_size) // out_size


def window_end(i: int, out_size: int, in_size: int) -> int:
    """ceil((i + 1) * in / out), exact for any Python int sizes."""
    return 1 + ((i + 1) * in_size - 1) // out_size


def window_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of every window, as int64 arrays of length out_size.

    Exact while in_size * out_size < 2**63 (any tensor that fits in memory); larger sizes
    fall back to Python integers.
    """
    i = np.arange(out_size, dtype=np.int64)
    if out_size == 0:
        return i, i.copy()
    if in_size * out_size < 2**62:
        start = (i // out_size) * in_size + ((i % out_size) * in_size) // out_size
        end = 1 + ((i + 1) * in_size - 1) // out_size
        return start, end
    start = np.array([window_start(int(k), out_size, in_size) for k in i], dtype=np.int64)
    end = np.array([window_end(int(k), out_size, in_size) for k in i], dtype=np.int64)
    return start, end


@dataclass(frozen=True)
class SpreadPlan:
    """How windows along one axis map onto input positions.

    `index[r, p]` is the r-th window covering input position p, or `out_size` (a padding
    slot holding -0.0) when p is covered by fewer than r + 1 windows.
    """

    out_size: int
    in_size: int
    sizes: np.ndarray  # window sizes, int64 (out_size,)
    counts: np.ndarray  # windows covering each input position, int64 (in_size,)
    index: np.ndarray  # int64 (K, in_size)

    @property
    def depth(self) -> int:
        """K: the largest number of windows covering one input position."""
        return int(self.index.shape[0])

    @property
    def uniform(self) -> bool:
        """Windows tile the input exactly with equal sizes (in % out == 0)."""
        return self.out_size > 0 and self.in_size % self.out_size == 0


@lru_cache(maxsize=256)
def spread_plan(out_size: int, in_size: int) -> SpreadPlan:
    """The SpreadPlan of one spatial axis (cached: plans are small and reused per chunk)."""
    start, end = window_bounds(out_size, in_size)
    positions = np.arange(in_size, dtype=np.int64)
    lo = np.searchsorted(end, positions, side="right")
    hi = np.searchsorted(start, positions, side="right")
    counts = (hi - lo).astype(np.int64)
    depth = int(counts.max()) if in_size and out_size else 0
    r = np.arange(depth, dtype=np.int64)[:, None]
    index = np.where(r < counts[None, :], lo[None, :] + r, out_size)
    sizes = end - start
    for arr in (start, end, sizes, counts, index):
        arr.setflags(write=False)  # plans are cached and shared: never mutate them
    return SpreadPlan(out_size, in_size, sizes, counts, index)


def term_counts(out_hw: tuple[int, int], in_hw: tuple[int, int]) -> np.ndarray:
    """k[h, w]: the number of gradOutput terms reaching each input element (int64)."""
    ph = spread_plan(int(out_hw[0]), int(in_hw[0]))
    pw = spread_plan(int(out_hw[1]), int(in_hw[1]))
    return np.multiply.outer(ph.counts, pw.counts)


class Workspace:
    """Reusable float64 scratch buffers, one per name.

    Every chunk of one backward call takes its temporaries from here instead of fresh
    allocations: a fresh large array is mmap-ed and page-faulted on first touch, which
    cost 3-5x the arithmetic for planes larger than a chunk (16 planes of 2048 x 2048:
    1.2-1.7 s -> 0.35 s).
    """

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...] | list[int]) -> np.ndarray:
        n = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.size < n:
            buf = self._buffers[name] = np.empty(n, dtype=np.float64)
        return buf[:n].reshape(shape)


def spread_axis(x: np.ndarray, plan: SpreadPlan, axis: int, out: np.ndarray | None,
                 ws: Workspace, tag: str) -> np.ndarray:
    """Spread window values onto positions along `axis`.

    out[p] = ((x[index[0, p]] + x[index[1, p]]) + ...) in window order, where a padding
    slot holds -0.0 (the identity of IEEE addition). Temporaries come from `ws`, under
    names prefixed with `tag`; `out` (when None) too.
    """
    target_shape = list(x.shape)
    target_shape[axis] = plan.in_size
    if out is None:
        out = ws.get(tag + "out", target_shape)
    if plan.depth == 0:
        out.fill(0.0)
        return out
    if plan.uniform:
        k = plan.in_size // plan.out_size
        view_shape = list(x.shape)
        view_shape[axis : axis + 1] = [plan.out_size, k]
        out.reshape(view_shape)[...] = np.expand_dims(x, axis + 1)
        return out
    # mode="clip" (indices are always in range): with the default "raise", numpy buffers
    # `out` in a temporary copy, doubling the cost of every gather.
    if plan.depth == 1:
        np.take(x, plan.index[0], axis=axis, out=out, mode="clip")
        return out
    pad_shape = list(x.shape)
    pad_shape[axis] = plan.out_size + 1
    padded = ws.get(tag + "padded", pad_shape)
    where: list[slice] = [slice(None)] * x.ndim
    where[axis] = slice(0, plan.out_size)
    padded[tuple(where)] = x
    where[axis] = slice(plan.out_size, plan.out_size + 1)
    padded[tuple(where)] = -0.0
    np.take(padded, plan.index[0], axis=axis, out=out, mode="clip")
    tmp = ws.get(tag + "tmp", out.shape)
    for r in range(1, plan.depth):
        np.take(padded, plan.index[r], axis=axis, out=tmp, mode="clip")
        out += tmp
    return out


def window_areas(ph: SpreadPlan, pw: SpreadPlan) -> np.ndarray:
    """kh * kw of every gradOutput position (Ho, Wo), float64.

    Exact: each window size is at most H or W, so an area is at most H * W elements of one
    plane, far below 2^53 for any plane that fits in memory.
    """
    return np.multiply.outer(ph.sizes.astype(np.float64), pw.sizes.astype(np.float64))


def pow2_positions(plan: SpreadPlan) -> np.ndarray:
    """Input positions whose covering windows all have power-of-two sizes."""
    sizes = np.append(plan.sizes, 1)  # the pad slot (out_size) counts as fine
    pow2 = (sizes > 0) & ((sizes & (sizes - 1)) == 0)
    if plan.index.size == 0:
        return np.zeros(plan.in_size, dtype=bool)
    return np.all(pow2[plan.index], axis=0)


def check_out(out: np.ndarray, shape: tuple[int, ...], grad_output: np.ndarray) -> None:
    """Refuse an `out=` array the result cannot be written into as it is.

    It must be a writable, C-contiguous float64 array of exactly the result's shape (no
    silent reshape or cast: a wrong buffer is a caller's bug) and share no memory with
    grad_output (the result would overwrite terms not yet read).
    """
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if out.dtype != np.float64:
        raise TypeError(f"out must be float64, got {out.dtype}")
    if tuple(out.shape) != shape:
        raise ValueError(f"out has shape {tuple(out.shape)}, the result {shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writable")
    if np.may_share_memory(out, grad_output):
        raise ValueError("out shares memory with grad_output")
