"""The contract of aclnnAdaptiveAvgPool3dBackward: the implementation's check order, the
documentation's reading, and where they meet (docs/contract-3d.md §3-§5)."""

from __future__ import annotations

import pytest

from aclcheck.cases import Check, TensorDesc
from aclcheck.cases.acl import PARAM_INVALID, PARAM_NULLPTR, SUCCESS, UNSPECIFIED
from aclcheck.ops.adaptive_avg_pool3d_backward import contract
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case

SELF = (2, 3, 4, 6, 5)
WINDOWED = (2, 3, 2, 3, 2)
GLOBAL = (2, 3, 1, 1, 1)


def expect(product: str = "atlas-a2", grad: tuple[int, ...] = WINDOWED,
           self_: tuple[int, ...] = SELF, out: tuple[int, ...] | None = None,
           dtype: str = "float32", fmt: str = "NCDHW", **per: str):
    """The expectation of a call; per-tensor dtype/format overrides as grad_dtype=..."""
    descs = {}
    for role, shape in (("grad_output", grad), ("self", self_), ("out", out or self_)):
        key = {"grad_output": "grad"}.get(role, role)
        descs[role] = TensorDesc(tuple(shape), per.get(f"{key}_dtype", dtype),
                                 per.get(f"{key}_format", fmt))
    return contract.expect(product, descs)


def test_valid_calls_on_every_product():
    for product in contract.PRODUCTS:
        for dtype in contract.PRODUCTS[product].dtypes:
            for fmt in contract.FORMATS:
                exp = expect(product, GLOBAL, dtype=dtype, fmt=fmt)
                assert exp.status == SUCCESS and exp.rule == "0-valid", (product, dtype, fmt)
    for product in ("atlas-a2", "atlas-a3"):
        for dtype in ("float16", "bfloat16", "float32"):
            assert expect(product, dtype=dtype).success
    # rank 4 (C, D, H, W) is documented with ND
    assert expect(grad=WINDOWED[1:], self_=SELF[1:], fmt="ND").success


def test_null_pointers_come_first():
    exp = contract.expect("atlas-a2", {"grad_output": None, "self": None,
                                       "out": TensorDesc((1,), "int8", "FRACTAL_Z")})
    assert exp.status == PARAM_NULLPTR and exp.reason == "null pointer: gradOutput, self"


REJECTIONS = [
    ({"self_": (4, 6, 5), "grad": (2, 3, 2), "out": (4, 6, 5)}, "2-rank", "self rank 3"),
    ({"self_": (1, 2, 3, 4, 6, 5), "grad": (1, 2, 3, 2, 3, 2),
      "out": (1, 2, 3, 4, 6, 5)}, "2-rank", "self rank 6"),
    ({"grad": (3, 2, 3, 2)}, "2-rank", "gradOutput rank 4"),
    ({"out": (3, 4, 6, 5)}, "2-rank", "out rank 4"),
    ({"self_": (2, 0, 4, 6, 5), "out": (2, 0, 4, 6, 5), "grad": (2, 0, 2, 3, 2)}, "2-empty",
     "self dim 1 is 0"),
    ({"self_": (0, 3, 4, 6, 5), "out": (0, 3, 4, 6, 5), "grad": (0, 3, 2, 3, 2)}, "2-empty",
     "self dim 0"),
    ({"out": (2, 3, 4, 6, 6)}, "2-out-shape", "out shape"),
    ({"grad": (2, 4, 2, 3, 2)}, "2-leading-dims", "leading dims (2, 4)"),
    ({"grad": (2, 3, 2, 0, 2)}, "2-empty", "output size (2, 0, 2)"),
    ({"dtype": "int32"}, "3-product-dtype", "int32 not supported on atlas-a2"),
    ({"grad_dtype": "float16"}, "3-dtype", "gradOutput dtype float16 != self"),
    ({"out_dtype": "float16"}, "3-dtype", "out dtype float16 != self"),
    ({"grad_format": "ND"}, "4-format", "gradOutput format ND != self format NCDHW"),
    ({"out_format": "ND"}, "4-format", "out format ND"),
    ({"fmt": "NDC1HWC0"}, "4-format", "private format NDC1HWC0"),
    ({"fmt": "FRACTAL_Z_3D"}, "4-format", "private format FRACTAL_Z_3D"),
]


