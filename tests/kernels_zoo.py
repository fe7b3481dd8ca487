"""A zoo of broken kernels of known cause, for measuring what aclcheck's diagnosis names.

Each kernel has the adapter signature `fn(grad_output, self) -> out` (numpy arrays of the
case dtype, ml_dtypes.bfloat16 for bf16, 3-D (C, H, W) or 4-D (N, C, H, W), possibly
strided views) and carries exactly one bug. They are written independently of aclcheck's
what-if models (`aclcheck/ops/adaptive_avg_pool2d_backward/bugs.py`): their own window
arithmetic, their own loops, numpy and ml_dtypes only, so a model that reproduces a zoo
kernel is evidence, not a tautology.

Like the hardware they imitate, the kernels form terms and sums in float32 and convert
once to the output dtype. `make(name, acc=np.float64)` gives the same bug computed in
float64 and rounded once (RNE): the variant a what-if model must reproduce bit for bit.

ZOO lists every kernel with its real cause and the diagnosis codes (docs/diagnosis.md)
that name that cause; `benchmarks/bench_diagnosis.py` runs them on the default suite and
prints aclcheck's first diagnosis beside the real cause. CONTROLS are correct kernels:
they must get no diagnosis at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]
Bounds = Callable[[int, int], tuple[np.ndarray, np.ndarray]]

F32, F64 = np.float32, np.float64
BF16 = np.dtype(ml_dtypes.bfloat16)


# -- window arithmetic (integer, as the contract defines it; and the broken variants) ------


def b_exact(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """start = floor(i*in/out), end = ceil((i+1)*in/out), in Python integers."""
    start = [i * in_size // out_size for i in range(out_size)]
    end = [-(-(i + 1) * in_size // out_size) for i in range(out_size)]
    return np.array(start, dtype=np.int64), np.array(end, dtype=np.int64)


def b_floor_end(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    start, _ = b_exact(out_size, in_size)
    end = [(i + 1) * in_size // out_size for i in range(out_size)]
    return start, np.array(end, dtype=np.int64)


def b_ceil_start(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    _, end = b_exact(out_size, in_size)
    start = [-(-i * in_size // out_size) for i in range(out_size)]
    return np.array(start, dtype=np.int64), end


def b_float32(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """i*in/out evaluated in float32 (product, then a correctly rounded division)."""
    i = np.arange(out_size + 1, dtype=F32)
    q = (i * F32(in_size)) / F32(out_size)
    start = np.floor(q[:-1]).astype(np.int64)
    end = np.ceil(q[1:]).astype(np.int64)
    return np.clip(start, 0, in_size), np.clip(end, 0, in_size)


def b_unit_upsampling(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Upsampling axes (out > in) take every window as one element: end = start + 1."""
    start, end = b_exact(out_size, in_size)
    return (start, start + 1) if out_size > in_size else (start, end)


# -- the engine: a scatter loop over windows, any bounds, any divisor ------------------------


@dataclass(frozen=True)
class Recipe:
    """How one kernel computes: bounds per axis, the divisor, the arithmetic, the cast."""

    bounds_h: Bounds = b_exact
    bounds_w: Bounds = b_exact
    #: area of window (i, j) from (kh, kw, Ho, Wo, H, W); None: kh * kw
    divisor: Callable[..., np.ndarray] | None = None
    scale_in_dtype: bool = False  # 1/area rounded to the input dtype before the product
    acc: object = F32  # float32, float64, or "input" (the input dtype)
    cast: str = "nearest"  # nearest | toward_zero | away | up
    flush: bool = False  # subnormal inputs read as 0, subnormal results written as 0
    notes: tuple[str, ...] = field(default=())


def _covers(start: np.ndarray, end: np.ndarray, size: int) -> list[np.ndarray]:
    """For each window: the input positions it covers (empty windows cover nothing)."""
    return [np.arange(max(int(s), 0), min(int(e), size)) for s, e in zip(start, end,
                                                                         strict=True)]


def _acc_dtype(recipe: Recipe, dtype: np.dtype) -> np.dtype:
    if recipe.acc == "input":
        return dtype if dtype != np.float32 else np.dtype(F32)
    return np.dtype(recipe.acc)


def _subnormal_limit(dtype: np.dtype) -> float:
    info = ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)
    return float(info.smallest_normal)


