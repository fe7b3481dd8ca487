"""The MindSpore and Paddle adapters on real small cases, and their CLI errors.

Each test runs the real framework (CI installs both); a test skips, with the reason, only
when the framework's package is absent.
"""

from __future__ import annotations

import importlib
import importlib.util
import multiprocessing as mp
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cases import CaseData
from aclcheck.cases.call import Outcome
from aclcheck.cases.layouts import StridedTensor, contiguous_strides
from aclcheck.cli import cli
from aclcheck.impls import ImplementationUnavailable, UnknownImplementation, available, create
from aclcheck.impls.base import CallInputs, Implementation
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.ops.materialize import make_tensors
from aclcheck.running.calls import RunOptions
from aclcheck.running.schedule import iter_verdicts
from aclcheck.suite.casefile import parse_case_entries

PACKAGES = {"mindspore": "mindspore", "paddle": "paddle"}
FRAMEWORKS = tuple(PACKAGES)
CI_SUITE = Path(__file__).resolve().parent.parent / "golden" / "ci-suite.h5"

if importlib.util.find_spec("mindspore") is not None:
    # MindSpore 2.10 does not import after Paddle 3.3 in one process (their oneDNN builds
    # clash); aclcheck runs one framework per process, this module runs both.
    create("mindspore")


def framework(name: str) -> Implementation:
    """The framework's CPU adapter; skip (with the reason) only when it is not installed."""
    if importlib.util.find_spec(PACKAGES[name]) is None:
        pytest.skip(f"{PACKAGES[name]} is not installed (pip install 'aclcheck[{name}]')")
    return create(name)


@pytest.fixture(params=FRAMEWORKS)
def impl(request: pytest.FixtureRequest) -> Implementation:
    return framework(request.param)


class MemorySource:
    """Cases made in memory (no golden file)."""

    def load(self, case: Case) -> CaseData:
        return make_tensors(case)


def cases(*entries: dict[str, Any]) -> list[Case]:
    return parse_case_entries(list(entries), "test")


def verdicts(impl: Implementation, *entries: dict[str, Any]) -> list[CaseVerdict]:
    # in-process: every invalid call below is one the frameworks survive (no OOB reads)
    return list(iter_verdicts(impl, cases(*entries), MemorySource(),
                              RunOptions(isolate_invalid=False)))


def entry(self_shape: list[int], grad_shape: list[int], dtype: str = "float32",
          product: str = "atlas-a2", **kw: Any) -> dict[str, Any]:
    fmt = "NCL" if len(self_shape) == 3 else "NCHW"
    return {"product": product, "dtype": dtype, "format": fmt, "self_shape": self_shape,
            "grad_shape": grad_shape, **kw}


VALID_FP32 = (
    entry([2, 3, 8, 6], [2, 3, 4, 3]),                        # divisible
    entry([1, 4, 13, 11], [1, 4, 5, 4], distribution="outliers"),  # non-divisible
    entry([2, 2, 3, 5], [2, 2, 7, 11]),                       # upsampling (overlap)
    entry([1, 3, 9, 9], [1, 3, 1, 1]),                        # global
    entry([3, 12, 10], [3, 5, 4]),                            # 3-D (NCL)
    entry([2, 3, 7, 9], [2, 3, 3, 4], layout="channels_last"),
    entry([2, 3, 7, 9], [2, 3, 3, 4], layout="strided"),
    entry([3, 7, 9], [3, 4, 5], layout="transposed"),
)


def test_float32_valid_cases_pass(impl: Implementation) -> None:
    got = verdicts(impl, *VALID_FP32)
    assert [v.verdict for v in got] == [Verdict.PASS] * len(VALID_FP32), [
        (v.case_id, v.message) for v in got if v.verdict != Verdict.PASS]


@pytest.mark.slow  # heavy: runs in .ci/run's slow step (pytest -m slow)
def test_every_valid_nonempty_float32_call_of_the_default_suite_passes(
        impl: Implementation) -> None:
    positive = ("divisible", "nondivisible", "upsampling", "global", "identity", "rank3",
                "alignment", "exactint", "special", "layout")
    # the framework's list names the cases where its IEEE inf differs from the saturation
    # mode of the training/inference products (docs/contract.md section 10)
    known = CI_SUITE.parent / f"{impl.name.split(':')[0]}-cpu.xfail.toml"
    args = ["verify", str(CI_SUITE), "--impl", impl.name, "--dtype", "float32",
            "--xfail", str(known)]
    for family in positive:
        args += ["--family", family]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "passed: 0 " not in result.output


class MisreadsStrides(Implementation):
    """A broken wrapper: hands the framework the storage as if it were contiguous (the
    classic layout bug of an adapter), then calls the real adapter."""

    def __init__(self, inner: Implementation) -> None:
        self.inner = inner
        self.name = f"broken-{inner.name}"
        self.dtypes = inner.dtypes

    def run(self, call: CallInputs) -> Outcome:
        def misread(t: StridedTensor | None) -> StridedTensor | None:
            if t is None:
                return None
            return StridedTensor(t.storage, t.shape, contiguous_strides(t.shape), 0)

        return self.inner.run(CallInputs(call.case, {name: misread(t) for name, t
                                                     in call.inputs.items()}))


