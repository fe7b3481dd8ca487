"""The rows a coverage report reads, shared by the 2-D and 3-D operators: one valid call's
shapes, dtype, layout and value distribution (a golden file's index row), the facts both
reports compute from them (N·C lanes, output cells, the atomic path, i·in per axis,
window sizes), and how an edge is counted. The edges themselves are each operator's
(its `coverage` module).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aclcheck.cases import Case
from aclcheck.cases.coverage import Edge
from aclcheck.dtypes import float_format
from aclcheck.ops.adaptive.tiling import atomic

INDEX_2_24 = 2**24
INDEX_2_31 = 2**31


@dataclass(frozen=True)
class CaseShape:
    """What coverage needs of one valid call (a row of a golden file's index); the last
    `spatial` axes of both shapes are the window axes, the ones before them N·C."""

    id: str
    product: str
    dtype: str
    layout: str
    distribution: str
    self_shape: tuple[int, ...]
    grad_shape: tuple[int, ...]
    spatial: int = 2

    @property
    def ins(self) -> tuple[int, ...]:
        """self's spatial sizes (the window axes' input sizes)."""
        return tuple(self.self_shape[-self.spatial:])

    @property
    def outs(self) -> tuple[int, ...]:
        """gradOutput's spatial sizes (the window axes' output sizes)."""
        return tuple(self.grad_shape[-self.spatial:])

    @property
    def lanes(self) -> int:
        return math.prod(self.grad_shape[:-self.spatial])

    @property
    def cells(self) -> int:
        return math.prod(self.outs)

    @property
    def is_global(self) -> bool:
        return all(o == 1 for o in self.outs)

    @property
    def atomic(self) -> bool:
        return atomic(self.ins, self.outs)

    @property
    def itemsize(self) -> int:
        return int(float_format(self.dtype).np_dtype.itemsize)

    @property
    def empty(self) -> bool:
        """A zero dim in either tensor (no kernel runs)."""
        return min(self.self_shape + self.grad_shape, default=0) <= 0

    @classmethod
    def of(cls, case: Case) -> CaseShape:
        return cls(case.id, case.product, case.dtype, case.layout, case.distribution,
                   tuple(case.self_shape), tuple(case.grad_shape), case.SPATIAL_RANK)


Test = Callable[[CaseShape], bool]


def count_edge(group: str, label: str, section: str, cases: Sequence[CaseShape],
               test: Test) -> Edge:
    """The edge with how many of `cases` reach it and the first that does."""
    hits = [c for c in cases if test(c)]
    return Edge(group, label, section, len(hits), hits[0].id if hits else "")


def axis_index(c: CaseShape, axis: int) -> int:
    """The largest i·in (or (i+1)·in) a window bound computes on spatial axis `axis`."""
    return c.ins[axis] * c.outs[axis]


def max_index(c: CaseShape) -> int:
    """The largest i·in a window bound computes on any spatial axis."""
    return max(axis_index(c, k) for k in range(c.spatial))


def window_sizes(in_size: int, out_size: int) -> tuple[int, ...]:
    """The distinct window sizes of one axis (ascending), in closed form for any sizes.

    With g = gcd(in, out), a = in / g, b = out / g the windows repeat every b; b = 1 gives
    windows of a; otherwise, q, r = divmod(a, b), every window has q + 1 elements when
    r = 1, else q + 1 or q + 2 (both occur). Checked against window_bounds in the tests.
    """
    if in_size <= 0 or out_size <= 0:
        return ()
    g = math.gcd(in_size, out_size)
    a, b = in_size // g, out_size // g
    if b == 1:
        return (a,)
    q, r = divmod(a, b)
    return (q + 1,) if r == 1 else (q + 1, q + 2)
