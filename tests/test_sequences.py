"""The sequence stage of `verify` (aclcheck.running.sequences, docs/verify.md "Call
sequences"): deliberately stateful kernels (tests/kernels_stateful.py) pass a small suite
on their own and with the stale-state check off, fail with the stage on (the finding
depends-on-earlier-calls, a repro naming the predecessor with --after), and the repro
fails the same way; correct kernels pass with it on; the sample is deterministic and
bounded by --sequences; predecessors are valid calls of the kind asked."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cases import Case
from aclcheck.cli import cli
from aclcheck.dtypes import FLOAT_FORMATS
from aclcheck.judging.case.hints import HintCode
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.ops import operator_of
from aclcheck.options import SEQUENCES, Predecessor
from aclcheck.running import sequences
from aclcheck.running.config import VerifyConfig
from aclcheck.store.dispatch import open_golden
from tests import kernels_stateful

DEPENDS = HintCode.DEPENDS_ON_EARLIER_CALLS.value
#: isolation of each kernel's runs: in one process where its repro meets the same state;
#: the workspace kernel's sums outlive one sequence, so only a fresh worker per
#: sequence (isolated runs) keeps one case's sequence from another's
ISOLATION = {"dtype_blind_plan": "--no-isolate", "grad_keyed_plan": "--no-isolate",
             "reused_workspace": "--isolate", "sticky_ftz": "--no-isolate"}


def _generate(folder: Path, *args: str) -> Path:
    path = folder / "suite.h5"
    res = CliRunner().invoke(cli, ["generate", "-o", str(path), *args])
    assert res.exit_code == 0, res.output
    return path


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Atlas A2, divisible and nondivisible: 18 valid cases, every shape its own."""
    return _generate(tmp_path_factory.mktemp("sequences"), "--product", "atlas-a2",
                     "--family", "divisible", "--family", "nondivisible")


@pytest.fixture(autouse=True)
def fresh_kernels() -> Iterator[None]:
    """In-process runs share the kernels' module: each test starts from no state."""
    kernels_stateful.reset()
    yield
    kernels_stateful.reset()


def _invoke(args: list[str], report: Path) -> tuple[int, dict]:
    res = CliRunner().invoke(cli, [*args, "--json", str(report)])
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, json.loads(report.read_text())


def _verify(golden: Path, tmp_path: Path, impl: str, *extra: str) -> tuple[int, dict]:
    name = f"{impl.rsplit(':', 1)[-1]}-{'_'.join(extra).replace('-', '')}.json"
    return _invoke(["verify", str(golden), "--impl", impl, *extra], tmp_path / name)


def _sequenced(report: dict) -> list[dict]:
    return [c for c in report["cases"] if "sequence" in c["metrics"]]


# -- the stateful kernels ------------------------------------------------------------------


@pytest.mark.parametrize("kernel", sorted(kernels_stateful.STATEFUL))
def test_a_stateful_kernel_passes_without_the_stage(golden: Path, tmp_path: Path,
                                                    kernel: str) -> None:
    code, report = _verify(golden, tmp_path, f"tests.kernels_stateful:{kernel}",
                           "--sequences", "0", "--no-stale-check", ISOLATION[kernel])
    assert code == 0 and report["summary"]["passed"] == report["summary"]["cases"] == 18


@pytest.mark.parametrize(("kernel", "kind"), sorted(kernels_stateful.STATEFUL.items()))
def test_the_stage_catches_it_and_its_repro_fails_the_same_way(
        golden: Path, tmp_path: Path, kernel: str, kind: str) -> None:
    isolation = ISOLATION[kernel]
    code, report = _verify(golden, tmp_path, f"tests.kernels_stateful:{kernel}",
                           "--no-stale-check", isolation)
    assert code == 1
    found = _sequenced(report)
    assert found, f"{kernel}: the default stage found nothing"
    for case in found:
        assert case["verdict"] in ("FAIL", "ERROR")
        assert case["metrics"]["recall"] == DEPENDS and case["metrics"]["sequence"] == kind
        assert case["message"].startswith("depends on earlier calls")
        assert f"--after {kind} --id" in case["repro"]
    assert [c for c in report["cases"] if c["verdict"] != "PASS"] == found
    # the repro line, rerun: the sequence first, then the case alone
    kernels_stateful.reset()
    words = shlex.split(found[0]["repro"])
    assert words[:2] == ["aclcheck", "verify"]
    code, again = _invoke(words[1:], tmp_path / "repro.json")
    assert code == 1
    [case] = again["cases"]
    assert case["id"] == found[0]["id"] and case["verdict"] == found[0]["verdict"]
    if isolation == "--isolate" or kernel == "sticky_ftz":  # alone really alone
        assert case["metrics"]["recall"] == DEPENDS
        assert case["metrics"]["sequence"] == kind and case["repro"] == found[0]["repro"]


