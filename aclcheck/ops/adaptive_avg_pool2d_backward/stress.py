"""The on-request `stress` family: every hardware edge too large for the default suite,
dealt over the family's slots (product x dtype x format) so that `--count 1` reaches each
edge once, on a slot where it means something (the 2^24 count on FLOAT32, the 2^25 fill
on FLOAT16, N·C slices and UB passes on the tiled products); a larger count draws each
slot's other edges after its own.

Edges: i·in past 2^24 with W > 1 and past 2^31 with W = 1 (tall thin tensors), i·in
around INT32_MAX with W > 1 and along W (hardware.TALL_STRESS), 1x1 planes of 2^24,
2^24 + 1, 2^25 and 2^25 + 1 (hardware.GLOBAL_STRESS), the N·C slicing edges of each
element size (hardware.slice_edges) and a second UB pass on both core counts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from aclcheck.ops.adaptive.deal import contract_slots, deal
from aclcheck.ops.adaptive.deal import order as deal_order
from aclcheck.ops.adaptive.draws import Draw
from aclcheck.ops.adaptive.slot import PRODUCT_CORES, Slot
from aclcheck.ops.adaptive.tiling import VECTOR_CORES
from aclcheck.ops.adaptive_avg_pool2d_backward import contract
from aclcheck.ops.adaptive_avg_pool2d_backward.hardware import (
    GLOBAL_STRESS,
    TALL_STRESS,
    lead_dims,
    slice_edges,
    ub_edge,
)

#: the i·in edges of the first version (index 0 and 1 of every slot before the deal)
INDEX_STRESS: tuple[tuple[int, int, int, int], ...] = ((8193, 4099, 3, 2), (65536, 32771, 1, 1))
#: the element sizes whose N·C slicing edges differ
ITEMSIZES = (2, 4)


#: a slot's key: (product, dtype, rank)
Key = tuple[str, str, int | None]


@functools.cache
def edges() -> tuple[tuple[str, Callable[[Key], bool]], ...]:
    """(edge id, which slots it means something on), the most constrained first."""
    def itemsize(k: Key) -> int:
        return Slot(*k, 0).itemsize

    def tiled(k: Key) -> bool:
        return k[0] in PRODUCT_CORES

    out: list[tuple[str, Callable[[Key], bool]]] = []
    for size in ITEMSIZES:  # slicing edges are per element size
        for n in range(len(slice_edges(size))):
            out.append((f"slice{size}:{n}",
                        lambda k, size=size: tiled(k) and itemsize(k) == size))
    out += [(f"ub:{cores}", tiled) for cores in VECTOR_CORES]
    for name in GLOBAL_STRESS:
        dtype = "float32" if name.startswith("2^24") else "float16"
        out.append((f"global:{name}", lambda k, dtype=dtype: k[1] == dtype))
    out += [(f"tall:{n}", lambda k: True) for n in range(len(TALL_STRESS))]
    out += [(f"index:{n}", lambda k: True) for n in range(len(INDEX_STRESS))]
    return tuple(out)


@functools.cache
def dealt() -> dict[Key, tuple[str, ...]]:
    """Each slot of the contract's own edges (aclcheck.ops.adaptive.deal)."""
    return deal(contract_slots(contract.PRODUCTS, contract.FORMATS, contract.FORMAT_RANK),
                edges())


def order(slot: Slot) -> tuple[str, ...]:
    """The edges a slot draws at index 0, 1, ...: its own, then every other it fits."""
    return deal_order((slot.product, slot.dtype, slot.rank), dealt(), edges())


def _draw(edge: str, slot: Slot) -> Draw:
    kind, _, key = edge.partition(":")
    rank = slot.rank or 4
    lead1 = lead_dims(1, rank)
    if kind == "index" or kind == "tall":
        h, ho, w, wo = (INDEX_STRESS if kind == "index" else TALL_STRESS)[int(key)]
        return Draw(lead1 + (h, w), lead1 + (ho, wo))
    if kind == "global":
        h, w = GLOBAL_STRESS[key]
        return Draw(lead1 + (h, w), lead1 + (1, 1))
    if kind == "ub":
        t = ub_edge(17, slot.itemsize, int(key))
        lead = lead_dims(17, rank)
        return Draw(lead + (1, t // 4 + 1), lead + (1, t))
    lead = lead_dims(slice_edges(slot.itemsize)[int(key)], rank)  # this slot's element size
    return Draw(lead + (2, 1), lead + (1, 2))


def stress_draw(slot: Slot) -> Draw | None:
    """The stress draw of a slot at its index (None past its last edge)."""
    edges = order(slot)
    return _draw(edges[slot.index], slot) if slot.index < len(edges) else None
