"""The measuring probe (issue 38): decoding and formula fitting on synthetic M's, each
probe-zoo kernel's leading difference through the adapter (CaseRunner, in-process), no
difference for correct kernels, and the rounding of a final cast identified."""

from __future__ import annotations

import numpy as np
import pytest

from aclcheck.dtypes import FLOAT_FORMATS
from aclcheck.impls.registry import create
from aclcheck.judging.case.roundings import CONVERSIONS, Rounding, explaining, rounded
from aclcheck.judging.diagnosis.probe import probe, spacing
from aclcheck.judging.diagnosis.probe_fit import Quantity, plane_difference
from aclcheck.ops.adaptive.probe import shapes_geometry
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case as Case2d
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case as Case3d
from aclcheck.ops.materialize import make_tensors
from aclcheck.running.calls import CaseRunner, RunOptions
from aclcheck.running.probing import KEEP, MAX_SHAPES, Failing, probe_failures
from aclcheck.running.probing import measured as probing_measured
from tests.kernels_probe_zoo import CONTROLS, ZOO, Entry

F32 = FLOAT_FORMATS["float32"]


def dense(outs: tuple[int, ...], ins: tuple[int, ...], planes: int, starts: list, ends: list,
          weight: np.ndarray, landing: list[int]) -> object:
    """A Measure of an explicit M (2D): plane p of x lands in plane landing[p]."""
    def measure(x: np.ndarray) -> np.ndarray:
        y = np.zeros((planes, *ins))
        for p in range(planes):
            for i in range(outs[0]):
                for j in range(outs[1]):
                    y[landing[p], starts[0][i]:ends[0][i], starts[1][j]:ends[1][j]] += \
                        x[p, i, j] * weight[i, j]
        return y.astype(np.float32).astype(np.float64)  # a float32 kernel's output
    return measure


def test_spacing_leaves_a_gap_of_two() -> None:
    assert spacing((0, 2, 4, 6, 8), (3, 5, 7, 9, 11)) == 3
    assert spacing((0, 1, 2), (1, 2, 3)) == 3
    assert spacing((0,), (4,)) == 1


def test_contract_m_has_no_difference() -> None:
    geo = shapes_geometry(("H", "W"), (5, 4), (11, 8), 3)
    m = dense(geo.outs, geo.ins, 3, list(geo.starts), list(geo.ends), geo.weights, [0, 1, 2])
    result = probe(geo, m, F32)
    assert result.differences == () and result.measured is not None
    assert 0 < result.calls <= 20