def test_an_isolated_repro_shows_the_finding_of_a_cached_plan(golden: Path,
                                                              tmp_path: Path) -> None:
    """In one process the case alone comes after its sequence (a plan cached there
    stays); isolated, --after makes the sequence in a runner of its own."""
    case_id = "a2-fp32-ND-div0-n3c3h24w16-o6x4-small"
    code, report = _verify(golden, tmp_path, "tests.kernels_stateful:dtype_blind_plan",
                           "--isolate", "--after", "other-dtype", "--id", case_id)
    assert code == 1
    [case] = report["cases"]
    assert case["metrics"]["recall"] == DEPENDS
    assert case["metrics"]["sequence"] == "other-dtype"
    assert case["repro"].count("--after other-dtype") == 1


# -- no false alarm, the sample ------------------------------------------------------------


@pytest.mark.parametrize("impl", ["reference", "tests/kernels_documented.py:documented"])
def test_correct_kernels_pass_with_the_stage_on(golden: Path, tmp_path: Path,
                                                impl: str) -> None:
    extra = ("--no-isolate",) if impl != "reference" else ()
    code, report = _verify(golden, tmp_path, impl, "--sequences", "18", *extra)
    assert code == 0 and not _sequenced(report)
    assert report["summary"]["passed"] == 18