def test_a_wrapper_that_misreads_strides_fails(impl: Implementation) -> None:
    strided = entry([2, 3, 7, 9], [2, 3, 3, 4], layout="strided")
    assert verdicts(impl, strided)[0].verdict == Verdict.PASS
    assert verdicts(MisreadsStrides(impl), strided)[0].verdict == Verdict.FAIL


def test_paddle_hands_over_real_strided_views() -> None:
    impl = framework("paddle")
    case = cases(entry([2, 3, 7, 9], [2, 3, 3, 4], layout="strided"))[0]
    grad = make_tensors(case).grad_output
    assert grad is not None and not grad.contiguous
    tensor = impl._to_paddle(grad)  # type: ignore[attr-defined]
    assert not tensor.is_contiguous()
    assert list(tensor.strides) == list(grad.strides)
    np.testing.assert_array_equal(tensor.numpy(), grad.view())


def test_mindspore_says_it_copies_strided_inputs() -> None:
    impl = framework("mindspore")
    case = cases(entry([2, 3, 7, 9], [2, 3, 3, 4], layout="channels_last"))[0]
    t = make_tensors(case)
    outcome = impl.run(CallInputs(case, t.inputs))
    assert outcome.output is not None
    assert any("contiguous copy" in n for n in outcome.notes)


@pytest.mark.parametrize("bad", [
    entry([2, 3, 8, 6], [3, 3, 4, 3]),                                   # N mismatch
    entry([2, 3, 8, 6], [2, 4, 4, 3]),                                   # C mismatch
    entry([2, 3, 8, 6], [2, 3, 4, 3], grad_dtype="float16"),             # dtype mismatch
    {"product": "atlas-a2", "dtype": "float32", "format": "ND",          # rank 2
     "self_shape": [8, 6], "grad_shape": [4, 3]},
    {"product": "atlas-a2", "dtype": "float32", "format": "ND",          # rank 5
     "self_shape": [1, 2, 3, 8, 6], "grad_shape": [1, 2, 3, 4, 3]},
], ids=["n", "c", "dtype", "rank2", "rank5"])
def test_invalid_calls(impl: Implementation, bad: dict[str, Any]) -> None:
    """MindSpore rejects every one; Paddle rejects the ranks but accepts N/C and dtype
    mismatches (golden/paddle-cpu.xfail.toml): a raise is a rejection, an output is not."""
    (v,) = verdicts(impl, bad)
    accepts = impl.name.startswith("paddle") and bad.get("self_shape") == [2, 3, 8, 6]
    assert v.verdict == (Verdict.WRONG_STATUS if accepts else Verdict.PASS), v.message


def test_bfloat16_skips_with_the_reason(impl: Implementation) -> None:
    (v,) = verdicts(impl, entry([2, 3, 8, 6], [2, 3, 4, 3], dtype="bfloat16"))
    assert v.verdict == Verdict.SKIP
    assert "bfloat16" in v.message and impl.name in v.message


def test_float16_accumulation_tells_the_frameworks_apart() -> None:
    """MindSpore accumulates FP16 in FP32 (passes the A2 budget); Paddle CPU accumulates
    in FP16 (fails it where many terms meet an element), on the same case."""
    heavy = entry([2, 2, 3, 5], [2, 2, 30, 40], dtype="float16", distribution="uniform")
    assert verdicts(framework("mindspore"), heavy)[0].verdict == Verdict.PASS
    assert verdicts(framework("paddle"), heavy)[0].verdict == Verdict.FAIL


def test_empty_tensors() -> None:
    """The contract: success, out not written. MindSpore raises; Paddle succeeds."""
    empty = entry([2, 0, 5, 4], [2, 0, 2, 2])
    ms = verdicts(framework("mindspore"), empty)[0]
    assert ms.verdict == Verdict.ERROR and "raised on a valid call" in ms.message
    assert verdicts(framework("paddle"), empty)[0].verdict == Verdict.PASS


FORKED_RUN = """
import sys
import numpy as np
from aclcheck.ops.materialize import make_tensors
from aclcheck.impls import create
from aclcheck.impls.base import CallInputs
from aclcheck.running.workers.hangs import CallClock
from aclcheck.running.workers.lifetime import start_zygote
from aclcheck.running.workers.parent import IsolatedRunner
from aclcheck.suite.casefile import parse_case_entries

impl = create(sys.argv[1])
assert impl.fork_safe
zygote = start_zygote(impl.spec)  # imports the framework; never runs it there
assert zygote.ready()["fork_safe"]
case = parse_case_entries([{"product": "atlas-a2", "dtype": "float32", "format": "NCHW",
                            "self_shape": [2, 3, 8, 6], "grad_shape": [2, 3, 4, 3]}], "t")[0]
t = make_tensors(case)
# a hang is the only failure that may not end the call: no hang rule fires before 300 s
worker = IsolatedRunner(impl.spec, timeout=300, zygote=zygote,
                        clock=CallClock(cap=300, first_floor=300))
outcome = worker.run(CallInputs(case, t.inputs))
assert worker.spawned == 0  # forked from the zygote, not a fresh interpreter
worker.close()
zygote.close()
assert outcome.crashed is None and outcome.raised is None, outcome
np.testing.assert_allclose(outcome.output, t.golden, rtol=1e-6)
print("forked worker ok")
"""


