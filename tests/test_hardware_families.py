"""The hardware-edge families: the tiling model, what each family draws, and the kernels
that prove each family (docs/contract.md section 9).

Each broken kernel of tests/kernels_hardware.py is its correct twin with one bug; a
family "catches" it where the two answers differ. Here the proof is bitwise: the broken
kernel equals its twin on every draw of the other families and of ordinary shapes (so it
passes wherever the twin passes) and differs on some draw of its own family.
"""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from aclcheck.ops.adaptive.draws import Draw
from aclcheck.ops.adaptive.tiling import (
    CUBE_CORES,
    VECTOR_CORES,
    a2_tiling,
    atomic,
    core_split,
    large_lanes_threshold,
    pass_edge_cells,
)
from aclcheck.ops.adaptive_avg_pool2d_backward.coverage import CaseShape, coverage
from aclcheck.ops.adaptive_avg_pool2d_backward.families import shape_case
from aclcheck.ops.adaptive_avg_pool2d_backward.hardware import (
    FAMILIES,
    GLOBAL_STRESS,
    Slot,
    core_edges,
    draw,
    slice_edges,
    ub_edge,
)
from aclcheck.ops.adaptive_avg_pool2d_backward.stress import dealt, edges, order, stress_draw
from tests import kernels_hardware as K

PRODUCT_DTYPES = {
    "atlas-training": ("float16", "float32"),
    "atlas-inference": ("float16", "float32"),
    "atlas-a2": ("bfloat16", "float16", "float32"),
    "atlas-a3": ("bfloat16", "float16", "float32"),
}
RANKS = (None, 4, 3)  # ND, NCHW, NCL
NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def _slots(index: int = 0):
    for product, dtypes in PRODUCT_DTYPES.items():
        for dtype in dtypes:
            for rank in RANKS:
                yield Slot(product, dtype, rank, index)


def _draws(family: str, index: int = 0) -> list[tuple[Slot, Draw]]:
    return [(s, d) for s in _slots(index) if (d := draw(family, s)) is not None]


def _layout(values: np.ndarray, layout: str) -> np.ndarray:
    """A view of `values` in a layout: channels-last memory, or every other element of
    a NaN-padded buffer at an offset (what aclcheck's layouts do)."""
    if layout == "channels_last":
        return np.moveaxis(np.ascontiguousarray(np.moveaxis(values, -3, -1)), -1, -3)
    if layout == "strided":
        buf = np.full(tuple(2 * d + 1 for d in values.shape), np.nan, dtype=values.dtype)
        view = buf[(slice(1, None, 2),) * values.ndim]
        view[...] = values
        return view
    return values


def _inputs(d: Draw, dtype: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    g = rng.uniform(-5.0, 5.0, d.grad_shape).astype(np.float32).astype(NP[dtype])
    return _layout(g, d.layout), np.zeros(d.self_shape, dtype=NP[dtype])


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                                                 np.ascontiguousarray(b).view(np.uint8))


# -- the tiling model ------------------------------------------------------------------------


class TestTiling:
    def test_reproduces_the_vendor_unit_test(self):
        # ops-nn test_adaptive_avg_pool3d_grad_tiling.cpp: UB 196 608, 40 cores,
        # yGrad (64, 24, 24, N·C), x (N·C, 16, 12, 12)
        t = a2_tiling((64, 24, 24), 8192, (16, 12, 12), 4, 40)
        assert (t.split.used, t.split.per_core, t.split.last, t.cells_per_pass) == (
            40, 922, 906, 2)
        assert a2_tiling((64, 24, 24), 8192, (16, 12, 12), 2, 40).cells_per_pass == 1
        t = a2_tiling((64, 24, 24), 40960, (16, 12, 12), 4, 40)
        assert (t.lanes_large, t.slices, t.slice_lanes) == (True, 2, 20480)
        t = a2_tiling((64, 24, 24), 40960, (16, 12, 12), 2, 40)
        assert (t.lanes_large, t.slices, t.slice_lanes, t.tail_lanes) == (True, 4, 13648, 16)

    def test_thresholds_and_passes(self):
        assert large_lanes_threshold(4) == 23808
        assert large_lanes_threshold(2) == 15872
        assert pass_edge_cells(1, 2, 40) == 39680
        assert pass_edge_cells(1, 4, 48) == 142848
        assert a2_tiling((1, 1), 15856, (1, 1), 2, 40).lanes_large is False
        assert a2_tiling((1, 1), 15857, (1, 1), 2, 40).lanes_large is True
        t = a2_tiling((1, 2), 15873, (2, 1), 2, 40)
        assert (t.slices, t.slice_lanes, t.tail_lanes) == (3, 7936, 1)
        t = a2_tiling((1, 2), 23809, (2, 1), 4, 40)
        assert (t.slices, t.slice_lanes, t.tail_lanes) == (3, 11904, 1)

    @pytest.mark.parametrize(("tasks", "cores", "want"), [
        (49, 48, (25, 2, 1)), (97, 48, (33, 3, 1)), (41, 40, (21, 2, 1)),
        (81, 40, (27, 3, 3)), (95, 40, (32, 3, 2)), (40, 40, (40, 1, 1)), (7, 40, (7, 1, 1)),
    ])
    def test_core_split(self, tasks, cores, want):
        s = core_split(tasks, cores)
        assert (s.used, s.per_core, s.last) == want
        spans = [s.span(c) for c in range(cores)]
        covered = [t for a, b in spans for t in range(a, b)]
        assert covered == list(range(tasks))  # every task once, in order

    def test_atomic_needs_both_axes_to_divide(self):
        assert not atomic((8, 8), (4, 4))
        assert atomic((8, 7), (4, 3)) and atomic((7, 8), (3, 4))
        assert atomic((4, 8), (8, 4))  # Ho > H: H % Ho = H


