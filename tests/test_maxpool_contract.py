"""The contract of aclnnAdaptiveMaxPool2dBackward (aclcheck/ops/adaptive_max_pool2d_backward/
contract.py) against the spec's "Status codes" section, rule by rule in the
implementation's order: null pointers (161001), dtypes, shapes, formats, the H*W size
(161002), empty tensors (success, gradInput not written); the products without the
operator; what neither the page nor the code decides (N/C mismatch, the page's 2^24
limit on non-divisible shapes); and calls that break two rules at once (the earlier
rule decides). Descriptions only: no arrays are made.
"""

from __future__ import annotations

import pytest

from aclcheck.cases import Check, TensorDesc
from aclcheck.cases.acl import PARAM_INVALID, PARAM_NULLPTR, SUCCESS, UNSPECIFIED
from aclcheck.ops.adaptive_max_pool2d_backward import contract, families

SELF = (2, 3, 7, 5)
GRAD = (2, 3, 3, 2)  # non-divisible on both axes
ROLES = ("grad_output", "self", "indices", "out")
A2_A3 = ("atlas-a2", "atlas-a3")
NO_OPERATOR = ("atlas-training", "atlas-inference")


def descs(grad: tuple[int, ...] = GRAD, self_: tuple[int, ...] = SELF,
          indices: tuple[int, ...] | None = None, out: tuple[int, ...] | None = None,
          dtype: str = "float32", idx_dtype: str = "int64", fmt: str = "NCHW",
          **per: str) -> dict[str, TensorDesc | None]:
    """The four descriptions of a call (indices: gradOutput's shape, out: self's, unless
    given); per-role overrides as grad_output_dtype=..., out_format=..., null=role."""
    shapes = {"grad_output": grad, "self": self_, "indices": indices or grad,
              "out": out or self_}
    tensors: dict[str, TensorDesc | None] = {}
    for role in ROLES:
        dt = per.get(f"{role}_dtype", idx_dtype if role == "indices" else dtype)
        tensors[role] = TensorDesc(tuple(shapes[role]), dt, per.get(f"{role}_format", fmt))
    for role in per.get("null", "").split(","):
        if role:
            tensors[role] = None
    return tensors


def expect(product: str = "atlas-a2", **kw):
    return contract.expect(product, descs(**kw))


def rule_of(product: str = "atlas-a2", **kw) -> tuple[int, str]:
    exp = expect(product, **kw)
    return exp.status, exp.rule


# -- valid calls ------------------------------------------------------------------------------


@pytest.mark.parametrize("product", A2_A3)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("idx_dtype", ["int32", "int64"])
def test_valid_calls_on_a2_and_a3(product: str, dtype: str, idx_dtype: str) -> None:
    for fmt in ("ND", "NCHW", "NHWC"):  # the label is not read: NHWC passes too
        exp = expect(product, dtype=dtype, idx_dtype=idx_dtype, fmt=fmt)
        assert (exp.status, exp.rule, exp.check) == (SUCCESS, "0-valid", Check.VALID), fmt
        assert not exp.unwritten and not exp.isolated_only
    for fmt in ("ND", "NCL"):  # rank 3 (C, H, W)
        assert expect(product, grad=GRAD[1:], self_=SELF[1:], dtype=dtype,
                      idx_dtype=idx_dtype, fmt=fmt).status == SUCCESS
    # divisible, upsampling and global calls alike (the windows come from the shapes)
    for grad in ((2, 3, 7, 5), (2, 3, 1, 1), (2, 3, 9, 11), (2, 3, 7, 1)):
        assert expect(product, grad=grad, dtype=dtype).status == SUCCESS, grad


# -- 1. null pointers -------------------------------------------------------------------------


@pytest.mark.parametrize("product", list(contract.PRODUCTS))
@pytest.mark.parametrize("role", ROLES)
def test_each_null_pointer_is_161001(product: str, role: str) -> None:
    exp = expect(product, null=role)
    assert (exp.status, exp.rule, exp.check) == (PARAM_NULLPTR, "1-nullptr", Check.NULL)
    api = {"grad_output": "gradOutput", "self": "self", "indices": "indices",
           "out": "gradInput"}[role]
    assert exp.reason == f"null pointer: {api}"


def test_all_four_null_names_them_in_call_order() -> None:
    exp = expect(null="grad_output,self,indices,out")
    assert exp.status == PARAM_NULLPTR
    assert exp.reason == "null pointer: gradOutput, self, indices, gradInput"


