"""The 3D operator's case families and input values: what each family draws, which
statuses its calls expect, and that every draw is a pure function of the case record."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from aclcheck.cases.acl import PARAM_INVALID, PARAM_NULLPTR, SUCCESS, UNSPECIFIED
from aclcheck.dtypes import FLOAT_FORMATS
from aclcheck.ops.adaptive_avg_pool3d_backward import contract, families
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case, make_id, shape_tag
from aclcheck.ops.adaptive_avg_pool3d_backward.reference import backward, plans
from aclcheck.ops.adaptive_avg_pool3d_backward.stress import NC_LARGE
from aclcheck.ops.adaptive_avg_pool3d_backward.values import tensor_values
from aclcheck.store.codec import is_safe_id


def suite(seed: int = 0, count: int = 1, names: tuple[str, ...] = families.DEFAULT_FAMILIES
          ) -> list[Case]:
    cases: list[Case] = []
    for product, rules in contract.PRODUCTS.items():
        for family in names:
            for index in range(count):
                if family == "invalid":
                    dtypes = tuple(dict.fromkeys(rules.dtypes + contract.COMPUTE_DTYPES))
                    cases += families.invalid_cases(product, dtypes, contract.FORMATS, index,
                                                    seed)
                    continue
                for dtype in rules.dtypes:
                    for fmt in contract.FORMATS:
                        case = families.shape_case(family, product, dtype, fmt, index, seed)
                        if case is not None:
                            cases.append(case)
    return cases


@pytest.fixture(scope="module")
def default_suite() -> list[Case]:
    return suite()


def test_a_few_hundred_small_cases_with_unique_safe_ids(default_suite):
    assert 300 <= len(default_suite) <= 600
    ids = [c.id for c in default_suite]
    assert len(set(ids)) == len(ids) and all(is_safe_id(i) for i in ids)
    small = [c for c in default_suite if c.family not in families.HARDWARE_FAMILIES]
    assert max(math.prod(c.self_shape) + math.prod(c.grad_shape) for c in small) < 20000
    # the hardware edges need bigger planes and axes (aclcheck/ops/.../hardware.py)
    assert max(math.prod(c.self_shape) + math.prod(c.grad_shape) for c in default_suite) < 2**17
    assert {c.family for c in default_suite} == set(families.DEFAULT_FAMILIES)


def test_draws_depend_on_the_record_only():
    a = families.shape_case("nondivisible", "atlas-a2", "float16", "NCDHW", 3, 9)
    b = families.shape_case("nondivisible", "atlas-a2", "float16", "NCDHW", 3, 9)
    assert a == b and a is not None
    assert a != families.shape_case("nondivisible", "atlas-a2", "float16", "NCDHW", 3, 10)
    for role in ("grad_output", "self"):
        assert np.array_equal(tensor_values(a, role), tensor_values(b, role))
    c = Case.from_record(a.to_record())
    assert c == a and isinstance(c, Case) and c.expectation == a.expectation


def test_statuses_per_family(default_suite):
    by = Counter((c.family, c.expected_status) for c in default_suite)
    for family in ("divisible", "nondivisible", "upsampling", "global", "identity", "rank4",
                   "alignment", "exactint", "special", "layout", "rounding", "index"):
        assert by[(family, SUCCESS)] > 0, family
        assert set(s for f, s in by if f == family) == {SUCCESS}, family
    assert set(s for f, s in by if f == "empty") == {PARAM_INVALID}
    assert {s for f, s in by if f == "invalid"} == {PARAM_NULLPTR, PARAM_INVALID, UNSPECIFIED}


def test_products_without_a_windowed_path_draw_global_outputs(default_suite):
    for case in default_suite:
        if case.product in ("atlas-training", "atlas-inference") and case.family != "invalid":
            assert tuple(case.grad_shape[-3:]) in {(1, 1, 1)} or 0 in case.grad_shape, case.id
    fams = {c.family for c in default_suite if c.product == "atlas-training"}
    assert "global" in fams and "layout" in fams and "upsampling" not in fams


def test_every_rule_of_the_contract_is_probed(default_suite):
    for product in contract.PRODUCTS:
        rules = {c.expectation.rule for c in default_suite
                 if c.product == product and c.family in ("invalid", "empty")}
        want = {"1-nullptr", "2-rank", "2-empty", "2-out-shape", "2-leading-dims",
                "3-dtype", "3-product-dtype", "4-format", "unspecified"}
        if product == "atlas-training":
            want.add("5-global-only")
        assert want <= rules, (product, want - rules)
    reasons = " ".join(c.expectation.reason for c in default_suite)
    for text in ("format NCHW is not documented", "format NDHWC is not documented",
                 "NCDHW on a rank-4 tensor", "dtype float64 is not documented",
                 "no kernel for a non-1x1x1 output", "bfloat16 not supported on "
                 "atlas-training"):
        assert text in reasons, text


def test_rank4_family_is_cdhw_with_nd(default_suite):
    rank4 = [c for c in default_suite if c.family == "rank4"]
    assert rank4 and all(len(c.self_shape) == 4 and c.format == "ND" for c in rank4)
    assert any(len(c.self_shape) == 4 for c in default_suite if c.family == "divisible")


def test_index_family_crosses_2_24_on_every_axis():
    cases = suite(count=3, names=("index",))
    crossing = set()
    for case in cases:
        for axis in range(3):
            i_size, o_size = case.self_shape[-3 + axis], case.grad_shape[-3 + axis]
            if i_size * o_size > 2**24:
                crossing.add(axis)
    assert crossing == {0, 1, 2}


def test_alignment_varies_n_times_c_around_8_and_16(default_suite):
    ncs = {math.prod(c.self_shape[:-3]) for c in default_suite if c.family == "alignment"}
    assert {15, 16, 17} & ncs and {7, 8, 9, 31, 32, 33} & ncs
    stress = families.shape_case("stress", "atlas-a2", "float16", "NCDHW", 0, 0)
    assert stress is not None and stress.self_shape[1] in NC_LARGE
    assert "stress" not in families.DEFAULT_FAMILIES


def test_layout_family_cycles_through_every_layout(default_suite):
    layouts = {c.layout for c in default_suite if c.family == "layout"}
    assert layouts == set(families.LAYOUT_CYCLE)
    assert all(c.self_shape[-4] > 1 for c in default_suite
               if c.family == "layout" and len(c.self_shape) == 5)


def test_exact_int_terms_give_an_exact_golden():
    case = families.shape_case("exactint", "atlas-a2", "float16", "NCDHW", 0, 4)
    assert case is not None
    grad = tensor_values(case, "grad_output").astype(np.float64)
    p = plans(tuple(case.grad_shape[-3:]), tuple(case.self_shape[-3:]))
    vol = np.multiply.outer(np.multiply.outer(p[0].sizes, p[1].sizes), p[2].sizes)
    terms = grad / vol
    assert np.array_equal(terms, np.round(terms)) and np.abs(terms).max() <= 2
    golden = backward(grad, tuple(case.self_shape[-3:]))
    assert np.array_equal(golden, np.round(golden))


def test_special_family_rotates_over_the_special_distributions(default_suite):
    dists = {c.distribution for c in default_suite if c.family == "special"}
    assert dists == set(families.SPECIAL_DISTS)
    case = next(c for c in default_suite if c.distribution == "inf-fill")
    assert np.all(np.isinf(tensor_values(case, "grad_output").astype(np.float64)))


def test_values_are_in_the_tensor_dtype_and_other_dtypes_draw_plain_numbers():
    case = Case("x", "t", "atlas-a2", "bfloat16", "NCDHW", (1, 2, 3, 3, 3), (1, 2, 2, 2, 2), 5)
    assert tensor_values(case, "grad_output").dtype == FLOAT_FORMATS["bfloat16"].np_dtype
    wrong = case.replace(dtype="int32")
    vals = tensor_values(wrong, "self")
    assert vals.dtype == np.int32 and vals.shape == (1, 2, 3, 3, 3)
    assert tensor_values(case.replace(dtype="float64"), "self").dtype == np.float64


def test_ties_need_an_identity_d_axis():
    case = families.shape_case("rounding", "atlas-a2", "float16", "NCDHW", 0, 0)
    assert case is not None and case.distribution == "ties"
    assert case.self_shape[-3] == case.grad_shape[-3]
    # a shrunk or hand-written case without the layout falls back to exact integers
    other = case.replace(self_shape=case.self_shape[:-3] + (case.grad_shape[-3] + 1,)
                         + case.self_shape[-2:])
    vals = tensor_values(other, "grad_output")
    assert vals.shape == tuple(other.grad_shape)


def test_ids_and_tags():
    assert shape_tag((2, 3, 4, 5, 6)) == "n2c3d4h5w6" and shape_tag((3, 4, 5, 6)) == "c3d4h5w6"
    assert shape_tag((2, 3)) == "s2x3"
    assert make_id("atlas-a2", "bfloat16", "NCDHW", "nondiv0", (2, 3, 5, 7, 9),
                   (2, 3, 3, 4, 5), "normal") == "a2-bf16-NCDHW-nondiv0-n2c3d5h7w9-o3x4x5-normal"
    assert make_id("atlas-training", "float16", "ND", "layout1", (3, 4, 5, 6), (3, 1, 1, 1),
                   "small", "channels_last").endswith("-o1x1x1-small-cl")
