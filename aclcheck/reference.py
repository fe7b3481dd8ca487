"""The float64 reference backward of adaptive average pooling 2D.

Separable and gather-based: each output window's gradient is spread first along W, then
along H (or the other way round when cheaper), as a fixed-order sum of gathered slices.
No matrix product is involved, so the result is bit-identical on every machine (BLAS
kernels differ in FMA use and summation order) and IEEE special values propagate exactly
(no 0 * inf from a dense pooling matrix). Work is chunked over the leading dims, so memory
stays at the result plus a few chunk-sized temporaries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aclcheck.chunks import plane_blocks
from aclcheck.contract import window_bounds

#: Elements of float64 output per chunk (2 MiB): large enough to amortize numpy's
#: per-call overhead, small enough that a chunk's temporaries stay in cache (32 MiB chunks
#: were 2-4x slower on small planes, see benchmarks/README.md). Chunking never changes a
#: result bit.
DEFAULT_CHUNK_ELEMS = 1 << 18


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


class _Workspace:
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


def _spread_axis(x: np.ndarray, plan: SpreadPlan, axis: int, out: np.ndarray | None,
                 ws: _Workspace, tag: str) -> np.ndarray:
    """Divide x by the window sizes along `axis`, then spread windows onto positions.

    out[p] = ((s[index[0, p]] + s[index[1, p]]) + ...) in window order, where a padding
    slot holds -0.0 (the identity of IEEE addition). Temporaries come from `ws`, under
    names prefixed with `tag`; `out` (when None) too.
    """
    shape = [1] * x.ndim
    shape[axis] = plan.out_size
    sizes = plan.sizes.reshape(shape).astype(np.float64)
    target_shape = list(x.shape)
    target_shape[axis] = plan.in_size
    if out is None:
        out = ws.get(tag + "out", target_shape)
    if plan.depth == 0:
        out.fill(0.0)
        return out
    if plan.uniform:
        scaled = np.divide(x, sizes, out=ws.get(tag + "scaled", x.shape))
        k = plan.in_size // plan.out_size
        view_shape = list(x.shape)
        view_shape[axis : axis + 1] = [plan.out_size, k]
        out.reshape(view_shape)[...] = np.expand_dims(scaled, axis + 1)
        return out
    # mode="clip" (indices are always in range): with the default "raise", numpy buffers
    # `out` in a temporary copy, doubling the cost of every gather.
    if plan.depth == 1:
        scaled = np.divide(x, sizes, out=ws.get(tag + "scaled", x.shape))
        np.take(scaled, plan.index[0], axis=axis, out=out, mode="clip")
        return out
    pad_shape = list(x.shape)
    pad_shape[axis] = plan.out_size + 1
    padded = ws.get(tag + "padded", pad_shape)
    where: list[slice] = [slice(None)] * x.ndim
    where[axis] = slice(0, plan.out_size)
    np.divide(x, sizes, out=padded[tuple(where)])
    where[axis] = slice(plan.out_size, plan.out_size + 1)
    padded[tuple(where)] = -0.0
    np.take(padded, plan.index[0], axis=axis, out=out, mode="clip")
    tmp = ws.get(tag + "tmp", out.shape)
    for r in range(1, plan.depth):
        np.take(padded, plan.index[r], axis=axis, out=tmp, mode="clip")
        out += tmp
    return out


def _backward_block(g: np.ndarray, ph: SpreadPlan, pw: SpreadPlan, out: np.ndarray,
                    ws: _Workspace) -> None:
    """Backward of one (rows, Ho, Wo) float64 block into `out` (rows, H, W)."""
    rows = g.shape[0]
    # Element-granular gathers (along W) cost more than row gathers (along H). Both costs
    # are linear in rows, so the order (and every rounding) is the same for any chunking.
    w_first = 3 * pw.depth * rows * ph.out_size * pw.in_size + max(ph.depth, 1) * out.size
    h_first = max(ph.depth, 1) * rows * ph.in_size * pw.out_size + 3 * pw.depth * out.size
    if w_first <= h_first:
        mid = _spread_axis(g, pw, 2, None, ws, "w")
        _spread_axis(mid, ph, 1, out, ws, "h")
    else:
        mid = _spread_axis(g, ph, 1, None, ws, "h")
        _spread_axis(mid, pw, 2, out, ws, "w")


def backward(
    grad_output: np.ndarray,
    in_hw: tuple[int, int],
    *,
    absolute: bool = False,
    chunk_elems: int = DEFAULT_CHUNK_ELEMS,
) -> np.ndarray:
    """Gradient w.r.t. the forward input, in float64, C-contiguous.

    grad_output: any array of rank >= 2 (..., Ho, Wo), any dtype numpy can read as float64
    (float16, float32, ml_dtypes.bfloat16, float64) and any strides. in_hw: (H, W) of self.
    absolute: use |gradOutput| instead: gives m, the sum of term magnitudes that the error
    budget of the comparison scales with.
    """
    g = np.asarray(grad_output)
    if g.ndim < 2:
        raise ValueError(f"grad_output must have rank >= 2, got shape {g.shape}")
    h, w = (int(in_hw[0]), int(in_hw[1]))
    if h < 0 or w < 0:
        raise ValueError(f"negative input size {in_hw}")
    ho, wo = g.shape[-2:]
    lead = tuple(g.shape[:-2])
    out = np.empty(lead + (h, w), dtype=np.float64)
    if out.size == 0:
        return out
    if g.size == 0:
        out.fill(0.0)  # no terms reach any element (the operator writes nothing)
        return out
    ph, pw = spread_plan(ho, h), spread_plan(wo, w)
    plane = max(h * w, ho * wo, h * wo, ho * w, 1)
    with np.errstate(invalid="ignore", over="ignore"):
        ws = _Workspace()
        for idx in plane_blocks(lead, max(1, chunk_elems // plane)):
            _backward_into(g[idx], out[idx], ph, pw, absolute, ws)
    return out


def _backward_into(
    g: np.ndarray, out: np.ndarray, ph: SpreadPlan, pw: SpreadPlan, absolute: bool,
    ws: _Workspace,
) -> None:
    """One chunk: convert to float64 (|g| if absolute) and spread into `out` (a view)."""
    block = ws.get("in", g.shape)
    np.copyto(block, g, casting="unsafe")
    block = block.reshape(-1, ph.out_size, pw.out_size)
    if absolute:
        np.abs(block, out=block)
    target = out.reshape(-1, ph.in_size, pw.in_size)  # out is C-contiguous: a view
    _backward_block(block, ph, pw, target, ws)
