"""Deterministic, size-balanced shards of a golden file's cases (for CI matrices).

Greedy longest-processing-time: cases sorted by size (largest first, id breaking ties)
go to the least-loaded shard (lowest number breaking ties). Every machine computes the
same split from the index alone, and shard loads differ by at most one case's size.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence


def assign(sizes: Sequence[tuple[str, int]], n: int) -> dict[str, int]:
    """case id -> shard number (1..n) for (id, cost) pairs."""
    if n < 1:
        raise ValueError("need at least one shard")
    heap = [(0, k) for k in range(1, n + 1)]
    out: dict[str, int] = {}
    for case_id, size in sorted(sizes, key=lambda s: (-s[1], s[0])):
        load, k = heapq.heappop(heap)
        out[case_id] = k
        heapq.heappush(heap, (load + max(int(size), 1), k))
    return out


def select(sizes: Sequence[tuple[str, int]], k: int, n: int) -> set[str]:
    """Ids of shard k of n."""
    if not 1 <= k <= n:
        raise ValueError(f"shard {k}/{n}: need 1 <= K <= N")
    return {cid for cid, shard in assign(sizes, n).items() if shard == k}
