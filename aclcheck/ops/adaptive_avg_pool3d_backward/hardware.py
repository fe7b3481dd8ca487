"""Case families of the 3D operator at the hardware's edges (docs/contract-3d.md §9).

Each family aims at one fact of the vendor's AdaptiveAvgPool3dGrad tiling and kernels or
of the 1x1x1 fill (ops-nn `pooling/adaptive_avg_pool3d_grad/`): the index arithmetic per
axis, the fill over whole planes, the N·C lane of a channels-last call, the D windows a
core's span of output cells crosses. Every recipe gets a `Slot` (product, dtype, the
rank its format implies, the index) and returns a `Draw` or None; which slot gets which
edge depends only on the slot, so a case keeps its id and seed in any selection. The
default draws stay below 2^17 elements a case; `stress_draws` has the large ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aclcheck.cases import derive_seed
from aclcheck.dtypes import FLOAT16, first_subnormal_reciprocal
from aclcheck.ops.adaptive.draws import Draw, drawn_case
from aclcheck.ops.adaptive.slot import PRODUCT_ORDER, Slot
from aclcheck.ops.adaptive.tiling import BLOCK_BYTES
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case, make_id
from aclcheck.ops.operator import FamilyNote

#: Small integer terms: an exact golden (misplaced or mis-scaled terms show) that
#: compresses to a few bytes a value in the golden file.
EXACT = "exact-int"
_A2A3 = "atlas-a2, atlas-a3"


def _place(axis: int, long: tuple[int, int], others: tuple[tuple[int, int], ...]
           ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(ins, outs) with the (in, out) pair `long` on `axis`, `others` on the other two."""
    pairs = list(others)
    pairs.insert(axis, long)
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


# -- tall3d: i·in past 2^24 with the other two axes windowed; past 2^31 on any axis -------

#: (in, out) on one axis where i·in crosses 2^24 (a float32 quotient rounds there).
TALL_PAIRS: tuple[tuple[int, int], ...] = ((4097, 4098), (5999, 3000))
#: The two other axes, both > 1 and windowed, at the least size: one window of 2 (2 <- 1)
#: and an upsampled axis (1 -> 2).
TALL_OTHERS: tuple[tuple[int, int], ...] = ((2, 1), (1, 2))
#: i·in crossing 2^31 (46 341·46 342 > 2^31 > 46 340·46 341): an identity axis, the
#: others 1 (46 342 elements, 0.5 MB a case with its golden: --count 2 and stress only);
#: the vendor's bounds are uint64 (common.h).
INT32_PAIR = (46342, 46342)
#: The NCDHW slots of the default suite drawing a 2^24 crossing, with its axis (every
#: other slot from --count 2 on: each case weighs about 0.1 MB).
_TALL_SLOTS: dict[tuple[str, str], int] = {
    ("atlas-a2", "float16"): 0, ("atlas-a3", "bfloat16"): 1, ("atlas-a3", "float16"): 2}


def _first(slot: Slot, firsts: dict[tuple[str, str], int]) -> tuple[int, int]:
    """(variant, index): the slot's index-0 variant where `firsts` names the slot, else
    the slot starts one index later (--count 2) from its ordinal."""
    first = firsts.get((slot.product, slot.dtype))
    if first is not None:
        return first + slot.index, slot.index
    return slot.order + slot.index - 1, slot.index - 1


def _tall3d(slot: Slot) -> Draw | None:
    if slot.rank == 5:  # NCDHW: the 2^24 crossings, one axis each, rotating D, H, W
        variant, index = _first(slot, _TALL_SLOTS)
        if not 0 <= index < 3:
            return None
        long = TALL_PAIRS[(PRODUCT_ORDER.get(slot.product, 0) + index) % 2 if index else 0]
        ins, outs = _place(variant % 3, long, TALL_OTHERS)
        return Draw.of((1, 1), ins, outs, EXACT)
    # ND: the 2^31 crossing from --count 2 on, one axis an index
    if not 1 <= slot.index <= 3:
        return None
    ins, outs = _place((slot.order + slot.index) % 3, INT32_PAIR, ((1, 1), (1, 1)))
    return Draw.of((1,), ins, outs, EXACT)


