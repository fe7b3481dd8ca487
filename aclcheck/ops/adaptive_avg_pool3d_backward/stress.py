"""The on-request `stress` family of the 3D operator: N·C around the A2/A3 tiling's
switch to slicing N·C, and the hardware edges too large for the default suite
(hardware.stress_draws: big 1x1x1 planes, 2^16 with N·C = 3 and the FLOAT16 factor 0 at
2^25; i·in past 2^31 and past 2^24 on each axis with the others windowed), dealt over
the family's slots (aclcheck.ops.adaptive.deal) so that `--count 1` draws each once, on
a slot where it means something: windowed edges on Atlas A2/A3, each N·C switch on its
own element size, the 2^25 factor on FLOAT16."""

from __future__ import annotations

import functools
from collections.abc import Callable

from aclcheck.dtypes import float_format
from aclcheck.ops.adaptive.deal import contract_slots, deal
from aclcheck.ops.adaptive.deal import order as deal_order
from aclcheck.ops.adaptive.draws import Draw
from aclcheck.ops.adaptive.slot import Slot
from aclcheck.ops.adaptive_avg_pool3d_backward import contract, hardware

#: N·C around the A2/A3 tiling's switch to slicing N·C (a lane no longer fits the unified
#: buffer: ncAlign >= 15 872 for FLOAT16/BFLOAT16, 23 808 for FLOAT32 with a 192 KB
#: buffer; the buffer size is an assumption, so both sides are drawn)
NC_LARGE = (15871, 15872, 15873, 23807, 23808, 23809)
#: a slot's key: (product, dtype, rank)
Key = tuple[str, str, int | None]


def _windowed(k: Key) -> bool:
    rules = contract.product(k[0])
    return not (rules.global_only or rules.no_windowed_kernel)


def _itemsize(k: Key) -> int:
    return int(float_format(k[1]).np_dtype.itemsize)


@functools.cache
def edges() -> tuple[tuple[str, Callable[[Key], bool]], ...]:
    """(edge id, which slots it means something on), the most constrained first."""
    out: list[tuple[str, Callable[[Key], bool]]] = [
        (f"nc:{n}", lambda k, n=n: _windowed(k) and _itemsize(k) == (2 if n < 3 else 4))
        for n in range(len(NC_LARGE))]
    count = len(hardware.stress_draws(Slot("atlas-a2", "float16", 5, 0)))
    for n in range(count):  # 0: 2^16 plane, 1: 2^25 (FLOAT16), then windowed crossings
        fits: Callable[[Key], bool] = ((lambda k: True) if n == 0 else
                                       (lambda k: k[1] == "float16") if n == 1 else _windowed)
        out.append((f"hw:{n}", fits))
    return tuple(out)


@functools.cache
def dealt() -> dict[Key, tuple[str, ...]]:
    """Each slot of the contract's own edges (aclcheck.ops.adaptive.deal)."""
    return deal(contract_slots(contract.PRODUCTS, contract.FORMATS, contract.FORMAT_RANK),
                edges())


def order(key: Key) -> tuple[str, ...]:
    """The edges slot `key` draws at index 0, 1, ...: its own, then every other it fits."""
    return deal_order(key, dealt(), edges())


def stress_shapes(key: Key, index: int) -> Draw | None:
    """The stress draw of a slot at an index (None past its last edge); rank None: 5."""
    edges_ = order(key)
    if index >= len(edges_):
        return None
    kind, _, n = edges_[index].partition(":")
    rank = key[2] or 5
    if kind == "nc":
        nc = NC_LARGE[int(n)]
        lead = (1, nc) if rank == 5 else (nc,)
        return Draw(lead + (3, 2, 1), lead + (2, 1, 1))
    slot = Slot(key[0], key[1], rank, 0)
    return hardware.stress_draws(slot)[int(n)]