def test_a_null_pointer_wins_over_every_other_rule() -> None:
    # with a bad dtype, a bad indices dtype, a bad shape, a private format, an empty dim
    assert rule_of(null="out", grad_output_dtype="float16") == (PARAM_NULLPTR, "1-nullptr")
    assert rule_of(null="self", idx_dtype="float32") == (PARAM_NULLPTR, "1-nullptr")
    assert rule_of(null="indices", out=(2, 3, 7, 6)) == (PARAM_NULLPTR, "1-nullptr")
    assert rule_of(null="grad_output", fmt="NC1HWC0") == (PARAM_NULLPTR, "1-nullptr")
    assert rule_of(null="out", self_=(2, 3, 70000, 40000)) == (PARAM_NULLPTR, "1-nullptr")
    assert rule_of(null="out", grad=(0, 3, 3, 2), self_=(0, 3, 7, 5)) == (PARAM_NULLPTR,
                                                                         "1-nullptr")
    # on products without the operator too (null before the dtype list)
    for product in NO_OPERATOR:
        assert rule_of(product, null="indices") == (PARAM_NULLPTR, "1-nullptr")


# -- 2. dtypes --------------------------------------------------------------------------------


@pytest.mark.parametrize(("kw", "rule", "check"), [
    ({"grad_output_dtype": "float16"}, "2-dtype", Check.DTYPE),
    ({"grad_output_dtype": "bfloat16"}, "2-dtype", Check.DTYPE),
    ({"out_dtype": "float16"}, "2-dtype", Check.DTYPE),
    ({"out_dtype": "float64"}, "2-dtype", Check.DTYPE),
    ({"dtype": "float64"}, "2-product-dtype", Check.PRODUCT_DTYPE),
    ({"dtype": "int32"}, "2-product-dtype", Check.PRODUCT_DTYPE),
    ({"dtype": "int64"}, "2-product-dtype", Check.PRODUCT_DTYPE),
    ({"idx_dtype": "float32"}, "2-index-dtype", Check.DTYPE),
    ({"idx_dtype": "int16"}, "2-index-dtype", Check.DTYPE),
    ({"idx_dtype": "uint8"}, "2-index-dtype", Check.DTYPE),
    ({"idx_dtype": "float16"}, "2-index-dtype", Check.DTYPE),
])
def test_dtype_rules(kw: dict, rule: str, check: Check) -> None:
    for product in A2_A3:
        exp = expect(product, **kw)
        assert (exp.status, exp.rule, exp.check) == (PARAM_INVALID, rule, check), kw


def test_dtype_rules_in_their_order() -> None:
    # gradOutput vs self comes before gradInput vs self
    exp = expect(grad_output_dtype="float16", out_dtype="bfloat16")
    assert exp.rule == "2-dtype" and "gradOutput dtype float16" in exp.reason
    # gradInput vs self before self's dtype against the product's list
    exp = expect(dtype="float64", out_dtype="float32")
    assert exp.rule == "2-dtype" and "gradInput dtype float32" in exp.reason
    # self's dtype against the list before the indices' dtype
    assert rule_of(dtype="float64", idx_dtype="float32") == (PARAM_INVALID, "2-product-dtype")
    # every dtype rule before the shape rules
    assert rule_of(grad_output_dtype="float16", out=(2, 3, 7, 6))[1] == "2-dtype"
    assert rule_of(idx_dtype="int16", indices=(2, 3, 3, 3))[1] == "2-index-dtype"
    assert rule_of(dtype="int32", grad=GRAD[1:])[1] == "2-product-dtype"


def test_self_values_are_not_read_but_its_dtype_is() -> None:
    # gradOutput and gradInput agree with each other, self differs: refused
    exp = expect(self_dtype="float16")
    assert exp.status == PARAM_INVALID and exp.rule == "2-dtype"


# -- 3. shapes --------------------------------------------------------------------------------