# -- bigglobal3d: the 1x1x1 fill over big planes, N·C > 1; the FLOAT16 factor's edge -------

#: D·H·W from which the FLOAT16 factor RN16(fl32(1/n)) is subnormal (16 393).
FILL_SUBNORMAL = first_subnormal_reciprocal(FLOAT16)
#: (D, H, W) of both sides of it, every axis > 1 (16 393 = 13·13·97, 16 392 = 8·3·683):
#: planes past 2^14 elements, more than one UB chunk of the elementwise Fill/Mul kernels
#: that also holds a plane boundary when N·C > 1.
GLOBAL_VOLUMES: tuple[tuple[int, int, int], ...] = ((13, 13, 97), (8, 3, 683))
#: Stress only: past 2^16 with N·C = 3, and the FLOAT16 factor 0 (2^25).
GLOBAL_STRESS: tuple[tuple[tuple[int, ...], tuple[int, int, int]], ...] = (
    ((1, 3), (41, 41, 41)), ((1, 1), (256, 256, 512)))


#: The slots of the default suite: FLOAT16 on both sides of the subnormal factor, the
#: side past it with N·C = 2 (a plane boundary inside the output); every other slot, and
#: these slots' other side, from --count 2 on (each case weighs 0.2 to 0.4 MB).
_GLOBAL_SLOTS: dict[tuple[str, str], int] = {("atlas-a2", "float16"): 0,
                                             ("atlas-a3", "float16"): 1}


def _bigglobal3d(slot: Slot) -> Draw | None:
    variant, index = _first(slot, _GLOBAL_SLOTS if slot.rank == 5 else {})
    if not 0 <= index < len(GLOBAL_VOLUMES):
        return None
    vol = GLOBAL_VOLUMES[variant % len(GLOBAL_VOLUMES)]
    lead = (2, 1) if vol == GLOBAL_VOLUMES[0] or index else (1, 1)
    if slot.rank != 5:
        lead = lead[:1]
    return Draw.of(lead, vol, (1, 1, 1))


# -- lanes3d: channels-last-3d with N > 1, N·C whole lane blocks, windowed ----------------


def lane_width(itemsize: int) -> int:
    """Lanes of one 32-byte block: 8 FLOAT32, 16 FLOAT16/BFLOAT16 (the kernels' ncAlign)."""
    return BLOCK_BYTES // itemsize


#: Small spatial geometries with every axis overlapping or upsampling (atomic adds).
LANE_GEOMETRY: tuple[tuple[tuple[int, int, int], tuple[int, int, int]], ...] = (
    ((3, 5, 4), (2, 3, 3)), ((4, 3, 5), (3, 2, 3)))


def _lanes3d(slot: Slot) -> Draw | None:
    if slot.rank != 5 or slot.index >= 3:
        return None
    lanes = lane_width(slot.itemsize)
    # index 0, 1: C one or two lane blocks (each batch's channel row block-aligned, N·C a
    # multiple of the lane width); index 2: C one lane past a block (a remainder per row)
    blocks = 1 + (slot.order + slot.index) % 2
    n, c = (2, lanes * blocks) if slot.index < 2 else (3, lanes + 1)
    ins, outs = LANE_GEOMETRY[(slot.order + slot.index) % len(LANE_GEOMETRY)]
    return Draw.of((n, c), ins, outs, "uniform", "channels_last")


# -- unequal3d: unequal D windows across a core's span of output cells ---------------------

#: (D, Do) with windows of two sizes (8 <- 5: 2, 3, 2, 3, 2; 7 <- 4: 2, 3, 3, 2); H and W
#: give Ho·Wo = 15 cells a D plane (H identity, W halved: no overlap there).
D_PAIRS: tuple[tuple[int, int], ...] = ((8, 5), (7, 4), (5, 3))
HW_PLANE: tuple[tuple[int, int], tuple[int, int]] = ((3, 3), (10, 5))


