"""Kernels for the hardware-edge families: the vendor's paths as models, each with the
bug one family exists to catch, and kernels that keep state between calls.

Every kernel has the adapter signature `fn(grad_output, self) -> out` of tests/kernels.py
(numpy arrays of the case dtype, 3-D or 4-D, possibly non-contiguous views). They compute
their own window bounds, as an implementation would.

MODELS (correct for the products that take the path, docs/contract.md sections 6 and 9):
`a2_tiled` runs the Atlas A2/A3 plan of `aclcheck.ops.adaptive.tiling` (channels-last
lanes, output cells dealt to 40 or 48 vector cores, UB passes, N·C slices, FLOAT32 atomic
adds in core order, one RNE cast); `a2_tiled_shuffled` adds the same terms with the cores
in a random order; `global_fill` is the 1x1 path of every product (fill 1/(H·W) rounded
to float, then to the dtype; one product in the dtype); `matmul_fp16` is the Atlas
training/inference path with the batch matmuls fed FLOAT16 (FLOAT32 inputs too, as
cubeMathType 1 does there), FLOAT32 accumulation and saturating casts.

BROKEN kernels carry one bug at a hardware edge; each family of
`aclcheck/ops/adaptive_avg_pool2d_backward/hardware.py` is the only one that reaches its
bug (tests/test_hardware_families.py): `plane_split_remainder` (cores), `pass_overrun`
(ubpass), `slice_overrun` (ncslice), `fill_count_fp16` and `fill_flushed_fp16`
(bigglobal), `float_bounds_wide`
(tall), `merged_planes_fp32` (layoutnc).

STATEFUL kernels are correct on the first call of a process and wrong on a later one:
`stale_accumulator`, `shape_keyed_plan`, `partial_clear` (what the verify stale-state
check exists to catch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from aclcheck.ops.adaptive.tiling import Tiling, a2_tiling

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]
F32 = np.float32
F16 = np.float16
F16_MAX = float(np.finfo(np.float16).max)


# -- geometry an implementation computes for itself ---------------------------------------


def _bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer window bounds: start = floor(i*in/out), end = ceil((i+1)*in/out)."""
    i = np.arange(out_size, dtype=np.int64)
    return (i * in_size) // out_size, -((-(i + 1) * in_size) // out_size)


