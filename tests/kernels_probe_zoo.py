"""A zoo of broken kernels for the measuring probe (issue 38), both operators.

Each kernel has the adapter signature `fn(grad_output, self) -> out` (numpy arrays of the
case dtype, ml_dtypes.bfloat16 for bf16; 2D: (C, H, W) or (N, C, H, W); 3D: (C, D, H, W)
or (N, C, D, H, W); any strides) and carries exactly one bug. They share one dense engine
(float64 windows per axis, a weight per output cell, a plane map and a final cast) so
that a bug is one changed ingredient; most of the causes have no what-if model in
aclcheck (`modelled` says which do). Use as `--impl kernels_probe_zoo:NAME` (tests/ on
sys.path) or `--impl tests/kernels_probe_zoo.py:NAME`.

ZOO lists every kernel: its operator, its real cause in words, and the quantity the probe
must find wrong (the data a diagnosis is checked against).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from aclcheck.dtypes import FLOAT_FORMATS
from aclcheck.judging.case.roundings import Rounding, rounded
from aclcheck.ops.adaptive.windows import window_bounds
from aclcheck.ops.adaptive_avg_pool2d_backward import reference as ref2d
from aclcheck.ops.adaptive_avg_pool3d_backward import reference as ref3d

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]
Bounds = Callable[[int, int], tuple[np.ndarray, np.ndarray]]
#: window sizes per axis (each broadcast over the output cells) -> weight per cell
Weight = Callable[[tuple[np.ndarray, ...]], np.ndarray]


def exact(o: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    return window_bounds(o, i)


def ceil_start(o: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    """start = ceil(k*I/O) (contract: floor)."""
    k = np.arange(o, dtype=np.int64)
    return -(-k * i // o), window_bounds(o, i)[1]


def end_plus_one(o: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    """end = ceil((k+1)*I/O) + 1, clipped to I."""
    start, end = window_bounds(o, i)
    return start, np.minimum(end + 1, i)


def floor_end(o: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    """end = floor((k+1)*I/O) (contract: ceil)."""
    k = np.arange(o, dtype=np.int64)
    return window_bounds(o, i)[0], (k + 1) * i // o


def w_contract(k: tuple[np.ndarray, ...]) -> np.ndarray:
    return 1.0 / np.prod(np.broadcast_arrays(*k), axis=0)


def w_first_squared(k: tuple[np.ndarray, ...]) -> np.ndarray:
    """1/(k0*k0*...): the first axis's size in place of the second's."""
    return 1.0 / (k[0] * k[0] * (np.prod(np.broadcast_arrays(*k[2:]), axis=0)
                                 if len(k) > 2 else 1))


def w_sum(k: tuple[np.ndarray, ...]) -> np.ndarray:
    """1/(kh+kw): a sum where the product is meant."""
    return 1.0 / sum(np.broadcast_arrays(*k))


def w_first_two(k: tuple[np.ndarray, ...]) -> np.ndarray:
    """1/(kd*kh): the last axis's size left out (a 3D fill divisor D*H)."""
    return 1.0 / (k[0] * k[1])


def w_last_two(k: tuple[np.ndarray, ...]) -> np.ndarray:
    """1/(kh*kw) in 3D: kd ignored."""
    return 1.0 / (k[-2] * k[-1])


@dataclass(frozen=True)
class Recipe:
    """One kernel: bounds per spatial axis, the weight, the plane map, the cast."""

    rank: int
    bounds: tuple[Bounds, ...] = ()
    weight: Weight = w_contract
    #: plane index -> the plane it is written into (None: identity)
    planes: Callable[[int], int] | None = None
    rounding: Rounding = Rounding.NEAREST
    #: the output's depth slices other than 0 left zero (3D)
    depth0_only: bool = False
    #: only on a channels-last gradOutput (C the fastest axis); else correct
    channels_last_only: bool = False
    #: only when every axis divides (a fast path); else the correct computation
    when: Callable[[tuple[int, ...], tuple[int, ...]], bool] = field(
        default=lambda out, inp: True)


def _fmt_of(dtype: np.dtype) -> str:
    return "bfloat16" if dtype == np.dtype(ml_dtypes.bfloat16) else np.dtype(dtype).name


