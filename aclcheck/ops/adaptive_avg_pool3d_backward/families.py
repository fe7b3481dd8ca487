"""Seeded case families of aclnnAdaptiveAvgPool3dBackward: which shapes, values and calls
each family draws (docs/contract-3d.md §8).

Each family is a function (rng, rank, index) -> Shapes; the draws come from a generator
seeded by the case's own seed, so a case never depends on which other cases were made
before it. Shapes stay small (a few thousand elements): three spatial axes multiply.

On Atlas training (a non-1x1x1 output is 161002) and Atlas inference (no kernel for it:
unspecified) only the global path can be judged: families whose point is the window
geometry are not drawn there, the others draw a 1x1x1 output instead; the invalid family
probes both rules.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from aclcheck.cases import derive_seed
from aclcheck.ops.adaptive import draws
from aclcheck.ops.adaptive.draws import Draw, InvalidFamily, Rule, drawn_case
from aclcheck.ops.adaptive_avg_pool3d_backward import contract, hardware
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case, make_id
from aclcheck.ops.adaptive_avg_pool3d_backward.stress import stress_shapes
from aclcheck.ops.operator import FamilyNote

SPECIAL_DISTS = ("special", "inf-fill", "nan-fill", "subnormal", "near-max")
LAYOUT_CYCLE = ("channels_last", "strided", "transposed")
#: N*C around the kernel's 8 (FP32) and 16 (FP16/BF16) element alignment of the NC lane.
ALIGN_NC = (7, 8, 9, 15, 16, 17, 31, 32, 33)
#: Index boundaries (in, out) on one axis: i*in crosses 2^24 (the float32 window-bounds
#: bug class: MindSpore CPU computes bounds in float32), 2^16, 2^15 and 2^11.
INDEX_PAIRS = ((5999, 3000), (4097, 4098), (6005, 3003), (257, 256), (4099, 4098),
               (182, 181))
#: Output dtypes of the rounding family: the ones a wider accumulator is converted to.
TIE_DTYPES = ("float16", "bfloat16")


def _divisible(rng, rank, index):
    outs = tuple(int(rng.integers(1, 5)) for _ in range(3))
    ins = tuple(o * int(rng.integers(1, 4)) for o in outs)
    return Draw.of(draws.lead(rng, rank, 5), ins, outs, draws.random_dist(rng))


def _nondivisible(rng, rank, index):
    pairs = [draws.nondiv_pair(rng, 3, 11) for _ in range(3)]
    if rng.random() < 0.5:  # one axis divisible or identity: mixed geometry
        k = int(rng.integers(0, 3))
        o = int(rng.integers(1, 5))
        pairs[k] = (o * int(rng.integers(1, 3)), o)
    return Draw.of(draws.lead(rng, rank, 5), tuple(p[0] for p in pairs), tuple(p[1] for p in pairs),
                   draws.random_dist(rng))


def _upsampling(rng, rank, index):
    ins = tuple(int(rng.integers(1, 6)) for _ in range(3))
    outs = tuple(int(rng.integers(i + 1, 2 * i + 3)) if rng.random() < 0.75
                 else max(1, i // 2) for i in ins)
    if all(o <= i for o, i in zip(outs, ins, strict=True)):
        outs = (ins[0] + 1,) + outs[1:]
    return Draw.of(draws.lead(rng, rank, 5), ins, outs, draws.random_dist(rng))


def _global(rng, rank, index):
    ins = tuple(int(rng.integers(1, 13)) for _ in range(3))
    return Draw.of(draws.lead(rng, rank, 5), ins, (1, 1, 1), draws.random_dist(rng))


def _identity(rng, rank, index):
    ins = tuple(int(rng.integers(1, 9)) for _ in range(3))
    return Draw.of(draws.lead(rng, rank, 5), ins, ins, draws.random_dist(rng))


def _rank4(rng, rank, index):
    base = _nondivisible(rng, 4, index) if index % 2 == 0 else _upsampling(rng, 4, index)
    return base


def _alignment(rng, rank, index):
    nc = ALIGN_NC[index % len(ALIGN_NC)]
    lead = (1, nc) if rank == 5 else (nc,)
    ins = (int(rng.integers(2, 4)), int(rng.integers(1, 4)), int(rng.integers(2, 5)))
    outs = tuple(int(rng.integers(1, i + 1)) for i in ins)
    if outs == (1, 1, 1):
        outs = (2, 1, 1)
    return Draw.of(lead, ins, outs, draws.random_dist(rng))


def _exactint(rng, rank, index):
    # small windows: every term g / (kd*kh*kw) is an integer in [-2, 2]
    outs = tuple(int(rng.integers(1, 4)) for _ in range(3))
    ins = tuple(int(rng.integers(o, 3 * o + 1)) for o in outs)
    return Draw.of(draws.lead(rng, rank, 5), ins, outs, "exact-int")


def _special(rng, rank, index):
    d, do = draws.nondiv_pair(rng, 3, 7)
    if rng.random() < 0.3:
        d, do = do, d  # upsampling: overlapping windows mix specials
    ins = (d, int(rng.integers(2, 6)), int(rng.integers(1, 6)))
    outs = (do, int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    return Draw.of(draws.lead(rng, rank, 5), ins, outs, SPECIAL_DISTS[index % len(SPECIAL_DISTS)])


def _layout(rng, rank, index):
    base = _upsampling(rng, rank, index) if index % 2 else _nondivisible(rng, rank, index)
    lead = base.self_shape[:rank - 3]
    if rank == 5 and lead[1] == 1:  # channels-last needs C > 1 to mean anything
        lead = (lead[0], 3)
    return Draw.of(lead, base.self_shape[-3:], base.grad_shape[-3:], base.distribution,
                   LAYOUT_CYCLE[index % len(LAYOUT_CYCLE)])


def _rounding(rng, rank, index):
    # exact ties (aclcheck.ties) on every D plane, D an identity axis: along H pair-down
    # (3 <- 2, scale 1/2) on even variants, pair-up (1 <- 2, no scale) on odd ones;
    # W identity or halved; one tie zone per (n, c, d) plane
    up = index % 2 == 1
    d = int(rng.integers(1, 3))
    wo = int(rng.integers(6, 17))
    w = wo if up or rng.random() < 0.5 else 2 * wo
    lead = (1, 3) if rank == 5 else (3,)
    return Draw.of(lead, (d, 1 if up else 3, w), (d, 2, wo), "ties")


def _index(rng, rank, index):
    # one long axis at an index boundary, the others 1 (cheap: a few thousand elements)
    size_in, size_out = INDEX_PAIRS[(index // 3) % len(INDEX_PAIRS)]
    axis = index % 3
    ins, outs = [1, 1, 1], [1, 1, 1]
    ins[axis], outs[axis] = size_in, size_out
    lead = (1, 1) if rank == 5 else (1,)
    return Draw.of(lead, tuple(ins), tuple(outs), "uniform")


def _empty(rng, rank, index):
    # invalid on every product (161002): the variant rotates over where the zero is
    lead = list(draws.lead(rng, rank, 5))
    ins = [int(rng.integers(1, 5)) for _ in range(3)]
    outs = [int(rng.integers(1, 4)) for _ in range(3)]
    variant = index % 4
    if variant == 0:
        lead[0] = 0  # N (or C of a 4-D call)
    elif variant == 1:
        lead[-1] = 0  # C
    elif variant == 2:
        outs[int(rng.integers(0, 3))] = 0  # gradOutput's output size
    else:
        k = int(rng.integers(0, 3))
        ins[k], outs[k] = 0, 1  # an empty spatial dim of self (torch: out-of-bounds write
        # when that gradOutput axis is > 1; with 1 it returns an empty tensor)
    return Draw.of(tuple(lead), tuple(ins), tuple(outs), draws.random_dist(rng))


ShapeFn = Callable[[np.random.Generator, int, int], Draw]

#: family name -> (id label, shape function, drawn with a 1x1x1 output on products
#: that judge only the global path)
FAMILIES: dict[str, tuple[str, ShapeFn, bool]] = {
    "divisible": ("div", _divisible, False),
    "nondivisible": ("nondiv", _nondivisible, False),
    "upsampling": ("up", _upsampling, False),
    "global": ("global", _global, True),
    "identity": ("ident", _identity, False),
    "rank4": ("rank4", _rank4, True),
    "alignment": ("align", _alignment, True),
    "exactint": ("exact", _exactint, True),
    "special": ("special", _special, True),
    "layout": ("layout", _layout, True),
    "rounding": ("round", _rounding, False),
    "index": ("index", _index, False),
    "empty": ("empty", _empty, True),
}
#: Families built from the contract's rules rather than shapes.
RULE_FAMILIES = ("invalid",)
#: Large families: only when asked for.
ON_REQUEST = ("stress",)
#: Families at the hardware's edges (aclcheck.ops.adaptive_avg_pool3d_backward.hardware).
HARDWARE_FAMILIES: tuple[str, ...] = tuple(hardware.FAMILIES)
ALL_FAMILIES: tuple[str, ...] = tuple(FAMILIES) + HARDWARE_FAMILIES + RULE_FAMILIES + ON_REQUEST
DEFAULT_FAMILIES: tuple[str, ...] = tuple(FAMILIES) + HARDWARE_FAMILIES + RULE_FAMILIES


def _globalized(s: Draw, rank: int) -> Draw:
    """The same draw with a 1x1x1 output (zeros of an empty variant kept)."""
    outs = tuple(0 if o == 0 else 1 for o in s.grad_shape[-3:])
    return Draw(s.self_shape, s.grad_shape[:rank - 3] + outs, s.distribution, s.layout)


def _rank_for(fmt: str, family: str, rng: np.random.Generator) -> int | None:
    return draws.rank_for(contract.FORMAT_RANK.get(fmt), 5, family == "rank4", 0.5, rng)


def _rotation(product: str, dtype: str, fmt: str) -> int:
    """Stable ordinal of a (product, dtype, format) combination (draws.rotation)."""
    return draws.rotation(tuple(contract.PRODUCTS), contract.COMPUTE_DTYPES, contract.FORMATS,
                          product, dtype, fmt)


def windowed(product: str) -> bool:
    """The product has a windowed path that can be judged (A2/A3)."""
    rules = contract.product(product)
    return not (rules.global_only or rules.no_windowed_kernel)


def shape_case(family: str, product: str, dtype: str, fmt: str, index: int,
               suite_seed: int) -> Case | None:
    """One case of a shape family on one product/dtype/format (None if not applicable)."""
    if family == "rounding" and dtype not in TIE_DTYPES:
        return None  # FP32 output: no conversion from a wider accumulator to tie on
    if family in hardware.FAMILIES:
        return hardware.hardware_case(family, product, dtype, fmt,
                                      contract.FORMAT_RANK.get(fmt), index, suite_seed,
                                      windowed(product))
    if family == "stress":
        return _stress_case(product, dtype, fmt, index, suite_seed)
    label, fn, globalize = FAMILIES[family]
    if not windowed(product) and not globalize:
        return None
    seed = derive_seed(suite_seed, "3d", family, product, dtype, fmt, index)
    rng = np.random.default_rng([seed, 0])
    rank = _rank_for(fmt, family, rng)
    if rank is None:
        return None
    s = fn(rng, rank, index + _rotation(product, dtype, fmt))
    if not windowed(product):
        s = _globalized(s, rank)
    return drawn_case(Case, make_id, family, f"{label}{index}", product, dtype, fmt, seed, s)


def _stress_case(product: str, dtype: str, fmt: str, index: int,
                 suite_seed: int) -> Case | None:
    """The stress family's case of a slot: its dealt edges first (stress.py)."""
    d = stress_shapes((product, dtype, contract.FORMAT_RANK.get(fmt)), index)
    if d is None:
        return None
    seed = derive_seed(suite_seed, "3d", "stress", product, dtype, fmt, index)
    return drawn_case(Case, make_id, "stress", f"stress{index}", product, dtype, fmt, seed, d)