# -- what each family draws ------------------------------------------------------------------


class TestFamilies:
    @pytest.mark.parametrize("family", sorted(FAMILIES))
    def test_draws_are_valid_and_deterministic(self, family):
        draws = _draws(family)
        assert draws, family
        for slot, d in draws:
            assert d == draw(family, slot)
            assert len(d.self_shape) == len(d.grad_shape)
            assert slot.rank in (None, len(d.self_shape))
            assert d.self_shape[:-2] == d.grad_shape[:-2]
            assert min(d.self_shape + d.grad_shape) >= 1

    def test_metadata(self):
        labels = [f.label for f in FAMILIES.values()]
        assert len(set(labels)) == len(labels)
        for f in FAMILIES.values():
            assert f.aims and f.section.startswith("9.")

    def test_cores_pairs_cell_and_plane_edges_per_chip(self):
        for product in ("atlas-a2", "atlas-a3"):
            draws = [d for s, d in _draws("cores") if s.product == product]
            first = {"atlas-a2": VECTOR_CORES[0], "atlas-a3": VECTOR_CORES[-1]}[product]
            cells = {math.prod(d.grad_shape[-2:]) for d in draws}
            planes = {math.prod(d.grad_shape[:-2]) for d in draws}
            assert set(core_edges(first)) <= cells
            assert CUBE_CORES[VECTOR_CORES.index(first)] + 1 in cells
            assert {first + 1, first - 1, 2 * first + 1} <= planes
            for d in draws:  # every cell split on the atomic path
                assert atomic(d.self_shape[-2:], d.grad_shape[-2:])
        assert not [s for s, _ in _draws("cores") if not s.cores]

    def test_ubpass_crosses_the_first_pass(self):
        for slot, d in _draws("ubpass"):
            cores = slot.cores[0] if slot.rank == 4 else 1
            t = math.prod(d.grad_shape[-2:])
            assert t == ub_edge(1, slot.itemsize, cores)
            plan = a2_tiling(d.grad_shape[-2:], 1, d.self_shape[-2:], slot.itemsize, cores)
            assert plan.atomic and plan.split.per_core == plan.cells_per_pass + 1
        assert {d.grad_shape[-1] for _, d in _draws("ubpass")} >= {39681, 47617}

    def test_ncslice_is_sliced_with_a_short_or_wide_tail(self):
        seen = set()
        fp32_second = [(s, d) for s, d in _draws("ncslice", 2) if s.itemsize == 4]
        for slot, d in _draws("ncslice") + _draws("ncslice", 1) + fp32_second:
            lanes = math.prod(d.grad_shape[:-2])
            plan = a2_tiling(d.grad_shape[-2:], lanes, d.self_shape[-2:], slot.itemsize, 40)
            assert plan.lanes_large and plan.atomic
            assert plan.tail_lanes < plan.slice_lanes
            seen.add((slot.itemsize, plan.slices > 1))
        assert seen == {(2, True), (2, False), (4, True), (4, False)}
        assert slice_edges(2)[:2] == (15873, 15857) and slice_edges(4)[:2] == (23809, 23801)

    def test_bigglobal_has_a_large_plane_per_dtype(self):
        big = {}
        for slot, d in _draws("bigglobal"):
            assert d.grad_shape[-2:] == (1, 1)
            hw = math.prod(d.self_shape[-2:])
            big[slot.dtype] = max(big.get(slot.dtype, 0), hw)
        assert all(v >= 65520 for v in big.values()) and len(big) == 3
        sizes = {math.prod(d.self_shape[-2:]) for _, d in _draws("bigglobal")}
        assert {2049, 16393, 16392, 257, 65520} <= sizes

    def test_each_fill_and_count_threshold_is_derived_and_drawn_on_both_sides(self):
        """Each threshold derived here again, with numpy and ml_dtypes (not aclcheck's
        rounding): the FLOAT16 fill RN16(fl32(1/n)) first subnormal, the first count
        FLOAT16 / BFLOAT16 cannot hold, the first count FLOAT16 overflows at; the
        family's default draws (one per product x dtype) reach each and its other side
        (the fill: 16 393 and 16 392 exactly, both FLOAT16; a count: a smaller plane)."""
        def fill_is_normal(n: int) -> bool:
            return float(np.float16(np.float32(1.0 / n))) >= 2.0**-14

        subnormal = next(n for n in range(2**14, 2**15) if not fill_is_normal(n))
        assert subnormal == 16393 and fill_is_normal(16392)
        fp16_count = next(n for n in range(1, 2**12) if float(np.float16(n)) != n)
        bf16_count = next(n for n in range(1, 2**10)
                          if float(np.array(n, dtype=ml_dtypes.bfloat16)) != n)
        with np.errstate(over="ignore"):
            overflow = next(n for n in range(65500, 65600) if np.isinf(np.float16(n)))
        assert (fp16_count, bf16_count, overflow) == (2049, 257, 65520)
        sizes = {math.prod(d.self_shape[-2:]): s for s, d in _draws("bigglobal")}
        assert sizes[subnormal].dtype == sizes[subnormal - 1].dtype == "float16"
        # a count's other side: any smaller 1x1 plane of the default suite (the global
        # family's, the same product and dtype)
        for n in (fp16_count, bf16_count, overflow):
            slot = sizes[n]
            smaller = [shape_case(f, slot.product, slot.dtype, "NCHW", 0, 0)
                       for f in ("global", "bigglobal")]
            assert any(c is not None and math.prod(c.self_shape[-2:]) < n
                       and tuple(c.grad_shape[-2:]) == (1, 1) for c in smaller), n
        assert sizes[bf16_count].dtype == "bfloat16"

    def test_tall_crosses_2_24_with_w_above_1(self):
        kinds = {}
        for slot, d in _draws("tall"):
            h, w = d.self_shape[-2:]
            ho, wo = d.grad_shape[-2:]
            assert w > 1
            assert max(h * ho, w * wo) > 2**24
            kinds.setdefault(slot.dtype, set()).add("tall" if h > w else "wide")
        assert all(v == {"tall", "wide"} for v in kinds.values())

    def test_layoutnc_breadth(self):
        kinds = {}
        for slot, d in _draws("layoutnc"):
            n, c, h, w = d.self_shape
            ho, wo = d.grad_shape[-2:]
            assert n > 1 and c > 1
            assert (h % ho == 0) != (w % wo == 0)  # exactly one axis divides
            kinds.setdefault(slot.dtype, set()).add(d.layout)
        assert all(v == {"channels_last", "strided"} for v in kinds.values())

    def test_stress_draws_hold_the_big_edges(self):
        draws = [stress_draw(Slot("atlas-a2", dt, 4, i)) for dt in ("float16", "float32")
                 for i in range(len(order(Slot("atlas-a2", dt, 4, 0))))]
        planes = {math.prod(d.self_shape[-2:]) for d in draws if d.grad_shape[-2:] == (1, 1)}
        assert planes == {h * w for h, w in GLOBAL_STRESS.values()}
        lanes = {math.prod(d.grad_shape[:-2]) for d in draws}
        assert set(slice_edges(2)) <= lanes

    def test_stress_at_count_1_draws_every_edge_once_where_it_means_something(self):
        """The deal: index 0 of the family's slots holds each stress edge once; the 2^24
        count on FLOAT32, the 2^25 fill on FLOAT16, slices and UB passes on the tiled
        products, each slicing edge on its own element size."""
        own = dealt()
        assert sorted(e for es in own.values() for e in es) == sorted(e for e, _ in edges())
        assert all(len(es) <= 1 for es in own.values())  # 21 edges, 30 slots
        for edge, slots in ((es[0], [Slot(*key, 0)]) for key, es in own.items() if es):
            assert order(slots[0])[0] == edge
            slot = slots[0]
            if edge.startswith("global:2^24"):
                assert slot.dtype == "float32"
            if edge.startswith("global:2^25"):
                assert slot.dtype == "float16"
            if edge.startswith(("slice", "ub")):
                assert slot.product in ("atlas-a2", "atlas-a3")
            if edge.startswith("slice"):
                assert slot.itemsize == int(edge[5])