@pytest.mark.parametrize(("kw", "rule"), [
    ({"grad": GRAD[1:], "indices": GRAD[1:]}, "3-rank"),  # gradOutput and indices rank 3
    ({"indices": GRAD[1:]}, "3-rank"),
    ({"indices": (1,) + GRAD}, "3-rank"),
    ({"out": SELF[1:]}, "3-rank"),
    ({"self_": SELF[1:], "out": SELF[1:]}, "3-rank"),
    ({"indices": (2, 3, 3, 3)}, "3-indices-shape"),
    ({"indices": (2, 3, 2, 3)}, "3-indices-shape"),  # the same elements, transposed dims
    ({"indices": (1, 3, 3, 2)}, "3-indices-shape"),
    ({"out": (2, 3, 7, 6)}, "3-out-shape"),
    ({"out": (2, 3, 5, 7)}, "3-out-shape"),
    ({"out": (2, 4, 7, 5)}, "3-out-shape"),
])
def test_shape_rules(kw: dict, rule: str) -> None:
    exp = expect(**kw)
    assert (exp.status, exp.rule, exp.check) == (PARAM_INVALID, rule, Check.SHAPE), kw


def test_shape_rules_in_their_order() -> None:
    # ranks before the indices' dims before gradInput's dims
    assert rule_of(indices=GRAD[1:], out=(2, 3, 7, 6))[1] == "3-rank"
    assert rule_of(indices=(2, 3, 3, 3), out=(2, 3, 7, 6))[1] == "3-indices-shape"
    # every shape rule before the format rules
    assert rule_of(indices=(2, 3, 3, 3), indices_format="ND")[1] == "3-indices-shape"
    assert rule_of(out=(2, 3, 7, 6), fmt="NC1HWC0")[1] == "3-out-shape"
    # rank 5 gradOutput against rank 4 self: a rank rule, not the format rule's 3-or-4
    assert rule_of(grad=(1,) + GRAD, indices=(1,) + GRAD)[1] == "3-rank"
    # an empty call is still refused for its shapes
    assert rule_of(grad=(0, 3, 3, 2), self_=(0, 3, 7, 5), out=(0, 3, 7, 6))[1] == "3-out-shape"


# -- 4. formats -------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_formats_must_be_identical(role: str) -> None:
    exp = expect(fmt="NCHW", **{f"{role}_format": "ND"})
    assert (exp.status, exp.rule, exp.check) == (PARAM_INVALID, "4-format", Check.FORMAT)
    assert exp.reason == "storage formats differ: NCHW, ND"


@pytest.mark.parametrize("fmt", ["NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ"])
def test_private_formats_are_refused(fmt: str) -> None:
    exp = expect(fmt=fmt)
    assert (exp.status, exp.rule) == (PARAM_INVALID, "4-format") and fmt in exp.reason


@pytest.mark.parametrize(("self_", "grad"), [
    ((7, 5), (3, 2)),  # rank 2
    ((1, 2, 3, 7, 5), (1, 2, 3, 3, 2)),  # rank 5
    ((7,), (3,)),  # rank 1
])
def test_ranks_other_than_3_and_4_are_a_format_refusal(self_, grad) -> None:
    exp = expect(self_=self_, grad=grad, fmt="ND")
    assert (exp.status, exp.rule) == (PARAM_INVALID, "4-format")
    assert f"rank {len(self_)} is not 3 or 4" in exp.reason


def test_format_rules_before_the_plane_size() -> None:
    big = (1, 1, 65536, 32769)  # H*W = 2^31 + 2^16
    assert rule_of(self_=big, grad=(1, 1, 2, 2), fmt="NC1HWC0")[1] == "4-format"
    assert rule_of(self_=big, grad=(1, 1, 2, 2), out_format="ND")[1] == "4-format"


# -- 5. the H*W size --------------------------------------------------------------------------


def _plane(product: str, hw: tuple[int, int], ohw: tuple[int, int] = (1, 1), rank: int = 4):
    lead = (1, 1) if rank == 4 else (1,)
    tensors = {
        "grad_output": TensorDesc(lead + ohw, "float16", "ND"),
        "self": TensorDesc(lead + hw, "float16", "ND"),
        "indices": TensorDesc(lead + ohw, "int32", "ND"),
        "out": TensorDesc(lead + hw, "float16", "ND"),
    }
    return contract.expect(product, tensors)


@pytest.mark.parametrize("product", A2_A3)
@pytest.mark.parametrize("rank", [3, 4])
def test_a_plane_above_2_31_minus_1_is_refused(product: str, rank: int) -> None:
    for hw in ((65536, 32769), (1, 2**31), (2**31, 1), (46341, 46341)):
        exp = _plane(product, hw, rank=rank)
        assert (exp.status, exp.rule) == (PARAM_INVALID, "5-plane-size"), hw
        assert str(hw[0] * hw[1]) in exp.reason
    # 2^31 - 1 itself is allowed (divisible by 1x1: the copy path, no page limit)
    for hw in ((1, 2**31 - 1), (2**31 - 1, 1)):
        assert _plane(product, hw, rank=rank).status == SUCCESS, hw


