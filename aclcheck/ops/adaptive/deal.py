"""Dealing a family's edges over its slots (product x dtype x format), so that a suite of
`--count 1` draws each edge once, on a slot where it means something: each edge goes to
the least-loaded slot it fits (the given order among equals), the most constrained edges
first; a slot draws its own edges, then every other edge it fits, at its later indices.
Pure data: edges are ids with a predicate over the slot's key; a contract's slots are
keys (product, dtype, the rank a format implies)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TypeVar

from aclcheck.ops.operator import ProductRules

Key = TypeVar("Key", bound=Hashable)
#: an edge: its id and the slots it means something on
Edge = tuple[str, Callable[[Key], bool]]


def contract_slots(products: Mapping[str, ProductRules], formats: Sequence[str],
                   format_rank: Mapping[str, int | None]) -> list[tuple[str, str, int | None]]:
    """Every (product, dtype, rank) slot of a contract, in its order: each product's
    dtypes, then each documented format's implied rank (None: any)."""
    return [(p, d, format_rank.get(f)) for p, rules in products.items()
            for d in rules.dtypes for f in formats]


def deal(slots: Sequence[Key], edges: Sequence[Edge[Key]]) -> dict[Key, tuple[str, ...]]:
    """Each slot's own edges (every edge that fits some slot goes to exactly one)."""
    own: dict[Key, list[str]] = {s: [] for s in slots}
    for edge, fits in edges:
        able = [s for s in slots if fits(s)]
        if able:
            own[min(able, key=lambda s: len(own[s]))].append(edge)
    return {s: tuple(e) for s, e in own.items()}


def order(key: Key, own: dict[Key, tuple[str, ...]], edges: Sequence[Edge[Key]]
          ) -> tuple[str, ...]:
    """The edges slot `key` draws at index 0, 1, ...: its own, then every other edge it
    fits, the last listed (the least constrained, as a rule the smallest) first."""
    mine = own.get(key, ())
    return mine + tuple(e for e, fits in reversed(edges) if e not in mine and fits(key))
