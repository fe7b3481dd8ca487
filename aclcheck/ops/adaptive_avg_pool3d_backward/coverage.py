"""What a 3D suite exercises: the edges its case families aim at, and how many of a golden
file's valid cases reach each (`aclcheck inspect FILE --coverage`).

Read from the file's index only (shapes, dtypes, layouts, value distributions): the kind
of every window axis D, H, W and whether its windows differ in size; the 1x1x1 fill; i·in
per axis and the flattened input index against 2^24 and 2^31; the A2/A3 kernel's atomic
path, its N·C lane blocks (8 FLOAT32 / 16 FLOAT16, BFLOAT16 lanes) and N·C slices (the
tiling model of ops/adaptive/tiling.py); layouts with N > 1 per dtype; value
distributions; ranks; every product × dtype the contract accepts. Every edge is listed,
reached or not: a count of 0 is what a trimmed (or thin) suite no longer covers.
Sections are docs/contract.md's (§12 is this operator; §9 the kernel it shares).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.coverage import Coverage, Edge
from aclcheck.dtypes import FLOAT16, first_subnormal_reciprocal, float_format
from aclcheck.judging.diagnosis.signature import AxisKind, axis_kind
from aclcheck.ops.adaptive.coverage_rows import (
    INDEX_2_24,
    INDEX_2_31,
    CaseShape,
    Test,
    axis_index,
    count_edge,
    max_index,
    window_sizes,
)
from aclcheck.ops.adaptive.draws import RANDOM_DISTS
from aclcheck.ops.adaptive.tiling import BLOCK_BYTES, VECTOR_CORES, a2_tiling, core_split
from aclcheck.ops.adaptive.windows import window_bounds
from aclcheck.ops.adaptive_avg_pool3d_backward import contract
from aclcheck.ops.adaptive_avg_pool3d_backward.families import SPECIAL_DISTS, TIE_DTYPES
from aclcheck.ops.adaptive_avg_pool3d_backward.values import DISTRIBUTIONS

AXES = ("D", "H", "W")
#: Each window-axis kind with what it means on axis X (Xo: its output size).
KINDS: tuple[tuple[AxisKind, str], ...] = (
    (AxisKind.DIVISIBLE, "divisible (1 < {a}o < {a}, {a} % {a}o = 0)"),
    (AxisKind.NONDIVISIBLE, "nondivisible ({a}o < {a}, {a} % {a}o != 0)"),
    (AxisKind.UPSAMPLING, "upsampling ({a}o > {a})"),
    (AxisKind.GLOBAL, "global ({a}o = 1 < {a})"),
    (AxisKind.IDENTITY, "identity ({a}o = {a})"),
)
#: the least D·H·W whose FLOAT16 factor RN16(fl32(1/(D·H·W))) is subnormal (16 393)
FP16_SUBNORMAL_FILL = first_subnormal_reciprocal(FLOAT16)
FP16_ZERO_FILL = 2**25  # ... and rounds to 0 from here
FILL_CHUNK = 2**14  # planes past it: an elementwise chunk of the fill holds a plane edge
#: The distributions the families draw (others are listed where a file has them).
AIMED_DISTS = frozenset(RANDOM_DISTS + SPECIAL_DISTS + ("exact-int", "ties"))
#: Families' layouts, each with the memory order it means for a rank-5 call.
LAYOUT_NAMES = (("channels_last", "channels_last (NDHWC)"), ("strided", "strided"),
                ("transposed", "transposed (H, W swapped)"))


def lane_width(dtype: str) -> int:
    """Lanes of one 32-byte block of the kernel's N·C lane: 8 FLOAT32, 16 FLOAT16/BFLOAT16."""
    return BLOCK_BYTES // int(float_format(dtype).np_dtype.itemsize)


def _kind(axis: int, kind: AxisKind) -> Test:
    return lambda c: axis_kind(c.ins[axis], c.outs[axis]) == kind


def _uneven_windows(axis: int) -> Test:
    return lambda c: len(window_sizes(c.ins[axis], c.outs[axis])) > 1


def _distinct_windows(c: CaseShape) -> bool:
    """The largest window differs on every pair of axes (a divisor that swaps, squares or
    leaves out an axis's size gives another value)."""
    return len({window_sizes(i, o)[-1] for i, o in zip(c.ins, c.outs, strict=True)}) == 3


def _volume(c: CaseShape) -> int:
    """D·H·W of a 1x1x1 output (the fill's count), 0 otherwise."""
    return math.prod(c.ins) if c.is_global else 0


def _lane_offset(offset: int) -> Test:
    """N·C at k·lanes + offset (k >= 1) on the kernel path (a non-1x1x1 output)."""
    def test(c: CaseShape) -> bool:
        width = lane_width(c.dtype)
        return not c.is_global and c.lanes >= width - 1 and (c.lanes - offset) % width == 0
    return test