def _flush(x: np.ndarray, limit: float) -> np.ndarray:
    """Subnormal values of x set to zero of their sign."""
    x = np.array(x, copy=True)
    tiny = np.abs(x.astype(F64)) < limit
    x[tiny] = x[tiny] * 0
    return x


def pool(g: np.ndarray, self_: np.ndarray, recipe: Recipe) -> np.ndarray:
    """The backward as two scatter loops, separable like the vendor's paths: every
    column window j adds its terms g[..., i, j] / area(i, j) to the columns it covers
    (windows in order), then every row window i adds that row to the rows it covers; all
    in the accumulation dtype. Then one conversion to self's dtype with the recipe's cast."""
    dtype = np.dtype(self_.dtype)
    out_shape = tuple(self_.shape)
    if 0 in g.shape or 0 in out_shape:
        return np.zeros(out_shape, dtype=dtype)
    ho, wo = g.shape[-2:]
    h, w = out_shape[-2:]
    sh, eh = recipe.bounds_h(ho, h)
    sw, ew = recipe.bounds_w(wo, w)
    kh, kw = (eh - sh).astype(F64), (ew - sw).astype(F64)
    area = (recipe.divisor(kh, kw, ho, wo, h, w) if recipe.divisor is not None
            else np.multiply.outer(kh, kw))
    acc = _acc_dtype(recipe, dtype)
    limit = _subnormal_limit(dtype)
    gv = np.asarray(g)
    if recipe.flush:
        gv = _flush(gv, limit)
    lead = out_shape[:-2]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if recipe.scale_in_dtype:
            scale = (F32(1) / area.astype(F32)).astype(dtype).astype(acc)
            terms = gv.astype(acc) * scale
        else:
            terms = gv.astype(acc) / area.astype(acc)
        mid = np.zeros(lead + (ho, w), dtype=acc)
        for j, c in enumerate(_covers(sw, ew, w)):
            if c.size:
                mid[..., c[0]:c[-1] + 1] += terms[..., j, None]
        out = np.zeros(out_shape, dtype=acc)
        for i, r in enumerate(_covers(sh, eh, h)):
            if r.size:
                out[..., r[0]:r[-1] + 1, :] += mid[..., i, None, :]
    res = _convert(out, dtype, recipe.cast)
    return _flush(res, limit) if recipe.flush else res


# -- conversions to the output dtype -------------------------------------------------------