def _unequal3d(slot: Slot) -> Draw | None:
    if slot.index >= len(D_PAIRS):
        return None
    d, do = D_PAIRS[(slot.order + slot.index) % len(D_PAIRS)]
    (h, ho), (w, wo) = HW_PLANE
    lead = (2, 1) if slot.rank == 5 else (2,)
    return Draw.of(lead, (d, h, w), (do, ho, wo), EXACT)


# -- the families -------------------------------------------------------------------------

Recipe = Callable[[Slot], "Draw | None"]


@dataclass(frozen=True)
class HardwareFamily:
    """A family with the hardware fact it aims at (what `aclcheck families` lists)."""

    name: str
    label: str
    note: FamilyNote
    windowed: bool  # drawn only where the product judges a non-1x1x1 output
    recipe: Recipe


FAMILIES: dict[str, HardwareFamily] = {f.name: f for f in (
    HardwareFamily("tall3d", "tall3d", FamilyNote(
        "i·in crossing 2^24 on D, H or W with the other two axes windowed (> 1); i·in "
        "crossing 2^31 on each axis", "9", _A2A3), True, _tall3d),
    HardwareFamily("bigglobal3d", "gbig3d", FamilyNote(
        "1x1x1 outputs over planes of 16 392 and 16 393 elements with N·C > 1: fill chunks "
        "across plane boundaries, the FLOAT16 factor turning subnormal", "9"), False,
        _bigglobal3d),
    HardwareFamily("lanes3d", "lanes3d", FamilyNote(
        "channels-last-3d, N > 1, C one or two whole lane blocks (8 FLOAT32 / 16 FLOAT16, "
        "BFLOAT16; N·C a multiple of them) or one lane past, windows overlapping on every "
        "axis", "9", _A2A3),
        True, _lanes3d),
    HardwareFamily("unequal3d", "uneq3d", FamilyNote(
        "D windows of two sizes where a core's span of output cells crosses from one D "
        "window to the next (40 and 48 cores)", "9", _A2A3), True, _unequal3d),
)}


def stress_draws(slot: Slot) -> list[Draw]:
    """The 3D hardware edges too large for the default suite: 2^31 crossings with the other
    axes windowed, big 1x1x1 planes (2^16 and more, 2^25), 2^24 crossings on every axis."""
    out = [Draw.of(lead, vol, (1, 1, 1)) for lead, vol in GLOBAL_STRESS]
    for axis in range(3):
        ins, outs = _place(axis, INT32_PAIR, TALL_OTHERS)
        out.append(Draw.of((1, 1), ins, outs, EXACT))
    for axis in range(3):
        ins, outs = _place(axis, TALL_PAIRS[1], ((3, 2), (5, 3)))
        out.append(Draw.of((2, 1), ins, outs, EXACT))
    if slot.rank == 4:
        out = [Draw(d.self_shape[1:], d.grad_shape[1:], d.distribution) for d in out]
    return out


def hardware_case(family: str, product: str, dtype: str, fmt: str, rank: int | None,
                  index: int, suite_seed: int, windowed: bool) -> Case | None:
    """One case of a hardware family (or a large stress draw when family is "stress",
    index counting from the first of them); None where the slot has nothing."""
    slot = Slot(product, dtype, rank, index)
    if family == "stress":
        draws = stress_draws(slot)
        d: Draw | None = draws[index] if index < len(draws) else None
        label = "stress"
        if d is not None and not windowed and d.grad_shape[-3:] != (1, 1, 1):
            return None
    else:
        fam = FAMILIES[family]
        if fam.windowed and not windowed:
            return None
        d, label = fam.recipe(slot), fam.label
    if d is None or (rank is not None and len(d.self_shape) != rank):
        return None
    seed = derive_seed(suite_seed, "3d", family, product, dtype, fmt, index)
    return drawn_case(Case, make_id, family, f"{label}{index}", product, dtype, fmt, seed, d)
