"""What-if models: the backward as a kernel with one known bug would compute it.

Each model is a small pure function beside the reference: it reads a case's inputs (as the
kernel received them, strides included), its golden and its window tables (the same
SpreadPlans the reference and the budget use) and returns the output a kernel with that
bug gives, or None where the bug cannot show on this case (its tables equal the right
ones, one plane only, a float32 output for a cast bug, ...). The diagnosis re-judges a
failing case's output against each model's values: a model that the output matches,
within the budget or bit for bit, names the bug (docs/diagnosis.md).

Values are float64 and unrounded (what the bug computes before the final conversion), so
they are judged like a golden; a cast bug's values are already in the output dtype. A
model whose bug is a precision (accumulation in the input dtype) keeps the golden and says
which accumulation to judge with; its `exact` is one summation order's result.

numpy only; every sum is a fixed-order gather (no BLAS), as in the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from aclcheck.dtypes import FloatFormat, correctly_rounded, float_format
from aclcheck.judging.case.roundings import Rounding
from aclcheck.judging.diagnosis.codes import DiagnosisCode
from aclcheck.judging.diagnosis.reproduce import WhatIf, WhatIfModel
from aclcheck.ops.adaptive.windows import SpreadPlan, window_bounds

F32 = np.float32


@dataclass(frozen=True)
class Scene:
    """What a model reads about one case."""

    grad: np.ndarray  # gradOutput as the kernel received it (dtype and strides as passed)
    in_hw: tuple[int, int]  # (H, W) of self
    dtype: str  # output dtype name (float16 / float32 / bfloat16)
    golden: np.ndarray  # float64 reference result, self's shape
    windows: tuple[SpreadPlan, SpreadPlan]  # (rows, columns): the right window tables

    @property
    def fmt(self) -> FloatFormat:
        return float_format(self.dtype)

    @property
    def planes(self) -> int:
        return math.prod(self.grad.shape[:-2])

    @cached_property
    def magnitudes(self) -> np.ndarray:
        """m: the right backward of |gradOutput| (what the error bound scales with)."""
        rows, cols = _right(self)
        return backward_with(np.abs(np.asarray(self.grad, dtype=np.float64)), rows, cols)

    @cached_property
    def terms(self) -> np.ndarray:
        """k: how many terms reach each element of a plane with the right windows."""
        return np.multiply.outer(self.windows[0].counts, self.windows[1].counts)


# -- window tables of any bounds, and the spread over them ---------------------------------


@dataclass(frozen=True)
class Windows:
    """The windows of one axis: start and end (exclusive) of each, over in_size positions.
    Both sequences are non-decreasing (every model's bounds are)."""

    start: np.ndarray
    end: np.ndarray
    in_size: int

    @classmethod
    def right(cls, out_size: int, in_size: int) -> Windows:
        start, end = window_bounds(out_size, in_size)
        return cls(start, end, in_size)

    @property
    def sizes(self) -> np.ndarray:
        return np.maximum(self.end - self.start, 0)

    def same_as(self, other: Windows) -> bool:
        return bool(np.array_equal(self.start, other.start)
                    and np.array_equal(self.end, other.end))

    def counts(self) -> np.ndarray:
        """How many windows cover each position."""
        pos = np.arange(self.in_size, dtype=np.int64)
        lo = np.searchsorted(self.end, pos, side="right")
        hi = np.searchsorted(self.start, pos, side="right")
        return np.maximum(hi - lo, 0)

    def index(self) -> np.ndarray:
        """index[r, p]: the r-th window covering position p, or len(start) (a pad slot)."""
        out_size = len(self.start)
        pos = np.arange(self.in_size, dtype=np.int64)
        lo = np.searchsorted(self.end, pos, side="right")
        counts = self.counts()
        depth = int(counts.max()) if counts.size else 0
        r = np.arange(depth, dtype=np.int64)[:, None]
        return np.where(r < counts[None, :], lo[None, :] + r, out_size)


def _gather(x: np.ndarray, index: np.ndarray, axis: int, zero: object) -> list[np.ndarray]:
    """One slice of x per window rank along `axis` (pad slots read `zero`)."""
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, 1)
    padded = np.pad(x, pad, constant_values=zero)
    return [np.take(padded, row, axis=axis) for row in index]