def _sliced(short_tail: bool) -> Test:
    def test(c: CaseShape) -> bool:
        if c.is_global:
            return False
        plan = a2_tiling(c.outs, c.lanes, c.ins, c.itemsize, VECTOR_CORES[0])
        return plan.lanes_large and (not short_tail or plan.tail_lanes < plan.slice_lanes)
    return test


def _rank5_nc(c: CaseShape) -> bool:
    return len(c.self_shape) == 5 and c.self_shape[0] > 1 and c.self_shape[1] > 1


def _d_span(c: CaseShape) -> bool:
    """Some core's span of output cells (40 cores) holds D windows of two sizes."""
    if c.is_global or len(window_sizes(c.ins[0], c.outs[0])) < 2:
        return False
    plane = c.outs[1] * c.outs[2]
    split = core_split(c.cells, VECTOR_CORES[0])
    if split.per_core < 2:
        return False
    sizes = np.diff(np.stack(window_bounds(c.outs[0], c.ins[0])), axis=0)[0]
    return any(len({int(sizes[i // plane]) for i in range(*split.span(k))}) > 1
               for k in range(min(split.used, 4096)))


def _hardware_tests() -> list[tuple[str, str, Test]]:
    tests: list[tuple[str, str, Test]] = [
        ("every axis divides: direct writes", "9.5", lambda c: not c.is_global
         and not c.atomic),
        ("some axis does not divide: atomic adds", "9.5", lambda c: c.atomic),
        ("atomic adds with an axis that divides", "9.5", lambda c: c.atomic and any(
            i % o == 0 for i, o in zip(c.ins, c.outs, strict=True))),
        ("N·C one lane short of a lane block (windowed)", "12", _lane_offset(-1)),
        ("N·C whole lane blocks (windowed)", "12", _lane_offset(0)),
        ("N·C one lane past a lane block (windowed)", "12", _lane_offset(1)),
        ("N·C sliced (lanes past one UB pass)", "9.4", _sliced(False)),
        ("N·C sliced, short last slice", "9.4", _sliced(True)),
        ("1x1x1, D·H·W not a power of two (factor rounded)", "12",
         lambda c: _volume(c) > 1 and _volume(c) & (_volume(c) - 1) != 0),
        (f"1x1x1, D·H·W >= {FP16_SUBNORMAL_FILL} in FLOAT16 (subnormal factor)", "12",
         lambda c: c.dtype == "float16" and _volume(c) >= FP16_SUBNORMAL_FILL),
        ("1x1x1, D·H·W >= 2^25 in FLOAT16 (factor 0)", "12",
         lambda c: c.dtype == "float16" and _volume(c) >= FP16_ZERO_FILL),
    ]
    tests += [  # the 3D hardware edges (docs/contract-3d.md §9)
        ("1x1x1, D·H·W > 2^14 with N·C > 1 (fill chunks across planes)", "9",
         lambda c: _volume(c) > FILL_CHUNK and c.lanes > 1),
        (f"1x1x1, {FILL_CHUNK} < D·H·W < {FP16_SUBNORMAL_FILL} in FLOAT16 (last normal "
         "factors)", "9", lambda c: c.dtype == "float16"
         and FILL_CHUNK < _volume(c) < FP16_SUBNORMAL_FILL),
        ("D windows of two sizes in one core's span of cells (40 cores)", "9", _d_span),
        ("channels_last, N > 1, C whole lane blocks (windowed)", "9",
         lambda c: c.layout == "channels_last" and len(c.self_shape) == 5
         and c.self_shape[0] > 1 and not c.is_global
         and c.self_shape[1] % lane_width(c.dtype) == 0)]
    for k, a in enumerate(AXES):
        tests.append((f"i·in > 2^24 on {a}, the other two axes > 1", "9",
                      lambda c, k=k: axis_index(c, k) > INDEX_2_24 and all(
                          max(c.ins[j], c.outs[j]) > 1 for j in range(3) if j != k)))
    for bound, name in ((INDEX_2_24, "2^24"), (INDEX_2_31, "2^31")):
        for k, a in enumerate(AXES):
            tests.append((f"i·in > {name} on {a}", "9.7",
                          lambda c, k=k, b=bound: axis_index(c, k) > b))
        tests.append((f"N·C·D·H·W > {name} (flat input index)", "9.7",
                      lambda c, b=bound: math.prod(c.self_shape) > b))
    return tests


#: the hardware edges only the on-request stress family reaches (too large by default;
#: the flat index past 2^31, about 8 GB a case, is drawn nowhere)
ON_REQUEST = frozenset({
    "N·C sliced (lanes past one UB pass)", "N·C sliced, short last slice",
    "1x1x1, D·H·W >= 2^25 in FLOAT16 (factor 0)", "N·C·D·H·W > 2^24 (flat input index)",
    "i·in > 2^31 on D", "i·in > 2^31 on H", "i·in > 2^31 on W",
    "N·C·D·H·W > 2^31 (flat input index)"})

#: On-request edges no family draws, and what reaches them (a case file of one's own).
DRAWN_BY = {"N·C·D·H·W > 2^31 (flat input index)": "a case file only: 8 GB"}


def _shape_tests() -> list[tuple[str, Test]]:
    tests: list[tuple[str, Test]] = []
    for k, a in enumerate(AXES):
        tests += [(f"{a} {text.format(a=a)}", _kind(k, kind)) for kind, text in KINDS]
        tests.append((f"{a} windows of unequal sizes", _uneven_windows(k)))
    return tests + [
        ("largest windows differ on D, H and W", _distinct_windows),
        ("no axis divides (overlaps on D, H and W)",
         lambda c: all(i % o for i, o in zip(c.ins, c.outs, strict=True))),
        ("identity on every axis", lambda c: c.ins == c.outs),
        ("1x1x1 output (global fill)", lambda c: c.is_global),
        ("1x1x1 output, N·C > 1", lambda c: c.is_global and c.lanes > 1),
        ("rank 4 (C, D, H, W)", lambda c: len(c.self_shape) == 4),
        ("rank 5 (N, C, D, H, W)", lambda c: len(c.self_shape) == 5),
        ("rank 5, N > 1 and C > 1", _rank5_nc),
    ]


def _layout_tests() -> list[tuple[str, Test]]:
    tests: list[tuple[str, Test]] = []
    for dtype in contract.COMPUTE_DTYPES:
        width = lane_width(dtype)
        tests.append((f"channels_last (NDHWC), N > 1, N·C a multiple of {width}, {dtype}",
                      lambda c, d=dtype, w=width: c.dtype == d and c.layout == "channels_last"
                      and len(c.self_shape) == 5 and c.self_shape[0] > 1
                      and c.lanes % w == 0))
        for layout, name in LAYOUT_NAMES:
            tests.append((f"{name}, N > 1 and C > 1, {dtype}",
                          lambda c, d=dtype, lay=layout: c.dtype == d and c.layout == lay
                          and _rank5_nc(c)))
    return tests


def _value_tests(present: set[str]) -> list[tuple[str, Test]]:
    dists = [d for d in DISTRIBUTIONS if d in AIMED_DISTS or d in present]
    dists += sorted(present - set(dists))
    tests: list[tuple[str, Test]] = [
        (dist, lambda c, d=dist: c.distribution == d) for dist in dists]
    tests += [(f"ties, {dtype}", lambda c, d=dtype: c.distribution == "ties" and c.dtype == d)
              for dtype in TIE_DTYPES]
    return tests + [
        ("exact-int, windowed", lambda c: c.distribution == "exact-int" and not c.is_global),
        ("special values where windows overlap (atomic)",
         lambda c: c.distribution in SPECIAL_DISTS and c.atomic),
    ]


def _product_tests() -> list[tuple[str, Test]]:
    return [(f"{p} {d}", lambda c, p=p, d=d: c.product == p and c.dtype == d)
            for p, rules in contract.PRODUCTS.items() for d in rules.dtypes]


def coverage(rows: Iterable[CaseShape]) -> Coverage:
    """Count, for every edge, the rows that reach it (a row with an empty tensor is no
    valid call of this operator: it is left out)."""
    cases: Sequence[CaseShape] = [c for c in rows if not c.empty]
    groups = (("hardware", _hardware_tests()),
              ("shape", [(label, "12", t) for label, t in _shape_tests()]),
              ("layout", [(label, "12", t) for label, t in _layout_tests()]),
              ("value", [(label, "", t) for label, t in _value_tests(
                  {c.distribution for c in cases})]),
              ("dtype", [(label, "12", t) for label, t in _product_tests()]))
    edges: list[Edge] = [replace(count_edge(group, label, section, cases, test),
                                 on_request=group == "hardware" and label in ON_REQUEST,
                                 drawn_by=DRAWN_BY.get(label, "stress"))
                         for group, tests in groups for label, section, test in tests]
    extremes = (
        ("largest N·C", max((c.lanes for c in cases), default=0)),
        ("largest Do·Ho·Wo", max((c.cells for c in cases), default=0)),
        ("largest D·H·W of a 1x1x1 output", max((_volume(c) for c in cases), default=0)),
        ("largest i·in", max((max_index(c) for c in cases), default=0)),
        ("largest input", max((math.prod(c.self_shape) for c in cases), default=0)),
    )
    return Coverage(len(cases), tuple(edges), extremes)


def case_coverage(cases: Iterable[Case]) -> Coverage:
    """The coverage of a file's cases: the valid calls only (invalid ones run no kernel;
    the invalid-call family has its own rules, docs/contract-3d.md §5)."""
    return coverage(CaseShape.of(c) for c in cases if c.positive)
