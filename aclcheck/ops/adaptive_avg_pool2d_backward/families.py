"""Seeded case families: which shapes, values and calls each family draws.

Each family is a function (product, dtype, format, index, seed) -> Case | None; the shape
draws come from a generator seeded by the case seed, so a case never depends on which
other cases were made before it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from aclcheck.cases import derive_seed
from aclcheck.cases.values import SPECIAL_DISTS
from aclcheck.dtypes import ALL_DTYPES
from aclcheck.ops.adaptive import draws
from aclcheck.ops.adaptive.draws import Draw, InvalidFamily, Rule, drawn_case
from aclcheck.ops.adaptive.ids import make_id
from aclcheck.ops.adaptive.slot import Slot
from aclcheck.ops.adaptive_avg_pool2d_backward import contract, hardware
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool2d_backward.stress import stress_draw
from aclcheck.ops.operator import FamilyNote

ALIGN_SIZES = (15, 16, 17, 255, 256, 257)
LAYOUT_CYCLE = ("channels_last", "strided", "transposed")
#: The format order the variant rotation counts in (frozen: the committed golden draws
#: depend on it, whatever formats aclcheck.cases.acl learns later).
ROTATION_FORMATS = ("ND", "NCHW", "NCL", "NHWC", "NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ")


def _lead(rng: np.random.Generator, rank: int) -> tuple[int, ...]:
    """Leading dims of this operator's draws: C in 1..5, N in 1..3."""
    return draws.lead(rng, rank, 4, most_c=5, most_n=3)


def _divisible(rng, rank, index):
    ho, wo = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    h, w = ho * int(rng.integers(1, 5)), wo * int(rng.integers(1, 5))
    lead = _lead(rng, rank)
    return Draw(lead + (h, w), lead + (ho, wo), draws.random_dist(rng))


def _nondivisible(rng, rank, index):
    h, ho = draws.nondiv_pair(rng, 3, 24)
    w, wo = draws.nondiv_pair(rng, 3, 24)
    lead = _lead(rng, rank)
    return Draw(lead + (h, w), lead + (ho, wo), draws.random_dist(rng))