def test_the_plane_size_is_checked_before_emptiness() -> None:
    exp = _plane("atlas-a2", (65536, 32769), (0, 1))
    assert (exp.status, exp.rule) == (PARAM_INVALID, "5-plane-size")


# -- 6. empty tensors -------------------------------------------------------------------------


@pytest.mark.parametrize(("grad", "self_"), [
    ((0, 3, 3, 2), (0, 3, 7, 5)),  # N = 0
    ((2, 0, 3, 2), (2, 0, 7, 5)),  # C = 0
    ((2, 3, 0, 2), SELF),  # Ho = 0 with a non-empty self: the answer would be all zeros
    ((2, 3, 3, 0), SELF),  # Wo = 0
    ((2, 3, 0, 0), SELF),
    ((2, 3, 3, 2), (2, 3, 0, 5)),  # H = 0 (an empty self)
    ((2, 3, 0, 0), (2, 3, 0, 0)),
    ((3, 0, 2), (3, 7, 5)),  # rank 3
])
@pytest.mark.parametrize("product", A2_A3)
def test_empty_tensors_succeed_and_leave_grad_input_unwritten(grad, self_, product) -> None:
    for dtype in ("float32", "float16", "bfloat16"):
        exp = expect(product, grad=grad, self_=self_, dtype=dtype, fmt="ND")
        assert (exp.status, exp.rule) == (SUCCESS, "0-empty"), (grad, self_, dtype)
        assert exp.success and exp.unwritten and "not written" in exp.unwritten


def test_empty_calls_are_still_refused_for_earlier_rules() -> None:
    empty = {"grad": (0, 3, 3, 2), "self_": (0, 3, 7, 5)}
    assert rule_of(**empty, grad_output_dtype="float16") == (PARAM_INVALID, "2-dtype")
    assert rule_of(**empty, idx_dtype="int8") == (PARAM_INVALID, "2-index-dtype")
    assert rule_of(**empty, indices=(0, 3, 3, 3)) == (PARAM_INVALID, "3-indices-shape")
    assert rule_of(**empty, fmt="NC1HWC0") == (PARAM_INVALID, "4-format")
    assert rule_of(**empty, dtype="float64") == (PARAM_INVALID, "2-product-dtype")


def test_an_empty_call_with_an_nc_mismatch_is_empty_first() -> None:
    # nothing checks N/C; the empty exit comes before any kernel could refuse them
    exp = expect(grad=(0, 4, 3, 2), self_=(0, 3, 7, 5))
    assert (exp.status, exp.rule) == (SUCCESS, "0-empty")


# -- products without the operator ------------------------------------------------------------


@pytest.mark.parametrize("product", NO_OPERATOR)
def test_every_non_null_call_is_161002_without_the_operator(product: str) -> None:
    assert contract.PRODUCTS[product].dtypes == ()
    calls = [
        {},  # a valid A2 call
        {"dtype": "float16"}, {"dtype": "bfloat16"}, {"idx_dtype": "int32"},
        {"grad": GRAD[1:], "self_": SELF[1:], "fmt": "NCL"},
        {"grad": (0, 3, 3, 2), "self_": (0, 3, 7, 5)},  # empty
        {"grad": (2, 3, 0, 2)},  # Ho = 0
        {"grad": (2, 4, 3, 2)},  # N/C mismatch
        {"self_": (1, 1, 4097, 4097), "grad": (1, 1, 2, 2)},  # past the page limit
        {"idx_dtype": "float32"}, {"out": (2, 3, 7, 6)}, {"fmt": "NC1HWC0"},
    ]
    for kw in calls:
        exp = expect(product, **kw)
        assert exp.status == PARAM_INVALID, (product, kw, exp)
        assert exp.rule == "2-product-dtype" and "lists no dtype" in exp.reason, kw
    # a dtype mismatch is still the earlier dtype rule (161002 either way)
    assert rule_of(product, grad_output_dtype="float16") == (PARAM_INVALID, "2-dtype")


