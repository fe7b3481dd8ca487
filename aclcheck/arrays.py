"""Array memory shared by every stage: chunking over the leading dims of plane-shaped
arrays (how the reference and the comparison keep their temporaries bounded on multi-GB
tensors), and result memory a caller owns and reuses (ResultBuffers). numpy only."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator

import numpy as np


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


def _refs(blocks: list[np.ndarray], i: int) -> int:
    return sys.getrefcount(blocks[i])


#: References to a block that only its list holds, counted the way ResultBuffers does.
_UNSHARED_REFS = _refs([np.empty(0)], 0)


class ResultBuffers:
    """Result memory a caller owns and reuses across backward() calls.

    `take(shape)` returns an uninitialized C-contiguous float64 array for the next result
    (pass it as `out=`): a view of one of at most `slots` blocks kept here. A block is
    handed out again only when nothing made from it is alive any more: every numpy view
    (and whatever wraps one, a torch tensor, a memoryview) holds a reference to the block,
    so a block with references beyond this object's own is in use. A result the caller
    still holds is therefore never overwritten. With every block in use, or for results
    under `min_bytes` (numpy's allocator reuses small blocks by itself) or over
    `max_bytes` (kept, such a block would hold that much memory through the next, smaller
    cases), take() returns a fresh array. Two slots cover the usual loop that holds the
    previous result while the next one is computed. The memory goes with the object.
    """

    def __init__(self, slots: int = 2, min_bytes: int = 4 << 20,
                 max_bytes: int = 512 << 20) -> None:
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        self.slots = slots
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self._blocks: list[np.ndarray] = []
        self.reused = 0  # results placed in a kept block (for tests and benchmarks)

    def take(self, shape: tuple[int, ...]) -> np.ndarray:
        """An uninitialized float64 array of `shape`, in a kept block where one is free."""
        n = math.prod(shape)
        if not self.min_bytes <= n * 8 <= self.max_bytes:
            return np.empty(shape, dtype=np.float64)
        blocks = self._blocks
        free = [i for i in range(len(blocks)) if _refs(blocks, i) <= _UNSHARED_REFS]
        fits = [i for i in free if blocks[i].size >= n]
        if fits:
            i = min(fits, key=lambda k: blocks[k].size)
            self.reused += 1
        elif len(blocks) < self.slots:
            i = len(blocks)
            blocks.append(np.empty(n, dtype=np.float64))
        elif free:  # a free block too small for this result: replace the smallest one
            i = min(free, key=lambda k: blocks[k].size)
            blocks[i] = np.empty(0)  # the old block goes first: never both at once
            blocks[i] = np.empty(n, dtype=np.float64)
        else:
            return np.empty(shape, dtype=np.float64)
        return blocks[i][:n].reshape(shape)


#: glibc's mallopt parameter for the size from which a block is its own mapping
_M_MMAP_THRESHOLD = -3
#: blocks at least this large are mapped on their own and unmapped when freed
MMAP_THRESHOLD_BYTES = 256 << 10


def return_large_blocks() -> bool:
    """Have this process's allocator give every block of MMAP_THRESHOLD_BYTES or more
    back to the system when it is freed (glibc; elsewhere nothing, False).

    A process that receives a stream of large buffers of varying sizes (generate's
    parent, the batches its workers send) otherwise grows: glibc raises its threshold to
    the largest block freed so far and serves later ones from a heap that fragments
    (generate's parent peaked at 100 MiB at 10k cases and 128 MiB at 100k; with a fixed
    threshold 81 and 84 MiB). Process-wide: call it at a command's edge."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False