# -- the kernels -----------------------------------------------------------------------------


def _fp32_bound(out: np.ndarray, g: np.ndarray, self_: np.ndarray) -> bool:
    """FLOAT32 accumulation in any order, one rounding to the output dtype:
    |a - exact| <= (k + 2)·2^-24·m + one ULP of the output, k the most terms per element."""
    g64, s64 = g.astype(np.float64), self_.astype(np.float64)
    exact, m = K._window_sum32(g64, s64), K._window_sum32(np.abs(g64), s64)
    (ho, wo), (h, w) = g.shape[-2:], self_.shape[-2:]
    k = K._covering(*K._bounds(ho, h), h).shape[0] * K._covering(*K._bounds(wo, w), w).shape[0]
    ulp = np.spacing(np.abs(exact).astype(out.dtype)).astype(np.float64)
    err = np.abs(out.astype(np.float64) - exact)
    return bool(np.all(err <= (k + 2) * 2.0**-24 * m + ulp))


#: Shapes like those of the default suite before this issue (N·C <= 17, planes of at most
#: 1 600 for 1x1 outputs, the 2^24 index crossings with W = 1, its one strided and one
#: channels-last case with N > 1 and C > 1 in their dtypes), with the dtypes to run.
ORDINARY: list[tuple[Draw, tuple[str, ...]]] = [
    (Draw((2, 3, 9, 10), (2, 3, 4, 7)), ("float32", "float16")),
    (Draw((1, 17, 3, 257), (1, 17, 2, 39)), ("float32", "bfloat16")),
    (Draw((5, 14, 9), (5, 11, 5), layout="channels_last"), ("float32", "float16")),
    (Draw((2, 5, 16, 9), (2, 5, 14, 8), layout="strided"), ("float16",)),
    (Draw((2, 4, 19, 10), (2, 4, 6, 3), layout="channels_last"), ("bfloat16",)),
    (Draw((3, 1, 8, 5), (3, 1, 7, 2), layout="strided"), ("float32",)),
    (Draw((1, 1, 4099, 1), (1, 1, 4098, 1)), ("float32", "float16")),
    (Draw((1, 1, 182, 7), (1, 1, 181, 7)), ("float32", "float16")),
    (Draw((2, 5, 40, 40), (2, 5, 1, 1)), ("float32", "float16")),
    (Draw((3, 8, 8), (3, 4, 4)), ("float32", "bfloat16")),
]