@pytest.mark.parametrize(("kw", "rule", "text"), REJECTIONS)
def test_each_rule_rejects_with_161002(kw, rule, text):
    exp = expect(**kw)
    assert (exp.status, exp.rule) == (PARAM_INVALID, rule), exp.reason
    assert text in exp.reason
    assert exp.check == contract.RULE_CHECKS[rule]


def test_the_implementations_check_order_decides_the_rule():
    # an empty self beats everything after it; the out shape is checked per dim, after
    # the self dim of the same index
    exp = expect(self_=(2, 3, 0, 6, 5), out=(2, 3, 4, 6, 7), dtype="int32", fmt="NDC1HWC0")
    assert exp.rule == "2-empty"
    exp = expect(out=(2, 3, 4, 6, 7), grad=(9, 3, 2, 3, 2), dtype="int32")
    assert exp.rule == "2-out-shape"
    # dtype before format before the Atlas training rule
    exp = expect("atlas-training", dtype="int32", fmt="NDC1HWC0")
    assert exp.rule == "3-product-dtype"
    exp = expect("atlas-training", grad_format="ND")
    assert exp.rule == "4-format"
    exp = expect("atlas-training")
    assert (exp.status, exp.rule) == (PARAM_INVALID, "5-global-only")
    assert exp.check == Check.PRODUCT


def test_dtype_lists_depend_on_the_output_size():
    """DOUBLE is listed for a 1x1x1 output on A2/A3, for any size on training/inference;
    the documentation never lists it: unspecified where the implementation accepts it,
    161002 where both reject."""
    assert expect("atlas-a2", dtype="float64").status == PARAM_INVALID
    for product in contract.PRODUCTS:
        exp = expect(product, GLOBAL, dtype="float64")
        assert exp.unspecified and "implementation accepts it" in exp.reason, product
    # training: 161002 either way (undocumented dtype, 1x1x1 rule)
    assert expect("atlas-training", dtype="float64").status == PARAM_INVALID
    # inference: listed, no kernel, undocumented: unspecified
    assert expect("atlas-inference", dtype="float64").unspecified


def test_bfloat16_on_training_and_inference_is_a_documentation_divergence():
    for product in ("atlas-training", "atlas-inference"):
        exp = expect(product, GLOBAL, dtype="bfloat16")
        assert exp.status == UNSPECIFIED
        assert exp.reason.startswith("the documentation accepts it; the implementation "
                                     "rejects it with 161002")


def test_atlas_inference_has_no_kernel_for_a_windowed_output():
    exp = expect("atlas-inference")
    assert exp.unspecified and "no kernel" in exp.reason
    assert expect("atlas-inference", GLOBAL).success


@pytest.mark.parametrize("fmt", contract.UNDOCUMENTED_FORMATS)
def test_undocumented_formats_are_unspecified(fmt):
    exp = expect(fmt=fmt)
    assert exp.unspecified and f"format {fmt} is not documented" in exp.reason


def test_a_format_on_a_tensor_of_another_rank_is_unspecified():
    exp = expect(grad=WINDOWED[1:], self_=SELF[1:], fmt="NCDHW")
    assert exp.unspecified and "NCDHW on a rank-4 tensor" in exp.reason


def test_every_rule_label_has_a_check_kind():
    labels = {"0-valid", "1-nullptr", "unspecified", "5-global-only"}
    labels |= {rule for _, rule, _ in REJECTIONS}
    assert labels == set(contract.RULE_CHECKS)


def test_case_records_use_this_contract():
    case = Case("x", "t", "atlas-a2", "float32", "NCDHW", SELF, WINDOWED, 1)
    assert case.expectation.success and case.out_written
    bad = case.replace(out_dtype="float16")
    assert bad.expected_status == PARAM_INVALID and bad.expectation.rule == "3-dtype"
    empty = case.replace(self_shape=(0, 3, 4, 6, 5))
    assert empty.expected_status == PARAM_INVALID
    assert case.replace(null=("out",)).expected_status == PARAM_NULLPTR
    # the seam's Call of the case
    assert contract.expected_status(case.call()).success


def test_supported_formats_for_rank():
    assert contract.supported_formats_for_rank(5) == ("NCDHW", "ND")
    assert contract.supported_formats_for_rank(4) == ("ND",)
    with pytest.raises(ValueError, match="unknown product"):
        contract.product("ascend-950")