def _upsampling(rng, rank, index):
    h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    ho = int(rng.integers(h + 1, 3 * h + 3))
    wo = int(rng.integers(w + 1, 3 * w + 3)) if rng.random() < 0.75 else max(1, w // 2)
    lead = _lead(rng, rank)
    return Draw(lead + (h, w), lead + (ho, wo), draws.random_dist(rng))


def _global(rng, rank, index):
    h, w = int(rng.integers(1, 41)), int(rng.integers(1, 41))
    lead = _lead(rng, rank)
    return Draw(lead + (h, w), lead + (1, 1), draws.random_dist(rng))


def _identity(rng, rank, index):
    h, w = int(rng.integers(1, 17)), int(rng.integers(1, 17))
    lead = _lead(rng, rank)
    return Draw(lead + (h, w), lead + (h, w), draws.random_dist(rng))


def _alignment(rng, rank, index):
    c = int(rng.choice(ALIGN_SIZES[:3]))
    w = int(rng.choice(ALIGN_SIZES))
    h = int(rng.integers(1, 4))
    wo = int(rng.integers(1, min(w, 40)))
    ho = int(rng.integers(1, h + 1))
    lead = (1, c) if rank == 4 else (c,)
    return Draw(lead + (h, w), lead + (ho, wo), draws.random_dist(rng))


def _exactint(rng, rank, index):
    # small windows (kh*kw <= 16): every term g/(kh*kw) is an integer in [-2, 2]
    ho, wo = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    h = int(rng.integers(ho, 4 * ho + 1))
    w = int(rng.integers(wo, 4 * wo + 1))
    lead = _lead(rng, rank)
    return Draw(lead + (h, w), lead + (ho, wo), "exact-int")


def _special(rng, rank, index):
    h, ho = draws.nondiv_pair(rng, 3, 12)
    if rng.random() < 0.3:
        h, ho = ho, h  # upsampling: overlapping windows mix specials
    w, wo = int(rng.integers(2, 12)), int(rng.integers(1, 12))
    lead = _lead(rng, rank)
    return Draw(lead + (h, w), lead + (ho, wo), SPECIAL_DISTS[index % len(SPECIAL_DISTS)])


def _empty(rng, rank, index):
    lead = list(_lead(rng, rank))
    h, w, ho, wo = (int(rng.integers(1, 8)) for _ in range(4))
    variant = index % 4
    if variant == 0:
        lead[0] = 0  # N (or C) = 0
    elif variant == 1:
        lead[-1] = 0  # C = 0
    elif variant == 2:
        ho = 0  # gradOutput empty, self not: out is not written
    else:
        h, ho = 0, 0  # empty spatial dim on both
    t = tuple(lead)
    return Draw(t + (h, w), t + (ho, wo), draws.random_dist(rng))


def _layout(rng, rank, index):
    base = _upsampling(rng, rank, index) if index % 2 else _nondivisible(rng, rank, index)
    return Draw(base.self_shape, base.grad_shape, base.distribution,
                LAYOUT_CYCLE[index % len(LAYOUT_CYCLE)])


def _rank3(rng, rank, index):
    base = _nondivisible(rng, 3, index) if index % 2 == 0 else _upsampling(rng, 3, index)
    return base


#: Output dtypes of the rounding family: the ones a wider accumulator is converted to.
TIE_DTYPES = ("float16", "bfloat16")


def _rounding(rng, rank, index):
    # exact ties (aclcheck.ties): two windows per element, pair-down (H 3 <- 2, scale 1/2,
    # W identity or halved) on even variants, pair-up (H 1 <- 2, no scale) on odd ones;
    # three planes: one per tie zone
    up = index % 2 == 1
    wo = int(rng.integers(12, 33))
    w = wo if up or rng.random() < 0.5 else 2 * wo
    lead = (1, 3) if rank == 4 else (3,)
    return Draw(lead + (1 if up else 3, w), lead + (2, wo), "ties")


#: Index boundaries (in, out) along H: i*in or (i+1)*in crosses 2**11 and 2**15 in every
#: variant, 2**16 from the third, 2**24 in the last two (down- and upsampling, sizes where
#: float32 i*in*(1/out) rounds across an integer).
INDEX_H = ((182, 181), (181, 183), (257, 256), (4099, 4098), (4097, 4098))
#: Along W (small): (in, out) where i*in*fl32(1/out) lands just below an integer.
INDEX_W = ((7, 7), (14, 7), (5, 15), (6, 14))


def _index(rng, rank, index):
    # index arithmetic boundaries, N = C = 1; the 2**24 variants keep W = 1 (cheap)
    h, ho = INDEX_H[index % len(INDEX_H)]
    w, wo = INDEX_W[(index // len(INDEX_H)) % len(INDEX_W)] if h < 4000 else (1, 1)
    lead = (1, 1) if rank == 4 else (1,)
    return Draw(lead + (h, w), lead + (ho, wo), "uniform")


ShapeFn = Callable[[np.random.Generator, int, int], Draw]

#: family name -> (id label, shape function)
FAMILIES: dict[str, tuple[str, ShapeFn]] = {
    "divisible": ("div", _divisible),
    "nondivisible": ("nondiv", _nondivisible),
    "upsampling": ("up", _upsampling),
    "global": ("global", _global),
    "identity": ("ident", _identity),
    "rank3": ("rank3", _rank3),
    "alignment": ("align", _alignment),
    "exactint": ("exact", _exactint),
    "special": ("special", _special),
    "empty": ("empty", _empty),
    "layout": ("layout", _layout),
    "rounding": ("round", _rounding),
    "index": ("index", _index),
}
#: Families at the hardware's edges (aclcheck.ops.adaptive_avg_pool2d_backward.hardware):
#: their shapes follow from the product, dtype and rank of a slot, not from a draw.
HARDWARE_FAMILIES: tuple[str, ...] = tuple(hardware.FAMILIES)
#: Families built from the contract's rules rather than shapes.
RULE_FAMILIES = ("invalid",)
#: Large index and hardware-edge families: only when asked for.
ON_REQUEST = ("stress",)
ALL_FAMILIES: tuple[str, ...] = (tuple(FAMILIES) + HARDWARE_FAMILIES + RULE_FAMILIES
                                 + ON_REQUEST)
DEFAULT_FAMILIES: tuple[str, ...] = tuple(FAMILIES) + HARDWARE_FAMILIES + RULE_FAMILIES
_NOTE = FamilyNote
#: What each family aims at (`aclcheck families`).
NOTES: dict[str, FamilyNote] = {
    "divisible": _NOTE("windows that tile the input exactly (H % Ho == 0, W % Wo == 0): "
                       "the direct, non-atomic path of Atlas A2/A3", "9.1"),
    "nondivisible": _NOTE("overlapping windows of uneven size (in % out != 0): the "
                          "integer window bounds and the atomic adds", "1"),
    "upsampling": _NOTE("Ho > H or Wo > W: windows of one element, shared by several "
                        "outputs", "1"),
    "global": _NOTE("1x1 outputs over small planes: the fill path every product takes",
                    "9.6"),
    "identity": _NOTE("Ho = H, Wo = W: every window one element (a copy)", "1"),
    "rank3": _NOTE("3-D calls (C, H, W) in ND and NCL", "4"),
    "alignment": _NOTE("C and W of 15/16/17 and 255/256/257: 32-byte alignment of the "
                       "vector lanes", "9.5"),
    "exactint": _NOTE("small windows whose goldens are exact integers (any order adds "
                      "them exactly)", "6"),
    "special": _NOTE("inf, NaN, signed zeros, subnormals, values near the dtype's "
                     "largest: the product's overflow mode", "10"),
    "empty": _NOTE("an empty tensor: success with no kernel run, out left as it was",
                   "4"),
    "layout": _NOTE("channels-last, strided (storage offset) and H/W-transposed views",
                    "9.5"),
    "rounding": _NOTE("exact rounding ties of the FLOAT32 -> FLOAT16/BFLOAT16 "
                      "conversion (binades, subnormals, the overflow threshold)", "6"),
    "index": _NOTE("window bounds i·in crossing 2^11, 2^15, 2^16 and 2^24 (W = 1 past "
                   "2^24), float quotients just below an integer", "9.7"),
    **{name: _NOTE(f.aims, f.section, f.products) for name, f in hardware.FAMILIES.items()},
    "invalid": _NOTE("every documented rule of an invalid call, in every dtype; every "
                     "dtype a product lacks", "5"),
    "stress": _NOTE("on request: i·in past 2^24 and 2^31, 1x1 planes of 2^24 and 2^25, "
                    "every N·C slice edge, UB passes; each edge once at --count 1 "
                    "(about 1 GB of arrays)", "9.7"),
}

def _rank_for(fmt: str, family: str, rng: np.random.Generator) -> int | None:
    return draws.rank_for(contract.FORMAT_RANK.get(fmt), 4, family == "rank3", 0.5, rng)


def _rotation(product: str, dtype: str, fmt: str) -> int:
    """Stable ordinal of a (product, dtype, format) combination (draws.rotation), over
    every dtype and the frozen ROTATION_FORMATS."""
    return draws.rotation(tuple(contract.PRODUCTS), ALL_DTYPES, ROTATION_FORMATS, product,
                          dtype, fmt)


def shape_case(family: str, product: str, dtype: str, fmt: str, index: int,
               suite_seed: int) -> Case | None:
    """One case of a shape family on one product/dtype/format (None if not applicable)."""
    if family == "rounding" and dtype not in TIE_DTYPES:
        return None  # FP32 output: no conversion from a wider accumulator to tie on
    seed = derive_seed(suite_seed, family, product, dtype, fmt, index)
    rng = np.random.default_rng([seed, 0])
    if family in hardware.FAMILIES or family == "stress":
        d = _hardware_draw(family, product, dtype, fmt, index)
        if d is None:
            return None
        label = "stress" if family == "stress" else hardware.FAMILIES[family].label
    else:
        label, fn = FAMILIES[family]
        rank = _rank_for(fmt, family, rng)
        if rank is None:
            return None
        d = fn(rng, rank, index + _rotation(product, dtype, fmt))
    return drawn_case(Case, make_id, family, f"{label}{index}", product, dtype, fmt, seed, d)


def _hardware_draw(family: str, product: str, dtype: str, fmt: str,
                   index: int) -> Draw | None:
    """A hardware-edge draw: the family's recipe for the slot, or (stress) the hardware
    edges too large for the default suite, one per index past the index ones."""
    slot = Slot(product, dtype, contract.FORMAT_RANK.get(fmt), index)
    if family == "stress":
        return stress_draw(slot)
    return hardware.draw(family, slot)


# -- invalid calls: one case per documented rule ------------------------------------------


def _shapes4() -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (2, 3, 8, 6), (2, 3, 4, 3)


RULES: tuple[Rule, ...] = (
    Rule("null_grad", lambda s, g, d, f: {"null": ("grad_output",)}),
    Rule("null_self", lambda s, g, d, f: {"null": ("self",)}),
    Rule("null_out", lambda s, g, d, f: {"null": ("out",)}),
    Rule("rank_grad3", lambda s, g, d, f: {"grad_shape": g[1:]}),
    Rule("rank_all5", lambda s, g, d, f: {"self_shape": (1,) + s, "grad_shape": (1,) + g}),
    Rule("rank_all2", lambda s, g, d, f: {"self_shape": s[-2:], "grad_shape": g[-2:]}),
    Rule("rank_out3", lambda s, g, d, f: {"out_shape": s[1:]}),
    Rule("n_grad", lambda s, g, d, f: {"grad_shape": (g[0] + 1,) + g[1:]}),
    Rule("c_grad", lambda s, g, d, f: {"grad_shape": (g[0], g[1] + 1) + g[2:]}),
    Rule("n_out", lambda s, g, d, f: {"out_shape": (s[0] + 1,) + s[1:]}),
    Rule("c_out", lambda s, g, d, f: {"out_shape": (s[0], s[1] + 2) + s[2:]}),
    Rule("dtype_fp64", lambda s, g, d, f: {"dtype": "float64"}, per_dtype=False),
    Rule("dtype_int32", lambda s, g, d, f: {"dtype": "int32"}, per_dtype=False),
    Rule("dtype_grad", lambda s, g, d, f: {"grad_dtype": "float32" if d != "float32"
                                           else "float16"}),
    Rule("fmt_grad", lambda s, g, d, f: {"grad_format": "ND" if f != "ND" else "NCHW"}),
    Rule("fmt_private", lambda s, g, d, f: {"self_format": "NC1HWC0",
                                            "grad_format": "NC1HWC0"}),
    # documentation silent or contradicted by the implementation: reported, never judged
    Rule("nhwc", lambda s, g, d, f: {"format": "NHWC"}),
    Rule("out_dtype", lambda s, g, d, f: {"out_dtype": "float32" if d != "float32"
                                          else "float16"}),
    Rule("out_hw", lambda s, g, d, f: {"out_shape": s[:2] + (s[2] + 1, s[3])}),
)


INVALID = InvalidFamily(RULES, Case, make_id, contract.FORMAT_RANK, full_rank=4,
                        default_format="NCHW", seed_tag="invalid")


def invalid_cases(product: str, dtypes: tuple[str, ...], formats: tuple[str, ...],
                  index: int, suite_seed: int) -> list[Case]:
    """The invalid-call family of one product (draws.invalid_cases)."""
    s, g = _shapes4()
    return draws.invalid_cases(INVALID, product, contract.product(product).dtypes,
                               dtypes, formats, index, suite_seed, s, g)