#: Where another new family reaches a family's bug too: N·C of 15 857+ is past every core
#: count (the plane split), and the UB-pass rows have i·in of about 2e8 (float bounds).
ALSO_CAUGHT_BY = {"cores": {"ncslice"}, "tall": {"ubpass"}}


class TestKernels:
    @pytest.mark.parametrize("family", sorted(FAMILIES))
    def test_models_are_accurate_on_every_draw(self, family):
        for slot, d in _draws(family)[:6]:
            g, s = _inputs(d, slot.dtype)
            for model in (K.a2_tiled, K.a2_tiled_48, K.a2_tiled_shuffled):
                assert _fp32_bound(model(g, s), g, s), (family, slot, model.__name__)

    @pytest.mark.parametrize("family", sorted(K.BROKEN))
    def test_each_broken_kernel_is_caught_by_its_family(self, family):
        for kernel in K.BROKEN[family]:
            twin = K.TWIN[kernel]
            caught_by = set()
            for fam in FAMILIES:
                for slot, d in _draws(fam):
                    g, s = _inputs(d, slot.dtype)
                    if not _same(kernel(g, s), twin(g, s)):
                        caught_by.add(fam)
            assert family in caught_by, kernel.__name__
            assert caught_by - {family} <= ALSO_CAUGHT_BY.get(family, set()), (
                kernel.__name__, caught_by)
            for d, dtypes in ORDINARY:
                for dtype in dtypes:
                    g, s = _inputs(d, dtype)
                    assert _same(kernel(g, s), twin(g, s)), (kernel.__name__, d)

    @pytest.mark.parametrize("name", sorted(K.STATEFUL))
    def test_stateful_kernels_fail_only_after_another_call(self, name):
        kernel = K.STATEFUL[name]
        K.reset_state()
        d = Draw((2, 3, 3, 3), (2, 3, 2, 2))
        g, s = _inputs(d, "float32", seed=3)
        want = K.a2_tiled(g, s)
        assert _same(kernel(g, s), want)  # a fresh process: right
        K.reset_state()
        twin = _layout(-g, "channels_last")  # same shape, other layout, negated values
        assert _same(kernel(twin, s), -want)
        assert not _same(kernel(g, s), want)
        K.reset_state()

    def test_global_fill_rounds_twice_and_the_fp16_count_bug_waits_for_2049(self):
        g = np.array([[[[3.0]]]], dtype=np.float16)
        s = np.zeros((1, 1, 113, 145), dtype=np.float16)
        fill = np.float16(np.float32(1.0 / 16385))
        assert K.global_fill(g, s)[0, 0, 0, 0] == np.float16(np.float32(3.0) * np.float32(fill))
        small = np.zeros((1, 1, 32, 64), dtype=np.float32)
        g32 = g.astype(np.float32)
        assert _same(K.fill_count_fp16(g32, small), K.global_fill(g32, small))
        odd = np.zeros((1, 1, 3, 683), dtype=np.float32)
        assert not _same(K.fill_count_fp16(g32, odd), K.global_fill(g32, odd))

    def test_matmul_fp16_has_fp16_error_on_float32_and_saturates(self):
        rng = np.random.default_rng(5)
        g = rng.uniform(-5, 5, (2, 3, 7, 5)).astype(np.float32)
        s = np.zeros((2, 3, 9, 11), dtype=np.float32)
        out = K.matmul_fp16(g, s)
        assert out.dtype == np.float32
        exact = K._window_sum32(g.astype(np.float64), s.astype(np.float64))
        m = K._window_sum32(np.abs(g).astype(np.float64), s.astype(np.float64))
        rel = np.abs(out - exact) / m
        assert rel.max() > 2.0**-20  # far from FLOAT32 accuracy
        assert rel.max() < 8 * 2.0**-11  # within a few FLOAT16 roundings
        big = np.full((1, 1, 2, 2), 60000.0, dtype=np.float16)  # four terms on one element
        over = K.matmul_fp16(big, np.zeros((1, 1, 1, 1), dtype=np.float16))
        assert np.isfinite(over).all() and over.max() == np.float16(65504)