def test_end_floor_on_h_is_fitted() -> None:
    geo = shapes_geometry(("H", "W"), (5, 4), (11, 8), 2)
    ends_h = tuple((i + 1) * 11 // 5 for i in range(5))
    m = dense(geo.outs, geo.ins, 2, [geo.starts[0], geo.starts[1]], [ends_h, geo.ends[1]],
              geo.weights, [0, 1])
    (d,) = probe(geo, m, F32).differences
    assert (d.quantity, d.axis, d.measured) == (Quantity.END, "H", "floor((i+1)·H/Ho)")
    assert d.differ == sum(e != c for e, c in zip(ends_h, geo.ends[0], strict=True))


def test_weight_and_planes_are_fitted() -> None:
    geo = shapes_geometry(("H", "W"), (3, 2), (7, 5), 3)
    k = [np.subtract(e, s) for s, e in zip(geo.starts, geo.ends, strict=True)]
    w = 1.0 / (k[0][:, None] + k[1][None, :])
    (d,) = probe(geo, dense(geo.outs, geo.ins, 3, list(geo.starts), list(geo.ends), w,
                            [0, 1, 2]), F32).differences
    assert (d.quantity, d.measured, d.contract) == (Quantity.WEIGHT, "1/(kh+kw)", "1/(kh·kw)")
    d = plane_difference([2, 0, 1])
    assert d is not None and d.measured == "q = p-1 (mod planes)"
    d = plane_difference([0, 0, 5])
    assert d is not None and d.measured == "" and d.differ == 2


def test_budget_is_kept() -> None:
    geo = shapes_geometry(("H", "W"), (6, 6), (13, 13), 2)
    m = dense(geo.outs, geo.ins, 2, list(geo.starts), list(geo.ends), geo.weights, [0, 1])
    result = probe(geo, m, F32, budget=3)
    assert result.calls == 3 and result.measured is None


@pytest.mark.parametrize("mode", CONVERSIONS)
def test_rounding_of_the_cast_is_identified(mode: Rounding) -> None:
    fmt = FLOAT_FORMATS["float16"]
    exact = np.random.default_rng(1).standard_normal(400) / 3
    got = explaining(rounded(exact, fmt, mode), exact, fmt)
    ties = {Rounding.NEAREST, Rounding.TIES_AWAY}  # no ties among random values
    assert got == ((mode,) if mode not in ties else tuple(sorted(ties, key=CONVERSIONS.index)))
    assert explaining(rounded(exact, fmt, mode) * 2, exact, fmt) == ()


#: a 2D shape where only W divides (the wrong fast path shows there)
W_DIVIDES = {"fast_path_w_only"}


def case_of(entry_op: str, dtype: str, name: str = "") -> object:
    if entry_op == "2d":
        w = 9 if name in W_DIVIDES else 8
        return Case2d("probe", "nondivisible", "atlas-a2", dtype, "NCHW", (2, 3, 11, w),
                      (2, 3, 5, 3), 3)
    if name == "global_fill_no_w_3d":  # the 1x1x1 fill
        return Case3d("probe", "global", "atlas-a2", dtype, "NCDHW", (1, 3, 7, 9, 5),
                      (1, 3, 1, 1, 1), 3)
    return Case3d("probe", "nondivisible", "atlas-a2", dtype, "NCDHW", (1, 3, 7, 9, 5),
                  (1, 3, 3, 4, 2), 3,
                  layout="channels_last" if name == "channels_last_slip_3d" else "contiguous")


def measured(kernel: str, op: str, dtype: str = "float16") -> tuple:
    impl = create(f"tests/kernels_probe_zoo.py:{kernel}")
    with CaseRunner(impl, RunOptions(isolate=False)) as runner:
        return probe_failures(runner, [case_of(op, dtype, kernel)], make_tensors)


GEOMETRY = [e for e in ZOO if e.quantity != "rounding"]


@pytest.mark.parametrize("entry", GEOMETRY, ids=lambda e: e.name)
def test_each_zoo_kernel_is_measured_wrong_where_it_is(entry: Entry) -> None:
    (result,) = measured(entry.name, entry.op)
    first = result.differences[0]
    assert entry.names(first.quantity.value, first.axis), result
    assert result.calls <= 200


@pytest.mark.parametrize("kernel", CONTROLS)
def test_correct_kernels_measure_as_contracted(kernel: str) -> None:
    (result,) = measured(kernel, "2d" if kernel.endswith("2d") else "3d")
    assert result.differences == ()


def test_every_failing_layout_is_measured_even_past_the_shape_cap() -> None:
    """More small contiguous shapes than MAX_SHAPES do not crowd out the one failing
    channels-last shape: the probe measures the smallest shape of every failing layout,
    then the smallest others up to MAX_SHAPES."""
    small = [Case3d(f"c{k}", "nondivisible", "atlas-a2", "float32", "NCDHW",
                    (1, 2, 5 + 2 * k, 4, 3), (1, 2, 2, 3, 2), k) for k in range(MAX_SHAPES + 1)]
    large = Case3d("cl", "nondivisible", "atlas-a2", "float32", "NCDHW", (1, 3, 10, 9, 5),
                   (1, 3, 3, 4, 2), 7, layout="channels_last")
    impl = create("tests/kernels_probe_zoo.py:d_end_floor_3d")
    with CaseRunner(impl, RunOptions(isolate=False)) as runner:
        results = probe_failures(runner, [large, *small], make_tensors)
    assert sorted(r.layout for r in results) == \
        ["channels_last"] + ["contiguous"] * (MAX_SHAPES - 1)
    entries = probing_measured(results, failing=len(small) + 1)
    assert entries[0].layouts == ("channels_last", "contiguous")
    assert "layout channels_last, contiguous" in entries[0].message()


def test_a_run_keeps_a_bounded_set_of_failing_cases_for_the_probe() -> None:
    """However many cases fail, the run keeps the KEEP smallest and the smallest of each
    layout (a large channels-last case past the KEEP smallest contiguous ones stays)."""
    kept = Failing()
    for k in range(KEEP * 3):
        kept.add(Case3d(f"c{k}", "divisible", "atlas-a2", "float32", "NCDHW",
                        (1, 1, 2 + k, 2, 2), (1, 1, 1, 1, 1), k))
    cl = Case3d("cl", "divisible", "atlas-a2", "float32", "NCDHW", (1, 2, 500, 2, 2),
                (1, 2, 1, 1, 1), 1, layout="channels_last")
    kept.add(cl)
    cases = kept.cases()
    assert kept.count == KEEP * 3 + 1 and len(cases) == KEEP + 1
    assert cl in cases
    assert {c.id for c in cases if c.layout == "contiguous"} == {f"c{k}" for k in range(KEEP)}


def test_a_one_ulp_failure_no_single_rounding_explains_is_said_so() -> None:
    """1 + 1/4 ULP rounded up and 1 + 3/4 ULP rounded down (FLOAT16): each one ULP off,
    no one conversion gives both (to odd takes the first only, up or down one each):
    no-cast-rounding, not a guess; all rounded up is named."""
    from aclcheck.judging.diagnosis.clues import rounding_clues
    from aclcheck.judging.diagnosis.codes import DiagnosisCode

    f16 = FLOAT_FORMATS["float16"]
    exact = np.array([1.0 + 2.0**-12, 1.0 + 3 * 2.0**-12])
    nearest = rounded(exact, f16, Rounding.NEAREST)
    actual = np.array([1.0 + 2.0**-10, 1.0])
    assert np.all(actual != nearest)
    (finding,) = rounding_clues(actual != nearest, exact, actual, f16)
    assert finding.code is DiagnosisCode.NO_CAST_ROUNDING
    up = rounded(exact, f16, Rounding.UP)
    (named,) = rounding_clues(up != nearest, exact, up, f16)
    assert named.code is DiagnosisCode.CAST_ROUNDING