# -- invalid calls: one case per rule of the contract ------------------------------------------


_TRAIN_INFER = ("atlas-training", "atlas-inference")
_A2_A3 = ("atlas-a2", "atlas-a3")


def _other_format(f: str) -> str:
    return "ND" if f != "ND" else "NCDHW"


RULES: tuple[Rule, ...] = (
    Rule("null_grad", lambda s, g, d, f: {"null": ("grad_output",)}),
    Rule("null_self", lambda s, g, d, f: {"null": ("self",)}),
    Rule("null_out", lambda s, g, d, f: {"null": ("out",)}),
    Rule("rank_all3", lambda s, g, d, f: {"self_shape": s[2:], "grad_shape": g[2:],
                                          "format": "ND"}),
    Rule("rank_all6", lambda s, g, d, f: {"self_shape": (1,) + s, "grad_shape": (1,) + g,
                                          "format": "ND"}),
    Rule("rank_grad4", lambda s, g, d, f: {"grad_shape": g[1:]}),
    Rule("rank_out4", lambda s, g, d, f: {"out_shape": s[1:]}),
    Rule("empty_self", lambda s, g, d, f: {"self_shape": s[:2] + (0,) + s[3:],
                                           "grad_shape": g[:2] + (1,) + g[3:]}),
    Rule("empty_grad", lambda s, g, d, f: {"grad_shape": g[:4] + (0,)}),
    Rule("out_w", lambda s, g, d, f: {"out_shape": s[:4] + (s[4] + 1,)}),
    Rule("out_n", lambda s, g, d, f: {"out_shape": (s[0] + 1,) + s[1:]}),
    Rule("n_grad", lambda s, g, d, f: {"grad_shape": (g[0] + 1,) + g[1:]}),
    Rule("c_grad", lambda s, g, d, f: {"grad_shape": (g[0], g[1] + 1) + g[2:]}),
    Rule("dtype_int32", lambda s, g, d, f: {"dtype": "int32"}, per_dtype=False),
    Rule("dtype_fp64", lambda s, g, d, f: {"dtype": "float64"}, per_dtype=False),
    Rule("dtype_grad", lambda s, g, d, f: {"grad_dtype": draws.other_dtype(d)}),
    Rule("dtype_out", lambda s, g, d, f: {"out_dtype": draws.other_dtype(d)}),
    Rule("fmt_grad", lambda s, g, d, f: {"grad_format": _other_format(f)}),
    Rule("fmt_out", lambda s, g, d, f: {"out_format": _other_format(f)}),
    Rule("fmt_private", lambda s, g, d, f: {"format": "NDC1HWC0"}),
    Rule("nonglobal", lambda s, g, d, f: {"grad_shape": g[:2] + (2, 3, 2)},
         products=_TRAIN_INFER),
    # documentation silent or contradicted by the implementation: reported, never judged
    Rule("fmt_nchw", lambda s, g, d, f: {"format": "NCHW"}),
    Rule("fmt_ndhwc", lambda s, g, d, f: {"format": "NDHWC"}),
    Rule("ncdhw_rank4", lambda s, g, d, f: {"self_shape": s[1:], "grad_shape": g[1:],
                                            "format": "NCDHW"}, per_dtype=False),
    Rule("fp64_global", lambda s, g, d, f: {"dtype": "float64", "grad_shape": g[:2] + (1, 1, 1)},
         per_dtype=False, products=_A2_A3),
)


