"""Chunking over the leading dims (N, C) of plane-shaped arrays: how the reference and
the comparison keep their temporaries bounded on multi-GB tensors."""

from __future__ import annotations

import math
from collections.abc import Iterator


def plane_blocks(lead: tuple[int, ...], rows: int) -> Iterator[tuple[slice, ...]]:
    """Index tuples over the leading dims, each a contiguous C-order range of at most
    `rows` planes (or one plane), in row-major order."""
    if not lead:
        yield ()
        return
    inner = math.prod(lead[1:])
    if inner <= rows:
        step = max(1, rows // max(inner, 1))
        rest = (slice(None),) * (len(lead) - 1)
        for start in range(0, lead[0], step):
            yield (slice(start, min(start + step, lead[0])), *rest)
        return
    for start in range(lead[0]):
        for sub in plane_blocks(lead[1:], rows):
            yield (slice(start, start + 1), *sub)