def test_fork_safe_adapters_work_in_a_forked_worker(impl: Implementation) -> None:
    """The declaration is measured, not assumed: a worker forked from a process that
    imported the framework (and, as the runner guarantees, never ran it) computes the
    right answer. (MindSpore's forked child hangs once the parent has run an op.)"""
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform")
    done = subprocess.run([sys.executable, "-c", FORKED_RUN, impl.spec], capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0 and "forked worker ok" in done.stdout, done.stderr[-2000:]


# -- names, devices and broken installs ---------------------------------------------------


@pytest.mark.parametrize("spec,valid", [("mindspore:tpu", "cpu, gpu, ascend"),
                                        ("paddle:tpu", "cpu, gpu, npu")])
def test_unknown_device_is_a_usage_error_listing_the_valid_ones(spec: str, valid: str) -> None:
    framework(spec.partition(":")[0])
    with pytest.raises(UnknownImplementation, match=valid):
        create(spec)
    result = CliRunner().invoke(cli, ["verify", str(CI_SUITE), "--impl", spec])
    assert result.exit_code == 2
    assert valid in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("spec", ["mindspore:ascend", "paddle:npu"])
def test_missing_device_is_one_line_and_a_row_in_impls(spec: str) -> None:
    framework(spec.partition(":")[0])
    with pytest.raises(ImplementationUnavailable):
        create(spec)
    result = CliRunner().invoke(cli, ["verify", str(CI_SUITE), "--impl", spec])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1, result.output
    row = next(i for i in available() if i.name == spec)
    assert not row.available and spec in row.note


@pytest.mark.parametrize("name,module", [("mindspore", "aclcheck.impls.mindspore_impl"),
                                         ("paddle", "aclcheck.impls.paddle_impl")])
def test_a_broken_install_is_a_usage_error_never_a_traceback(
        monkeypatch: pytest.MonkeyPatch, name: str, module: str) -> None:
    importlib.import_module(module)  # the adapter module itself loads before the patch
    real = importlib.import_module

    def broken(target: str, *args: Any) -> Any:
        if target == PACKAGES[name]:
            raise ImportError("libfoo.so: cannot open shared object file", name="_native")
        return real(target, *args)

    monkeypatch.setattr(importlib, "import_module", broken)  # what import_framework calls
    with pytest.raises(ImplementationUnavailable, match="installed but does not import"):
        create(name)
    # --no-isolate: the import happens here, where the patch breaks it (an isolated run
    # imports in its zygote, which reports the same error as one line)
    result = CliRunner().invoke(cli, ["verify", str(CI_SUITE), "--impl", name, "--no-isolate"])
    assert result.exit_code == 2 and "libfoo.so" in result.output
    assert "Traceback" not in result.output
    rows = {i.name: i for i in available()}
    assert not rows[name].available and "does not import" in rows[name].note
    impls = CliRunner().invoke(cli, ["impls"])
    assert impls.exit_code == 0 and "not available" in impls.output


def test_impls_lists_both_with_their_versions() -> None:
    rows = {i.name: i for i in available()}
    for name in FRAMEWORKS:
        if importlib.util.find_spec(PACKAGES[name]) is None:
            continue
        version = importlib.import_module(PACKAGES[name]).__version__
        assert rows[name].available and version in rows[name].description
        assert rows[f"{name}:cpu"].available
    result = CliRunner().invoke(cli, ["impls"])
    assert result.exit_code == 0
    assert "mindspore:ascend" in result.output and "paddle:gpu" in result.output


@pytest.mark.parametrize("suffix", ["", "-3d"])
@pytest.mark.parametrize("name", FRAMEWORKS)
def test_known_failure_lists_are_scoped_to_their_framework(name: str, suffix: str) -> None:
    """Every entry of golden/<framework>-cpu[-3d].xfail.toml has a reason and applies only
    to that framework (a list can never excuse another implementation's failures)."""
    from aclcheck.judging.gate import xfail

    listed = xfail.load_xfails(CI_SUITE.parent / f"{name}-cpu{suffix}.xfail.toml")
    assert listed.entries
    for entry in listed.entries:
        assert entry.reason.strip() and entry.verdicts
        assert entry.matches(entry.pattern.replace("*", "x").replace("[23]", "2"),
                             f"{name}:cpu")
        assert not entry.matches(entry.pattern, "torch:cpu")
        assert not entry.matches(entry.pattern, "reference")
