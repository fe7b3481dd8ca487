"""What the seam learned for the max-pooling operator, each generic piece proven on its
own: calls made only in a worker (Expectation.isolated_only), stored results judged like
any outcome, a record's own text fields read from case files, integer input roles in the
product-rule test, the PyTorch note for converted indices, the tolerance table's wording."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from aclcheck.cases.call import Capabilities, Outcome
from aclcheck.cli import cli
from aclcheck.errors import SuiteError
from aclcheck.impls.reference import ReferenceImpl
from aclcheck.judging.case.judge import JudgeOptions, judge
from aclcheck.judging.case.verdicts import Verdict
from aclcheck.ops import operator
from aclcheck.ops.adaptive_max_pool2d_backward import families
from aclcheck.ops.materialize import make_tensors
from aclcheck.running.runner import Prepared, prepare
from aclcheck.suite.casefile import parse_case_entries

OP = operator("ampool2d-bwd")


def _bad_case():
    case = families.shape_case("badindex", "atlas-a2", "float32", "NCHW", 0, 0)
    assert case is not None and case.expectation.isolated_only
    return case


class _Library(ReferenceImpl):
    """An adapter handed over as an object: it makes calls, nothing rebuilds it."""

    spec = ""


class _Stored(ReferenceImpl):
    """Outcomes read from a file: the board made the calls."""

    spec = ""
    makes_calls = False


def _prepare(impl: ReferenceImpl, case):
    runner = SimpleNamespace(impl=impl, opts=SimpleNamespace(judge=JudgeOptions()))
    return prepare(runner, make_tensors(case), Capabilities.of(impl))  # type: ignore[arg-type]


def test_a_call_made_only_in_a_worker_is_skipped_by_an_adapter_without_one() -> None:
    got = _prepare(_Library(), _bad_case())
    assert not isinstance(got, Prepared) and got.verdict == Verdict.SKIP
    assert "worker" in got.message


def test_stored_results_of_such_a_call_are_judged() -> None:
    assert isinstance(_prepare(_Stored(), _bad_case()), Prepared)


def test_a_crash_is_recorded_only_where_no_check_reads_the_values() -> None:
    bad = _bad_case()
    model = OP.model(bad, None)
    v = judge(model, make_tensors(bad), Outcome(crashed="worker killed by SIGSEGV"),
              Capabilities.of(ReferenceImpl()), JudgeOptions())
    assert v.verdict == Verdict.PASS and "crashed" in v.message
    three = operator("aapool3d-bwd")  # an undocumented format: a crash is an ERROR
    other = next(c for c in three.invalid_cases("atlas-a2", ("float32",), ("NCDHW",), 0, 0)
                 if c.expectation.unspecified)
    assert not other.expectation.isolated_only
    model = three.model(other, None)
    v = judge(model, make_tensors(other), Outcome(crashed="worker killed by SIGSEGV"),
              Capabilities.of(ReferenceImpl()), JudgeOptions())
    assert v.verdict == Verdict.ERROR


def test_a_case_file_sets_the_index_choice_and_refuses_an_unknown_one() -> None:
    entry = {"product": "atlas-a2", "dtype": "float16", "format": "NCHW",
             "self_shape": [1, 2, 5, 5], "grad_shape": [1, 2, 2, 2],
             "index_choice": "out-of-plane", "indices_dtype": "int32"}
    (case,) = parse_case_entries([entry], "t.toml", op=OP.name)
    assert case.index_choice == "out-of-plane" and case.tensor_desc("indices").dtype == "int32"
    assert case.expectation.unspecified and case.expectation.isolated_only
    with pytest.raises(SuiteError, match="index_choice"):
        parse_case_entries([dict(entry, index_choice="anywhere")], "t.toml", op=OP.name)


def test_integer_indices_leave_a_product_dtype_rule_to_the_products() -> None:
    """On a product without the operator every call is a product rule: an adapter that
    models no product skips it (its INT64 indices are not a second compute dtype)."""
    from aclcheck.judging.case.expressible import not_expressible

    case = next(c for c in families.invalid_cases("atlas-training", ("float32",), ("NCHW",),
                                                  0, 0))
    caps = Capabilities.of(SimpleNamespace(name="fw", has_status_codes=False,
                                           models_products=False, dtypes=None,
                                           products=None, makes_calls=True))
    assert "product rule" in (not_expressible(OP.model(case, None), caps) or "")


def test_pytorch_says_it_converted_int32_indices(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    suite, report = tmp_path / "s.h5", tmp_path / "r.json"
    run = CliRunner().invoke(cli, ["generate", "--op", OP.name, "-o", str(suite), "--family",
                                   "divisible", "--product", "atlas-a2", "--dtype",
                                   "float32", "--count", "2"])
    assert run.exit_code == 0, run.output
    run = CliRunner().invoke(cli, ["verify", str(suite), "--impl", "torch", "--json",
                                   str(report), "--no-stale-check"])
    assert run.exit_code == 0, run.output
    cases = json.loads(report.read_text())["cases"]
    by_int32 = {c["id"].endswith("-i32"): c for c in cases}
    assert set(by_int32) == {True, False}
    assert any("converted from INT32" in n for n in by_int32[True]["notes"])
    assert not any("INT32" in n for n in by_int32[False]["notes"])


def test_the_tolerance_table_says_the_scatter_has_no_scale() -> None:
    run = CliRunner().invoke(cli, ["tolerances", "--op", OP.name, "--standard", "aclcheck"])
    assert run.exit_code == 0, run.output
    assert "no scale" in run.output and "fill 1/(" not in run.output
    assert "float64" not in run.output.split("every element")[0]


def test_a_failing_case_gets_evidence_of_where_its_errors_sit() -> None:
    """The diagnosis hooks (ops/adaptive/evidence.py): a store instead of an add is
    wrong only where windows overlap, and the evidence says so."""
    from aclcheck.judging.diagnosis.codes import DiagnosisCode
    from aclcheck.ops.adaptive_max_pool2d_backward.record import Case
    from tests import kernels_maxpool as K

    # H: 7 over 3 (rows 2 and 4 shared), W: identity: a minority of positions shared
    case = Case("shared", "shared", "atlas-a2", "float32", "NCHW", (1, 2, 7, 5),
                (1, 2, 3, 5), 11, "uniform", index_choice="overlap")
    data = make_tensors(case)
    v = data.values()
    out = K.store_not_add(v["grad_output"], v["self"], v["indices"])
    ev = OP.diagnosis.evidence(data, out)
    assert ev.judged and DiagnosisCode.OVERLAP_ONLY in {f.code for f in ev.findings}
    assert OP.diagnosis.evidence(data, K.correct(v["grad_output"], v["self"],
                                                 v["indices"])).findings == ()


def test_the_ci_suite_reaches_every_hardware_edge_of_a_default_suite() -> None:
    """`inspect --coverage --require-edges` on the committed suite: every edge of §5 but
    the stress family's is reached, and the stress edge is marked on request."""
    from aclcheck.store.dispatch import open_golden

    golden = Path(__file__).resolve().parent.parent / "golden" / "ci-suite-maxpool.h5"
    with open_golden(golden) as g:
        cases = [g.case(i) for i in g.ids()]
    cov = OP.coverage(cases)
    assert cov.lost() == ()
    assert [e.label for e in cov.missing()] == [
        "non-divisible, indices near 2^24 (H·W > 2^24 - 2^12)"]
    assert all(e.on_request for e in cov.missing())
    labels = {e.label for e in cov.edges if e.covered}
    assert {"divisible, window past the UB bound: scatter kernel",
            "non-divisible, window past 11x11: scatter-overlap kernel"} <= labels


@pytest.mark.parametrize(("kernel", "dtype", "code"), [
    ("store_not_add", "float32", "shared-store"),
    ("dtype_accumulation", "float16", "accumulate-input-dtype"),
    ("dtype_accumulation", "bfloat16", "accumulate-input-dtype"),
    ("window_relative", "float32", "index-window-relative"),
])
def test_each_what_if_model_names_its_broken_kernel(kernel: str, dtype: str,
                                                    code: str) -> None:
    from aclcheck.ops.adaptive_max_pool2d_backward.record import Case
    from tests import kernels_maxpool as K

    case = Case("m", "shared", "atlas-a2", dtype, "NCHW", (2, 3, 7, 5), (2, 3, 3, 4), 5,
                "uniform", index_choice="overlap")
    data = make_tensors(case)
    v = data.values()
    out = getattr(K, kernel)(v["grad_output"], v["self"], v["indices"])
    ev = OP.diagnosis.evidence(data, out)
    exact = {m.code.value for m in ev.models if m.exact}
    assert exact == {code}, ev.models
    right = OP.diagnosis.evidence(data, K.correct(v["grad_output"], v["self"], v["indices"]))
    assert right.models == () and right.findings == ()