def test_the_stage_makes_its_calls_within_the_sample(golden: Path, tmp_path: Path) -> None:
    impl = "tests.kernels_stateful:counted"
    seen: list[list[tuple]] = []
    for n in (0, 1, 3, 3):
        kernels_stateful.reset()
        code, _ = _verify(golden, tmp_path, impl, "--sequences", str(n), "--no-isolate",
                          "--no-stale-check")
        assert code == 0
        seen.append(list(kernels_stateful.CALLS))
        extra = len(kernels_stateful.CALLS) - 18
        assert (extra == 0) if n == 0 else (2 <= extra <= 2 * len(Predecessor) * n)
        if n == 1:  # the one case, after each of its predecessors (3 for FLOAT16)
            calls = kernels_stateful.CALLS[18:]
            case = calls[1]
            assert len(calls) in (6, 8) and calls[1::2] == [case] * (len(calls) // 2)
            assert {c[2] for c in calls[0::2]} - {case[2]}  # another dtype came first
    assert seen[2] == seen[3]  # the same calls, in the same order, run after run


def _cases(golden: Path) -> list[Case]:
    with open_golden(golden) as gf:
        return [gf.case(e.id) for e in gf.index]


def _offered(cases: list[Case], count: int) -> list[str]:
    sample = sequences.Sample(count)
    for at, case in enumerate(cases):
        sample.offer(case, at, CaseVerdict(case.id, Verdict.PASS, ""))
    return [c.case.id for c in sample.chosen()]


def test_the_sample_is_deterministic_bounded_and_spread(golden: Path) -> None:
    cases = _cases(golden)
    assert SEQUENCES.default == 8
    chosen = _offered(cases, 8)
    assert chosen == _offered(cases, 8) and len(chosen) == 8
    # the same cases whatever order they come in (their positions kept)
    back = sequences.Sample(8)
    for at, case in reversed(list(enumerate(cases))):
        back.offer(case, at, CaseVerdict(case.id, Verdict.PASS, ""))
    assert [c.case.id for c in back.chosen()] == chosen
    for n in (0, 1, 3, 100):
        assert len(_offered(cases, n)) == min(n, len(cases))
    three = {c.dtype for c in cases if c.id in _offered(cases, 3)}
    assert three == {"float16", "float32", "bfloat16"}  # every dtype first
    # failing alone is offered; errors, skips and cases already found are not
    sample = sequences.Sample(8)
    for at, (case, verdict) in enumerate(zip(cases, (
            CaseVerdict("", Verdict.ERROR, ""), CaseVerdict("", Verdict.SKIP, ""),
            CaseVerdict("", Verdict.FAIL, "", metrics={"recall": DEPENDS}),
            CaseVerdict("", Verdict.FAIL, "")), strict=False)):
        sample.offer(case, at, verdict)
    assert [c.at for c in sample.chosen()] == [3]


def test_the_stage_is_off_for_stored_results_and_no_count() -> None:
    assert not sequences.Sample.of(VerifyConfig(golden="g.h5", results="r.h5"), {}).count
    assert sequences.Sample.of(VerifyConfig(golden="g.h5", sequences=0), {}).count == 0
    after = VerifyConfig(golden="g.h5", after="larger")
    assert sequences.Sample.of(after, {}).only == frozenset()


def test_after_with_stored_results_is_a_usage_error(golden: Path) -> None:
    res = CliRunner().invoke(cli, ["verify", str(golden), "--results", str(golden),
                                   "--after", "larger"])
    assert res.exit_code == 2 and "--after" in res.output


# -- the predecessors -----------------------------------------------------------------------


def _spatial(case: Case) -> tuple[int, ...]:
    return case.tensor_desc("self").shape[-operator_of(case).spatial_rank:]


def _check_predecessors(case: Case) -> None:
    grad, self_ = (case.tensor_desc(r.name) for r in case.inputs())
    rules = operator_of(case).products[case.product]
    for kind in Predecessor:
        pred = sequences.predecessor(case, kind)
        if kind is Predecessor.FP16_SUBNORMALS and case.dtype == "float16":
            assert pred is None
            continue
        assert pred is not None, (case.id, kind)
        assert pred.positive and pred.layout == case.layout and pred.id != case.id
        p_grad, p_self = (pred.tensor_desc(r.name) for r in pred.inputs())
        if kind is Predecessor.OTHER_DTYPE:
            assert (p_grad.shape, p_self.shape) == (grad.shape, self_.shape)
            others = [d for d in rules.dtypes if d != case.dtype]
            narrowest = min(others, key=lambda d: FLOAT_FORMATS[d].precision)
            assert pred.dtype == narrowest
        elif kind is Predecessor.OTHER_SELF:
            assert p_grad.shape == grad.shape and p_self.shape != self_.shape
            assert pred.dtype == case.dtype
        elif kind is Predecessor.LARGER:
            assert p_grad.shape == grad.shape and pred.dtype == case.dtype
            assert _spatial(pred) == tuple(2 * s for s in _spatial(case))
        else:
            assert pred.dtype == "float16" and pred.distribution == "subnormal"
            values = operator_of(pred).values(pred, "grad_output").astype(np.float64)
            assert np.all(np.abs(values) < FLOAT_FORMATS["float16"].smallest_normal)


def test_predecessors_are_valid_calls_of_their_kind(golden: Path,
                                                   tmp_path: Path) -> None:
    cases = [c for c in _cases(golden) if sequences.fits(c)]
    assert len(cases) == 18
    three_d = _generate(tmp_path, "--op", "aapool3d-bwd", "--product", "atlas-a2",
                        "--family", "divisible")
    cases3 = [c for c in _cases(three_d) if sequences.fits(c)]
    assert cases3
    for case in cases + cases3:
        _check_predecessors(case)
    # a call the contract rejects has none; neither has a case too large for the stage
    assert not sequences.fits(cases[0].replace(dtype="int32"))
    big = sequences._resized(cases[0], (512, 512))
    assert big.positive and not sequences.fits(big)


def test_the_changes_are_a_view_of_the_verdicts() -> None:
    base = [CaseVerdict(str(i), Verdict.PASS, "") for i in range(4)]
    new = CaseVerdict("2", Verdict.FAIL, "depends")
    view = sequences.with_changes(base, {2: new})
    assert list(view) == [base[0], base[1], new, base[3]]
    assert view[2] is new and view[-2] is new and view[1:3] == [base[1], new]
    assert len(view) == 4 and sequences.with_changes(base, {}) is base


def test_the_repro_names_the_predecessor_once() -> None:
    cfg = VerifyConfig(golden="s.h5")
    assert cfg.repro("c", "larger") == "aclcheck verify s.h5 --impl reference --after " \
                                       "larger --id c"
    after = VerifyConfig(golden="s.h5", after="larger")
    assert after.repro("c", "larger") == after.repro("c") == cfg.repro("c", "larger")
