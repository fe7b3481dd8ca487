"""The two contracts of every prediction (Call.contract): "doc" leaves the points where
the vendor's documentation page and its code part unspecified; "code" predicts what the
code returns there (docs/contract.md §5 and docs/contract-3d.md §5, "Where the page and
the code part"). Also: negative dims and the rare dtypes in both contracts, doc mode
unchanged on the default suites, `aclcheck generate --contract` and the round trip of
code-mode successes through generate and verify."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cases import Call, Check, Expectation, TensorDesc
from aclcheck.cases.acl import (
    INNER_NULLPTR,
    PARAM_INVALID,
    PARAM_NULLPTR,
    SUCCESS,
    UNSPECIFIED,
)
from aclcheck.cases.record import CONTRACTS
from aclcheck.cli import cli
from aclcheck.ops.adaptive_avg_pool2d_backward import contract as c2
from aclcheck.ops.adaptive_avg_pool3d_backward import contract as c3
from aclcheck.store.dispatch import open_golden
from aclcheck.suite.generate import plan_suite
from aclcheck.suite.selection import Selection, build_suite

OP3 = "adaptive_avg_pool3d_backward"
#: Every divergence kind of the 2D operator's doc contract (its `_divergences`, the
#: negative dim and the assist-matrix limit).
KINDS_2D = ("negative-dim", "out-dtype", "out-shape", "out-format", "undocumented-format",
            "format-rank", "inner-tiling-limit")


def call(product: str, grad: tuple[int, ...], self_: tuple[int, ...], *,
         dtype: str = "float32", fmt: str = "NCHW", contract: str = "doc",
         **over: object) -> Call:
    """A call; per-tensor overrides <grad|self|out>_<dtype|format|shape>."""
    def desc(key: str, shape: tuple[int, ...]) -> TensorDesc:
        return TensorDesc(tuple(over.get(f"{key}_shape", shape)),  # type: ignore[arg-type]
                          str(over.get(f"{key}_dtype", dtype)),
                          str(over.get(f"{key}_format", fmt)))

    return Call(product, {"grad_output": desc("grad", grad), "self": desc("self", self_),
                          "out": desc("out", self_)}, contract)


def both(expect: Callable[[Call], Expectation], c: Call) -> tuple[Expectation, Expectation]:
    """The doc and the code expectation of a call."""
    return expect(Call(c.product, c.tensors, "doc")), expect(Call(c.product, c.tensors, "code"))


# -- 2D: every divergence kind, doc unspecified, code the code's status ----------------------

WIN = ((2, 3, 4, 3), (2, 3, 8, 6))  # (gradOutput, self): a windowed output
ONE = ((2, 3, 1, 1), (2, 3, 8, 6))  # a 1x1 output (the fill path)

#: (kind, call, the code's status, its rule, why): for each kind at least one call whose
#: code prediction is a status the code decides.
DECIDED_2D = [
    ("negative-dim", call("atlas-a2", (2, 3, -1, 3), WIN[1]), PARAM_INVALID,
     "2-negative-dim", "CheckInputDims: gradOutput dim < 0"),
    ("negative-dim", call("atlas-training", WIN[0], (2, 3, 8, -6)), PARAM_INVALID,
     "2-negative-dim", "CheckInputDims: self dim < 0"),
    ("undocumented-format", call("atlas-a2", *WIN, fmt="NHWC"), SUCCESS, "0-valid",
     "vendor UT self_not_support_format: NHWC on 4-D, ACL_SUCCESS"),
    ("undocumented-format", call("atlas-training", *WIN, fmt="NCDHW"), SUCCESS, "0-valid",
     "CheckFormat: equal and not private"),
    ("format-rank", call("atlas-a2", *WIN, fmt="NCL"), SUCCESS, "0-valid",
     "vendor UT self_not_support_format2: NCL on 4-D, ACL_SUCCESS"),
    ("format-rank", call("atlas-a3", (3, 4, 3), (3, 8, 6), fmt="NCHW"), SUCCESS, "0-valid",
     "NCHW on 3-D: the meaning is never read"),
    ("out-format", call("atlas-training", *WIN, out_format="ND"), SUCCESS, "0-valid",
     "matmul path: SetFormat(bmmOut, ND), ViewCopy takes an ND result"),
    ("out-format", call("atlas-a2", (3, 4, 3), (3, 8, 6), fmt="NCL", out_format="ND"),
     SUCCESS, "0-valid", "A2 3-D: Reshape to a lower rank relabels the result ND"),
    ("out-dtype", call("atlas-a2", *WIN, out_dtype="float16"), INNER_NULLPTR,
     "6-view-copy", "ViewCopy: result dtype != out dtype"),
    ("out-dtype", call("atlas-inference", *WIN, out_dtype="float16"), INNER_NULLPTR,
     "6-view-copy", "ViewCopy after the matmuls"),
    ("out-shape", call("atlas-a2", *WIN, out_shape=(2, 3, 9, 6)), INNER_NULLPTR,
     "6-view-copy", "Reshape to out's shape: element counts differ"),
    ("out-shape", call("atlas-training", *WIN, out_shape=(2, 3, 6, 8)), INNER_NULLPTR,
     "6-view-copy", "ViewCopy: view shapes differ"),
    ("out-shape", call("atlas-a2", *ONE, out_shape=(2, 3, 8, 7)), INNER_NULLPTR,
     "6-view-copy", "the 1x1 path's ViewCopy"),
    ("inner-tiling-limit", call("atlas-training", (1, 1, 2**14, 2), (1, 1, 2**15, 4)),
     INNER_NULLPTR, "6-assist-limit", "AssistMatrixInferShape refuses"),
]


@pytest.mark.parametrize(("kind", "c", "status", "rule", "why"), DECIDED_2D,
                         ids=[f"{k}-{i}" for i, (k, *_) in enumerate(DECIDED_2D)])
def test_2d_divergence_kind_doc_unspecified_code_decided(kind, c, status, rule, why):
    doc, code = both(c2.expected_status, c)
    assert doc.status == UNSPECIFIED and kind in doc.kinds, doc
    assert (code.status, code.rule) == (status, rule), (why, code)
    assert not code.unspecified and not code.kinds
    if status == SUCCESS:
        assert any("contract code" in n for n in code.notes)


def test_every_2d_kind_has_a_decided_code_call():
    assert {k for k, *_ in DECIDED_2D} == set(KINDS_2D)


@pytest.mark.parametrize(
    ("c", "fragment"),
    [
        (call("atlas-a2", *ONE, out_dtype="float16"), "casts its result to out's dtype"),
        (call("atlas-a2", *WIN, out_shape=(2, 3, 6, 8)), "row-major"),  # equal counts
        (call("atlas-a2", *WIN, out_format="ND"), "level-0 ops"),
        (call("atlas-a2", (2, 3, 0, 3), (2, 3, 8, 6), out_dtype="float16"), "empty"),
    ],
)
def test_2d_code_unspecified_where_the_code_decides_nothing_aclcheck_judges(c, fragment):
    doc, code = both(c2.expected_status, c)
    assert doc.unspecified and code.unspecified
    assert code.reason.startswith("contract code:") and fragment in code.reason
    assert code.kinds == doc.kinds


def test_2d_private_out_format_is_invalid_by_the_page_unchecked_by_the_code():
    c = call("atlas-a2", *WIN, out_format="FRACTAL_NZ")
    doc, code = both(c2.expected_status, c)
    assert (doc.status, doc.rule) == (PARAM_INVALID, "5-format")
    assert code.unspecified and "out-format" in code.kinds
    # an empty call never reaches ViewCopy: the code returns 0
    empty = call("atlas-a2", (2, 3, 0, 3), (2, 3, 8, 6), out_format="FRACTAL_NZ")
    assert both(c2.expected_status, empty)[1].status == SUCCESS


def test_2d_valid_calls_and_documented_rejections_are_the_same_in_both_contracts():
    for c in (call("atlas-a2", *WIN), call("atlas-training", *ONE, dtype="float16"),
              call("atlas-a3", (2, 3, 0, 3), (2, 3, 8, 6)),  # empty: 0, out not written
              call("atlas-training", *WIN, dtype="bfloat16"),
              call("atlas-a2", WIN[0][1:], WIN[1]),  # rank
              call("atlas-a2", (2, 4, 4, 3), WIN[1])):  # leading dims
        doc, code = both(c2.expected_status, c)
        assert (doc.status, doc.rule, doc.unwritten) == (code.status, code.rule,
                                                         code.unwritten)
    nulled = Call("atlas-a2", {"grad_output": None, "self": None, "out": None}, "code")
    assert c2.expected_status(nulled).status == PARAM_NULLPTR


# -- negative dims and the rare dtypes, both contracts ---------------------------------------


def test_2d_negative_dim_decided_by_a_later_documented_rule_in_doc():
    # a negative dim and a dtype the product lacks: the page's dtype rule decides (161002)
    c = call("atlas-training", (2, 3, -1, 3), WIN[1], dtype="bfloat16")
    doc, code = both(c2.expected_status, c)
    assert (doc.status, doc.rule) == (PARAM_INVALID, "4-dtype")
    assert (code.status, code.rule) == (PARAM_INVALID, "2-negative-dim")
    # the code checks negative dims before the out rank (rule 2, then 3)
    c = call("atlas-a2", (2, 3, -1, 3), WIN[1], out_shape=(3, 8, 6))
    assert both(c2.expected_status, c)[1].rule == "2-negative-dim"
    # a negative H of out alone: no check of its own, an out-shape call
    doc, code = both(c2.expected_status, call("atlas-a2", *WIN, out_shape=(2, 3, -8, 6)))
    assert doc.kinds == ("out-shape",) and code.status == INNER_NULLPTR


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_rare_dtypes_are_invalid_in_both_contracts(dtype):
    for contract in CONTRACTS:
        e2 = c2.expected_status(call("atlas-a2", *WIN, dtype=dtype, contract=contract))
        assert (e2.status, e2.rule) == (PARAM_INVALID, "4-dtype")
        e3 = c3.expected_status(call("atlas-a2", (2, 2, 1, 1, 1), (2, 2, 2, 2, 2),
                                     dtype=dtype, fmt="ND", contract=contract))
        assert (e3.status, e3.rule) == (PARAM_INVALID, "3-product-dtype")


@pytest.mark.parametrize(
    ("grad", "self_"),
    [((2, 2, -1, 1, 1), (2, 2, 2, 2, 2)),  # vendor UT gradoutput_dim_invalid_24
     ((2, 2, 1, 1, 1), (2, 2, -1, 4, 1)),  # vendor UT self_dim_invalid_25
     ((-2, 2, 1, 1, 1), (2, 2, 2, 2, 2))],  # a leading dim: unequal to self's
)
def test_3d_negative_dims_are_invalid_in_both_contracts(grad, self_):
    for contract in CONTRACTS:
        e = c3.expected_status(call("atlas-a2", grad, self_, fmt="ND", contract=contract))
        assert e.status == PARAM_INVALID and e.check == Check.SHAPE
        assert "negative" in e.reason or "leading" in e.reason


# -- 3D: every divergence kind -----------------------------------------------------------


def _grid_3d() -> list[Call]:
    """Calls over products, dtypes, formats, ranks and output kinds (1x1x1 or not)."""
    from aclcheck.cases.acl import ALL_FORMATS
    from aclcheck.dtypes import ALL_DTYPES

    calls = []
    for prod, dtype, fmt, rank, glob in itertools.product(
            c3.PRODUCTS, ALL_DTYPES, ALL_FORMATS, (4, 5), (True, False)):
        grad = ((2, 2, 1, 1, 1) if glob else (2, 2, 1, 1, 2))[-rank:]
        calls.append(call(prod, grad, (2, 2, 3, 3, 3)[-rank:], dtype=dtype, fmt=fmt))
    return calls


def test_3d_every_divergence_kind_code_follows_the_implementation():
    kinds: dict[str, set[int]] = {}
    for c in _grid_3d():
        doc, code = both(c3.expected_status, c)
        if not doc.unspecified:
            assert (code.status, code.rule) == (doc.status, doc.rule)
            continue
        tensors = [c[r.name] for r in c3.ROLES]
        impl = c3.implementation(c.product, *tensors)  # type: ignore[arg-type]
        want = UNSPECIFIED if impl.status is None else impl.status
        assert code.status == want, (c, code)
        if impl.status is not None:
            assert code.rule == impl.rule and code.check == c3.RULE_CHECKS[impl.rule]
        kinds.setdefault(doc.kinds[0], set()).add(code.status)
    decided = {k for k, statuses in kinds.items() if "implementation unspecified" not in k}
    assert {k for k in kinds if "implementation unspecified" in k} == {
        "documentation 0-valid, implementation unspecified",
        "documentation 4-format, implementation unspecified",
        "documentation unspecified, implementation unspecified",
        "documentation 3-product-dtype, implementation unspecified"}
    assert decided == {
        "documentation 3-product-dtype, implementation 0-valid",  # DOUBLE, 1x1x1
        "documentation 0-valid, implementation 3-product-dtype",  # BF16, training/inference
        "documentation unspecified, implementation 3-product-dtype",
        "documentation 4-format, implementation 0-valid",  # NCHW, NDHWC, ...
        "documentation unspecified, implementation 0-valid",  # NCDHW on 4-D
        "documentation unspecified, implementation 5-global-only"}
    for kind in decided:
        assert UNSPECIFIED not in kinds[kind], kind


@pytest.mark.parametrize(
    ("product", "grad", "dtype", "fmt", "status"),
    [
        ("atlas-a2", (2, 2, 1, 1, 1), "float64", "ND", SUCCESS),  # UT dtype_allone_support_11
        ("atlas-a3", (2, 2, 1, 1, 1), "float64", "ND", SUCCESS),
        ("atlas-training", (2, 2, 1, 1, 1), "float64", "ND", SUCCESS),
        ("atlas-inference", (2, 2, 1, 1, 1), "float64", "ND", SUCCESS),
        ("atlas-training", (2, 2, 1, 1, 1), "bfloat16", "ND", PARAM_INVALID),
        ("atlas-inference", (2, 2, 1, 1, 1), "bfloat16", "ND", PARAM_INVALID),
        ("atlas-a2", (2, 2, 1, 1, 2), "float32", "NDHWC", SUCCESS),
        ("atlas-a3", (2, 2, 1, 1, 2), "float16", "NCHW", SUCCESS),
        ("atlas-inference", (2, 2, 1, 1, 2), "float32", "ND", UNSPECIFIED),  # no kernel
    ],
)
def test_3d_known_points(product, grad, dtype, fmt, status):
    doc, code = both(c3.expected_status, call(product, grad, (2, 2, 2, 2, 2), dtype=dtype,
                                              fmt=fmt))
    assert doc.unspecified
    assert code.status == status
    if status == UNSPECIFIED:
        assert code.reason.startswith("contract code:") and "no kernel" in code.reason
    else:
        assert any("contract code" in n for n in code.notes)


def test_3d_ncdhw_label_on_4d_follows_the_implementation():
    c = call("atlas-a2", (2, 1, 1, 2), (2, 2, 2, 2), fmt="NCDHW")
    doc, code = both(c3.expected_status, c)
    assert doc.unspecified and code.status == SUCCESS


# -- doc mode unchanged on the default suites ------------------------------------------------


@pytest.mark.parametrize("op", ["adaptive_avg_pool2d_backward", OP3])
def test_default_suites_doc_mode_unchanged(op):
    for case in build_suite(Selection(op=op)):
        assert case.contract is None
        doc = case.replace(contract="doc").expectation
        assert case.expectation == doc, case.id
        code = case.replace(contract="code").expectation
        if not doc.unspecified:  # code mode changes only what the page leaves open
            assert (code.status, code.rule, code.reason) == (doc.status, doc.rule,
                                                             doc.reason), case.id


def test_following_keeps_a_case_own_and_leaves_doc_unset():
    case = build_suite(Selection(count=1, families=("divisible",)))[0]
    assert case.following("doc") is case
    coded = case.following("code")
    assert coded.contract == "code" and coded.id == case.id
    mine = case.replace(contract="doc")
    assert mine.following("code") is mine


def test_plan_suite_threads_the_contract_to_streamed_suites():
    plan = plan_suite(products=("atlas-a2",), families=("invalid",), contract="code")
    cases = list(plan.cases)
    assert cases and all(c.contract == "code" for c in cases)
    assert plan.selection["contract"] == "code"
    assert "contract" not in plan_suite(products=("atlas-a2",), families=("invalid",)).selection


# -- the CLI -------------------------------------------------------------------------------

CASES_2D = '''
[[cases]]
id = "nhwc4d"
product = "atlas-a2"
dtype = "float32"
format = "NHWC"
self_shape = [2, 2, 5, 4]
grad_shape = [2, 2, 4, 3]

[[cases]]
id = "ncl4d-training"
product = "atlas-training"
dtype = "float16"
format = "NCL"
self_shape = [2, 2, 5, 4]
grad_shape = [2, 2, 4, 3]

[[cases]]
id = "out-nd-training"
product = "atlas-training"
dtype = "float32"
format = "NCHW"
out_format = "ND"
self_shape = [2, 2, 5, 4]
grad_shape = [2, 2, 4, 3]

[[cases]]
id = "nhwc4d-doc"
product = "atlas-a3"
dtype = "bfloat16"
format = "NHWC"
self_shape = [1, 3, 6, 6]
grad_shape = [1, 3, 4, 4]
contract = "doc"
'''


def generate(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["generate", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


def test_cli_contract_option_sets_records_and_statuses(tmp_path: Path):
    cases_file = tmp_path / "cases.toml"
    cases_file.write_text(CASES_2D)
    doc_out, code_out = tmp_path / "doc.h5", tmp_path / "code.h5"
    assert generate("--cases-file", str(cases_file), "-o", str(doc_out))[0] == 0
    code, output = generate("--cases-file", str(cases_file), "-o", str(code_out),
                            "--contract", "code")
    assert code == 0, output
    with open_golden(doc_out) as gf:
        assert gf.case("nhwc4d").contract is None
        assert gf.entry("nhwc4d").expected_status == UNSPECIFIED
        assert not gf.entry("nhwc4d").has_golden
        assert "--contract" not in gf.meta["command_line"]
    with open_golden(code_out) as gf:
        for cid in ("nhwc4d", "ncl4d-training", "out-nd-training"):
            assert gf.case(cid).contract == "code"
            assert gf.entry(cid).expected_status == SUCCESS and gf.entry(cid).has_golden
        # the file's own key wins over the option
        assert gf.case("nhwc4d-doc").contract == "doc"
        assert gf.entry("nhwc4d-doc").expected_status == UNSPECIFIED
        assert "--contract code" in gf.meta["command_line"]


def test_cli_contract_default_suite_and_bad_value(tmp_path: Path):
    out = tmp_path / "code.h5"
    code, output = generate("-o", str(out), "--contract", "code", "--product", "atlas-a2",
                            "--family", "invalid")
    assert code == 0, output
    with open_golden(out) as gf:
        contracts = {gf.case(cid).contract for cid in gf.ids()}
        nhwc = [e for e in gf.index if e.format == "NHWC" and e.family == "invalid"]
    assert contracts == {"code"}
    assert nhwc and all(e.expected_status == SUCCESS for e in nhwc)
    code, output = generate("-o", str(tmp_path / "x.h5"), "--contract", "spec")
    assert code == 2 and "spec" in output


def test_help_names_the_contract_option():
    res = CliRunner().invoke(cli, ["generate", "--help"])
    assert res.exit_code == 0 and "--contract [doc|code]" in res.output
    assert "--contract code" in res.output  # an example


# -- the round trip of code-mode successes -------------------------------------------------


def verify(path: Path, *args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["verify", str(path), "--impl", "reference", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


def test_round_trip_code_successes_2d(tmp_path: Path):
    cases_file = tmp_path / "cases.toml"
    cases_file.write_text(CASES_2D.replace('contract = "doc"', 'contract = "code"'))
    out = tmp_path / "g.h5"
    assert generate("--cases-file", str(cases_file), "-o", str(out), "--force",
                    "--contract", "code")[0] == 0
    code, output = verify(out)
    assert code == 0, output
    assert "passed: 4" in output and "error: 0" in output


CASES_3D = '''
[[cases]]
id = "ndhwc-windowed"
product = "atlas-a2"
dtype = "float32"
format = "NDHWC"
self_shape = [2, 2, 2, 2, 2]
grad_shape = [2, 2, 1, 1, 2]
contract = "code"

[[cases]]
id = "fp64-global"
product = "atlas-a2"
dtype = "float64"
format = "ND"
self_shape = [2, 2, 2, 2, 2]
grad_shape = [2, 2, 1, 1, 1]
contract = "code"
'''


def test_round_trip_code_successes_3d_golden(tmp_path: Path):
    cases_file = tmp_path / "cases.toml"
    cases_file.write_text(CASES_3D)
    out = tmp_path / "g3.h5"
    code, output = generate("--op", "aapool3d-bwd", "--cases-file", str(cases_file),
                            "-o", str(out), "--force")
    assert code == 0, output
    with open_golden(out) as gf:
        for cid in ("ndhwc-windowed", "fp64-global"):
            assert gf.entry(cid).expected_status == SUCCESS and gf.entry(cid).has_golden
        golden = gf.golden("fp64-global")
    assert golden is not None and golden.shape == (2, 2, 2, 2, 2)
    code, output = verify(out, "--id", "ndhwc-windowed")
    assert code == 0, output


def test_round_trip_code_success_3d_float64_verify(tmp_path: Path):
    cases_file = tmp_path / "cases.toml"
    cases_file.write_text(CASES_3D)
    out = tmp_path / "g3.h5"
    assert generate("--op", "aapool3d-bwd", "--cases-file", str(cases_file), "-o",
                    str(out), "--force")[0] == 0
    code, output = verify(out, "--id", "fp64-global")
    assert code == 0, output
    assert "passed: 1" in output and "error: 0" in output, output


#: DOUBLE 1x1x1 calls whose factor 1/(D*H*W) is inexact in float32 and float16, W > 1
CASES_3D_FP64 = '''
[[cases]]
id = "a2-105"
product = "atlas-a2"
dtype = "float64"
format = "ND"
self_shape = [2, 3, 3, 5, 7]
grad_shape = [2, 3, 1, 1, 1]
contract = "code"

[[cases]]
id = "train-1001"
product = "atlas-training"
dtype = "float64"
format = "NCDHW"
self_shape = [4, 7, 11, 13]
grad_shape = [4, 1, 1, 1]
contract = "code"
'''


@pytest.fixture
def fp64_golden(tmp_path: Path) -> Path:
    cases_file = tmp_path / "fp64.toml"
    cases_file.write_text(CASES_3D_FP64)
    out = tmp_path / "fp64.h5"
    assert generate("--op", "aapool3d-bwd", "--cases-file", str(cases_file), "-o",
                    str(out), "--force")[0] == 0
    return out


def verify_with(path: Path, impl: str, *args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["verify", str(path), "--impl", impl, "--no-isolate",
                                   *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


@pytest.mark.parametrize(("kernel", "passes"), [
    ("double_global", True),  # the vendor's path: fl32(1/(D*H*W)) widened, one rounding
    ("double_exact_factor", True),  # the exact double factor
    ("double_three_divisions", True),  # PyTorch CPU's g / D / H / W
    ("double_fp16_factor", False),  # deliberately wrong: a float16 factor
    ("double_dh_divisor", False),  # deliberately wrong: 1/(D*H), W forgotten
])
def test_float64_verdicts_follow_the_derived_budget(fp64_golden: Path, kernel: str,
                                                    passes: bool):
    code, output = verify_with(fp64_golden, f"tests.kernels3d:{kernel}")
    if passes:
        assert code == 0 and "passed: 2" in output, output
    else:
        assert code == 1 and "failed: 2" in output and "global-1x1x1 path" in output, output


def test_float64_under_standards_without_float64_numbers(fp64_golden: Path):
    code, output = verify_with(fp64_golden, "reference", "--standard", "cann-mixed")
    assert "skipped: 2" in output and "cann-mixed has no float64 numbers" in output, output
    assert code == 1 and "no case was judged" in output, output  # refused, not passed
    code, output = verify_with(fp64_golden, "tests.kernels3d:double_dh_divisor",
                               "--standard", "assert-close", "--standard", "msprobe-ulp", "-v")
    assert code == 1 and "failed: 2" in output, output  # torch's float64 defaults judge
    assert "not judged: standard msprobe-ulp has no float64 numbers" in output, output


def test_torch_computes_float64_natively(fp64_golden: Path):
    pytest.importorskip("torch")
    code, output = verify_with(fp64_golden, "torch")
    assert code == 0 and "passed: 2" in output and "skipped: 0" in output, output