def _rne(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """x rounded once to nearest-even (float64 -> bf16 without a float32 double rounding)."""
    x = np.asarray(x)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == BF16 and x.dtype == F64:
            # round to odd in float32 first: then RNE to bf16 is a single correct rounding
            near = x.astype(F32)
            bits = near.view(np.int32)
            back = near.astype(F64)
            bits -= (np.abs(back) > np.abs(x)).astype(np.int32)
            bits |= (back != x).astype(np.int32)
            return near.astype(dtype)
        return x.astype(dtype)


def _neighbours(x: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rne, other, x64): the RNE value, the other neighbour of x in dtype, x in float64."""
    x64 = np.asarray(x, dtype=F64)
    r = _rne(x, dtype)
    r64 = r.astype(F64)
    bits = r.view(np.uint16 if dtype.itemsize == 2 else np.uint32).copy()
    outward = np.abs(r64) < np.abs(x64)  # RNE went toward zero: the other one is away
    step = np.where(outward, 1, -1).astype(bits.dtype)
    other = (bits + step).view(dtype)
    return r, other, x64


def _convert(x: np.ndarray, dtype: np.dtype, mode: str) -> np.ndarray:
    """Convert accumulated values to dtype: round to nearest even, toward zero, ties away
    from zero, or toward +inf (the three broken casts pick between the two neighbours)."""
    if mode == "nearest" or x.dtype == dtype:
        return _rne(x, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        r, other, x64 = _neighbours(x, dtype)
        r64, o64 = r.astype(F64), other.astype(F64)
        exact = (r64 == x64) | ~np.isfinite(x64)
        if mode == "toward_zero":
            pick = np.abs(r64) > np.abs(x64)
        elif mode == "away":
            pick = (np.abs(o64 - x64) == np.abs(r64 - x64)) & (np.abs(o64) > np.abs(r64))
        elif mode == "up":
            pick = o64 > r64
        else:
            raise ValueError(f"unknown cast {mode!r}")
        pick &= ~exact
        return np.where(pick, other, r)


# -- layout and plane helpers ----------------------------------------------------------------


def _memory_as_contiguous(x: np.ndarray) -> np.ndarray:
    """What a kernel that ignores strides reads: x's memory from its first element, taken
    as a row-major array of x's shape."""
    strides, step = [], x.itemsize
    for d in reversed(x.shape):
        strides.append(step)
        step *= max(d, 1)
    return np.lib.stride_tricks.as_strided(x, x.shape, tuple(reversed(strides)),
                                           writeable=False)


def _channels_last(x: np.ndarray) -> bool:
    return x.ndim >= 3 and x.shape[-3] > 1 and x.strides[-3] == x.itemsize and x.size > 0


# -- the kernels ---------------------------------------------------------------------------


def _from(recipe: Recipe) -> Kernel:
    def kernel(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
        return pool(grad_output, self, recipe)
    return kernel


def _whole_input(kh, kw, ho, wo, h, w):  # noqa: ANN001, ANN202 - divisor hook
    return np.full((ho, wo), float(h * w))


def _kh_squared(kh, kw, ho, wo, h, w):  # noqa: ANN001, ANN202
    return np.repeat((kh * kh)[:, None], wo, axis=1)


def _kw_squared(kh, kw, ho, wo, h, w):  # noqa: ANN001, ANN202
    return np.repeat((kw * kw)[None, :], ho, axis=0)


def _kw_from_ho(kh, kw, ho, wo, h, w):  # noqa: ANN001, ANN202
    j = np.arange(wo)
    kw_bad = np.array([-(-(int(k) + 1) * w // ho) - int(k) * w // ho for k in j], dtype=F64)
    return np.multiply.outer(kh, kw_bad)


def _kh_from_wo(kh, kw, ho, wo, h, w):  # noqa: ANN001, ANN202
    i = np.arange(ho)
    kh_bad = np.array([-(-(int(k) + 1) * h // wo) - int(k) * h // wo for k in i], dtype=F64)
    return np.multiply.outer(kh_bad, kw)


def b_float32_reciprocal(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """i*in*fl32(1/out) evaluated in float32."""
    i = np.arange(out_size + 1, dtype=F32)
    q = (i * F32(in_size)) * (F32(1) / F32(out_size))
    start = np.floor(q[:-1]).astype(np.int64)
    end = np.ceil(q[1:]).astype(np.int64)
    return np.clip(start, 0, in_size), np.clip(end, 0, in_size)


RECIPES: dict[str, Recipe] = {
    "end_floor": Recipe(bounds_h=b_floor_end, bounds_w=b_floor_end),
    "start_ceil": Recipe(bounds_h=b_ceil_start, bounds_w=b_ceil_start),
    "whole_divisor": Recipe(divisor=_whole_input),
    "fp16_accumulation": Recipe(acc="input"),
    "round_toward_zero": Recipe(cast="toward_zero"),
    "ties_away": Recipe(cast="away"),
    "kw_from_ho": Recipe(divisor=_kw_from_ho),
    "kh_squared": Recipe(divisor=_kh_squared),
    "kh_from_wo": Recipe(divisor=_kh_from_wo),
    "kw_squared": Recipe(divisor=_kw_squared),
    "float32_bounds_reciprocal": Recipe(bounds_h=b_float32_reciprocal,
                                        bounds_w=b_float32_reciprocal),
    "float32_bounds": Recipe(bounds_h=b_float32, bounds_w=b_float32),
    "flush_to_zero": Recipe(flush=True),
    "scale_in_dtype": Recipe(scale_in_dtype=True),
    "unit_upsampling": Recipe(bounds_h=b_unit_upsampling, bounds_w=b_unit_upsampling),
    "round_up": Recipe(cast="up"),
    "correct": Recipe(),
}


def _exact(recipe: Recipe, acc: object) -> Recipe:
    """The recipe computed in `acc` (float64: the bug alone, without float32 roundings)."""
    if recipe.acc == "input" or acc is None:
        return recipe
    return Recipe(recipe.bounds_h, recipe.bounds_w, recipe.divisor, recipe.scale_in_dtype,
                  acc, recipe.cast, recipe.flush)


def _validate(g: np.ndarray, self_: np.ndarray) -> None:
    """Reject what the contract calls invalid, as a kernel's first phase does (a raise is
    the callable adapter's rejection)."""
    if g.ndim not in (3, 4) or self_.ndim != g.ndim:
        raise ValueError(f"ranks {g.ndim} and {self_.ndim}: expected both 3 or both 4")
    if g.shape[:-2] != self_.shape[:-2]:
        raise ValueError(f"leading dims {g.shape[:-2]} != {self_.shape[:-2]}")
    if g.dtype != self_.dtype:
        raise ValueError(f"dtypes {g.dtype} != {self_.dtype}")


def make(name: str, acc: object = None) -> Kernel:
    """The zoo kernel `name`; acc=np.float64 computes its bug without float32 roundings."""
    if name in RECIPES:
        body = _from(_exact(RECIPES[name], acc))
    else:
        wrapped, inner = _WRAPPED[name], _from(_exact(Recipe(), acc))

        def body(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
            return wrapped(grad_output, self, inner)

    def kernel(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
        _validate(grad_output, self)
        return body(grad_output, self)

    return kernel


def _hw_swapped(g: np.ndarray, self_: np.ndarray, inner: Kernel) -> np.ndarray:
    """Reads both shapes' last two sizes in the wrong order: the row-major memory of
    gradOutput taken as (..., Wo, Ho) and the result written as (..., W, H) memory."""
    lead = g.shape[:-2]
    ho, wo = g.shape[-2:]
    h, w = self_.shape[-2:]
    g_swapped = np.ascontiguousarray(g).reshape(lead + (wo, ho))
    out = inner(g_swapped, np.empty(lead + (w, h), dtype=self_.dtype))
    return np.ascontiguousarray(out).reshape(self_.shape)


def _strides_ignored(g: np.ndarray, self_: np.ndarray, inner: Kernel) -> np.ndarray:
    """A non-contiguous gradOutput is read as row-major memory from its first element."""
    if not g.flags.c_contiguous and g.size:
        g = _memory_as_contiguous(g)
    return inner(g, self_)


def _rank3_first_plane(g: np.ndarray, self_: np.ndarray, inner: Kernel) -> np.ndarray:
    """Rank 3 (C, H, W) goes through a 4-D path that takes it as N=1, C=1: only plane 0
    is computed; the other planes keep the zeros the output was cleared with."""
    out = inner(g, self_)
    if g.ndim == 3 and g.shape[0] > 1:
        out = out.copy()
        out[1:] = 0
    return out


def _plane0_broadcast(g: np.ndarray, self_: np.ndarray, inner: Kernel) -> np.ndarray:
    """The plane offset is never advanced: every (n, c) plane is computed from plane 0."""
    if g.size == 0:
        return inner(g, self_)
    first = g.reshape((-1,) + g.shape[-2:])[:1]
    one = inner(first, np.empty((1,) + self_.shape[-2:], dtype=self_.dtype))
    return np.broadcast_to(one.reshape(self_.shape[-2:]), self_.shape).copy()


def _channels_last_batch0(g: np.ndarray, self_: np.ndarray, inner: Kernel) -> np.ndarray:
    """A channels-last (NHWC) gradOutput loses its batch offset: every n reads batch 0."""
    if g.ndim == 4 and g.shape[0] > 1 and _channels_last(g):
        g = np.broadcast_to(g[:1], g.shape)
    return inner(g, self_)


def _tail_channel(g: np.ndarray, self_: np.ndarray, inner: Kernel) -> np.ndarray:
    """A vector tail: with C odd, the last channel's terms are divided by kw*kw."""
    out = inner(g, self_)
    if g.ndim >= 3 and g.shape[-3] % 2 == 1 and g.size:
        tail = pool(g[..., -1:, :, :], self_[..., -1:, :, :],
                    Recipe(divisor=lambda kh, kw, *_: np.multiply.outer(np.ones_like(kh),
                                                                        kw * kw)))
        out = out.copy()
        out[..., -1:, :, :] = tail
    return out


_WRAPPED: dict[str, Callable[[np.ndarray, np.ndarray, Kernel], np.ndarray]] = {
    "hw_swapped": _hw_swapped,
    "strides_ignored": _strides_ignored,
    "rank3_first_plane": _rank3_first_plane,
    "plane0_broadcast": _plane0_broadcast,
    "channels_last_batch0": _channels_last_batch0,
    "tail_channel_divisor": _tail_channel,
}


@dataclass(frozen=True)
class Entry:
    """One zoo kernel: its real cause, and the diagnosis codes that name that cause (a
    first diagnosis with one of them is right)."""

    name: str
    cause: str
    codes: tuple[str, ...]
    issue: bool  # one of the ten kinds of issue 21 (else one of our own)


ZOO: tuple[Entry, ...] = (
    Entry("end_floor", "window end floor((i+1)*I/O) instead of ceil",
          ("window-end-floor",), True),
    Entry("start_ceil", "window start ceil(i*I/O) instead of floor",
          ("window-start-ceil",), True),
    Entry("whole_divisor", "divisor H*W of the whole input instead of kh*kw",
          ("divisor-whole-input",), True),
    Entry("hw_swapped", "H and W sizes read in the wrong order",
          ("axes-swapped", "axis-mixup"), True),
    Entry("fp16_accumulation", "terms and sums in FP16/BF16 where FP32 is promised",
          ("accumulate-input-dtype", "accumulation-precision"), True),
    Entry("round_toward_zero", "final cast rounds toward zero",
          ("cast-toward-zero", "cast-rounding"), True),
    Entry("ties_away", "final cast rounds ties away from zero",
          ("cast-ties-away", "cast-rounding"), True),
    Entry("strides_ignored", "non-contiguous gradOutput read as row-major memory",
          ("strides-ignored", "layout-stride"), True),
    Entry("rank3_first_plane", "rank-3 (C, H, W) path computes plane 0 only",
          ("only-plane-0", "rank-path", "plane-stride"), True),
    Entry("kw_from_ho", "kw computed from Ho instead of Wo",
          ("divisor-kw-from-ho", "axis-mixup"), True),
    Entry("plane0_broadcast", "plane offset never advanced: every plane from plane 0",
          ("plane-0-broadcast", "plane-stride"), False),
    Entry("kh_squared", "divisor kh*kh instead of kh*kw", ("divisor-kh-kh",), False),
    Entry("float32_bounds", "window bounds i*I/O evaluated in float32",
          ("window-bounds-float32",), False),
    Entry("channels_last_batch0", "channels-last gradOutput: batch offset dropped",
          ("layout-stride", "batch-stride"), False),
    Entry("flush_to_zero", "subnormal inputs and results flushed to zero",
          ("flush-to-zero",), False),
    Entry("scale_in_dtype", "1/(kh*kw) rounded to the input dtype (FP32 promised)",
          ("scale-input-dtype",), False),
    Entry("unit_upsampling", "upsampling axes take every window as one element",
          ("upsampling-windows", "window-bounds-or-divisor"), False),
    Entry("round_up", "final cast rounds toward +inf", ("cast-round-up", "cast-rounding"),
          False),
    Entry("tail_channel_divisor", "odd C: the last channel divides by kw*kw",
          ("last-plane", "plane-stride", "divisor-ratio", "divisor-kw-kw"), False),
)

#: Correct kernels: no diagnosis may be given for them.
CONTROLS: tuple[str, ...] = ("correct",)


def _bind(name: str) -> Kernel:
    kernel = make(name)
    kernel.__name__ = name
    kernel.__doc__ = f"Zoo kernel: {name}."
    return kernel


end_floor = _bind("end_floor")
start_ceil = _bind("start_ceil")
whole_divisor = _bind("whole_divisor")
hw_swapped = _bind("hw_swapped")
fp16_accumulation = _bind("fp16_accumulation")
round_toward_zero = _bind("round_toward_zero")
ties_away = _bind("ties_away")
strides_ignored = _bind("strides_ignored")
rank3_first_plane = _bind("rank3_first_plane")
kw_from_ho = _bind("kw_from_ho")
plane0_broadcast = _bind("plane0_broadcast")
kh_squared = _bind("kh_squared")
float32_bounds = _bind("float32_bounds")
channels_last_batch0 = _bind("channels_last_batch0")
flush_to_zero = _bind("flush_to_zero")
scale_in_dtype = _bind("scale_in_dtype")
unit_upsampling = _bind("unit_upsampling")
round_up = _bind("round_up")
tail_channel_divisor = _bind("tail_channel_divisor")
correct = _bind("correct")