# -- what neither the page nor the code decides -----------------------------------------------


@pytest.mark.parametrize("grad", [(3, 3, 3, 2), (2, 4, 3, 2), (1, 1, 3, 2), (4, 3, 2)])
def test_an_nc_mismatch_is_unspecified_and_isolated(grad) -> None:
    self_ = SELF if len(grad) == 4 else SELF[1:]
    exp = expect(grad=grad, self_=self_, fmt="ND")
    assert exp.status == UNSPECIFIED and exp.unspecified and exp.check == Check.UNSPECIFIED
    assert exp.kinds == ("nc-mismatch",) and exp.isolated_only


def test_non_divisible_above_2_24_is_unspecified_divisible_is_valid() -> None:
    # non-divisible, H*W = 4097^2 > 2^24
    exp = _plane("atlas-a2", (4097, 4097), (2, 2))
    assert exp.status == UNSPECIFIED and exp.kinds == ("page-limit",)
    assert not exp.isolated_only
    # divisible above 2^24: the copy path, valid
    for hw, ohw in (((4096, 4098), (2, 2)), ((4097, 4097), (1, 1)), ((8192, 4096), (4, 8))):
        assert _plane("atlas-a2", hw, ohw).status == SUCCESS, hw
    # non-divisible on one axis only counts as non-divisible
    assert _plane("atlas-a3", (4096, 4097), (2, 2)).status == UNSPECIFIED
    # upsampling (Ho > H) is non-divisible too
    assert _plane("atlas-a2", (4, 2**23), (8, 3)).status == UNSPECIFIED
    # non-divisible at exactly 2^24 and below: valid
    assert _plane("atlas-a2", (4096, 4096), (3, 3)).status == SUCCESS
    assert _plane("atlas-a2", (2**24, 1), (3, 1)).status == SUCCESS
    assert _plane("atlas-a2", (2**24 + 1, 1), (3, 1)).status == UNSPECIFIED


def test_the_plane_size_refusal_comes_before_the_page_limit() -> None:
    exp = _plane("atlas-a2", (65536, 32769), (3, 3))
    assert (exp.status, exp.rule) == (PARAM_INVALID, "5-plane-size")


# -- the invalid family: each rule's case has the status its name says ------------------------


def test_the_invalid_familys_cases_expect_what_their_rules_say() -> None:
    cases = families.invalid_cases("atlas-a2", contract.COMPUTE_DTYPES, contract.FORMATS, 0, 1)
    by_rule: dict[str, set[tuple[int, str]]] = {}
    for case in cases:
        name = case.id.split("-invalid0_", 1)[1].split("-")[0]  # ...-invalid0_<rule>-n2..
        exp = case.expectation
        by_rule.setdefault(name, set()).add((exp.status, exp.rule))
    nulls = {n for n in by_rule if n.startswith("null")}
    assert nulls == {"null_grad", "null_self", "null_indices", "null_out"}
    for name in nulls:
        assert by_rule[name] == {(PARAM_NULLPTR, "1-nullptr")}, name
    assert by_rule["dtype_grad"] == by_rule["dtype_out"] == {(PARAM_INVALID, "2-dtype")}
    assert by_rule["idx_float"] == by_rule["idx_int16"] == {(PARAM_INVALID, "2-index-dtype")}
    assert by_rule["rank_all2"] == by_rule["rank_all5"] == {(PARAM_INVALID, "4-format")}
    assert by_rule["rank_idx3"] == by_rule["rank_grad3"] == {(PARAM_INVALID, "3-rank")}
    assert by_rule["idx_shape"] == {(PARAM_INVALID, "3-indices-shape")}
    assert by_rule["out_w"] == {(PARAM_INVALID, "3-out-shape")}
    assert by_rule["fmt_private"] == {(PARAM_INVALID, "4-format")}
    assert by_rule["fmt_nhwc"] == {(SUCCESS, "0-valid")}  # the label is not read
    assert by_rule["n_grad"] == by_rule["c_grad"] == {(UNSPECIFIED, "unspecified")}
    # a product without the operator: every dtype's call refused
    for product in NO_OPERATOR:
        cases = families.invalid_cases(product, contract.COMPUTE_DTYPES, contract.FORMATS,
                                       0, 1)
        assert {c.dtype for c in cases} == set(contract.COMPUTE_DTYPES)
        assert {c.expected_status for c in cases} == {PARAM_INVALID}