def spread(terms: np.ndarray, rows: Windows, cols: Windows) -> np.ndarray:
    """out[..., h, w] = sum over the windows (i, j) covering (h, w) of terms[..., i, j],
    in terms' dtype: along W first, then H, each a sum of gathered slices in window
    order (an element covered by no window gets 0)."""
    lead = terms.shape[:-2]
    mid = np.zeros(lead + (terms.shape[-2], cols.in_size), dtype=terms.dtype)
    for part in _gather(terms, cols.index(), terms.ndim - 1, 0):
        mid += part
    out = np.zeros(lead + (rows.in_size, cols.in_size), dtype=terms.dtype)
    for part in _gather(mid, rows.index(), mid.ndim - 2, 0):
        out += part
    return out


def backward_with(grad: np.ndarray, rows: Windows, cols: Windows,
                  divisor: np.ndarray | None = None, *,
                  scale: np.ndarray | None = None) -> np.ndarray:
    """The float64 backward over any window tables: terms g / divisor (default: the
    windows' areas kh * kw), or g * scale, one rounding each, spread. Windows of size 0
    reach nothing."""
    g = np.asarray(grad, dtype=np.float64)
    area = np.multiply.outer(rows.sizes, cols.sizes).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if scale is not None:
            terms = g * scale
        else:
            div = area if divisor is None else divisor
            terms = g / np.where(div > 0, div, 1.0)
        terms = np.where(area > 0, terms, 0.0)
    return spread(terms, rows, cols)


def computed(grad: np.ndarray, rows: Windows, cols: Windows,
             divisor: np.ndarray | None = None, *,
             scale: np.ndarray | None = None) -> WhatIf:
    """A bug's values over its own windows, with its own m and k."""
    g = np.asarray(grad, dtype=np.float64)
    return WhatIf(backward_with(g, rows, cols, divisor, scale=scale),
                  magnitudes=backward_with(np.abs(g), rows, cols, divisor,
                                           scale=None if scale is None else np.abs(scale)),
                  terms=np.multiply.outer(rows.counts(), cols.counts()))


def _right(scene: Scene) -> tuple[Windows, Windows]:
    ho, wo = scene.grad.shape[-2:]
    h, w = scene.in_hw
    return Windows.right(ho, h), Windows.right(wo, w)


# -- bounds and divisor models --------------------------------------------------------------


def _bounds_model(bounds: Callable[[int, int], tuple[np.ndarray, np.ndarray]]
                  ) -> Callable[[Scene], WhatIf | None]:
    """A model whose windows (on both axes) come from `bounds(out_size, in_size)`."""

    def compute(scene: Scene) -> WhatIf | None:
        right_rows, right_cols = _right(scene)
        ho, wo = scene.grad.shape[-2:]
        h, w = scene.in_hw
        rows = Windows(*bounds(ho, h), h)
        cols = Windows(*bounds(wo, w), w)
        if rows.same_as(right_rows) and cols.same_as(right_cols):
            return None
        return computed(scene.grad, rows, cols)

    return compute


