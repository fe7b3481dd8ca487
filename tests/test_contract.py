"""contract.py: window bounds (exact integer arithmetic), names, and expected_status per
rule of docs/contract.md section 5 (one test per rule, then the rule order and the silences)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclcheck.ops.adaptive.windows import window_bounds, window_end, window_start
from aclcheck.ops.adaptive_avg_pool2d_backward import contract
from aclcheck.ops.adaptive_avg_pool2d_backward.contract import (
    ASSIST_LIMIT,
    PARAM_INVALID,
    PARAM_NULLPTR,
    SUCCESS,
    UNSPECIFIED,
    Call,
    TensorDesc,
    expected_status,
)

# -- window bounds -------------------------------------------------------------------------


def exact_start(i: int, out: int, inp: int) -> int:
    return math.floor(Fraction(i * inp, out))


def exact_end(i: int, out: int, inp: int) -> int:
    return math.ceil(Fraction((i + 1) * inp, out))


near_2_31 = st.integers(2**31 - 64, 2**31 + 64)
big = st.one_of(st.integers(1, 1000), near_2_31, st.integers(1, 2**40), st.integers(1, 2**64))


@settings(max_examples=300, deadline=None)
@given(out=big, inp=big, data=st.data())
def test_window_start_end_exact(out, inp, data):
    i = data.draw(st.one_of(st.integers(0, min(out - 1, 50)),
                            st.integers(max(0, out - 50), out - 1),
                            st.integers(0, out - 1)))
    assert window_start(i, out, inp) == exact_start(i, out, inp)
    assert window_end(i, out, inp) == exact_end(i, out, inp)


@settings(max_examples=150, deadline=None)
@given(out=st.integers(1, 3000), inp=st.one_of(st.integers(0, 3000), near_2_31,
                                               st.integers(2**31, 2**45)))
def test_window_bounds_exact(out, inp):
    start, end = window_bounds(out, inp)
    assert start.dtype == np.int64 and end.dtype == np.int64 and start.shape == (out,)
    idx = sorted({0, 1, out // 2, out - 2, out - 1} & set(range(out)))
    assert [int(start[i]) for i in idx] == [exact_start(i, out, inp) for i in idx]
    assert [int(end[i]) for i in idx] == [exact_end(i, out, inp) for i in idx]
    if out <= 300:
        assert start.tolist() == [exact_start(i, out, inp) for i in range(out)]
        assert end.tolist() == [exact_end(i, out, inp) for i in range(out)]
    # windows tile the input: first starts at 0, last ends at in, each non-empty if in > 0
    assert start[0] == 0 and end[-1] == inp
    assert np.all(np.diff(start) >= 0) and np.all(np.diff(end) >= 0)
    if inp:
        assert np.all(end > start)


@pytest.mark.parametrize(
    ("out", "inp"),
    [
        (2**31 - 1, 2**31 - 1),
        (2**31 + 1, 3),
        (3, 2**31 + 7),
        (65537, 2**31 - 1),
        (4099, 8193),  # i * in beyond 2**24 (float bounds break)
        (32771, 65536),  # i * in beyond 2**31 (int32 products overflow)
    ],
)
def test_window_bounds_near_2_31_sampled(out, inp):
    """Large out sizes: check a sample through the scalar functions and, where the array
    fits, through window_bounds too."""
    for i in (0, 1, out // 3, out // 2, out - 2, out - 1):
        assert window_start(i, out, inp) == exact_start(i, out, inp)
        assert window_end(i, out, inp) == exact_end(i, out, inp)
    if out <= 70_000:
        start, end = window_bounds(out, inp)
        for i in (0, out // 3, out - 1):
            assert (int(start[i]), int(end[i])) == (exact_start(i, out, inp),
                                                   exact_end(i, out, inp))


@pytest.mark.parametrize(("out", "inp"), [(7, 2**60 + 12345), (9, 2**60 + 1),
                                         (3, 2**62 + 5), (5, 2**63 - 1)])
def test_window_bounds_python_fallback(out, inp):
    """(i + 1) * in beyond int64: Python integers, still exact."""
    start, end = window_bounds(out, inp)
    assert start.tolist() == [exact_start(i, out, inp) for i in range(out)]
    assert end.tolist() == [exact_end(i, out, inp) for i in range(out)]


def test_window_bounds_empty():
    start, end = window_bounds(0, 5)
    assert start.shape == end.shape == (0,)
    start, end = window_bounds(3, 0)
    assert start.tolist() == [0, 0, 0] and end.tolist() == [0, 0, 0]


# -- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "canonical"),
    [("fp16", "float16"), ("FP32", "float32"), ("bf16", "bfloat16"), ("half", "float16"),
     ("BFloat16", "bfloat16"), (" float32 ", "float32"), ("double", "float64"),
     ("int64", "int64"), ("uint64", "uint64")],
)
def test_normalize_dtype(name, canonical):
    assert contract.normalize_dtype(name) == canonical


def test_normalize_dtype_unknown_lists_valid():
    with pytest.raises(ValueError, match="unknown dtype 'float8'.*float16.*bfloat16"):
        contract.normalize_dtype("float8")


@pytest.mark.parametrize(("name", "canonical"),
                         [("nchw", "NCHW"), ("nd", "ND"), ("Ncl", "NCL"), ("nhwc", "NHWC"),
                          ("nc1hwc0", "NC1HWC0")])
def test_normalize_format(name, canonical):
    assert contract.normalize_format(name) == canonical


def test_unknown_format_and_product_list_valid():
    with pytest.raises(ValueError, match="unknown format 'NHWCX'.*ND, NCHW, NCL"):
        contract.normalize_format("NHWCX")
    with pytest.raises(ValueError, match="unknown product 'atlas-b9'.*atlas-training.*atlas-a3"):
        contract.product("atlas-b9")


def test_products_and_dtypes_table():
    assert set(contract.PRODUCTS) == {"atlas-training", "atlas-inference", "atlas-a2",
                                      "atlas-a3"}
    assert "bfloat16" not in contract.product("atlas-training").dtypes
    assert "bfloat16" not in contract.product("atlas-inference").dtypes
    assert contract.product("atlas-a2").dtypes == ("bfloat16", "float16", "float32")
    assert contract.ACL_DTYPE_ENUM["bfloat16"] == 27 and contract.ACL_FORMAT_ENUM["NCL"] == 47
    assert contract.status_name(161002) == "ACLNN_ERR_PARAM_INVALID"
    assert contract.status_name(561103) == "ACLNN_ERR_INNER_NULLPTR"
    assert contract.status_name(12345) == "12345"
    assert contract.supported_formats_for_rank(3) == ("ND", "NCL")
    assert contract.supported_formats_for_rank(4) == ("ND", "NCHW")


# -- expected_status: one test per rule -------------------------------------------------------

SELF4, GRAD4 = (2, 3, 8, 6), (2, 3, 4, 3)


def call(product: str = "atlas-a2", dtype: str = "float32", fmt: str = "NCHW",
         self_shape: tuple[int, ...] = SELF4, grad_shape: tuple[int, ...] = GRAD4,
         null: tuple[str, ...] = (), **over: object) -> Call:
    """A call with per-tensor overrides: <tensor>_shape/_dtype/_format (tensor: grad, out,
    self)."""
    def desc(name: str, shape: tuple[int, ...]) -> TensorDesc | None:
        if name in null:
            return None
        return TensorDesc(tuple(over.get(f"{name}_shape", shape)),  # type: ignore[arg-type]
                          str(over.get(f"{name}_dtype", dtype)),
                          str(over.get(f"{name}_format", fmt)))

    return Call(product, {"grad_output": desc("grad", grad_shape),
                          "self": desc("self", self_shape), "out": desc("out", self_shape)})


def status(c: Call) -> tuple[int, str]:
    e = expected_status(c)
    return e.status, e.rule


@pytest.mark.parametrize("product", list(contract.PRODUCTS))
def test_valid_calls_succeed(product):
    for dtype in contract.product(product).dtypes:
        for fmt, self_shape, grad_shape in (("NCHW", SELF4, GRAD4), ("ND", SELF4, GRAD4),
                                            ("ND", SELF4[1:], GRAD4[1:]),
                                            ("NCL", SELF4[1:], GRAD4[1:])):
            e = expected_status(call(product, dtype, fmt, self_shape, grad_shape))
            assert (e.status, e.rule) == (SUCCESS, "0-valid") and e.success
            assert not e.unspecified


@pytest.mark.parametrize("missing", [("grad",), ("self",), ("out",), ("grad", "self", "out")])
def test_rule1_null_pointer(missing):
    e = expected_status(call(null=missing))
    assert (e.status, e.rule) == (PARAM_NULLPTR, "1-nullptr")


@pytest.mark.parametrize("grad_shape", [GRAD4[1:], (1,) + GRAD4, GRAD4[-2:]])
def test_rule2_rank_of_grad_differs_from_self(grad_shape):
    assert status(call(grad_shape=grad_shape)) == (PARAM_INVALID, "2-rank")


@pytest.mark.parametrize(
    ("kwargs", "rule"),
    [
        ({"out_shape": SELF4[1:]}, "3-rank"),  # out rank 3 != self rank 4
        ({"self_shape": (1,) + SELF4, "grad_shape": (1,) + GRAD4}, "3-rank"),  # rank 5
        ({"self_shape": SELF4[-2:], "grad_shape": GRAD4[-2:]}, "3-rank"),  # rank 2
        ({"self_shape": (5,), "grad_shape": (5,)}, "3-rank"),  # rank 1
        ({"grad_shape": (3, 3, 4, 3)}, "3-leading-dims"),  # N of gradOutput
        ({"grad_shape": (2, 4, 4, 3)}, "3-leading-dims"),  # C of gradOutput
        ({"out_shape": (1, 3, 8, 6)}, "3-leading-dims"),  # N of out
        ({"out_shape": (2, 5, 8, 6)}, "3-leading-dims"),  # C of out
        ({"self_shape": (3, 8, 6), "grad_shape": (4, 4, 3), "fmt": "NCL"}, "3-leading-dims"),
    ],
)
def test_rule3_out_rank_and_leading_dims(kwargs, rule):
    assert status(call(**kwargs)) == (PARAM_INVALID, rule)


@pytest.mark.parametrize(
    ("product", "kwargs"),
    [
        ("atlas-training", {"dtype": "bfloat16"}),  # dtype the product lacks
        ("atlas-inference", {"dtype": "bfloat16"}),
        ("atlas-a2", {"dtype": "float64"}),
        ("atlas-a3", {"dtype": "int64"}),
        ("atlas-a2", {"dtype": "uint64"}),
        ("atlas-a2", {"grad_dtype": "float16"}),  # gradOutput dtype != self dtype
        ("atlas-training", {"self_dtype": "float16"}),
        ("atlas-a2", {"grad_dtype": "bool"}),
    ],
)
def test_rule4_dtype(product, kwargs):
    assert status(call(product, **kwargs)) == (PARAM_INVALID, "4-dtype")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"grad_format": "ND"},  # gradOutput format != self format
        {"self_format": "NCL"},
        {"fmt": "NC1HWC0"},  # private format everywhere
        {"out_format": "FRACTAL_NZ"},  # private format on out alone
        {"grad_format": "NHWC"},  # public but differs from self
    ],
)
def test_rule5_format(kwargs):
    assert status(call(**kwargs)) == (PARAM_INVALID, "5-format")


def test_rule_order_first_failure_decides():
    # null beats everything
    assert status(call(null=("out",), grad_shape=(9,), dtype="int8"))[0] == PARAM_NULLPTR
    # rank (rule 2) beats dtype (4) and format (5)
    assert status(call(grad_shape=GRAD4[1:], dtype="float64", grad_format="ND"))[1] == "2-rank"
    # leading dims (3) beat dtype (4)
    assert status(call(grad_shape=(2, 9, 4, 3), dtype="float64"))[1] == "3-leading-dims"
    # dtype (4) beats format (5)
    assert status(call("atlas-training", dtype="bfloat16", fmt="NC1HWC0"))[1] == "4-dtype"
    # documented invalid beats undocumented: an empty tensor with a bad dtype is rejected
    assert status(call(dtype="float64", grad_shape=(2, 3, 0, 3)))[1] == "4-dtype"


# -- silences and divergences: unspecified, never judged -------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"out_dtype": "float16"}, "out dtype"),
        ({"out_shape": (2, 3, 9, 6)}, "out shape"),
        ({"out_format": "ND"}, "out format"),
        ({"fmt": "NHWC"}, "undocumented"),
        ({"fmt": "NCL"}, "format NCL on a rank-4"),
        ({"fmt": "NCHW", "self_shape": SELF4[1:], "grad_shape": GRAD4[1:]}, "NCHW on a rank-3"),
    ],
)
def test_divergences_are_unspecified(kwargs, fragment):
    e = expected_status(call(**kwargs))
    assert e.status == UNSPECIFIED and e.unspecified and e.rule == "unspecified"
    assert fragment in e.reason


@pytest.mark.parametrize(
    "grad_shape", [(0, 3, 4, 3), (2, 0, 4, 3), (2, 3, 0, 3), (2, 3, 4, 0)]
)
def test_empty_tensor_is_success_with_note(grad_shape):
    self_shape = grad_shape[:2] + SELF4[2:]
    e = expected_status(call(self_shape=self_shape, grad_shape=grad_shape))
    assert e.status == SUCCESS and any("not written" in n for n in e.notes)


def test_assist_limit_only_on_matmul_products():
    # Ho * H = 2**29 exceeds 2**29 - 1 on the training/inference assist matrices
    self_shape, grad_shape = (1, 1, 2**15, 4), (1, 1, 2**14, 2)
    for product in ("atlas-training", "atlas-inference"):
        e = expected_status(call(product, self_shape=self_shape, grad_shape=grad_shape))
        assert e.status == UNSPECIFIED and str(contract.INNER_NULLPTR) in e.reason
    for product in ("atlas-a2", "atlas-a3"):
        e = expected_status(call(product, self_shape=self_shape, grad_shape=grad_shape))
        assert e.status == SUCCESS
    # just inside the limit: success everywhere
    assert 2**14 * (2**15 - 1) <= ASSIST_LIMIT
    e = expected_status(call("atlas-training", self_shape=(1, 1, 2**15 - 1, 4),
                             grad_shape=(1, 1, 2**14, 2)))
    assert e.status == SUCCESS
