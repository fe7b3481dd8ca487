"""What a suite exercises: hardware edges, shape classes and value classes.

`coverage(rows)` reads only the index of a golden file (shapes, dtypes, layouts, value
distributions of the valid calls) and says, edge by edge, how many cases reach it, so a
user can see what a trimmed suite no longer covers (`aclcheck inspect FILE --coverage`).
The edges are those of docs/contract.md section 9, computed with the same tiling model the
families draw from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

from aclcheck.cases import Case
from aclcheck.cases.coverage import Coverage, Edge
from aclcheck.dtypes import FLOAT16, first_subnormal_reciprocal
from aclcheck.ops.adaptive.coverage_rows import (
    INDEX_2_24,
    INDEX_2_31,
    CaseShape,
    Test,
    count_edge,
    max_index,
)
from aclcheck.ops.adaptive.tiling import (
    CUBE_CORES,
    VECTOR_CORES,
    a2_tiling,
    core_split,
)

#: The widest row a generic column tiler is assumed to hold (no vendor kernel has one:
#: section 9); rows past it are reported as such.
COLUMN_TILE = 4096
FP16_COUNT_LIMIT = 65520  # a count held in FLOAT16 overflows here
#: the least H·W whose FLOAT16 fill RN16(fl32(1/(H·W))) is subnormal (16 393)
FP16_SUBNORMAL_FILL = first_subnormal_reciprocal(FLOAT16)


def _uneven_cells(cores: int) -> Test:
    def test(c: CaseShape) -> bool:
        split = core_split(c.cells, cores)
        return (not c.is_global and c.atomic and c.cells > cores
                and split.last < split.per_core)
    return test


def _uneven_planes(cores: int) -> Test:
    return lambda c: c.lanes > cores and c.lanes % cores != 0


def _second_pass(cores: int) -> Test:
    def test(c: CaseShape) -> bool:
        if c.is_global or not c.atomic:
            return False
        plan = a2_tiling(tuple(c.grad_shape[-2:]), c.lanes, tuple(c.self_shape[-2:]),
                         c.itemsize, cores)
        return not plan.lanes_large and plan.split.per_core > plan.cells_per_pass
    return test


def _sliced(c: CaseShape) -> bool:
    if c.is_global:
        return False
    plan = a2_tiling(tuple(c.grad_shape[-2:]), c.lanes, tuple(c.self_shape[-2:]),
                     c.itemsize, VECTOR_CORES[0])
    return plan.lanes_large and plan.tail_lanes < plan.slice_lanes


def _global_plane(c: CaseShape) -> int:
    return math.prod(c.self_shape[-2:]) if c.is_global else 0


#: the hardware edges only the on-request stress family reaches (too large by default)
ON_REQUEST = frozenset({"1x1 plane >= 2^24", "i·in > 2^31",
                        f"H > {2 * COLUMN_TILE} (two 4 096-row blocks)"})


def _hardware_tests() -> list[tuple[str, str, Test]]:
    tests: list[tuple[str, str, Test]] = []
    for cores in VECTOR_CORES + CUBE_CORES:
        tests.append((f"Ho·Wo > {cores} cores, last core short (atomic)", "9.2",
                      _uneven_cells(cores)))
    for cores in CUBE_CORES + VECTOR_CORES:
        tests.append((f"N·C > {cores}, not a multiple (plane split)", "9.2",
                      _uneven_planes(cores)))
    for cores in (1,) + VECTOR_CORES:
        tests.append((f"second UB pass on {cores} core{'s' if cores > 1 else ''}", "9.3",
                      _second_pass(cores)))
    tests += [
        ("N·C sliced, short last slice", "9.4", _sliced),
        ("exactly one spatial axis divides", "9.5",
         lambda c: not c.is_global and (c.self_shape[-2] % c.grad_shape[-2] == 0)
         != (c.self_shape[-1] % c.grad_shape[-1] == 0)),
        (f"1x1 plane >= {FP16_SUBNORMAL_FILL} in FLOAT16 (subnormal fill)", "9.6",
         lambda c: c.dtype == "float16" and _global_plane(c) >= FP16_SUBNORMAL_FILL),
        (f"1x1 plane >= {FP16_COUNT_LIMIT}", "9.6",
         lambda c: _global_plane(c) >= FP16_COUNT_LIMIT),
        ("1x1 plane >= 2^24", "9.6", lambda c: _global_plane(c) >= INDEX_2_24),
        ("i·in > 2^24 with W > 1", "9.7",
         lambda c: c.self_shape[-1] > 1 and max_index(c) > INDEX_2_24),
        ("i·in > 2^24 with W = 1", "9.7",
         lambda c: c.self_shape[-1] == 1 and max_index(c) > INDEX_2_24),
        ("i·in > 2^31", "9.7", lambda c: max_index(c) > INDEX_2_31),
        (f"W > {COLUMN_TILE} (rows past a 4 096-column tile)", "9.3",
         lambda c: c.self_shape[-1] > COLUMN_TILE),
        (f"H > {2 * COLUMN_TILE} (two 4 096-row blocks)", "9.7",
         lambda c: c.self_shape[-2] > 2 * COLUMN_TILE),
    ]
    return tests


def _shape_tests() -> list[tuple[str, Test]]:
    def div(c: CaseShape) -> tuple[bool, bool]:
        (h, w), (ho, wo) = c.self_shape[-2:], c.grad_shape[-2:]
        return h % ho == 0, w % wo == 0
    return [
        ("rank 3", lambda c: len(c.self_shape) == 3),
        ("rank 4", lambda c: len(c.self_shape) == 4),
        ("N > 1 and C > 1", lambda c: len(c.self_shape) == 4 and c.self_shape[0] > 1
         and c.self_shape[1] > 1),
        ("1x1 output (global)", lambda c: c.is_global),
        ("identity (Ho = H, Wo = W)", lambda c: c.grad_shape[-2:] == c.self_shape[-2:]),
        ("both axes divide", lambda c: not c.is_global and all(div(c))),
        ("neither axis divides", lambda c: not any(div(c))),
        ("upsampling (Ho > H or Wo > W)", lambda c: c.grad_shape[-2] > c.self_shape[-2]
         or c.grad_shape[-1] > c.self_shape[-1]),
    ]


def coverage(rows: Iterable[CaseShape]) -> Coverage:
    """Count, for every edge, the valid cases that reach it (calls with an empty tensor
    run no kernel: they count only as such)."""
    every = list(rows)
    cases = [c for c in every if min(c.self_shape + c.grad_shape, default=0) > 0]
    edges: list[Edge] = []

    def count(group: str, label: str, section: str, test: Test) -> None:
        edges.append(count_edge(group, label, section, cases, test))

    for label, section, test in _hardware_tests():
        edge = count_edge("hardware", label, section, cases, test)
        edges.append(replace(edge, on_request=label in ON_REQUEST))
    empty = [c for c in every if c not in cases]
    edges.append(Edge("shape", "empty tensor (no kernel runs)", "4", len(empty),
                      empty[0].id if empty else ""))
    for label, test in _shape_tests():
        count("shape", label, "", test)
    for dtype in sorted({c.dtype for c in cases}):
        for layout in ("channels_last", "strided", "transposed"):
            count("layout", f"{layout}, N > 1 and C > 1, {dtype}", "9.5",
                  lambda c, d=dtype, lay=layout: c.dtype == d and c.layout == lay
                  and len(c.self_shape) == 4 and c.self_shape[0] > 1 and c.self_shape[1] > 1)
    for dist in sorted({c.distribution for c in cases}):
        count("value", dist, "", lambda c, d=dist: c.distribution == d)
    for product in sorted({c.product for c in cases}):
        for dtype in sorted({c.dtype for c in cases if c.product == product}):
            count("dtype", f"{product} {dtype}", "3",
                  lambda c, p=product, d=dtype: c.product == p and c.dtype == d)
    extremes = (
        ("largest N·C", max((c.lanes for c in cases), default=0)),
        ("largest Ho·Wo", max((c.cells for c in cases), default=0)),
        ("largest W", max((c.self_shape[-1] for c in cases), default=0)),
        ("largest Wo", max((c.grad_shape[-1] for c in cases), default=0)),
        ("largest H", max((c.self_shape[-2] for c in cases), default=0)),
        ("largest 1x1 plane H·W", max((_global_plane(c) for c in cases), default=0)),
        ("largest i·in", max((max_index(c) for c in cases), default=0)),
    )
    return Coverage(len(every), tuple(edges), extremes)


def case_coverage(cases: Iterable[Case]) -> Coverage:
    """The coverage of a file's cases: the valid calls only (invalid ones run no
    kernel; the invalid-call family has its own rules, docs/contract.md section 5)."""
    return coverage(CaseShape.of(c) for c in cases if c.positive)
