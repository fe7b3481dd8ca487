"""Shards: the one home of "K of N" (CI matrices split a run, `merge` joins the parts).

Two splits, one per stage:
  * `generate --shard K/N` slices the suite round-robin (`round_robin`), so the shard
    files of one suite interleave back (`interleave`) into the unsharded order.
  * `verify --shard K/N` balances the cases of a golden file by size (`select`): greedy
    longest-processing-time, cases sorted by size (largest first, id breaking ties) go to
    the least-loaded shard (lowest number breaking ties). Every machine computes the same
    split from the index alone, and shard loads differ by at most one case's size.
"""

from __future__ import annotations

import heapq
import json
from collections import deque
from collections.abc import Sequence
from typing import Any, TypeVar

from aclcheck.errors import UsageError

T = TypeVar("T")
#: Key of the shard ("K/N") in a golden file's stored selection.
SELECTION_KEY = "shard"


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N) with 1 <= K <= N (UsageError otherwise)."""
    try:
        k_text, n_text = str(text).split("/")
        k, n = int(k_text), int(n_text)
    except ValueError:
        raise UsageError(f"shard must look like K/N (e.g. 2/4), got {text!r}") from None
    if not 1 <= k <= n:
        raise UsageError(f"shard {text!r}: need 1 <= K <= N")
    return k, n


def shard_text(k: int, n: int) -> str:
    return f"{k}/{n}"


def round_robin(items: Sequence[T], k: int, n: int) -> list[T]:
    """The K-th of N deterministic slices of an ordered suite (item i goes to i % N + 1)."""
    return [item for i, item in enumerate(items) if i % n == k - 1]


def interleave(parts: Sequence[Sequence[T]]) -> list[T]:
    """Inverse of `round_robin`: parts 1..N back into the unsharded order. ValueError when
    their sizes cannot come from one round-robin split."""
    queues = [deque(p) for p in parts]
    n = len(queues)
    out: list[T] = []
    for i in range(sum(len(q) for q in queues)):
        q = queues[i % n]
        if not q:
            raise ValueError(f"shard {i % n + 1}/{n} is too short for its place")
        out.append(q.popleft())
    return out


def split_selection(raw: Any) -> tuple[dict[str, Any], tuple[int, int] | None]:
    """(selection without its shard, (K, N) or None) from a golden file's stored
    `selection` attribute (JSON text). UsageError for a malformed shard."""
    try:
        sel = json.loads(raw) if isinstance(raw, str) else {}
    except (ValueError, RecursionError):
        sel = {}
    if not isinstance(sel, dict):
        sel = {}
    text = sel.pop(SELECTION_KEY, None)
    if not text:
        return sel, None
    return sel, parse_shard(str(text))


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
    """Ids of shard k of n (size-balanced)."""
    if not 1 <= k <= n:
        raise ValueError(f"shard {k}/{n}: need 1 <= K <= N")
    return {cid for cid, shard in assign(sizes, n).items() if shard == k}
