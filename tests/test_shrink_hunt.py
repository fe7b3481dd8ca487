"""shrink and hunt: minimal failing cases from broken kernels, random search, the case
file and golden file they write, and their refusals."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.impls import create
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool2d_backward.space import random_case
from aclcheck.running.live import LiveJudge
from aclcheck.store.codec import run_meta
from aclcheck.suite.casefile import load_case_file
from aclcheck.suite.generate import generate
from aclcheck.triage.shrink import Signature, hint_classes, shrink

#: The (4, 16, 57, 61) case of issue 11; its end-index bug must shrink to one row or
#: column, at most this many elements of self.
BIG = Case(id="big", family="file", product="atlas-a2", dtype="float32", format="NCHW",
           self_shape=(4, 16, 57, 61), grad_shape=(4, 16, 10, 12), seed=1)
MAX_MINIMAL_ELEMENTS = 4


@pytest.fixture(scope="module")
def big_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shrink") / "big.h5"
    small = Case(id="dropped", family="file", product="atlas-a2", dtype="float16",
                 format="ND", self_shape=(3, 9, 11), grad_shape=(3, 4, 5), seed=2,
                 distribution="uniform", layout="channels_last")
    generate(path, [BIG, small], run_meta("test", "shrink-tests"))
    return path


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def judge_with(kernel: str, case: Case):
    with LiveJudge(create(f"kernels:{kernel}")) as judge:
        return judge(case)


def test_shrink_finds_a_one_row_case_for_an_end_index_bug(big_golden: Path,
                                                          tmp_path: Path) -> None:
    cases = tmp_path / "regressions.toml"
    code, out = invoke("shrink", str(big_golden), "--impl", "kernels:off_by_one_end",
                       "--id", "big", "--append", str(cases))
    assert code == 1, out
    assert "shrunk [4, 16, 57, 61]" in out and "repro: aclcheck generate" in out
    minimal = load_case_file(cases).cases[0]
    assert (minimal.product, minimal.dtype, minimal.format, minimal.layout) == (
        "atlas-a2", "float32", "NCHW", "contiguous")
    assert minimal.self_shape[-2] == 1 or minimal.self_shape[-1] == 1
    assert math.prod(minimal.self_shape) <= MAX_MINIMAL_ELEMENTS
    assert judge_with("off_by_one_end", minimal).verdict.value == "FAIL"  # still fails
    assert judge_with("window_sum", minimal).verdict.value == "PASS"  # ... only the bug
    # appending again keeps the file valid, with a fresh id
    code, _ = invoke("shrink", str(big_golden), "--impl", "kernels:off_by_one_end",
                     "--id", "big", "--append", str(cases))
    assert code == 1
    ids = [c.id for c in load_case_file(cases).cases]
    assert len(ids) == 2 and len(set(ids)) == 2


def test_shrink_keeps_the_hint_class_and_the_layout(big_golden: Path) -> None:
    with LiveJudge(create("kernels:dropped_last")) as judge:
        from aclcheck.store.dispatch import open_golden

        with open_golden(big_golden) as gf:
            case = gf.case("dropped")
        result = shrink(case, judge, max_time=30)
    assert result.first.failing and result.verdict.failing
    want = hint_classes(result.first)
    assert want and want <= hint_classes(result.verdict)
    assert Signature.of(case, result.first).kept_by(result.minimal, result.verdict)
    assert result.minimal.layout == "channels_last" and result.minimal.dtype == "float16"
    assert math.prod(result.minimal.self_shape) < math.prod(case.self_shape)
    assert math.prod(result.minimal.self_shape) <= 3 * 3 * 3


def test_shrink_of_a_passing_case_says_so(big_golden: Path) -> None:
    code, out = invoke("shrink", str(big_golden), "--impl", "kernels:window_sum", "--id",
                       "big")
    assert code == 0 and "nothing to shrink" in out


def test_shrink_refusals(big_golden: Path, tmp_path: Path) -> None:
    code, out = invoke("shrink", str(big_golden), "--id", "no-such-case")
    assert code == 2 and "no case with id" in out
    code, out = invoke("shrink", str(big_golden), "--id", "big", "--results",
                       str(tmp_path / "r.h5"))
    assert code == 2 and "cannot run smaller calls" in out
    code, out = invoke("shrink", str(big_golden), "--id", "big", "--append",
                       str(tmp_path / "cases.json"))
    assert code == 2 and "TOML" in out
    code, out = invoke("shrink", str(big_golden), "--id", "big", "--append",
                       str(tmp_path / "missing" / "cases.toml"))
    assert code == 2


def test_shrink_respects_its_time_limit() -> None:
    calls = []

    def slow_judge(case: Case):
        calls.append(case)
        return judge_with("off_by_one_end", case)

    result = shrink(BIG, slow_judge, max_time=0.0)
    assert result.timed_out and len(calls) <= 2


def test_random_cases_are_valid_and_seeded() -> None:
    def draw(seed: int) -> list[Case | None]:
        rng = np.random.default_rng(seed)
        return [random_case(rng, ["atlas-a2", "atlas-training"], [], i) for i in range(60)]

    a = draw(4)
    assert a == draw(4) and a != draw(5)
    assert all(c is not None and c.positive for c in a)
    kinds = {("up" if c.grad_shape[-1] > c.self_shape[-1] else
              "nondiv" if c.self_shape[-1] % c.grad_shape[-1] else "div") for c in a}
    assert kinds == {"up", "nondiv", "div"}
    assert len({c.layout for c in a}) > 1 and len({len(c.self_shape) for c in a}) == 2
    assert random_case(np.random.default_rng(0), ["atlas-training"], ["bfloat16"], 0) is None


def test_hunt_finds_shrinks_and_writes_a_regression_case(tmp_path: Path) -> None:
    out_dir = tmp_path / "found"
    code, out = invoke("hunt", "--impl", "kernels:wrong_divisor", "--product", "atlas-a2",
                       "--dtype", "fp32", "--seed", "3", "--max-time", "60",
                       "--shrink-time", "20", "-o", str(out_dir))
    assert code == 1, out
    cases = load_case_file(out_dir / "cases.toml").cases
    assert len(cases) == 1
    case = cases[0]
    assert math.prod(case.self_shape) <= 64  # shrunk
    # the golden file verifies like any other: the kernel fails it, a correct one passes
    report = tmp_path / "r.json"
    code, _ = invoke("verify", str(out_dir / "golden.h5"), "--impl", "kernels:wrong_divisor",
                     "--json", str(report))
    assert code == 1
    assert json.loads(report.read_text())["cases"][0]["verdict"] == "FAIL"
    code, _ = invoke("verify", str(out_dir / "golden.h5"), "--impl", "kernels:window_sum")
    assert code == 0
    assert tomllib.loads((out_dir / "cases.toml").read_text())["suite"] == "hunt-seed3"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the kernel's own fp32 overflow
def test_hunt_with_a_correct_kernel_finds_nothing(tmp_path: Path) -> None:
    # window_sum is IEEE arithmetic: correct on the inf-nan products only (on a saturation
    # product a near-max call must give the largest finite value, not inf, and fails)
    out_dir = tmp_path / "none"
    code, out = invoke("hunt", "--impl", "kernels:window_sum", "--dtype", "float32",
                       "--product", "atlas-a2", "--product", "atlas-a3",
                       "--max-time", "1", "-o", str(out_dir))
    assert code == 0 and "nothing failed" in out
    assert not out_dir.exists()


def test_hunt_refuses_a_bad_output_before_any_work(tmp_path: Path) -> None:
    code, out = invoke("hunt", "--max-time", "30", "-o", str(tmp_path / "no" / "such"))
    assert code == 2
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "cases.toml").write_text("")
    code, out = invoke("hunt", "--max-time", "30", "-o", str(tmp_path / "taken"))
    assert code == 2 and "exists" in out
    code, out = invoke("hunt", "--dtype", "int7", "-o", str(tmp_path / "x"))
    assert code == 2


def test_case_file_entries_round_trip(tmp_path: Path) -> None:
    from aclcheck.suite.casefile import append, parse_case_entries, toml_file

    cases = [
        Case(id="odd.id-x_1", family='f"#x', product="atlas-a3", dtype="bfloat16", format="NCL",
             self_shape=(3, 8, 8), grad_shape=(3, 4, 4), seed=2**62, distribution="special",
             layout="strided"),
        Case(id="nulls", family="file", product="atlas-training", dtype="float16",
             format="ND", self_shape=(2, 3, 8, 8), grad_shape=(3, 3, 4, 4), seed=1,
             null=("out",), out_dtype="float32"),
    ]
    text = toml_file(cases, "round-trip", ["first\nsecond line"])
    assert parse_case_entries(tomllib.loads(text), "x") == cases
    path = tmp_path / "c.toml"
    path.write_text(text)
    written = append(path, cases[1])
    assert written.id == "nulls-2"
    assert [c.id for c in load_case_file(path).cases] == [cases[0].id, "nulls", "nulls-2"]