# -- coverage --------------------------------------------------------------------------------


def _rows(draws: list[tuple[Slot, Draw]]) -> list[CaseShape]:
    return [CaseShape(f"case{i}", s.product, s.dtype, d.layout, d.distribution,
                      d.self_shape, d.grad_shape) for i, (s, d) in enumerate(draws)]


class TestCoverage:
    STRESS_ONLY = {"1x1 plane >= 2^24", "i·in > 2^31", "H > 8192 (two 4 096-row blocks)"}

    def test_the_families_reach_every_hardware_edge_but_the_stress_ones(self):
        draws = [sd for f in FAMILIES for sd in _draws(f)]
        cov = coverage(_rows(draws))
        missing = {e.label for e in cov.missing() if e.group == "hardware"}
        assert missing == self.STRESS_ONLY | {"i·in > 2^24 with W = 1"}  # the index family's
        assert dict(cov.extremes)["largest N·C"] == 15873  # FLOAT32's 23 809: --count 2
        stress = [(s, d) for s in _slots(0) if (d := stress_draw(s)) is not None]  # --count 1
        covered = {e.label for e in coverage(_rows(stress)).edges if e.covered}
        assert self.STRESS_ONLY <= covered

    def test_ordinary_shapes_miss_the_split_edges_and_empty_calls_count_apart(self):
        rows = [CaseShape(f"o{i}", "atlas-a2", dt, d.layout, "normal", d.self_shape,
                          d.grad_shape) for i, (d, dts) in enumerate(ORDINARY) for dt in dts]
        rows.append(CaseShape("empty", "atlas-a2", "float32", "contiguous", "normal",
                              (0, 3, 4, 4), (0, 3, 2, 2)))
        cov = coverage(rows)
        by = {e.label: e for e in cov.edges}
        assert not by["N·C > 40, not a multiple (plane split)"].covered
        assert not by["second UB pass on 40 cores"].covered
        assert by["empty tensor (no kernel runs)"].cases == 1
        assert by["i·in > 2^24 with W = 1"].example == "o6"
        assert cov.valid_cases == len(rows)

    def test_every_family_section_is_in_the_contract(self):
        text = (Path(__file__).parents[1] / "docs" / "contract.md").read_text()
        for f in FAMILIES.values():
            assert f"### {f.section} " in text and f"family `{f.name}`" in text
