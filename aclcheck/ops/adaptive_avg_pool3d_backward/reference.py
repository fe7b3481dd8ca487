"""The float64 reference backward of adaptive average pooling 3D (docs/contract-3d.md §1).

Separable and gather-based, like the 2D reference: every term g / (kd * kh * kw) is formed
with one rounding (the window volume is an exact float64 integer), then the terms are
spread along W, then H, then D, each spread a fixed-order sum of gathered slices (window
order along the axis). The order never depends on the chunking, the machine or the
shape, no matrix product is involved (BLAS kernels differ in FMA use and summation
order), and IEEE special values propagate exactly (no 0 * inf from a dense pooling
matrix): the result is bit-identical on every machine. Work is chunked over the leading
dims (N, C), so memory stays at the result plus a few chunk-sized temporaries.

The window tables come from the adaptive-pooling kit the 2D operator uses (`spread_plan`:
integer window bounds, the windows covering each input position).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from aclcheck.arrays import plane_blocks
from aclcheck.cases import Case
from aclcheck.ops.adaptive import footprint
from aclcheck.ops.adaptive.windows import (
    SpreadPlan,
    Workspace,
    check_out,
    spread_axis,
    spread_plan,
)

#: Elements of float64 per chunk (2 MiB), as for the 2D reference: chunking never changes
#: a result bit.
DEFAULT_CHUNK_ELEMS = 1 << 18

Plans = tuple[SpreadPlan, SpreadPlan, SpreadPlan]


def plans(out_dhw: tuple[int, ...], in_dhw: tuple[int, ...]) -> Plans:
    """The window tables of D, H and W for gradOutput (Do, Ho, Wo) and self (D, H, W)."""
    if len(out_dhw) != 3 or len(in_dhw) != 3:
        raise ValueError(f"need three output and three input sizes, got {tuple(out_dhw)} "
                         f"and {tuple(in_dhw)}")
    return (spread_plan(int(out_dhw[0]), int(in_dhw[0])),
            spread_plan(int(out_dhw[1]), int(in_dhw[1])),
            spread_plan(int(out_dhw[2]), int(in_dhw[2])))


def window_volumes(p: Plans) -> np.ndarray:
    """kd * kh * kw of every gradOutput position (Do, Ho, Wo), float64.

    Exact: a volume is at most D * H * W elements of one plane, far below 2^53 for any
    plane that fits in memory.
    """
    kd, kh, kw = (plan.sizes.astype(np.float64) for plan in p)
    return np.multiply.outer(np.multiply.outer(kd, kh), kw)


def term_counts(p: Plans) -> np.ndarray:
    """k[d, h, w]: the number of gradOutput terms reaching each input element (int64)."""
    return np.multiply.outer(np.multiply.outer(p[0].counts, p[1].counts), p[2].counts)


def backward(
    grad_output: np.ndarray,
    in_dhw: tuple[int, int, int],
    *,
    absolute: bool = False,
    chunk_elems: int = DEFAULT_CHUNK_ELEMS,
    out: np.ndarray | None = None,
    window_plans: Plans | None = None,
) -> np.ndarray:
    """Gradient w.r.t. the forward input, in float64, C-contiguous.

    grad_output: any array of rank >= 3 (..., Do, Ho, Wo), any dtype numpy reads as
    float64 (float16, float32, ml_dtypes.bfloat16, float64), any strides. in_dhw: (D, H, W)
    of self. absolute: use |gradOutput| instead: m, the sum of term magnitudes the error
    budget scales with. out: a caller-owned C-contiguous float64 array of the result's
    shape to write into (every element is written). window_plans: the three SpreadPlans
    when the caller holds them already (else looked up).
    """
    g = np.asarray(grad_output)
    if g.ndim < 3:
        raise ValueError(f"grad_output must have rank >= 3, got shape {g.shape}")
    dhw = tuple(int(v) for v in in_dhw)
    if len(dhw) != 3 or min(dhw) < 0:
        raise ValueError(f"in_dhw must be three non-negative sizes, got {tuple(in_dhw)}")
    odhw = tuple(int(v) for v in g.shape[-3:])
    lead = tuple(g.shape[:-3])
    shape = lead + dhw
    if out is None:
        out = np.empty(shape, dtype=np.float64)
    else:
        check_out(out, shape, g)
    if out.size == 0:
        return out
    if g.size == 0:
        out.fill(0.0)  # no terms reach any element
        return out
    p = window_plans if window_plans is not None else plans(odhw, dhw)
    if tuple(pl.out_size for pl in p) != odhw or tuple(pl.in_size for pl in p) != dhw:
        raise ValueError("window_plans do not match the shapes")
    volumes = window_volumes(p)
    (do, ho, wo), (d, h, w) = odhw, dhw
    plane = max(do * ho * wo, do * ho * w, do * h * w, d * h * w, 1)
    ws = Workspace()
    with np.errstate(invalid="ignore", over="ignore"):
        for idx in plane_blocks(lead, max(1, chunk_elems // plane)):
            _block(g[idx], out[idx], p, volumes, absolute, ws)
    return out


def _block(g: np.ndarray, out: np.ndarray, p: Plans, volumes: np.ndarray, absolute: bool,
           ws: Workspace) -> None:
    """One chunk: float64 terms g / volume (|g| if absolute), spread W, H, D into `out`."""
    block = ws.get("in", g.shape)
    np.copyto(block, g, casting="unsafe")
    rows = math.prod(g.shape[:-3])
    block = block.reshape(rows, *volumes.shape)
    if absolute:
        np.abs(block, out=block)
    np.divide(block, volumes, out=block)
    target = out.reshape(rows, p[0].in_size, p[1].in_size, p[2].in_size)
    if min(pl.depth for pl in p) == 0:
        target.fill(0.0)
        return
    if all(pl.uniform for pl in p):
        # windows tile every axis: each element takes exactly one term, one broadcast copy
        ks = [pl.in_size // pl.out_size for pl in p]
        tiles = target.reshape(rows, p[0].out_size, ks[0], p[1].out_size, ks[1],
                               p[2].out_size, ks[2])
        tiles[...] = block[:, :, None, :, None, :, None]
        return
    mid = spread_axis(block, p[2], 3, None, ws, "w")
    mid = spread_axis(mid, p[1], 2, None, ws, "h")
    spread_axis(mid, p[0], 1, target, ws, "d")


def golden(case: Case, inputs: Mapping[str, np.ndarray], out: np.ndarray | None = None
           ) -> np.ndarray:
    """The float64 golden of a case from its logical input values (into `out`)."""
    dhw = tuple(case.tensor_desc("self").shape[-3:])
    return backward(inputs["grad_output"], (dhw[0], dhw[1], dhw[2]), out=out)


def case_bytes(case: Case) -> int:
    """Memory one case's arrays need while generated: the input storage buffers as laid
    out, the float64 golden, and a float64 copy of gradOutput for the reference."""
    return footprint.case_bytes(case, {"self": 1, "grad_output": 1})
