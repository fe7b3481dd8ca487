"""The what-if models (aclcheck/ops/adaptive_avg_pool2d_backward/bugs.py) against the zoo of
broken kernels (tests/kernels_zoo.py), two independent implementations of each bug:

- each model reproduces its zoo kernel bit for bit where the arithmetic allows it (the
  kernel computed in float64 and rounded once; cast bugs on sums that are exact);
- each model reproduces the realistic (float32) kernel within its accumulation bound;
- no model of a moved value (window, divisor, axis, plane, layout, cast) claims another
  bug's kernel on ordinary data, and the ranking puts the right model first;
- a model is silent (None) where its bug cannot show.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from aclcheck.cases.layouts import place
from aclcheck.dtypes import correctly_rounded, float_format
from aclcheck.judging.diagnosis.codes import DiagnosisCode as C
from aclcheck.judging.diagnosis.ranking import rank_evidence
from aclcheck.judging.diagnosis.reproduce import CaseClues, ModelResult, Reproduction
from aclcheck.ops.adaptive.windows import spread_plan
from aclcheck.ops.adaptive_avg_pool2d_backward import bugs, diagnose
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward
from tests import kernels_zoo as zoo

DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}

#: (self shape, gradOutput shape): nondivisible non-square, rank 3, divisible square,
#: upsampling, identity, global, an index-arithmetic size, power-of-two overlaps.
SHAPES = (
    ((2, 3, 12, 10), (2, 3, 5, 6)),
    ((3, 7, 9), (3, 4, 5)),
    ((2, 2, 8, 8), (2, 2, 4, 4)),
    ((1, 3, 3, 5), (1, 3, 5, 7)),
    ((2, 3, 6, 6), (2, 3, 6, 6)),
    ((2, 2, 7, 9), (2, 2, 1, 1)),
    ((1, 2, 182, 7), (1, 2, 181, 7)),
    ((2, 3, 3, 4), (2, 3, 2, 2)),
)
#: Shapes whose windows all have power-of-two areas: sums of dyadic values are exact.
POW2_SHAPES = (
    ((2, 3, 8, 8), (2, 3, 4, 4)),
    ((2, 3, 3, 4), (2, 3, 2, 2)),
    ((3, 1, 4), (3, 2, 2)),
    ((2, 3, 3, 64), (2, 3, 2, 32)),
)

#: model -> its zoo kernel.
PAIRS: dict[C, str] = {
    C.WINDOW_END_FLOOR: "end_floor",
    C.WINDOW_START_CEIL: "start_ceil",
    C.WINDOW_BOUNDS_FLOAT32: "float32_bounds",
    C.WINDOW_BOUNDS_FLOAT32_RECIPROCAL: "float32_bounds_reciprocal",
    C.DIVISOR_WHOLE_INPUT: "whole_divisor",
    C.DIVISOR_KH_KH: "kh_squared",
    C.DIVISOR_KW_KW: "kw_squared",
    C.DIVISOR_KW_FROM_HO: "kw_from_ho",
    C.DIVISOR_KH_FROM_WO: "kh_from_wo",
    C.AXES_SWAPPED: "hw_swapped",
    C.PLANE_0_BROADCAST: "plane0_broadcast",
    C.ONLY_PLANE_0: "rank3_first_plane",
    C.STRIDES_IGNORED: "strides_ignored",
    C.ACCUMULATE_INPUT_DTYPE: "fp16_accumulation",
    C.SCALE_INPUT_DTYPE: "scale_in_dtype",
    C.CAST_TOWARD_ZERO: "round_toward_zero",
    C.CAST_TIES_AWAY: "ties_away",
    C.CAST_ROUND_UP: "round_up",
    C.FLUSH_TO_ZERO: "flush_to_zero",
}
CASTS = {C.CAST_TOWARD_ZERO, C.CAST_TIES_AWAY, C.CAST_ROUND_UP}


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str,
            dist: str) -> np.ndarray:
    if dist == "dyadic":  # +-2**e * (1 + m/16): exact float32 sums, exact ties
        e = rng.integers(-6, 6, shape)
        m = rng.integers(0, 16, shape)
        vals = rng.choice([-1.0, 1.0], shape) * np.ldexp(1 + m / 16, e)
    elif dist == "tiny":  # subnormal inputs and results
        vals = rng.standard_normal(shape) * (1e-6 if dtype == "float16" else 1e-39)
    else:
        vals = rng.standard_normal(shape)
    return vals.astype(DTYPES[dtype])


def scene(self_shape: tuple[int, ...], grad_shape: tuple[int, ...], dtype: str, *,
          dist: str = "normal", layout: str = "contiguous", seed: int = 0) -> bugs.Scene:
    rng = np.random.default_rng([seed, *grad_shape, len(dtype)])
    grad = place(_values(rng, grad_shape, dtype, dist), layout).view()
    in_hw = tuple(self_shape[-2:])
    golden = backward(grad, in_hw)
    plans = (spread_plan(grad_shape[-2], in_hw[0]), spread_plan(grad_shape[-1], in_hw[1]))
    return bugs.Scene(grad, in_hw, dtype, golden, plans)


def run_zoo(name: str, sc: bugs.Scene, acc: object = None) -> np.ndarray:
    self_ = np.empty(sc.golden.shape, dtype=DTYPES[sc.dtype])
    return zoo.make(name, acc=acc)(sc.grad, self_)


def judge(sc: bugs.Scene, what: bugs.WhatIf, actual: np.ndarray,
          product: str = "atlas-a2") -> Reproduction:
    """A model against an output, as a run re-judges it (E of the product's path with
    the model's accumulation, 0 where the exactness proof holds)."""
    return diagnose.rejudge(sc, what, actual, product)


def _scenes_for(code: C) -> list[bugs.Scene]:
    layouts = ("strided", "channels_last", "transposed") if code is C.STRIDES_IGNORED \
        else ("contiguous",)
    dist = "dyadic" if code in CASTS else "tiny" if code is C.FLUSH_TO_ZERO else "normal"
    shapes = POW2_SHAPES if code in CASTS else SHAPES
    if code is C.ONLY_PLANE_0:
        shapes = tuple(s for s in SHAPES if len(s[0]) == 3)
    if code in (C.WINDOW_BOUNDS_FLOAT32, C.WINDOW_BOUNDS_FLOAT32_RECIPROCAL):
        shapes = (((1, 2, 182, 7), (1, 2, 181, 7)), ((1, 1, 4099, 5), (1, 1, 4098, 15)),
                  ((1, 2, 49, 5), (1, 2, 7, 5)))
    return [scene(s, g, dt, dist=dist, layout=lay)
            for s, g in shapes for dt in DTYPES for lay in layouts]


@pytest.mark.parametrize("code", list(PAIRS), ids=str)
def test_model_reproduces_its_kernel_bit_for_bit(code: C) -> None:
    model = bugs.model(code)
    shown = 0
    for sc in _scenes_for(code):
        what = model(sc)
        if what is None:
            continue
        shown += 1
        want = run_zoo(PAIRS[code], sc, acc=np.float64).astype(np.float64)
        got = what.output(float_format(sc.dtype))
        assert np.array_equal(got, want, equal_nan=True), (code, sc.grad.shape, sc.dtype)
        assert judge(sc, what, want).exact
    assert shown, f"{code}: no scene where the bug shows"


@pytest.mark.parametrize("code", list(PAIRS), ids=str)
def test_model_explains_its_float32_kernel(code: C) -> None:
    """The realistic kernel (float32 sums, then the cast) is in the model's interval."""
    model = bugs.model(code)
    for sc in _scenes_for(code):
        what = model(sc)
        if what is None:
            continue
        actual = run_zoo(PAIRS[code], sc)
        res = judge(sc, what, actual)
        assert res.explained, (code, sc.grad.shape, sc.dtype, res)


def test_ties_away_model_is_exercised_on_ties() -> None:
    """The dyadic scenes put ties where the cast models disagree with RNE."""
    for dtype in ("float16", "bfloat16"):
        sc = scene(*POW2_SHAPES[3], dtype, dist="dyadic")
        what = bugs.model(C.CAST_TIES_AWAY)(sc)
        assert what is not None
        away = what.output(float_format(dtype))
        assert np.count_nonzero(away != correctly_rounded(sc.golden, float_format(dtype)))


#: Zoo kernels whose bug moves values; every other model must stay quiet on them.
VALUE_KERNELS = {code: name for code, name in PAIRS.items()
                 if code is not C.ACCUMULATE_INPUT_DTYPE}


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_models_claim_only_their_own_kernel(dtype: str) -> None:
    """On ordinary data (normal values, several planes, nondivisible and upsampling
    windows) no value model explains another bug's failing output, and the ranking of
    the evidence names the kernel's own model first."""
    shapes = (((2, 3, 12, 10), (2, 3, 5, 6)), ((2, 3, 3, 5), (2, 3, 5, 7)),
              ((3, 7, 9), (3, 4, 5)))
    for code, name in VALUE_KERNELS.items():
        if code in (C.WINDOW_BOUNDS_FLOAT32, C.WINDOW_BOUNDS_FLOAT32_RECIPROCAL):
            continue  # needs index-arithmetic sizes: covered above
        layout = "strided" if code is C.STRIDES_IGNORED else "contiguous"
        dist = "tiny" if code is C.FLUSH_TO_ZERO else "normal"
        evidence = []
        for s, g in shapes:
            sc = scene(s, g, dtype, dist=dist, layout=layout, seed=7)
            actual = run_zoo(name, sc)
            if judge(sc, bugs.WhatIf(sc.golden), actual).explained:
                continue  # the bug does not show on this case
            results = []
            for m in bugs.MODELS:
                what = m(sc)
                if what is None:
                    continue
                res = judge(sc, what, actual)
                results.append(ModelResult(m.code, m.summary, res.explained, res.exact,
                                           precision=what.accumulate is not None))
                precision = what.accumulate is not None
                if (res.explained or res.exact) and not precision and m.code is not code:
                    pytest.fail(f"{m.code} claims {name} on {s} {dtype}")
            evidence.append(CaseClues(f"{name}-{s}", tuple(results)))
        if not any(e.explained_by for e in evidence):
            assert dtype == "float32" and code in CASTS | {C.SCALE_INPUT_DTYPE}
            continue
        assert rank_evidence(evidence)[0].code is code, name


def test_models_are_silent_where_the_bug_cannot_show() -> None:
    identity = scene((2, 3, 6, 6), (2, 3, 6, 6), "float16")
    square = scene((2, 2, 8, 8), (2, 2, 4, 4), "float32")
    one_plane = scene((1, 1, 7, 5), (1, 1, 3, 2), "float16")
    assert bugs.model(C.WINDOW_END_FLOOR)(identity) is None
    assert bugs.model(C.WINDOW_START_CEIL)(square) is None  # divisible: integer bounds
    assert bugs.model(C.AXES_SWAPPED)(square) is None
    assert bugs.model(C.DIVISOR_KW_FROM_HO)(square) is None
    assert bugs.model(C.PLANE_0_BROADCAST)(one_plane) is None
    assert bugs.model(C.STRIDES_IGNORED)(identity) is None  # contiguous
    assert bugs.model(C.CAST_TOWARD_ZERO)(square) is None  # float32: no final cast
    assert bugs.model(C.FLUSH_TO_ZERO)(identity) is None  # nothing subnormal
    assert bugs.model(C.SCALE_INPUT_DTYPE)(scene((2, 3, 8, 8), (2, 3, 4, 4),
                                                 "float16")) is None  # 1/4 is exact


def test_correct_kernel_is_reproduced_by_no_model() -> None:
    """A correct float32 kernel's output lies outside every model that moves values
    where the model differs from the golden by more than the kernel's error."""
    for s, g in SHAPES[:4]:
        sc = scene(s, g, "float16", seed=3)
        actual = run_zoo("correct", sc)
        for m in bugs.MODELS:
            what = m(sc)
            if what is None or what.accumulate is not None:
                continue
            res = judge(sc, what, actual)
            if res.explained:  # then the model must be indistinguishable here
                other = judge(sc, bugs.WhatIf(sc.golden), what.output(
                    float_format("float16")))
                assert other.explained, (m.code, s)