def _base_shapes(product: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """self and gradOutput of the probes: a windowed call where the product judges one,
    else a 1x1x1 output (so a probe on Atlas training tests its rule, not the 1x1x1 one)."""
    self_shape = (2, 3, 4, 6, 5)
    return self_shape, (2, 3, 2, 3, 2) if windowed(product) else (2, 3, 1, 1, 1)


INVALID = InvalidFamily(RULES, Case, make_id, contract.FORMAT_RANK, full_rank=5,
                        default_format="NCDHW", seed_tag="3d-invalid")


def invalid_cases(product: str, dtypes: tuple[str, ...], formats: tuple[str, ...],
                  index: int, suite_seed: int) -> list[Case]:
    """The invalid-call family of one product (draws.invalid_cases), probes from a
    windowed call where the product judges one."""
    s, g = _base_shapes(product)
    return draws.invalid_cases(INVALID, product, contract.product(product).dtypes,
                               dtypes, formats, index, suite_seed, s, g)


# -- what each family aims at (`aclcheck families --op aapool3d-bwd`) --------------------------

_A2A3 = "atlas-a2, atlas-a3"
#: docs/contract.md section 12 states these facts and points to docs/contract-3d.md.
NOTES: dict[str, FamilyNote] = {
    "divisible": FamilyNote("windows tiling every axis: one term per element (fp32-disjoint "
                            "path)", "12", _A2A3),
    "nondivisible": FamilyNote("overlapping windows on D, H and W: atomic FP32 adds", "12",
                               _A2A3),
    "upsampling": FamilyNote("outputs larger than the input on an axis", "12", _A2A3),
    "global": FamilyNote("the 1x1x1 path: factor rounded to the dtype, then one multiply",
                         "12"),
    "identity": FamilyNote("output size = input size: the backward copies", "12", _A2A3),
    "rank4": FamilyNote("CDHW calls (rank 4, no batch axis)", "12"),
    "alignment": FamilyNote("N*C around the kernel's 8 / 16 lane alignment", "12"),
    "exactint": FamilyNote("terms that are small integers: an exact golden", "12"),
    "special": FamilyNote("inf, NaN, subnormal and near-max gradOutputs", "12"),
    "layout": FamilyNote("channels-last-3d, strided and transposed views", "12"),
    "rounding": FamilyNote("exact ties of the output dtype: round to nearest even", "12",
                           _A2A3),
    "index": FamilyNote("i*in crossing 2^24 on one axis (float32 window bounds)", "12",
                        _A2A3),
    "empty": FamilyNote("a zero dim anywhere: invalid (161002), unlike the 2D operator",
                        "12"),
    "invalid": FamilyNote("every first-phase rule, and the calls page and implementation "
                          "disagree on (unspecified)", "12"),
    **{name: f.note for name, f in hardware.FAMILIES.items()},
    "stress": FamilyNote("on request: N*C around the switch to slicing N*C, i*in past "
                         "2^31 and 2^24 per axis, 1x1x1 planes of 2^16 and 2^25; each once "
                         "at --count 1 (about 1 GB)", "12", _A2A3),
}