def run(recipe: Recipe, g: np.ndarray, self_: np.ndarray) -> np.ndarray:
    """The recipe's result: float64 terms, dense window sums, the plane map, one cast."""
    r = recipe.rank
    outs, ins = g.shape[-r:], self_.shape[-r:]
    broken = recipe.when(tuple(outs), tuple(ins)) and (
        not recipe.channels_last_only or _channels_last(g, r))
    bounds = recipe.bounds if broken and recipe.bounds else (exact,) * r
    weight = recipe.weight if broken else w_contract
    if bounds == (exact,) * r and weight is w_contract:  # the reference's own sums
        t = np.array(_reference(g, tuple(int(x) for x in ins)))
    else:
        t = _dense(g, ins, bounds, weight)
    if broken and recipe.depth0_only:
        t[..., 1:, :, :] = 0.0
    if broken and recipe.planes is not None:
        flat = t.reshape((-1, *ins))
        moved = np.zeros_like(flat)
        for p in range(flat.shape[0]):
            moved[recipe.planes(p) % flat.shape[0]] += flat[p]
        t = moved.reshape(t.shape)
    fmt = FLOAT_FORMATS[_fmt_of(self_.dtype)]
    mode = recipe.rounding if broken else Rounding.NEAREST
    return rounded(t, fmt, mode).astype(self_.dtype).reshape(self_.shape)


def _channels_last(g: np.ndarray, rank: int) -> bool:
    """C (the axis before the spatial ones) is the fastest-moving axis of g's memory."""
    c = g.ndim - rank - 1
    return c >= 0 and g.shape[c] > 1 and g.strides[c] == g.itemsize \
        and int(np.prod(g.shape[-rank:])) > 1


def _reference(g: np.ndarray, ins: tuple[int, ...]) -> np.ndarray:
    """The float64 reference backward (the golden's own order of sums)."""
    if len(ins) == 2:
        return ref2d.backward(np.asarray(g), ins)
    return ref3d.backward(np.asarray(g), ins)


def _dense(g: np.ndarray, ins: tuple[int, ...], bounds: tuple[Bounds, ...], weight: Weight
           ) -> np.ndarray:
    """Dense window sums over any bounds and weight, float64."""
    r = len(ins)
    outs = g.shape[-r:]
    mats, sizes = [], []
    for axis, (o, i, b) in enumerate(zip(outs, ins, bounds, strict=True)):
        start, end = b(int(o), int(i))
        pos = np.arange(i)[:, None]
        mats.append(((pos >= start[None, :]) & (pos < end[None, :])).astype(np.float64))
        shape = [1] * r
        shape[axis] = int(o)
        sizes.append(np.maximum(end - start, 1).astype(np.float64).reshape(shape))
    t = g.astype(np.float64) * weight(tuple(sizes))
    lead = g.ndim - r
    with np.errstate(invalid="ignore"):  # inf terms: inf * 0 off the window, as NaN
        for axis, m in enumerate(mats):  # contract axis lead+axis of t with m's columns
            t = np.moveaxis(np.tensordot(t, m, axes=([lead + axis], [1])), -1, lead + axis)
    return t


def _all_divide(out: tuple[int, ...], inp: tuple[int, ...]) -> bool:
    return all(i % o == 0 for o, i in zip(out, inp, strict=True))


def _w_divides(out: tuple[int, ...], inp: tuple[int, ...]) -> bool:
    """A wrong fast-path test: W alone decides; the path's I//O windows then break H."""
    return inp[-1] % out[-1] == 0 and not _all_divide(out, inp)