def _floor_end(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    start, _ = window_bounds(out_size, in_size)
    i = np.arange(1, out_size + 1, dtype=np.int64)
    return start, (i * in_size) // out_size


def _ceil_start(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    _, end = window_bounds(out_size, in_size)
    i = np.arange(out_size, dtype=np.int64)
    return -((-i * in_size) // out_size), end


def _float32_bounds(reciprocal: bool) -> Callable[[int, int], tuple[np.ndarray, np.ndarray]]:
    """Bounds i*I/O in float32: the product i*I rounded, then divided by O (or multiplied
    by fl32(1/O)), each step rounded to float32; clipped into [0, I]."""

    def bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
        i = np.arange(out_size + 1, dtype=F32)
        with np.errstate(over="ignore", invalid="ignore"):
            prod = i * F32(in_size)
            q = prod * (F32(1) / F32(out_size)) if reciprocal else prod / F32(out_size)
        start = np.clip(np.floor(q[:-1]), 0, in_size).astype(np.int64)
        end = np.clip(np.ceil(q[1:]), 0, in_size).astype(np.int64)
        return start, end

    return bounds


def _divisor_model(divisor: Callable[[Scene, Windows, Windows], np.ndarray | None]
                   ) -> Callable[[Scene], WhatIf | None]:
    """A model that sums the right windows but divides by another area."""

    def compute(scene: Scene) -> WhatIf | None:
        rows, cols = _right(scene)
        area = divisor(scene, rows, cols)
        right = np.multiply.outer(rows.sizes, cols.sizes).astype(np.float64)
        if area is None or np.array_equal(area, right):
            return None
        return computed(scene.grad, rows, cols, area)

    return compute


def _whole_input(scene: Scene, rows: Windows, cols: Windows) -> np.ndarray:
    return np.full((len(rows.start), len(cols.start)), float(rows.in_size * cols.in_size))


def _kh_kh(scene: Scene, rows: Windows, cols: Windows) -> np.ndarray:
    return np.multiply.outer(rows.sizes * rows.sizes, np.ones(len(cols.start)))


def _kw_kw(scene: Scene, rows: Windows, cols: Windows) -> np.ndarray:
    return np.multiply.outer(np.ones(len(rows.start)), cols.sizes * cols.sizes)


def _kw_from_ho(scene: Scene, rows: Windows, cols: Windows) -> np.ndarray | None:
    """kw computed with Ho in place of Wo (the column index through the row formula)."""
    ho, wo = len(rows.start), len(cols.start)
    if ho == wo:
        return None
    j = np.arange(wo, dtype=np.int64)
    kw = -((-(j + 1) * cols.in_size) // ho) - (j * cols.in_size) // ho
    return np.multiply.outer(rows.sizes, kw).astype(np.float64)


def _kh_from_wo(scene: Scene, rows: Windows, cols: Windows) -> np.ndarray | None:
    """kh computed with Wo in place of Ho."""
    ho, wo = len(rows.start), len(cols.start)
    if ho == wo:
        return None
    i = np.arange(ho, dtype=np.int64)
    kh = -((-(i + 1) * rows.in_size) // wo) - (i * rows.in_size) // wo
    return np.multiply.outer(kh, cols.sizes).astype(np.float64)


# -- axis, plane and layout models ----------------------------------------------------------


def _axes_swapped(scene: Scene) -> WhatIf | None:
    """Both shapes' last two sizes read as (W, H): gradOutput's row-major values taken as
    (..., Wo, Ho), the result written as (..., W, H) row-major memory."""
    ho, wo = scene.grad.shape[-2:]
    h, w = scene.in_hw
    if ho == wo and h == w:
        return None
    lead = scene.grad.shape[:-2]
    g = np.ascontiguousarray(scene.grad).reshape(lead + (wo, ho))
    what = computed(g, Windows.right(wo, w), Windows.right(ho, h))
    shape = lead + (h, w)
    assert what.magnitudes is not None and what.terms is not None
    return WhatIf(what.values.reshape(shape), magnitudes=what.magnitudes.reshape(shape),
                  terms=np.broadcast_to(what.terms, lead + (w, h)).reshape(shape))


def _plane0_broadcast(scene: Scene) -> WhatIf | None:
    """Every (n, c) plane computed from plane 0's gradOutput."""
    if scene.planes <= 1:
        return None
    golden = np.asarray(scene.golden, dtype=np.float64)
    first = golden.reshape((-1,) + golden.shape[-2:])[0]
    m = scene.magnitudes.reshape((-1,) + golden.shape[-2:])[0]
    return WhatIf(np.broadcast_to(first, golden.shape).copy(),
                  magnitudes=np.broadcast_to(m, golden.shape))


def _only_plane0(scene: Scene) -> WhatIf | None:
    """Only plane 0 computed; the other planes left zero."""
    if scene.planes <= 1:
        return None
    values = np.array(scene.golden, dtype=np.float64)
    values.reshape((-1,) + values.shape[-2:])[1:] = 0.0
    m = np.array(scene.magnitudes)
    m.reshape((-1,) + m.shape[-2:])[1:] = 0.0
    return WhatIf(values, magnitudes=m)


def _strides_ignored(scene: Scene) -> WhatIf | None:
    """A non-contiguous gradOutput read as row-major memory from its first element."""
    g = scene.grad
    if g.flags.c_contiguous:
        return None
    strides, step = [], g.itemsize
    for d in reversed(g.shape):
        strides.append(step)
        step *= max(d, 1)
    misread = np.lib.stride_tricks.as_strided(g, g.shape, tuple(reversed(strides)),
                                              writeable=False)
    rows, cols = _right(scene)
    return computed(misread, rows, cols)


# -- arithmetic models ----------------------------------------------------------------------


def _accumulate_input(scene: Scene) -> WhatIf | None:
    """Terms and sums in the input dtype: judged with that accumulation's budget; exact:
    terms g / area rounded to the dtype, spread (W first, then H) in the dtype."""
    if scene.dtype == "float32":
        return None
    dt = scene.fmt.np_dtype
    rows, cols = _right(scene)
    area = np.multiply.outer(rows.sizes, cols.sizes).astype(dt)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        terms = np.asarray(scene.grad).astype(dt) / area
        out = spread(terms, rows, cols)
    return WhatIf(np.asarray(scene.golden, dtype=np.float64), accumulate="input",
                  exact=out.astype(np.float64))


def _scale_input_dtype(scene: Scene) -> WhatIf | None:
    """1/(kh*kw) rounded to the input dtype, then exact products and sums."""
    if scene.dtype == "float32":
        return None
    rows, cols = _right(scene)
    area = np.multiply.outer(rows.sizes, cols.sizes).astype(np.float64)
    scale = correctly_rounded(1.0 / area, scene.fmt)
    if np.array_equal(scale, 1.0 / area):
        return None
    return computed(scene.grad, rows, cols, scale=scale)


def _cast_model(mode: Rounding) -> Callable[[Scene], WhatIf | None]:
    """The right sum converted to the output dtype with another rounding (toward zero,
    ties away from zero, toward +inf): a broken final conversion."""

    def compute(scene: Scene) -> WhatIf | None:
        if scene.dtype == "float32":  # no conversion after a float32 accumulation
            return None
        return WhatIf(np.asarray(scene.golden, dtype=np.float64), rounding=mode)

    return compute


def _flush_to_zero(scene: Scene) -> WhatIf | None:
    """Subnormal inputs read as zero, results that round below the smallest normal
    written as zero of their sign."""
    fmt = scene.fmt
    tiny = 2.0 ** fmt.min_exp
    g = np.asarray(scene.grad, dtype=np.float64)
    sub_in = (np.abs(g) < tiny) & (g != 0)
    golden = np.asarray(scene.golden, dtype=np.float64)
    r = np.abs(correctly_rounded(golden, fmt))
    if not sub_in.any() and not np.any((r < tiny) & (r != 0)):
        return None
    if not sub_in.any():
        return WhatIf(golden, rounding=Rounding.NEAREST_FTZ)
    rows, cols = _right(scene)
    what = computed(np.where(sub_in, g * 0.0, g), rows, cols)
    return WhatIf(what.values, rounding=Rounding.NEAREST_FTZ, magnitudes=what.magnitudes)


# -- the catalogue --------------------------------------------------------------------------

MODELS: tuple[WhatIfModel, ...] = (
    WhatIfModel(DiagnosisCode.WINDOW_END_FLOOR, "window end floor((i+1)*I/O) instead of ceil",
                _bounds_model(_floor_end)),
    WhatIfModel(DiagnosisCode.WINDOW_START_CEIL, "window start ceil(i*I/O) instead of floor",
                _bounds_model(_ceil_start)),
    WhatIfModel(DiagnosisCode.WINDOW_BOUNDS_FLOAT32, "window bounds i*I/O evaluated in float32",
                _bounds_model(_float32_bounds(reciprocal=False))),
    WhatIfModel(DiagnosisCode.WINDOW_BOUNDS_FLOAT32_RECIPROCAL,
                "window bounds i*I*fl32(1/O) evaluated in float32",
                _bounds_model(_float32_bounds(reciprocal=True))),
    WhatIfModel(DiagnosisCode.DIVISOR_WHOLE_INPUT,
                "divisor H*W of the whole input instead of kh*kw", _divisor_model(_whole_input)),
    WhatIfModel(DiagnosisCode.DIVISOR_KH_KH, "divisor kh*kh instead of kh*kw",
                _divisor_model(_kh_kh)),
    WhatIfModel(DiagnosisCode.DIVISOR_KW_KW, "divisor kw*kw instead of kh*kw",
                _divisor_model(_kw_kw)),
    WhatIfModel(DiagnosisCode.DIVISOR_KW_FROM_HO, "kw computed from Ho instead of Wo",
                _divisor_model(_kw_from_ho)),
    WhatIfModel(DiagnosisCode.DIVISOR_KH_FROM_WO, "kh computed from Wo instead of Ho",
                _divisor_model(_kh_from_wo)),
    WhatIfModel(DiagnosisCode.AXES_SWAPPED, "H and W sizes read in the wrong order", _axes_swapped),
    WhatIfModel(DiagnosisCode.PLANE_0_BROADCAST, "every plane computed from plane 0's gradOutput",
                _plane0_broadcast),
    WhatIfModel(DiagnosisCode.ONLY_PLANE_0, "only plane 0 computed, the other planes left zero",
                _only_plane0),
    WhatIfModel(DiagnosisCode.STRIDES_IGNORED, "non-contiguous gradOutput read as row-major memory",
                _strides_ignored),
    WhatIfModel(DiagnosisCode.ACCUMULATE_INPUT_DTYPE, "terms and sums in the input dtype, not FP32",
                _accumulate_input),
    WhatIfModel(DiagnosisCode.SCALE_INPUT_DTYPE, "1/(kh*kw) rounded to the input dtype",
                _scale_input_dtype),
    WhatIfModel(DiagnosisCode.CAST_TOWARD_ZERO, "final conversion rounds toward zero",
                _cast_model(Rounding.TOWARD_ZERO)),
    WhatIfModel(DiagnosisCode.CAST_TIES_AWAY, "final conversion rounds ties away from zero",
                _cast_model(Rounding.TIES_AWAY)),
    WhatIfModel(DiagnosisCode.CAST_ROUND_UP, "final conversion rounds toward +inf",
                _cast_model(Rounding.UP)),
    WhatIfModel(DiagnosisCode.FLUSH_TO_ZERO, "subnormal inputs and results flushed to zero",
                _flush_to_zero),
)


def model(code: str) -> WhatIfModel:
    """The model of a diagnosis code (KeyError naming the known codes)."""
    for m in MODELS:
        if m.code == code:
            return m
    raise KeyError(f"no what-if model {code!r} (known: {', '.join(m.code for m in MODELS)})")


def what_ifs(scene: Scene) -> Iterator[tuple[WhatIfModel, WhatIf]]:
    """Every model whose bug can show on this case, with its output."""
    if scene.grad.size == 0 or scene.golden.size == 0:
        return
    for bug in MODELS:
        what = bug(scene)
        if what is not None:
            yield bug, what
