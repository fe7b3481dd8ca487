"""The float64 reference backward of adaptive average pooling 2D.

Separable and gather-based: every term g / (kh * kw) is formed with one rounding (the
window area is an exact float64 integer), then the terms are spread first along W, then
along H (or the other way round when cheaper), as fixed-order sums of gathered slices.
No matrix product is involved, so the result is bit-identical on every machine (BLAS
kernels differ in FMA use and summation order) and IEEE special values propagate exactly
(no 0 * inf from a dense pooling matrix). Work is chunked over the leading dims, so memory
stays at the result plus a few chunk-sized temporaries.

The optional compiled kernel `aclcheck._spread` (built by setup.py where a C compiler
exists) runs the same fixed-order arithmetic, bit for bit, 2-7x faster; without it, or
with ACLCHECK_PURE_NUMPY=1, the numpy path runs. ACLCHECK_THREADS=n caps the kernel's
plane-parallel threads (no result bit depends on it).

Callers that compute result after result pass `out=` (an array they own) or take it from a
ResultBuffers they own: a fresh result of tens of MB is page-faulted on first write, which
costs several times its arithmetic (see benchmarks/README.md).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aclcheck.arrays import plane_blocks
from aclcheck.contract import window_bounds

try:  # the optional compiled kernel (setup.py); numpy below is the fallback
    from aclcheck import _spread as _native
except ImportError:  # pragma: no cover - depends on the build
    _native = None

#: Elements of float64 output per chunk (2 MiB): large enough to amortize numpy's
#: per-call overhead, small enough that a chunk's temporaries stay in cache (32 MiB chunks
#: were 2-4x slower on small planes, see benchmarks/README.md). Chunking never changes a
#: result bit.
DEFAULT_CHUNK_ELEMS = 1 << 18


#: Blocks with fewer elements (the largest of gradOutput, result and intermediate), or
#: fewer than NATIVE_ROWS_PER_THREAD planes per thread, run the compiled kernel on one
#: thread: waking a worker (20-50 us on a small VM) or an uneven split of a few planes
#: costs more than it saves there.
NATIVE_PARALLEL_MIN_ELEMS = 1 << 17
NATIVE_ROWS_PER_THREAD = 4


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


def native_available() -> bool:
    """The compiled kernel is built and not disabled by ACLCHECK_PURE_NUMPY=1."""
    return _native is not None and os.environ.get("ACLCHECK_PURE_NUMPY", "") in ("", "0")


def native_threads() -> int:
    """Threads the compiled kernel may use: ACLCHECK_THREADS, else the usable CPUs (<= 8)."""
    env = os.environ.get("ACLCHECK_THREADS", "")
    if env.strip().isdigit() and int(env) >= 1:
        return int(env)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


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


def _w_first(ph: SpreadPlan, pw: SpreadPlan, rows: int, out_size: int) -> bool:
    """Spread along W first (else H first): the cheaper order by the numpy path's costs.

    Element-granular gathers (along W) cost more than row gathers (along H). Both costs
    are linear in rows, so the order (and every rounding) is the same for any chunking;
    the compiled kernel takes the same order, so both paths round identically.
    """
    w_first = 3 * pw.depth * rows * ph.out_size * pw.in_size + max(ph.depth, 1) * out_size
    h_first = max(ph.depth, 1) * rows * ph.in_size * pw.out_size + 3 * pw.depth * out_size
    return w_first <= h_first


def _backward_block(terms: np.ndarray, ph: SpreadPlan, pw: SpreadPlan, out: np.ndarray,
                    ws: _Workspace) -> None:
    """Spread one (rows, Ho, Wo) float64 block of terms g / (kh * kw) into `out`."""
    if _w_first(ph, pw, terms.shape[0], out.size):
        mid = _spread_axis(terms, pw, 2, None, ws, "w")
        _spread_axis(mid, ph, 1, out, ws, "h")
    else:
        mid = _spread_axis(terms, ph, 1, None, ws, "h")
        _spread_axis(mid, pw, 2, out, ws, "w")


def _backward_block_native(g: np.ndarray, ph: SpreadPlan, pw: SpreadPlan, out: np.ndarray,
                           threads: int) -> None:
    """_backward_block by the compiled kernel: same order, same roundings, bit for bit.

    g (rows, Ho, Wo) is C-contiguous float64 or float32, out (rows, H, W) C-contiguous
    float64; every plan has depth >= 1. Rows are split over `threads` only for blocks
    worth waking a worker.
    """
    rows = g.shape[0]
    if max(out.size, g.size, rows * ph.out_size * pw.in_size,
           rows * ph.in_size * pw.out_size) < NATIVE_PARALLEL_MIN_ELEMS:
        threads = 1
    threads = max(1, min(threads, rows // NATIVE_ROWS_PER_THREAD))
    assert _native is not None
    _native.backward_block(g, out, ph.index[0], ph.counts, ph.sizes, pw.index[0], pw.counts,
                           pw.sizes, rows, _w_first(ph, pw, rows, out.size), threads)


def backward(
    grad_output: np.ndarray,
    in_hw: tuple[int, int],
    *,
    absolute: bool = False,
    chunk_elems: int = DEFAULT_CHUNK_ELEMS,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Gradient w.r.t. the forward input, in float64, C-contiguous.

    grad_output: any array of rank >= 2 (..., Ho, Wo), any dtype numpy can read as float64
    (float16, float32, ml_dtypes.bfloat16, float64) and any strides. in_hw: (H, W) of self.
    absolute: use |gradOutput| instead: gives m, the sum of term magnitudes that the error
    budget of the comparison scales with. out: where to write the result (see check_out;
    every element is written) instead of a fresh array; it is returned. Callers computing
    many results reuse one (or take it from a ResultBuffers) to skip page faults.
    """
    g = np.asarray(grad_output)
    if g.ndim < 2:
        raise ValueError(f"grad_output must have rank >= 2, got shape {g.shape}")
    h, w = (int(in_hw[0]), int(in_hw[1]))
    if h < 0 or w < 0:
        raise ValueError(f"negative input size {in_hw}")
    ho, wo = g.shape[-2:]
    lead = tuple(g.shape[:-2])
    if out is None:
        out = np.empty(lead + (h, w), dtype=np.float64)
    else:
        check_out(out, lead + (h, w), g)
    if out.size == 0:
        return out
    if g.size == 0:
        out.fill(0.0)  # no terms reach any element (the operator writes nothing)
        return out
    ph, pw = spread_plan(ho, h), spread_plan(wo, w)
    threads = native_threads() if native_available() else 0  # 0: the numpy path
    if (threads and not absolute and g.dtype in (np.float32, np.float64)
            and g.flags.c_contiguous):
        # The kernel reads this gradOutput as it is (float32 widens exactly) and needs no
        # float64 copy, so one call covers every plane: no chunk temporaries to bound.
        _backward_block_native(g.reshape(-1, ho, wo), ph, pw, out.reshape(-1, h, w), threads)
        return out
    plane = max(h * w, ho * wo, h * wo, ho * w, 1)
    with np.errstate(invalid="ignore", over="ignore"):
        ws = _Workspace()
        for idx in plane_blocks(lead, max(1, chunk_elems // plane)):
            _backward_into(g[idx], out[idx], ph, pw, absolute, ws, threads)
    return out


def _backward_into(
    g: np.ndarray, out: np.ndarray, ph: SpreadPlan, pw: SpreadPlan, absolute: bool,
    ws: _Workspace, threads: int = 0,
) -> None:
    """One chunk: convert to float64 (|g| if absolute) and spread into `out` (a view).

    threads >= 1: by the compiled kernel on up to that many threads; 0: by numpy, which
    forms every term g / (kh * kw) here, with one rounding, before both spreads.
    """
    block = ws.get("in", g.shape)
    np.copyto(block, g, casting="unsafe")
    block = block.reshape(-1, ph.out_size, pw.out_size)
    if absolute:
        np.abs(block, out=block)
    target = out.reshape(-1, ph.in_size, pw.in_size)  # out is C-contiguous: a view
    if threads and ph.depth and pw.depth:
        _backward_block_native(block, ph, pw, target, threads)
    else:
        np.divide(block, window_areas(ph, pw), out=block)
        _backward_block(block, ph, pw, target, ws)
