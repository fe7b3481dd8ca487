"""The float64 reference backward of adaptive average pooling 2D.

Separable and gather-based: every term g / (kh * kw) is formed with one rounding (the
window area is an exact float64 integer), then the terms are spread first along W, then
along H (or the other way round when cheaper), as fixed-order sums of gathered slices.
No matrix product is involved, so the result is bit-identical on every machine (BLAS
kernels differ in FMA use and summation order) and IEEE special values propagate exactly
(no 0 * inf from a dense pooling matrix). Work is chunked over the leading dims, so memory
stays at the result plus a few chunk-sized temporaries.

The optional compiled kernel `_spread` beside this module (built by setup.py where a C
compiler exists) runs the same fixed-order arithmetic, bit for bit, 2-7x faster; without
it, or with ACLCHECK_PURE_NUMPY=1, the numpy path runs. ACLCHECK_THREADS=n caps the kernel's
plane-parallel threads (no result bit depends on it).

Callers that compute result after result pass `out=` (an array they own) or take it from a
ResultBuffers they own: a fresh result of tens of MB is page-faulted on first write, which
costs several times its arithmetic (see benchmarks/README.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from aclcheck.arrays import plane_blocks
from aclcheck.ops.adaptive import footprint
from aclcheck.ops.adaptive.windows import (
    SpreadPlan,
    Workspace,
    check_out,
    spread_axis,
    spread_plan,
    window_areas,
)

try:  # the optional compiled kernel (setup.py); numpy below is the fallback
    from aclcheck.ops.adaptive_avg_pool2d_backward import _spread as _native
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
                    ws: Workspace) -> None:
    """Spread one (rows, Ho, Wo) float64 block of terms g / (kh * kw) into `out`."""
    if _w_first(ph, pw, terms.shape[0], out.size):
        mid = spread_axis(terms, pw, 2, None, ws, "w")
        spread_axis(mid, ph, 1, out, ws, "h")
    else:
        mid = spread_axis(terms, ph, 1, None, ws, "h")
        spread_axis(mid, pw, 2, out, ws, "w")


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
        ws = Workspace()
        for idx in plane_blocks(lead, max(1, chunk_elems // plane)):
            _backward_into(g[idx], out[idx], ph, pw, absolute, ws, threads)
    return out


def _backward_into(
    g: np.ndarray, out: np.ndarray, ph: SpreadPlan, pw: SpreadPlan, absolute: bool,
    ws: Workspace, threads: int = 0,
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


def golden(case: Any, inputs: Mapping[str, np.ndarray], out: np.ndarray | None = None
           ) -> np.ndarray:
    """The float64 golden of a case from its logical input values (into `out`)."""
    return backward(inputs["grad_output"], tuple(case.self_shape[-2:]), out=out)


def case_bytes(case: Any) -> int:
    """Memory one case's arrays need while generated: the input storage buffers as laid
    out, the float64 golden, and a float64 copy of gradOutput for the reference."""
    return footprint.case_bytes(case, {"self": 1, "grad_output": 1})