def _float_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Bounds from float32 quotients of exact-looking products: floor(f32(i*in)/out) and
    ceil(f32((i+1)*in)/out). Right while i*in stays below 2^24; past it the product (and
    the quotient) round, and some window edges move by one."""
    i = np.arange(out_size, dtype=np.int64)
    start = np.floor((i * in_size).astype(F32) / F32(out_size)).astype(np.int64)
    end = np.ceil(((i + 1) * in_size).astype(F32) / F32(out_size)).astype(np.int64)
    return np.clip(start, 0, in_size), np.clip(end, 0, in_size)


def _empty(grad: np.ndarray, self_: np.ndarray) -> np.ndarray | None:
    if 0 in grad.shape or 0 in self_.shape:
        return np.zeros(self_.shape, dtype=self_.dtype)
    return None


def _cast(acc: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The final conversion of FLOAT32 sums to the output dtype (RNE; overflow -> inf)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(acc, dtype=F32).astype(dtype)


# -- the Atlas A2/A3 tiled kernel -----------------------------------------------------------


@dataclass(frozen=True)
class _Bugs:
    """Which hardware-edge bug a run of the tiled kernel carries (all off: correct)."""

    pass_overrun: bool = False
    slice_overrun: bool = False
    partial_clear: bool = False


def _task_list(plan: Tiling, bugs: _Bugs, core_order: np.ndarray) -> list[np.ndarray]:
    """Task indices in the order the cores add them: per core its span in UB passes of
    `cells_per_pass` tasks. With pass_overrun every pass, the last included, takes a full
    pass (past the core's own span, into the next core's tasks)."""
    total = plan.split.tasks
    order = []
    for core in core_order:
        start, stop = plan.split.span(int(core))
        step = max(1, plan.cells_per_pass)
        for first in range(start, stop, step):
            last = first + step if bugs.pass_overrun else min(first + step, stop)
            order.append(np.arange(first, min(last, total)))
    return order


def _tiled(grad: np.ndarray, self_: np.ndarray, cores: int, bugs: _Bugs,
           core_order: np.ndarray | None = None,
           workspace: np.ndarray | None = None) -> np.ndarray:
    """The A2/A3 kernel on (..., Ho, Wo) -> (..., H, W): channels-last lanes (N·C
    innermost), FLOAT32 terms g·fl32(1/(kh·kw)) added into a FLOAT32 buffer task by task
    (atomic path), or each product cast once (direct path)."""
    empty = _empty(grad, self_)
    if empty is not None:
        return empty
    ho, wo = grad.shape[-2:]
    h, w = self_.shape[-2:]
    lead = self_.shape[:-2]
    nc = int(np.prod(lead, dtype=np.int64))
    itemsize = np.dtype(self_.dtype).itemsize
    plan = a2_tiling((ho, wo), nc, (h, w), itemsize, cores)
    cells = ho * wo
    g = np.ascontiguousarray(grad).reshape(nc, cells).T.astype(F32).reshape(-1)  # (cell, lane)
    sh, eh = _bounds(ho, h)
    sw, ew = _bounds(wo, w)
    kh, kw = eh - sh, ew - sw
    factor = (F32(1) / np.multiply.outer(kh, kw).astype(F32)).reshape(-1)
    if not plan.atomic:  # every input element under exactly one window: one cast each
        rows = np.repeat(np.arange(ho), kh)
        cols = np.repeat(np.arange(wo), kw)
        cell = (rows[:, None] * wo + cols[None, :]).reshape(-1)
        terms = g.reshape(cells, nc)[cell] * factor[cell][:, None]
        return _cast(terms.T.reshape(lead + (h, w)), self_.dtype)
    size = h * w * nc
    if workspace is None:
        acc = np.zeros(size + plan.slice_lanes, dtype=F32)  # + room past the end
    else:  # a caller's buffer: cleared (by the cores' clear shares) before the adds
        acc = workspace
        _clear(acc, plan, h * w, nc, cores, bugs)
    order = core_order if core_order is not None else np.arange(plan.split.used)
    tasks = np.concatenate(_task_list(plan, bugs, order) or [np.zeros(0, np.int64)])
    cell, sl = np.divmod(tasks, plan.slices)
    tail = (sl == plan.slices - 1) & (plan.tail_lanes != plan.slice_lanes)
    if bugs.slice_overrun and plan.lanes_large:
        tail[:] = False  # the sliced kernel reads and adds its tail at the full width
    gpad = np.concatenate([g, np.zeros(plan.slice_lanes, dtype=F32)])
    geometry = (sh, eh, sw, ew, wo, w, nc)
    _add_tasks(acc, gpad, factor, cell[~tail], sl[~tail] * plan.slice_lanes,
               plan.slice_lanes, geometry)
    _add_tasks(acc, gpad, factor, cell[tail], sl[tail] * plan.slice_lanes,
               plan.tail_lanes, geometry)
    out = acc[:size].reshape(h, w, nc)
    return _cast(np.moveaxis(out, -1, 0).reshape(lead + (h, w)), self_.dtype)


def _add_tasks(acc: np.ndarray, g: np.ndarray, factor: np.ndarray, cell: np.ndarray,
               lane0: np.ndarray, width: int, geometry: tuple) -> None:
    """Tasks of `width` lanes each, in order: the lanes of a task's cell times its factor,
    added into every input element of its window (np.add.at: one add at a time, in
    order). Lanes past N·C read and write the next cell's and the next element's lanes,
    as flat channels-last memory does; writes past the buffer are lost."""
    if not cell.size:
        return
    sh, eh, sw, ew, wo, w, nc = geometry
    ci, cj = np.divmod(cell, wo)
    kh, kw = eh[ci] - sh[ci], ew[cj] - sw[cj]
    npix = kh * kw
    task = np.repeat(np.arange(cell.size), npix)  # one row per (task, window element)
    k = np.arange(task.size) - np.repeat(np.cumsum(npix) - npix, npix)
    rows = sh[ci][task] + k // kw[task]
    cols = sw[cj][task] + k % kw[task]
    lanes = np.arange(width)
    src = (cell[task] * nc + lane0[task])[:, None] + lanes[None, :]
    dst = ((rows * w + cols) * nc + lane0[task])[:, None] + lanes[None, :]
    terms = g[np.minimum(src, g.size - 1)] * factor[cell[task]][:, None]
    keep = dst < acc.size
    with np.errstate(over="ignore", invalid="ignore"):
        np.add.at(acc, dst[keep], terms[keep])


def _clear(acc: np.ndarray, plan: Tiling, rows: int, nc: int, cores: int, bugs: _Bugs) -> None:
    """Zero the accumulator before the adds: input rows dealt to every launched core in
    equal shares (the kernel's clear partition). With partial_clear only the cores that
    compute clear their share, as if the idle ones returned early."""
    share = -(-rows // cores)
    clearing = plan.split.used if bugs.partial_clear else cores
    for core in range(clearing):
        acc[core * share * nc:min((core + 1) * share, rows) * nc] = 0
    acc[rows * nc:] = 0


def a2_tiled(grad_output: np.ndarray, self: np.ndarray, cores: int = 40) -> np.ndarray:
    """MODEL: the Atlas A2/A3 kernel on a 40-core chip (docs/contract.md section 9)."""
    return _tiled(grad_output, self, cores, _Bugs())


def a2_tiled_48(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """MODEL: the same kernel on a 48-core chip."""
    return _tiled(grad_output, self, 48, _Bugs())


def a2_tiled_shuffled(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """MODEL: the 40-core kernel with its cores adding in a random order (atomics)."""
    empty = _empty(grad_output, self)
    if empty is not None:
        return empty
    plan_cores = 40
    rng = np.random.default_rng(grad_output.size)
    ho, wo = grad_output.shape[-2:]
    nc = int(np.prod(self.shape[:-2], dtype=np.int64))
    used = a2_tiling((ho, wo), nc, tuple(self.shape[-2:]), np.dtype(self.dtype).itemsize,
                     plan_cores).split.used
    return _tiled(grad_output, self, plan_cores, _Bugs(), core_order=rng.permutation(used))


def pass_overrun(grad_output: np.ndarray, self: np.ndarray, cores: int = 40) -> np.ndarray:
    """BROKEN (ubpass): a core's last UB pass takes a full pass of cells instead of the
    rest of its share, adding the first cells of the next core's share a second time.
    Only where a core needs more than one pass and another core follows: 39 681+ cells
    (FLOAT16, N·C = 1, 40 cores)."""
    return _tiled(grad_output, self, cores, _Bugs(pass_overrun=True))


def pass_overrun_48(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN (ubpass): pass_overrun on a 48-core chip."""
    return pass_overrun(grad_output, self, 48)


def slice_overrun(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN (ncslice): the sliced kernel (N·C past one UB pass) reads and adds its last
    N·C slice at the full slice width, so lanes past N·C take the next cell's values and
    land in the next element's lanes. Only where N·C is sliced: 15 857+ (FLOAT16,
    BFLOAT16), 23 801+ (FLOAT32); its unsliced kernel is right."""
    return _tiled(grad_output, self, 40, _Bugs(slice_overrun=True))


# -- a plane-split kernel (Ascend 950 / GPU style) ----------------------------------------


def _covering(start: np.ndarray, end: np.ndarray, in_size: int) -> np.ndarray:
    """cover[r, p]: the r-th window (in window order) covering input position p, or
    len(start) (a zero pad slot) where fewer windows cover it."""
    pos = np.arange(in_size)
    lo = np.searchsorted(end, pos, side="right")
    hi = np.searchsorted(start, pos, side="right")
    count = np.maximum(hi - lo, 0)
    rank = np.arange(int(count.max()) if in_size and len(start) else 0)[:, None]
    return np.where(rank < count[None, :], lo[None, :] + rank, len(start))


def _window_sum32(grad: np.ndarray, self_: np.ndarray,
                  bounds: Callable[[int, int], tuple[np.ndarray, np.ndarray]] = _bounds
                  ) -> np.ndarray:
    """Terms g / (kh·kw) summed per output element in window (i, j) order, in the
    precision of `grad` (FLOAT32 for the kernels; float64 for the tests' references)."""
    ho, wo = grad.shape[-2:]
    sh, eh = bounds(ho, self_.shape[-2])
    sw, ew = bounds(wo, self_.shape[-1])
    acc = np.float64 if grad.dtype == np.float64 else F32
    area = np.multiply.outer(eh - sh, ew - sw).astype(acc)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        terms = np.asarray(grad, dtype=acc) / np.where(area > 0, area, 1)
        terms = np.pad(terms, [(0, 0)] * (terms.ndim - 2) + [(0, 1), (0, 1)])
        ch, cw = _covering(sh, eh, self_.shape[-2]), _covering(sw, ew, self_.shape[-1])
        out = np.zeros(self_.shape, dtype=acc)
        for rh in range(ch.shape[0]):
            rows = terms[..., ch[rh], :]
            for rw in range(cw.shape[0]):
                out += rows[..., cw[rw]]
    return out


def window_sum_fp32(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """MODEL: FLOAT32 terms in window order, one RNE cast (the broken split and bound
    kernels below are this kernel with one bug)."""
    empty = _empty(grad_output, self)
    if empty is not None:
        return empty
    return _cast(_window_sum32(grad_output, self), self.dtype)


def plane_split_remainder(grad_output: np.ndarray, self: np.ndarray,
                          cores: int = 40) -> np.ndarray:
    """BROKEN (cores): N·C planes dealt to `cores` cores, the first N·C % cores taking one
    extra; the cores after them start at core·(share + 1) instead of core·share + rest,
    so planes are skipped (left 0) and the last cores run past the end. Only where
    N·C > cores and N·C is not a multiple: no default case before this family had
    N·C > 17."""
    empty = _empty(grad_output, self)
    if empty is not None:
        return empty
    lead = self.shape[:-2]
    nc = int(np.prod(lead, dtype=np.int64))
    g = np.asarray(grad_output).reshape((nc,) + grad_output.shape[-2:])
    s = np.empty((nc,) + self.shape[-2:], dtype=self.dtype)
    out = np.zeros((nc,) + self.shape[-2:], dtype=F32)
    share, rest = divmod(nc, cores)
    for core in range(cores):
        count = share + (core < rest)
        start = core * (share + 1) if core >= rest and rest else core * share + min(core, rest)
        stop = min(start + count, nc)
        if start < stop:
            out[start:stop] = _window_sum32(g[start:stop], s[start:stop])
    return _cast(out.reshape(self.shape), self.dtype)


def plane_split_remainder_48(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN (cores): plane_split_remainder with 48 cores."""
    return plane_split_remainder(grad_output, self, 48)


def plane_split_remainder_20(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN (cores): plane_split_remainder with 20 cores (a cube-core count)."""
    return plane_split_remainder(grad_output, self, 20)


# -- the 1x1 path of every product ----------------------------------------------------------


def _fill_scale(count: float, dtype: np.dtype) -> np.ndarray:
    """fl_dtype(fl32(1 / count)): the fill value as the product makes it."""
    with np.errstate(over="ignore", divide="ignore"):
        return np.asarray(F32(1.0 / count)).astype(dtype)


def _global(grad: np.ndarray, self_: np.ndarray, count: float) -> np.ndarray:
    fill = _fill_scale(count, self_.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        prod = (np.asarray(grad, dtype=F32) * fill.astype(F32)).astype(self_.dtype)
    return np.broadcast_to(prod, self_.shape).copy()


def global_fill(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """MODEL: Ho = Wo = 1 on every product: out = gradOutput x fill, the fill 1/(H·W)
    computed in double, rounded to float, then to the dtype; the product in the dtype.
    Other shapes: the A2/A3 kernel (40 cores)."""
    empty = _empty(grad_output, self)
    if empty is not None:
        return empty
    if grad_output.shape[-2:] != (1, 1):
        return a2_tiled(grad_output, self)
    h, w = self.shape[-2:]
    return _global(grad_output, self, float(h * w))


def fill_count_fp16(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN (bigglobal): the 1x1 path holds the count H·W in FLOAT16 before dividing:
    exact up to 2 048, rounded from 2 049 on, infinite (fill 0) from 65 520."""
    empty = _empty(grad_output, self)
    if empty is not None:
        return empty
    if grad_output.shape[-2:] != (1, 1):
        return a2_tiled(grad_output, self)
    h, w = self.shape[-2:]
    with np.errstate(over="ignore"):
        count = float(np.float16(h * w))
    return _global(grad_output, self, count)


def fill_flushed_fp16(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN (bigglobal): the 1x1 path's FLOAT16 fill flushed to zero when subnormal
    (a flush-to-zero conversion of the scalar): every output 0 from H·W = 16 393, right
    up to 16 392 (where the fill still rounds up to the smallest normal)."""
    empty = _empty(grad_output, self)
    if empty is not None:
        return empty
    if grad_output.shape[-2:] != (1, 1):
        return a2_tiled(grad_output, self)
    h, w = self.shape[-2:]
    out = _global(grad_output, self, float(h * w))
    if self.dtype == np.float16 and abs(float(_fill_scale(float(h * w), self.dtype))) < 2.0**-14:
        out[...] = 0
    return out


# -- window bounds on a W > 1 (vector) path ---------------------------------------------------


def float_bounds_wide(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN (tall): where W > 1 the kernel's vector path derives window bounds from
    float32 quotients (floor(f32(i·in)/out)), wrong once i·in passes 2^24; its W = 1 path
    uses integers. The index family's 2^24 crossings all have W = 1."""
    empty = _empty(grad_output, self)
    if empty is not None:
        return empty
    bounds = _float_bounds if self.shape[-1] > 1 else _bounds
    return _cast(_window_sum32(grad_output, self, bounds), self.dtype)


# -- layouts ----------------------------------------------------------------------------------


def merged_planes_fp32(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """BROKEN (layoutnc): the FLOAT32 kernel drops size-1 dims, then merges N and C into
    N·C planes with C's stride without checking that N's stride is C times it (true for
    contiguous and H/W-transposed views, false for channels-last and strided ones with
    N > 1 and C > 1). Its FLOAT16/BFLOAT16 kernel checks."""
    g = grad_output
    if (np.dtype(self.dtype).itemsize == 4 and g.ndim == 4 and g.shape[0] > 1
            and g.shape[1] > 1 and g.strides[0] != g.shape[1] * g.strides[1]):
        n, c, ho, wo = g.shape
        merged = np.lib.stride_tricks.as_strided(
            g, shape=(n * c, ho, wo), strides=(g.strides[1],) + g.strides[2:],
            writeable=False)
        g = merged.reshape(g.shape)
    return a2_tiled(g, self)


# -- the Atlas training/inference matmul path ------------------------------------------------


def _to_fp16_saturating(x: np.ndarray) -> np.ndarray:
    """A cast to FLOAT16 in saturation mode (the only mode of these products)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.clip(np.nan_to_num(np.asarray(x, dtype=F32), nan=0.0),
                       -F16_MAX, F16_MAX).astype(F16)


def matmul_fp16(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """MODEL: Atlas training/inference: vmOut = gradOutput x weight 1/(kh·kw) in the input
    dtype; two batch matmuls against 0/1 assist matrices with FLOAT16 inputs (FLOAT32 is
    cast down: cubeMathType 1 there), products accumulated in FLOAT32, written in the
    input dtype (FLOAT16 saturating). 1x1 outputs take the fill path."""
    empty = _empty(grad_output, self)
    if empty is not None:
        return empty
    if grad_output.shape[-2:] == (1, 1):
        return global_fill(grad_output, self)
    dt = np.dtype(self.dtype)
    ho, wo = grad_output.shape[-2:]
    h, w = self.shape[-2:]
    sh, eh = _bounds(ho, h)
    sw, ew = _bounds(wo, w)
    weight = (F32(1) / np.multiply.outer(eh - sh, ew - sw).astype(F32))
    with np.errstate(over="ignore", invalid="ignore"):
        if dt == np.float16:
            vm = (np.asarray(grad_output, dtype=F32) * _to_fp16_saturating(weight)
                  .astype(F32))
            vm = _to_fp16_saturating(vm)
        else:
            vm = _to_fp16_saturating(np.asarray(grad_output, dtype=F32) * weight)
        # each matmul against its 0/1 assist matrix, as the sums it makes: the windows
        # covering a position, FLOAT32 sums of FLOAT16 values (zeros add nothing; the
        # dense matrices would take Ho·H memory)
        ch, cw = _covering(sh, eh, h), _covering(sw, ew, w)
        vm = np.pad(vm.astype(F32), [(0, 0)] * (vm.ndim - 2) + [(0, 1), (0, 0)])
        rows = np.zeros(vm.shape[:-2] + (h, wo), dtype=F32)
        for r in range(ch.shape[0]):
            rows += vm[..., ch[r], :]
        mid = _to_fp16_saturating(rows)  # the first matmul's output, fed to the second
        mid = np.pad(mid.astype(F32), [(0, 0)] * (mid.ndim - 1) + [(0, 1)])
        out = np.zeros(self.shape, dtype=F32)
        for r in range(cw.shape[0]):
            out += mid[..., cw[r]]
    if dt == np.float16:
        return _to_fp16_saturating(out)
    return out.astype(F32)


# -- kernels that keep state between calls ---------------------------------------------------

#: Process-wide buffers and plans of the stateful kernels (what a leaky kernel keeps).
_WORKSPACES: dict[str, np.ndarray] = {}
_PLANS: dict[tuple[int, ...], bool] = {}


def _grown(key: str, size: int) -> np.ndarray:
    """A buffer kept between calls, zeroed only when it is (re)allocated."""
    buf = _WORKSPACES.get(key)
    if buf is None or buf.size < size:
        buf = np.zeros(size, dtype=F32)
        _WORKSPACES[key] = buf
    return buf[:size]


def stale_accumulator(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """STATEFUL: accumulates into a FLOAT32 workspace kept from call to call and zeroed
    only when allocated: right on a process's first call, off by the earlier results on
    every later call that fits the buffer."""
    empty = _empty(grad_output, self)
    if empty is not None:
        return empty
    acc = _grown("acc", int(np.prod(self.shape)))
    acc += _window_sum32(grad_output, self).reshape(-1)
    return _cast(acc.reshape(self.shape), self.dtype)


def shape_keyed_plan(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """STATEFUL: caches, per gradOutput shape, whether its memory is channels-last, and
    reads every later call of that shape with the first call's answer."""
    g = grad_output
    if g.ndim >= 3 and g.size and g.shape[-3] > 1:
        actual = bool(g.strides[-3] == g.itemsize)
        cached = _PLANS.setdefault(tuple(g.shape), actual)
        memory = np.ascontiguousarray(np.moveaxis(g, -3, -1) if actual else g).reshape(-1)
        lead, (c, ho, wo) = g.shape[:-3], g.shape[-3:]
        g = (np.moveaxis(memory.reshape(lead + (ho, wo, c)), -1, -3) if cached
             else memory.reshape(g.shape))
    return a2_tiled(g, self)


def partial_clear(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """STATEFUL: the A2/A3 kernel (40 cores) with a workspace kept between calls whose
    clear is done only by the cores that compute: the rows dealt to idle cores keep the
    previous call's sums (Ho·Wo < 40 cells leaves cores idle)."""
    empty = _empty(grad_output, self)
    if empty is not None:
        return empty
    nc = int(np.prod(self.shape[:-2], dtype=np.int64))
    h, w = self.shape[-2:]
    # the workspace is the kernel's own memory: sized for the call, reused when it fits
    ws = _grown("clear", h * w * nc + 32768)
    ws = ws[:h * w * nc + a2_tiling(tuple(grad_output.shape[-2:]), nc, (h, w),
                                    np.dtype(self.dtype).itemsize, 40).slice_lanes]
    return _tiled(grad_output, self, 40, _Bugs(partial_clear=True), workspace=ws)


def reset_state() -> None:
    """Forget every buffer and plan (tests start each stateful check clean)."""
    _WORKSPACES.clear()
    _PLANS.clear()


MODELS: dict[str, Kernel] = {
    "a2_tiled": a2_tiled,
    "a2_tiled_48": a2_tiled_48,
    "a2_tiled_shuffled": a2_tiled_shuffled,
    "global_fill": global_fill,
    "matmul_fp16": matmul_fp16,
    "window_sum_fp32": window_sum_fp32,
}
#: family -> the broken kernels only that family catches
BROKEN: dict[str, tuple[Kernel, ...]] = {
    "cores": (plane_split_remainder, plane_split_remainder_48, plane_split_remainder_20),
    "ubpass": (pass_overrun, pass_overrun_48),
    "ncslice": (slice_overrun,),
    "bigglobal": (fill_count_fp16, fill_flushed_fp16),
    "tall": (float_bounds_wide,),
    "layoutnc": (merged_planes_fp32,),
}
#: each broken kernel -> the correct kernel it is with its bug taken out
TWIN: dict[Kernel, Kernel] = {
    plane_split_remainder: window_sum_fp32,
    plane_split_remainder_48: window_sum_fp32,
    plane_split_remainder_20: window_sum_fp32,
    pass_overrun: a2_tiled,
    pass_overrun_48: a2_tiled_48,
    slice_overrun: a2_tiled,
    fill_count_fp16: global_fill,
    fill_flushed_fp16: global_fill,
    float_bounds_wide: window_sum_fp32,
    merged_planes_fp32: a2_tiled,
}
STATEFUL: dict[str, Kernel] = {
    "stale_accumulator": stale_accumulator,
    "shape_keyed_plan": shape_keyed_plan,
    "partial_clear": partial_clear,
}

__all__ = ["BROKEN", "MODELS", "STATEFUL", "TWIN", "ml_dtypes", "reset_state"]
