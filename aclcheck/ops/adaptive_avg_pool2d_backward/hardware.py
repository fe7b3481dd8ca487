"""Case families at the hardware's edges: where the products split, tile and special-case.

Each family aims at one fact of docs/contract.md section 9 (the vendor's tiling of the
Atlas A2/A3 kernel, the 1x1 fill every product takes, the index arithmetic, the layout
handling) and draws shapes at the boundaries of that fact's numbers, computed from the
tiling model (`aclcheck.ops.adaptive.tiling`) rather than written down by hand.

A recipe gets a `Slot` (product, dtype, the rank its format implies, the index) and
returns a `Draw` (shapes, values, layout) or None where the family has nothing for that
slot. The variants are deterministic: which slot gets which edge depends only on the
slot, never on the rest of the selection, so a case keeps its id and seed in any suite.
`--count N` reaches the further variants (index 1, 2, ...) of each slot; the `stress`
variants (planes of 2^24 elements and more) are drawn only by `stress_draw`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aclcheck.dtypes import BFLOAT16, FLOAT16, first_subnormal_reciprocal
from aclcheck.ops.adaptive.draws import Draw
from aclcheck.ops.adaptive.slot import DTYPE_ORDER, PRODUCT_ORDER, Slot
from aclcheck.ops.adaptive.tiling import (
    CUBE_CORES,
    VECTOR_CORES,
    large_lanes_threshold,
    pass_edge_cells,
)

#: The cube cores that go with each vector-core count (an AI-core-based split).
CUBE_OF: dict[int, int] = dict(zip(VECTOR_CORES, CUBE_CORES, strict=True))


Recipe = Callable[[Slot], "Draw | None"]
#: The distribution of the large draws whose bugs misplace, repeat or drop terms: small
#: integer terms (an exact golden, which compresses to a few bytes a value in the golden
#: file) show those as well as random values do, at a fraction of the file size.
EXACT = "exact-int"


@dataclass(frozen=True)
class HardwareFamily:
    """A family with the hardware fact it aims at (what `aclcheck families` lists)."""

    name: str
    label: str  # id label
    aims: str  # the fact, one line
    section: str  # where docs/contract.md states it (with the vendor source)
    products: str  # which products the fact belongs to
    recipe: Recipe


# -- shape helpers -------------------------------------------------------------------------


def lead_dims(nc: int, rank: int) -> tuple[int, ...]:
    """Leading dims holding N·C = nc: (C,) for rank 3; (N, C) for rank 4 with the
    smallest factor N >= 2 of nc when it has one (N > 1 exercises the batch stride)."""
    if rank == 3:
        return (nc,)
    for n in range(2, int(nc**0.5) + 1):
        if nc % n == 0:
            return (n, nc // n)
    return (1, nc)


def _cells(t: int) -> tuple[int, int]:
    """(Ho, Wo) with Ho·Wo = t: the squarest factoring (a prime is one row)."""
    best = (1, t)
    for ho in range(2, int(t**0.5) + 1):
        if t % ho == 0:
            best = (ho, t // ho)
    return best


def _spread_in(ho: int, wo: int, terms: int) -> tuple[int, int]:
    """Input sizes that put (Ho, Wo) on the atomic path while keeping the input small:
    W = Wo // terms + 1 < Wo (so W % Wo != 0) gives each input element about `terms`
    one-wide windows, and H = Ho // 2 + 1 (H = 1 for one row of cells)."""
    return (ho // 2 + 1 if ho > 1 else 1), wo // terms + 1


def _rank(slot: Slot, preferred: int) -> int:
    return slot.rank if slot.rank is not None else preferred


# -- cores: output cells (A2/A3) and N·C planes (generic, Ascend 950) around core counts ----


def core_edges(cores: int) -> tuple[int, ...]:
    """Task counts around a core count where the split changes shape: the last core
    alone (c + 1, 2c + 1), one idle core (c - 1), two full rounds less one (2c - 1)."""
    return (cores + 1, 2 * cores + 1, cores - 1, 2 * cores - 1)


def _cores(slot: Slot) -> Draw | None:
    if not slot.cores:
        return None
    # each slot pairs an edge of the A2/A3 cell split (Ho·Wo around the product's vector
    # and cube core counts, its first chip model first) with one of a plane split (N·C
    # around the same counts); the nine slots of a product (3 dtypes x 3 formats) take
    # the first nine cell edges, --count reaches the rest
    cells = [t for c in slot.cores for t in core_edges(c) + (CUBE_OF[c] + 1,)]
    planes = [p for c in slot.cores for p in (c + 1, c - 1, 2 * c + 1)]
    lane = {4: 0, 3: 1, None: 2}[slot.rank]
    pos = lane + 3 * (DTYPE_ORDER.get(slot.dtype, 0) + 3 * slot.index)
    if pos >= len(cells):
        return None
    ho, wo = _cells(cells[pos])
    h, w = _spread_in(ho, wo, 4)
    lead = lead_dims(planes[pos % len(planes)], _rank(slot, 4 if pos % 2 else 3))
    return Draw(lead + (h, w), lead + (ho, wo))



# -- ubpass: cells per UB pass (A2/A3) ------------------------------------------------------


def ub_edge(lanes: int, itemsize: int, cores: int) -> int:
    """Output cells one more than all cores' first UB pass holds: the first core then
    needs a second, one-cell pass (39 681 FLOAT16 / 119 041 FLOAT32 cells at N·C = 1 on
    40 cores; 993 / 2 977 in deterministic mode, 1 core)."""
    return pass_edge_cells(lanes, itemsize, cores) + 1


def _ubpass(slot: Slot) -> Draw | None:
    if not slot.cores:
        return None
    # rank-4 slot: the chip's core counts (FLOAT32 there only with --count: 119 041 cells
    # and more; the stress family has them); rank-3 slot: deterministic mode (one core)
    if slot.rank == 4:
        counts: tuple[int | None, ...] = ((None,) + slot.cores if slot.itemsize == 4
                                          else slot.cores)
    else:
        counts = (1,) if slot.rank == 3 else ()
    if slot.index >= len(counts) or counts[slot.index] is None:
        return None
    t = ub_edge(1, slot.itemsize, counts[slot.index])
    # one row of T cells over a row of about T/8 inputs: each input takes ~8 terms, so a
    # term counted twice shows; W > 4096 also crosses any 4096-column tile
    lead = lead_dims(1, slot.rank or 3)
    return Draw(lead + (1, t // 8 + 1), lead + (1, t), EXACT)


# -- ncslice: N·C lanes sliced past one UB pass (A2/A3) ------------------------------------


def slice_edges(itemsize: int) -> tuple[int, ...]:
    """N·C values at the lane-slicing edge: the first with three slices and a one-lane
    tail (15 873 / 23 809), the first sliced one whose single slice is wider than N·C
    (15 857 / 23 801), exactly the threshold (15 872 / 23 808), one below it (small path,
    one cell per pass), and a four-or-five-slice one with a one-lane tail (47 617)."""
    thr = large_lanes_threshold(itemsize)
    align = 32 // itemsize
    return (thr + 1, thr - align + 1, thr, thr - align, 3 * thr + 1)


def _ncslice(slot: Slot) -> Draw | None:
    if not slot.cores or slot.rank != 4:
        return None
    # index 0: A2 FLOAT16 the three-slice crossing, A3 BFLOAT16 the wide single slice
    # (about 0.2 MB a 16-bit case: one each is enough by default; FLOAT32's 23 809 lanes
    # weigh twice that, so they come with --count 2); --count reaches the rest in every
    # slot: the other of the two, the threshold itself, one below it and the
    # four-or-five-slice one
    edges = slice_edges(slot.itemsize)
    first = {("atlas-a2", "float16"): 0, ("atlas-a3", "bfloat16"): 1}.get(
        (slot.product, slot.dtype))
    order = [i for i in (0, 1, 2, 3, 4) if i != first]
    if first is not None:
        order.insert(0, first)
    index = slot.index - (0 if first is not None else 1)
    if not 0 <= index < len(order):
        return None
    lead = lead_dims(edges[order[index]], 4)
    # two input rows under two one-wide windows: lanes that run past N·C land in the
    # second row's lanes, where they show (the cheapest atomic, non-global call)
    return Draw(lead + (2, 1), lead + (1, 2), EXACT)


# -- bigglobal: the 1x1 fill of every product ----------------------------------------------

#: H·W where the FLOAT16 fill RN16(fl32(1/(H·W))) turns subnormal (16 393: just below
#: 2^-14 the reciprocal still rounds up to the smallest normal), and where a count held
#: in FLOAT16 / BFLOAT16 first rounds (2 049, 257) or overflows (65 520): derived from
#: the formats (aclcheck.dtypes), each drawn with its neighbour on the other side.
FILL_SUBNORMAL = first_subnormal_reciprocal(FLOAT16)
FP16_COUNT_INEXACT = FLOAT16.first_inexact_integer
BF16_COUNT_INEXACT = BFLOAT16.first_inexact_integer
FP16_COUNT_OVERFLOW = int(FLOAT16.overflow_threshold)


def _plane(n: int, widest: int = 4095) -> tuple[int, int]:
    """(H, W) with H·W = n: the fewest rows whose row is at most `widest` wide (a
    prime past it gives one row)."""
    for h in range(1, n + 1):
        if n % h == 0 and n // h <= widest:
            return h, n // h
    return 1, n


#: (H, W) of the global edges, by H·W: both sides of the subnormal fill, the FLOAT16
#: count's overflow (65 520, and 65 519 as one wide row), 65 536, and the first counts
#: FLOAT16 and BFLOAT16 cannot hold.
GLOBAL_EDGES: dict[str, tuple[int, int]] = {
    str(FILL_SUBNORMAL): _plane(FILL_SUBNORMAL),
    str(FILL_SUBNORMAL - 1): _plane(FILL_SUBNORMAL - 1),
    str(FP16_COUNT_OVERFLOW): _plane(FP16_COUNT_OVERFLOW),
    "65536": (256, 256),
    str(FP16_COUNT_OVERFLOW - 1): (1, FP16_COUNT_OVERFLOW - 1),
    str(BF16_COUNT_INEXACT): (BF16_COUNT_INEXACT, 1),
    str(FP16_COUNT_INEXACT): _plane(FP16_COUNT_INEXACT, 683),
}
#: Stress only: FLOAT32 count exactness (2^24, 2^24 + 1), FLOAT16 fill 0 (2^25, 2^25 + 1).
GLOBAL_STRESS: dict[str, tuple[int, int]] = {
    "2^24": (4096, 4096),
    "2^24+1": (673, 24929),
    "2^25": (4096, 8192),
    "2^25+1": (8283, 4051),
}
#: The slot drawing a plane of >= 65 520 per dtype, and the FLOAT16 slots drawing each
#: side of the subnormal fill; every other slot a cheap edge.
_BIG_GLOBAL = {("atlas-a2", "float32"): str(FP16_COUNT_OVERFLOW),
               ("atlas-training", "float16"): str(FP16_COUNT_OVERFLOW),
               ("atlas-a3", "bfloat16"): "65536",
               ("atlas-a2", "float16"): str(FILL_SUBNORMAL),
               ("atlas-a3", "float16"): str(FILL_SUBNORMAL - 1)}
#: the order of the other edges (a slot's later indices)
_GLOBAL_ORDER = (str(FP16_COUNT_INEXACT), str(FILL_SUBNORMAL), str(FILL_SUBNORMAL - 1),
                 str(BF16_COUNT_INEXACT), str(FP16_COUNT_OVERFLOW),
                 str(FP16_COUNT_OVERFLOW - 1))


def _bigglobal(slot: Slot) -> Draw | None:
    if slot.rank != 4:
        return None
    first = _BIG_GLOBAL.get((slot.product, slot.dtype)) or (
        str(BF16_COUNT_INEXACT) if slot.dtype == "bfloat16" else str(FP16_COUNT_INEXACT))
    order = [first] + [k for k in _GLOBAL_ORDER if k != first]
    if slot.index >= len(order):
        return None
    h, w = GLOBAL_EDGES[order[slot.index]]
    lead = (1, 1) if h * w > 4096 else (2, 1)  # big planes once, small ones twice
    return Draw(lead + (h, w), lead + (1, 1))


# -- tall: window bounds crossing 2^24 with W > 1, rows and columns past 4 096 -------------

#: (H, Ho, W, Wo): i·in crosses 2^24 along H with W > 1 (the existing index family keeps
#: W = 1 there), the same along W (wide rows past 4 096 columns), and one row count
#: past two 4 096-row blocks.
TALL_EDGES: tuple[tuple[int, int, int, int], ...] = (
    (4099, 4098, 2, 1),
    (2, 1, 4099, 4098),
    (4097, 4098, 3, 2),
    (3, 2, 4097, 4098),
    (8193, 4099, 3, 2),
    (2, 1, 8193, 2732),
)
#: Stress only: i·in around INT32_MAX with W > 1 (46 340² < 2^31 < 46 341²).
TALL_STRESS: tuple[tuple[int, int, int, int], ...] = (
    (46341, 46341, 3, 2),
    (46340, 46341, 3, 2),
    (3, 2, 46341, 46341),
)


def _tall(slot: Slot) -> Draw | None:
    if slot.rank != 4:
        return None
    # alternate tall and wide over (product, dtype) so every dtype gets both
    start = slot.order % 2
    pos = start + 2 * slot.index
    if pos >= len(TALL_EDGES):
        return None
    h, ho, w, wo = TALL_EDGES[pos]
    return Draw((1, 1, h, w), (1, 1, ho, wo))



# -- layoutnc: channels-last and strided views with N > 1, C > 1; one axis divisible -------

#: (N, C, H, Ho, W, Wo): N·C = 18 crosses both lane alignments of the A2/A3 kernel (8
#: FLOAT32, 16 FLOAT16/BFLOAT16 lanes), 14 and 15 stay inside; N·C stays below every
#: core count (20) so these cases test layouts, not the split. Exactly one spatial axis
#: divides (A2/A3 still add atomically).
LAYOUT_EDGES: tuple[tuple[int, int, int, int, int, int], ...] = (
    (2, 3, 8, 4, 7, 3),
    (2, 9, 7, 3, 8, 4),
    (2, 7, 6, 3, 5, 2),
    (3, 5, 5, 2, 6, 3),
)
LAYOUT_KINDS: tuple[str, ...] = ("channels_last", "strided")


def _layoutnc(slot: Slot) -> Draw | None:
    if slot.rank != 4:
        return None
    p = PRODUCT_ORDER.get(slot.product, 0)
    d = DTYPE_ORDER.get(slot.dtype, 0)
    pos = p + d + slot.index
    if slot.index >= len(LAYOUT_EDGES):
        return None
    n, c, h, ho, w, wo = LAYOUT_EDGES[(p + slot.index) % len(LAYOUT_EDGES)]
    layout = LAYOUT_KINDS[pos % len(LAYOUT_KINDS)]
    return Draw((n, c, h, w), (n, c, ho, wo), "uniform", layout)


# -- the families -------------------------------------------------------------------------

FAMILIES: dict[str, HardwareFamily] = {
    f.name: f
    for f in (
        HardwareFamily(
            "cores", "cores",
            "output cells Ho·Wo around the 40/48 vector (20/24 cube) core counts that split "
            "them, with N·C planes around the same counts (a plane split: Ascend 950, GPUs)",
            "9.2", "A2/A3", _cores),
        HardwareFamily(
            "ubpass", "ubpass",
            "one cell more than the cores' first UB pass holds (FLOAT16 39 681 / 47 617, "
            "FLOAT32 119 041 / 142 849 cells at N·C = 1; 1 core in deterministic mode)",
            "9.3", "A2/A3", _ubpass),
        HardwareFamily(
            "ncslice", "ncslice",
            "N·C lanes at the slicing threshold (FLOAT16/BFLOAT16 15 872, FLOAT32 23 808): "
            "three slices with a one-lane tail, one slice wider than N·C",
            "9.4", "A2/A3", _ncslice),
        HardwareFamily(
            "bigglobal", "gbig",
            "1x1 outputs over planes of 257 to 65 536 elements: the fill 1/(H·W) rounded "
            "to the dtype (FLOAT16: the last normal fill at 16 392, subnormal from 16 393), "
            "counts FLOAT16 and BFLOAT16 cannot hold",
            "9.6", "every product", _bigglobal),
        HardwareFamily(
            "tall", "tall",
            "window bounds i·in crossing 2^24 with W > 1 (and the mirror along W, rows past "
            "4 096 columns), H past two 4 096-row blocks",
            "9.7", "every product", _tall),
        HardwareFamily(
            "layoutnc", "laync",
            "channels-last and strided views with N > 1 and C > 1 in every dtype (N·C across "
            "the 8/16-lane alignment), exactly one spatial axis dividing",
            "9.5", "every product", _layoutnc),
    )
}


def draw(family: str, slot: Slot) -> Draw | None:
    """The draw of a hardware family for one slot (None: nothing for this slot)."""
    return FAMILIES[family].recipe(slot)