def _divisible_windows(o: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    """The fast path's windows: k*(I//O) to (k+1)*(I//O)."""
    k = np.arange(o, dtype=np.int64)
    s = max(i // o, 1)
    return np.minimum(k * s, i), np.minimum((k + 1) * s, i)


@dataclass(frozen=True)
class Entry:
    """One zoo kernel: its operator, its real cause, and what the probe must measure wrong
    ("H"/"W"/"D" plus "start"/"end"; "weight"; "planes"; "rounding")."""

    name: str
    op: str  # "2d" or "3d"
    cause: str
    axis: str  # the axis (or "" for weight, planes, rounding)
    quantity: str  # "start", "end", "weight", "planes", "rounding"
    modelled: bool  # an aclcheck what-if model reproduces it
    #: other (quantity, axis) a shape may show first for the same cause
    also: tuple[tuple[str, str], ...] = ()
    #: the formula the measured values follow, where the cause has one ("": any)
    formula: str = ""
    #: the one memory layout the bug lives in ("": every layout)
    layout: str = ""

    def names(self, quantity: str, axis: str) -> bool:
        """A measured difference of (quantity, axis) names this kernel's cause."""
        return (quantity, axis) == (self.quantity, self.axis) or (quantity, axis) in self.also

    def judged(self, first: dict | None) -> tuple[bool, bool]:
        """(right in kind, names the cause) of a report's leading diagnosis entry (its
        JSON data, never its message): a measured difference of the right quantity (and
        axis), or for a rounding bug the cast's rounding named."""
        if not first:
            return False, False
        if self.quantity == "rounding":
            kind = str(first["code"]).startswith("cast-")
            return kind, first["code"] == "cast-rounding"
        m = first.get("measured")
        if m is None:
            return False, False
        kinds = {self.quantity, *(q for q, _ in self.also)}
        fits = {m["measured"], *m.get("others", ())}
        return m["quantity"] in kinds, self.names(m["quantity"], m["axis"]) and (
            not self.formula or self.formula in fits)


RECIPES: dict[str, Recipe] = {
    "h_start_ceil": Recipe(2, (ceil_start, exact)),
    "h_end_plus_one": Recipe(2, (end_plus_one, exact)),
    "w_end_floor": Recipe(2, (exact, floor_end)),
    "weight_kh_kh": Recipe(2, weight=w_first_squared),
    "weight_kh_plus_kw": Recipe(2, weight=w_sum),
    "fast_path_w_only": Recipe(2, (_divisible_windows, _divisible_windows), when=_w_divides),
    "plane_slip": Recipe(2, planes=lambda p: p - 1),
    "all_planes_to_0": Recipe(2, planes=lambda p: 0),
    "round_to_odd": Recipe(2, rounding=Rounding.TO_ODD),
    "round_down": Recipe(2, rounding=Rounding.DOWN),
    "dh_swapped_3d": Recipe(3),  # bounds set below: D and H sizes exchanged
    "d_end_floor_3d": Recipe(3, (floor_end, exact, exact)),
    "depth0_only_3d": Recipe(3, depth0_only=True),
    "divisor_no_kd_3d": Recipe(3, weight=w_last_two),
    "w_start_ceil_3d": Recipe(3, (exact, exact, ceil_start)),
    "global_fill_no_w_3d": Recipe(3, weight=w_first_two,
                                  when=lambda out, inp: all(o == 1 for o in out)),
    "channels_last_slip_3d": Recipe(3, planes=lambda p: p - 1, channels_last_only=True),
}

ZOO: tuple[Entry, ...] = (
    Entry("h_start_ceil", "2d", "H window start ceil(i*H/Ho) instead of floor", "H", "start",
          False, formula="ceil(i·H/Ho)"),
    Entry("h_end_plus_one", "2d", "H window end one past ceil((i+1)*H/Ho)", "H", "end", False,
          formula="ceil((i+1)·H/Ho)+1"),
    Entry("w_end_floor", "2d", "W window end floor((i+1)*W/Wo) instead of ceil", "W", "end",
          False, formula="floor((i+1)·W/Wo)"),
    Entry("weight_kh_kh", "2d", "weight 1/(kh*kh) instead of 1/(kh*kw)", "", "weight", True,
          formula="1/(kh·kh)"),
    Entry("weight_kh_plus_kw", "2d", "weight 1/(kh+kw) instead of 1/(kh*kw)", "", "weight",
          False, formula="1/(kh+kw)"),
    Entry("fast_path_w_only", "2d", "divisible fast path taken when only W divides", "H",
          "end", False, (("start", "H"),)),
    Entry("plane_slip", "2d", "plane p written into plane p-1", "", "planes", False,
          formula="q = p-1 (mod planes)"),
    Entry("all_planes_to_0", "2d", "every plane accumulated into plane 0", "", "planes",
          False, formula="q = 0"),
    Entry("round_to_odd", "2d", "final cast rounds to odd", "", "rounding", False),
    Entry("round_down", "2d", "final cast rounds toward -inf", "", "rounding", False),
    Entry("dh_swapped_3d", "3d", "D and H window tables exchanged", "H", "start", False,
          (("end", "H"), ("start", "D"), ("end", "D"))),
    Entry("d_end_floor_3d", "3d", "depth window end floor((i+1)*D/Do) instead of ceil", "D",
          "end", False, formula="floor((i+1)·D/Do)"),
    Entry("depth0_only_3d", "3d", "only depth slice 0 written", "D", "end", False,
          (("unwritten", "D"),)),
    Entry("divisor_no_kd_3d", "3d", "weight 1/(kh*kw), kd ignored", "", "weight", False,
          formula="1/(kh·kw)"),
    Entry("w_start_ceil_3d", "3d", "W window start ceil(i*W/Wo) instead of floor", "W",
          "start", False, formula="ceil(i·W/Wo)"),
    Entry("global_fill_no_w_3d", "3d", "1x1x1 fill divides by D*H, not D*H*W", "", "weight",
          False, formula="1/(kd·kh)"),
    Entry("channels_last_slip_3d", "3d", "channels-last input: plane p written into p-1", "",
          "planes", False, formula="q = p-1 (mod planes)", layout="channels_last"),
)

#: correct kernels of this engine (no probe may run for them)
CONTROLS: tuple[str, ...] = ("correct_2d", "correct_3d")


def _dh_swapped(g: np.ndarray, self_: np.ndarray) -> np.ndarray:
    """The D and H bounds computed from each other's sizes (sizes read in the wrong order)."""
    do, ho = g.shape[-3], g.shape[-2]
    d, h = self_.shape[-3], self_.shape[-2]

    def bd(o: int, i: int) -> tuple[np.ndarray, np.ndarray]:
        s, e = window_bounds(ho, h)
        return np.clip(np.resize(s, do), 0, d), np.clip(np.resize(e, do), 0, d)

    def bh(o: int, i: int) -> tuple[np.ndarray, np.ndarray]:
        s, e = window_bounds(do, d)
        return np.clip(np.resize(s, ho), 0, h), np.clip(np.resize(e, ho), 0, h)

    return run(Recipe(3, (bd, bh, exact)), g, self_)


def _bind(name: str) -> Kernel:
    def kernel(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:  # noqa: A002
        if name == "dh_swapped_3d":
            return _dh_swapped(grad_output, self)
        return run(RECIPES[name], grad_output, self)

    kernel.__name__ = name
    kernel.__doc__ = f"Probe zoo kernel: {name}."
    return kernel


h_start_ceil = _bind("h_start_ceil")
h_end_plus_one = _bind("h_end_plus_one")
w_end_floor = _bind("w_end_floor")
weight_kh_kh = _bind("weight_kh_kh")
weight_kh_plus_kw = _bind("weight_kh_plus_kw")
fast_path_w_only = _bind("fast_path_w_only")
plane_slip = _bind("plane_slip")
all_planes_to_0 = _bind("all_planes_to_0")
round_to_odd = _bind("round_to_odd")
round_down = _bind("round_down")
dh_swapped_3d = _bind("dh_swapped_3d")
d_end_floor_3d = _bind("d_end_floor_3d")
depth0_only_3d = _bind("depth0_only_3d")
divisor_no_kd_3d = _bind("divisor_no_kd_3d")
w_start_ceil_3d = _bind("w_start_ceil_3d")
global_fill_no_w_3d = _bind("global_fill_no_w_3d")
channels_last_slip_3d = _bind("channels_last_slip_3d")
RECIPES["correct_2d"] = Recipe(2)
RECIPES["correct_3d"] = Recipe(3)
correct_2d = _bind("correct_2d")
correct_3d = _bind("correct_3d")
