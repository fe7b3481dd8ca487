"""Seeded case families of aclnnAdaptiveMaxPool2dBackward: which shapes, values, index
choices and calls each family draws (docs/contract-maxpool.md §6).

Each family is a function (rng, rank, index) -> Draw; the draws come from a generator
seeded by the case's own seed. The indices are valid by construction (values.py) except
in the family `badindex`, whose cases are unspecified and run isolated only. The index
dtype rotates over INT32 and INT64 (both must give identical results), as the format and
dtype rotate over the suite's slots. Only Atlas A2/A3 have the operator: on the other
products only the invalid family is drawn (every non-null call is 161002 there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aclcheck.cases import derive_seed
from aclcheck.ops.adaptive import draws
from aclcheck.ops.adaptive.draws import InvalidFamily, Rule
from aclcheck.ops.adaptive.ids import make_id
from aclcheck.ops.adaptive_max_pool2d_backward import contract
from aclcheck.ops.adaptive_max_pool2d_backward.record import Case
from aclcheck.ops.adaptive_max_pool2d_backward.values import INVALID_CHOICES
from aclcheck.ops.operator import FamilyNote

SPECIAL_DISTS = ("special", "inf-fill", "nan-fill", "subnormal", "near-max", "inf-pairs")
LAYOUT_CYCLE = ("channels_last", "strided", "transposed")
VALID_CYCLE = ("first-max", "last-max", "random", "overlap")
#: N*C around the adding kernel's 64 planes per task and 64 x cores (40 and 48).
PLANES = (63, 64, 65, 2559, 2560, 2561, 3071, 3072, 3073)
#: Window extents at the vector kernels' UB bounds: divisible FLOAT32 up to 14x14,
#: FLOAT16/BFLOAT16 up to 16x16; non-divisible up to 11x11 (kh, kw the largest windows).
PATH_EDGES = {"divisible": {"float32": (14, 15), "float16": (16, 17), "bfloat16": (16, 17)},
              "nondivisible": (11, 12)}


@dataclass(frozen=True)
class Draw:
    """A family's drawn call: shapes (rank 4 or 3), gradOutput's distribution, how the
    indices are chosen, the memory layout."""

    self_shape: tuple[int, ...]
    grad_shape: tuple[int, ...]
    distribution: str
    choice: str = "first-max"
    layout: str = "contiguous"


def _choice(index: int) -> str:
    return VALID_CYCLE[index % len(VALID_CYCLE)]


def _draw(lead: tuple[int, ...], ins: tuple[int, int], outs: tuple[int, int], dist: str,
          choice: str, layout: str = "contiguous") -> Draw:
    return Draw(lead + ins, lead + outs, dist, choice, layout)


def _divisible(rng, rank, index):
    outs = (int(rng.integers(1, 7)), int(rng.integers(1, 7)))
    ins = (outs[0] * int(rng.integers(1, 4)), outs[1] * int(rng.integers(1, 4)))
    return _draw(draws.lead(rng, rank, 4), ins, outs, draws.random_dist(rng), _choice(index))


def _nondivisible(rng, rank, index):
    # per axis: H only, W only, both (the adding path whenever one axis overlaps)
    (h, ho), (w, wo) = draws.nondiv_pair(rng, 3, 17), draws.nondiv_pair(rng, 3, 17)
    variant = index % 3
    if variant == 0:
        w, wo = wo * int(rng.integers(1, 3)), wo
    elif variant == 1:
        h, ho = ho * int(rng.integers(1, 3)), ho
    return _draw(draws.lead(rng, rank, 4), (h, w), (ho, wo), draws.random_dist(rng), _choice(index))


def _upsampling(rng, rank, index):
    ins = (int(rng.integers(1, 7)), int(rng.integers(1, 7)))
    outs = tuple(int(rng.integers(i + 1, 3 * i + 2)) for i in ins)
    return _draw(draws.lead(rng, rank, 4), ins, (outs[0], outs[1]), draws.random_dist(rng),
                 _choice(index))


def _global(rng, rank, index):
    ins = (int(rng.integers(1, 33)), int(rng.integers(1, 33)))
    return _draw(draws.lead(rng, rank, 4), ins, (1, 1), draws.random_dist(rng), _choice(index))


def _identity(rng, rank, index):
    ins = (int(rng.integers(1, 13)), int(rng.integers(1, 13)))
    return _draw(draws.lead(rng, rank, 4), ins, ins, draws.random_dist(rng), _choice(index))


def _rank3(rng, rank, index):
    base = _nondivisible(rng, 3, index) if index % 2 == 0 else _upsampling(rng, 3, index)
    return base


def _alignment(rng, rank, index):
    planes = PLANES[index % len(PLANES)]
    lead = (1, planes) if rank == 4 else (planes,)
    (h, ho), (w, wo) = draws.nondiv_pair(rng, 3, 5), draws.nondiv_pair(rng, 3, 5)
    return _draw(lead, (h, w), (ho, wo), "uniform", _choice(index))


def _exactint(rng, rank, index):
    (h, ho), (w, wo) = draws.nondiv_pair(rng, 3, 13), draws.nondiv_pair(rng, 3, 13)
    return _draw(draws.lead(rng, rank, 4), (h, w), (ho, wo), "exact-int", "overlap")


def _ties(rng, rank, index):
    # index freedom: small-integer or NaN planes; first-max, last-max, random and
    # unrelated choices (any in-window position must give the same answer)
    choice = ("first-max", "last-max", "random", "unrelated")[index % 4]
    (h, ho), (w, wo) = draws.nondiv_pair(rng, 3, 11), draws.nondiv_pair(rng, 3, 11)
    return _draw(draws.lead(rng, rank, 4), (h, w), (ho, wo), draws.random_dist(rng), choice)


def _shared(rng, rank, index):
    # every cell names the position most windows share: one axis, both, upsampling
    variant = index % 3
    (h, ho), (w, wo) = draws.nondiv_pair(rng, 3, 12), draws.nondiv_pair(rng, 3, 12)
    if variant == 0:
        w, wo = wo, wo
    elif variant == 2:
        h, ho, w, wo = ho, h, wo, w  # upsampling: up to (ceil(Ho/H)+1)(ceil(Wo/W)+1) cells
    return _draw(draws.lead(rng, rank, 4), (h, w), (ho, wo), draws.random_dist(rng), "overlap")


def _widesums(rng, rank, index):
    # 2^p then ones on shared positions: FLOAT32 accumulation vs the dtype's own
    (h, ho), (w, wo) = draws.nondiv_pair(rng, 3, 9), draws.nondiv_pair(rng, 3, 9)
    return _draw(draws.lead(rng, rank, 4), (h, w), (ho, wo), "wide-sums", "overlap")


def _special(rng, rank, index):
    (h, ho), (w, wo) = draws.nondiv_pair(rng, 3, 9), draws.nondiv_pair(rng, 3, 9)
    choice = "overlap" if index % 2 == 0 else "random"
    return _draw(draws.lead(rng, rank, 4), (h, w), (ho, wo),
                 SPECIAL_DISTS[index % len(SPECIAL_DISTS)], choice)


def _layout(rng, rank, index):
    base = _nondivisible(rng, rank, index) if index % 2 else _divisible(rng, rank, index)
    lead = base.self_shape[:rank - 2]
    if rank == 4 and lead[1] == 1:  # channels-last needs C > 1 to mean anything
        lead = (lead[0], 3)
    return _draw(lead, base.self_shape[-2:], base.grad_shape[-2:], base.distribution,
                 base.choice, LAYOUT_CYCLE[index % len(LAYOUT_CYCLE)])


def _empty(rng, rank, index):
    # success, gradInput not written: N = 0, Ho = 0 with a non-empty self, W = 0
    lead = list(draws.lead(rng, rank, 4))
    ins = [int(rng.integers(1, 6)), int(rng.integers(1, 6))]
    outs = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
    variant = index % 3
    if variant == 0:
        lead[0] = 0
    elif variant == 1:
        outs[0] = 0
    else:
        ins[1], outs[1] = 0, 0
    return _draw(tuple(lead), (ins[0], ins[1]), (outs[0], outs[1]), draws.random_dist(rng),
                 "first-max")


def _badindex(rng, rank, index):
    # invalid index values: unspecified, run isolated, reported, never judged
    choice = INVALID_CHOICES[index % len(INVALID_CHOICES)]
    if choice == "duplicate":  # a divisible call: the scatter path keeps the last store
        outs = (int(rng.integers(2, 4)), int(rng.integers(2, 4)))
        ins = (outs[0] * 2, outs[1] * 2)
    else:
        (h, ho), (w, wo) = draws.nondiv_pair(rng, 3, 9), draws.nondiv_pair(rng, 3, 9)
        ins, outs = (h, w), (ho, wo)
    return _draw(draws.lead(rng, rank, 4), ins, outs, "uniform", choice)


DrawFn = Callable[[np.random.Generator, int, int], Draw]

#: family name -> (id label, draw function)
FAMILIES: dict[str, tuple[str, DrawFn]] = {
    "divisible": ("div", _divisible),
    "nondivisible": ("nondiv", _nondivisible),
    "upsampling": ("up", _upsampling),
    "global": ("global", _global),
    "identity": ("ident", _identity),
    "rank3": ("rank3", _rank3),
    "alignment": ("align", _alignment),
    "exactint": ("exact", _exactint),
    "ties": ("ties", _ties),
    "shared": ("shared", _shared),
    "widesums": ("wide", _widesums),
    "special": ("special", _special),
    "layout": ("layout", _layout),
    "empty": ("empty", _empty),
    "badindex": ("badidx", _badindex),
}
#: Families built from the contract's rules rather than shapes.
RULE_FAMILIES = ("invalid",)
#: Large families: only when asked for.
ON_REQUEST = ("pathedge", "stress")
ALL_FAMILIES: tuple[str, ...] = tuple(FAMILIES) + RULE_FAMILIES + ON_REQUEST
DEFAULT_FAMILIES: tuple[str, ...] = tuple(FAMILIES) + RULE_FAMILIES + ("pathedge",)


def _rank_for(fmt: str, family: str, rng: np.random.Generator) -> int | None:
    return draws.rank_for(contract.FORMAT_RANK.get(fmt), 4, family == "rank3", 0.7, rng)


def _rotation(product: str, dtype: str, fmt: str) -> int:
    """Stable ordinal of a (product, dtype, format) combination (draws.rotation)."""
    return draws.rotation(tuple(contract.PRODUCTS), contract.COMPUTE_DTYPES, contract.FORMATS,
                          product, dtype, fmt)


def _path_edge(rng: np.random.Generator, rank: int, dtype: str, index: int) -> Draw:
    """Windows just inside and just past a vector kernel's UB bound (divisible: 14/15 for
    FLOAT32, 16/17 otherwise; non-divisible: 11/12), square, one plane per channel."""
    lead = (1, 2) if rank == 4 else (2,)
    if index % 2 == 0:
        k = PATH_EDGES["divisible"][dtype][(index // 2) % 2]
        return _draw(lead, (2 * k, k), (2, 1), "uniform", "first-max")
    k = PATH_EDGES["nondivisible"][(index // 2) % 2]
    # in = 2k - 1 over 2 cells: two windows of k, sharing one row and one column
    return _draw(lead, (2 * k - 1, 2 * k - 1), (2, 2), "uniform", "overlap")


def _stress(rank: int, index: int) -> Draw:
    """On request: indices near 2^24 with w = W-1 on the adding path (H*W = 2^24 - 1,
    the largest plane the page promises), one plane."""
    lead = (1, 1) if rank == 4 else (1,)
    return _draw(lead, (5592405, 3), (2796203, 2), "uniform", "last-max")


def shape_case(family: str, product: str, dtype: str, fmt: str, index: int,
               suite_seed: int) -> Case | None:
    """One case of a shape family on one product/dtype/format (None if not applicable)."""
    if not contract.product(product).dtypes:
        return None  # no such operator on the product: the invalid family probes it
    seed = derive_seed(suite_seed, "maxpool2d", family, product, dtype, fmt, index)
    rng = np.random.default_rng([seed, 0])
    rank = _rank_for(fmt, family, rng)
    if rank is None:
        return None
    turn = index + _rotation(product, dtype, fmt)
    if family == "pathedge":
        d, label = _path_edge(rng, rank, dtype, turn), "edge"
    elif family == "stress":
        d, label = _stress(rank, index), "stress"
    else:
        label, fn = FAMILIES[family]
        d = fn(rng, rank, turn)
    index_dtype = contract.INDEX_DTYPES[turn % 2]
    if d.choice == "int64-overflow":
        index_dtype = "int64"
    cid = make_id(product, dtype, fmt, f"{label}{index}", d.self_shape, d.grad_shape,
                  d.distribution, d.layout)
    if index_dtype == "int32":
        cid += "-i32"
    return Case(cid, family, product, dtype, fmt, d.self_shape, d.grad_shape, seed,
                d.distribution, d.layout, d.choice, index_dtype)


# -- invalid calls: one case per rule of the contract ------------------------------------------


def _other_format(f: str) -> str:
    return "ND" if f != "ND" else "NCHW"


RULES: tuple[Rule, ...] = (
    Rule("null_grad", lambda s, g, d, f: {"null": ("grad_output",)}),
    Rule("null_self", lambda s, g, d, f: {"null": ("self",)}),
    Rule("null_indices", lambda s, g, d, f: {"null": ("indices",)}),
    Rule("null_out", lambda s, g, d, f: {"null": ("out",)}),
    Rule("dtype_grad", lambda s, g, d, f: {"grad_dtype": draws.other_dtype(d)}),
    Rule("dtype_out", lambda s, g, d, f: {"out_dtype": draws.other_dtype(d)}),
    Rule("dtype_int32", lambda s, g, d, f: {"dtype": "int32"}, per_dtype=False),
    Rule("dtype_fp64", lambda s, g, d, f: {"dtype": "float64"}, per_dtype=False),
    Rule("idx_float", lambda s, g, d, f: {"indices_dtype": "float32"}, per_dtype=False),
    Rule("idx_int16", lambda s, g, d, f: {"indices_dtype": "int16"}, per_dtype=False),
    Rule("rank_grad3", lambda s, g, d, f: {"grad_shape": g[1:], "indices_shape": g[1:]}),
    Rule("rank_idx3", lambda s, g, d, f: {"indices_shape": g[1:]}),
    Rule("rank_all5", lambda s, g, d, f: {"self_shape": (1,) + s, "grad_shape": (1,) + g,
                                          "format": "ND"}),
    Rule("rank_all2", lambda s, g, d, f: {"self_shape": s[2:], "grad_shape": g[2:],
                                          "format": "ND"}),
    Rule("idx_shape", lambda s, g, d, f: {"indices_shape": g[:3] + (g[3] + 1,)}),
    Rule("out_w", lambda s, g, d, f: {"out_shape": s[:3] + (s[3] + 1,)}),
    Rule("fmt_grad", lambda s, g, d, f: {"grad_format": _other_format(f)}),
    Rule("fmt_indices", lambda s, g, d, f: {"indices_format": _other_format(f)}),
    Rule("fmt_private", lambda s, g, d, f: {"format": "NC1HWC0"}),
    Rule("fmt_nhwc", lambda s, g, d, f: {"format": "NHWC"}, per_dtype=False),
    # page and code part: the checks pass, the tilings refuse later (unspecified)
    Rule("n_grad", lambda s, g, d, f: {"grad_shape": (g[0] + 1,) + g[1:]}, per_dtype=False),
    Rule("c_grad", lambda s, g, d, f: {"grad_shape": (g[0], g[1] + 1) + g[2:]},
         per_dtype=False),
)


INVALID = InvalidFamily(RULES, Case, make_id, contract.FORMAT_RANK, full_rank=4,
                        default_format="NCHW", seed_tag="maxpool2d-invalid")


def invalid_cases(product: str, dtypes: tuple[str, ...], formats: tuple[str, ...],
                  index: int, suite_seed: int) -> list[Case]:
    """The invalid-call family of one product (draws.invalid_cases; every dtype lacking
    on a product without the operator)."""
    return draws.invalid_cases(INVALID, product, contract.product(product).dtypes,
                               dtypes, formats, index, suite_seed, (2, 3, 5, 7), (2, 3, 2, 3))


# -- what each family aims at (`aclcheck families --op ampool2d-bwd`) -------------------------

_A2A3 = "atlas-a2, atlas-a3"
NOTES: dict[str, FamilyNote] = {
    "divisible": FamilyNote("windows tiling the plane: each gradient copied (scatter path)",
                            "6", _A2A3),
    "nondivisible": FamilyNote("overlapping windows on H, W or both: FLOAT32 adds", "6", _A2A3),
    "upsampling": FamilyNote("outputs larger than the input: many cells per position", "6",
                             _A2A3),
    "global": FamilyNote("one window per plane", "6", _A2A3),
    "identity": FamilyNote("output size = input size: a copy", "6", _A2A3),
    "rank3": FamilyNote("CHW calls (rank 3, NCL or ND)", "6", _A2A3),
    "alignment": FamilyNote("N*C around 64 planes per task and 64 x cores (40, 48)", "6",
                            _A2A3),
    "exactint": FamilyNote("small-integer gradients on shared positions: an exact golden",
                           "6", _A2A3),
    "ties": FamilyNote("index freedom: first-max, last-max, random choices; self all NaN",
                       "5", _A2A3),
    "shared": FamilyNote("every cell names a shared position: one axis, both, upsampling",
                         "5", _A2A3),
    "widesums": FamilyNote("2^p + 1 + 1 on a shared position: FLOAT32 vs dtype accumulation",
                           "6", _A2A3),
    "special": FamilyNote("inf, NaN, subnormal, near-max; +inf and -inf on one position",
                          "6", _A2A3),
    "layout": FamilyNote("channels-last, strided and transposed views, indices included",
                         "6", _A2A3),
    "empty": FamilyNote("N = 0, Ho = 0 with a non-empty self, W = 0: success, not written",
                        "4", _A2A3),
    "badindex": FamilyNote("indices out of the plane, negative, out of the window, "
                           "duplicated, INT64 >= 2^31: unspecified, isolated only", "8", _A2A3),
    "invalid": FamilyNote("every first-phase rule; N/C mismatch (unspecified); every call "
                          "on a product without the operator", "4"),
    "pathedge": FamilyNote("windows at the vector kernels' UB bounds (14/15, 16/17, 11/12)",
                           "6", _A2A3),
    "stress": FamilyNote("on request: indices near 2^24 (H*W = 2^24 - 1, w = W-1) on the "
                         "adding path; one case a slot (FLOAT16: a 224 MB file, 1.2 GB "
                         "peak memory, 7 s to generate)", "6", _A2A3),
}
