"""Workers and misbehaving kernels: forked workers (no fresh interpreter), adaptive hang
detection, kernels that try to end the process or write into their inputs, process
groups, worker stderr, traceback frames. Each kernel is a real one in impl_fixtures."""

from __future__ import annotations

import json
import multiprocessing.process
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.impls.base import CallInputs, guarded_run
from aclcheck.impls.registry import create
from aclcheck.running.calls import CaseRunner, RunOptions
from aclcheck.running.schedule import iter_verdicts
from aclcheck.running.session import GoldenSource
from aclcheck.running.workers import parent as isolation
from aclcheck.running.workers.cpu_watch import CallWatch
from aclcheck.running.workers.hangs import CallClock
from aclcheck.running.workers.inflight import PendingCall
from aclcheck.store.dispatch import open_golden

TESTS = Path(__file__).parent
REPO = TESTS.parent
CI_SUITE = REPO / "golden" / "ci-suite.h5"

pytest_plugins = ["pytester"]


@pytest.fixture
def golden(isolation_golden: Path) -> Path:
    return isolation_golden


def verify(*args: str) -> tuple[int, dict]:
    """CLI run with a JSON report; (exit code, report)."""
    report = Path(os.environ.get("TMPDIR", "/tmp")) / f"isolation-{os.getpid()}.json"
    result = CliRunner().invoke(cli, ["verify", *args, "--json", str(report)],
                                catch_exceptions=False)
    data = json.loads(report.read_text()) if report.exists() else {}
    report.unlink(missing_ok=True)
    return result.exit_code, data


def is_3d(case: dict) -> bool:
    return case["id"].split("-")[4].startswith("c")  # c3h5w7: no n dimension


# -- no fresh interpreter after start-up ----------------------------------------------------


def test_fork_safe_adapter_never_spawns_a_worker(golden: Path, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    """accepts_everything accepts every invalid call, so its worker is replaced after each
    one: every replacement must come from the zygote, never from a spawned interpreter."""
    real_start = multiprocessing.process.BaseProcess.start

    def no_spawn(self: multiprocessing.process.BaseProcess) -> None:
        if getattr(self, "_start_method", None) == "fork":  # the evidence helper: a fork
            return real_start(self)  # of this process running aclcheck's code, no kernel
        raise AssertionError("a worker process was spawned")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", no_spawn)
    impl = create("impl_fixtures:accepts_everything")
    assert impl.fork_safe
    with open_golden(golden) as gf:
        cases = [gf.case(i) for i in gf.ids()]
        with CaseRunner(impl, RunOptions()) as runner:
            verdicts = list(iter_verdicts(impl, cases, GoldenSource(gf), RunOptions(),
                                          runner=runner))
            worker = runner.isolated()
            assert runner.isolate  # isolation is the default for fork-safe adapters
            assert worker.spawned == 0
            assert worker.started >= 3  # the first worker and replacements
    assert {v.verdict.value for v in verdicts} >= {"WRONG_STATUS"}


def test_no_isolate_still_forks_invalid_calls_from_the_zygote(golden: Path) -> None:
    impl = create("impl_fixtures:accepts_everything")
    opts = RunOptions(isolate=False)
    with open_golden(golden) as gf:
        cases = [gf.case(i) for i in gf.ids()]
        with CaseRunner(impl, opts) as runner:
            list(iter_verdicts(impl, cases, GoldenSource(gf), opts, runner=runner))
            assert not runner.isolate
            assert runner.isolated().started >= 2 and runner.isolated().spawned == 0


# -- hang detection ----------------------------------------------------------------------------


def test_clock_floor_first_call_and_cap() -> None:
    clock = CallClock(cap=60.0)
    assert clock.allowance(100, first=True)[0] == 30.0  # nothing to compare with yet
    clock.record(100, 0.5, first=True)
    clock.record(100, 0.001, first=False)
    assert clock.allowance(100, first=False)[0] == 5.0  # 50 x 1 ms < the floor
    seconds, why = clock.allowance(100, first=True)  # a fresh worker: 50 x 0.5 s
    assert seconds == pytest.approx(25.0) and "50x" in why
    clock.record(120, 0.2, first=False)
    assert clock.allowance(110, first=False)[0] == pytest.approx(10.0)
    assert clock.allowance(10**6, first=False)[0] == 60.0  # scaled up, then capped
    assert "--timeout" in clock.allowance(10**6, first=False)[1]


def test_clock_compares_similar_sizes_only() -> None:
    clock = CallClock(cap=600.0)
    clock.record(10**6, 2.0, first=False)  # a big, slow call
    clock.record(50, 0.01, first=False)
    assert clock.allowance(60, first=False)[0] == 5.0  # the big call does not count


def test_clock_allowance_follows_every_new_slowest_call() -> None:
    """Allowances are remembered per size class between records: a slower call of the
    class, or of a class within reach, changes the answer at once; a faster one does not."""
    clock = CallClock(cap=600.0)
    clock.record(1000, 0.2, first=False)
    assert clock.allowance(1000, first=False)[0] == pytest.approx(10.0)
    clock.record(1000, 0.1, first=False)  # not the slowest: nothing changes
    assert clock.allowance(1000, first=False)[0] == pytest.approx(10.0)
    clock.record(3000, 0.4, first=False)  # two classes up: within reach
    assert clock.allowance(1000, first=False)[0] == pytest.approx(20.0)
    assert clock.allowance(1000, first=True)[0] == pytest.approx(30.0)  # no first call yet
    clock.record(1000, 1.0, first=True)
    assert clock.allowance(1000, first=True)[0] == pytest.approx(50.0)
    assert clock.allowance(1000, first=False)[0] == pytest.approx(20.0)


@pytest.mark.slow  # heavy: runs in .ci/run's slow step (pytest -m slow)
def test_spinning_calls_are_detected_fast_on_the_ci_suite() -> None:
    """Fast means: by the adaptive hang rule (the floor, or a multiple of comparable
    calls), never by waiting out the --timeout cap. The cap is set far above anything
    the rule allows, so the test says which limit fired, not how long anything took."""
    pytest.importorskip("torch")
    code, report = verify(str(CI_SUITE), "--impl", "torch_fixtures:spins_on_nc",
                          "--product", "atlas-a2", "--family", "invalid",
                          "--family", "divisible", "--timeout", "3600")
    assert code == 1
    hung = [c for c in report["cases"] if "_n_grad" in c["id"] or "_c_grad" in c["id"]]
    assert hung
    for c in hung:
        assert c["verdict"] == "ERROR" and "timeout" in c["message"], c
        assert "--timeout" not in c["message"], c
        assert ("the hang floor" in c["message"]
                or "the slowest comparable call" in c["message"]), c
    others = [c for c in report["cases"] if c not in hung]
    assert all(c["verdict"] in ("PASS", "FAIL", "SKIP") for c in others)


class FakeClock:
    """isolation's clock in a test: virtual seconds that pass only while a poll waits
    (the heartbeat rule with an injected clock, no sleeping)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class NeverAnswers:
    """A `select.poll()` for a worker that never answers: poll(ms) lets ms virtual
    milliseconds pass."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def register(self, fd: int, events: int) -> None:
        pass

    def poll(self, ms: int) -> list:
        self.clock.now += ms / 1000
        return []


def test_heartbeat_lines_every_interval_until_the_allowance(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    clock = FakeClock()
    monkeypatch.setattr(isolation, "select", SimpleNamespace(
        poll=lambda: NeverAnswers(clock), POLLIN=1, POLLHUP=2, POLLERR=4))
    lines: list[str] = []
    runner = isolation.IsolatedRunner("impl_fixtures:hangs", timeout=60.0,
                                      heartbeat=lines.append, now=clock,
                                      cpu_time=lambda pid: None)  # the wall rule alone
    try:
        case = SimpleNamespace(id="a2-case")
        watch = CallWatch(35.0, "the test's allowance", 9.0, "the CPU floor", 60.0)
        pending = PendingCall(1, SimpleNamespace(case=case), 0, first=False,
                                     sent_at=clock(), deadline=clock() + 35.0, watch=watch)
        live = SimpleNamespace(pid=-1, channel=SimpleNamespace(fileno=lambda: -1))
        assert "allowed by the test's allowance" in (runner._wait(live, pending) or "")
    finally:
        runner.close()
    every = isolation.HEARTBEAT_EVERY_S
    beats = [every * k for k in range(1, 4)]  # 10, 20, 30 s: all before the 35 s allowance
    assert lines == [f"aclcheck: a2-case: still running after {b:.0f} s (declared hung "
                     "after 35 s without CPU use, at 9 s of CPU, or at 60 s)" for b in beats]
    # waited the allowance (to within one look at the worker's CPU time)
    assert clock.now - pending.sent_at == pytest.approx(35.0, abs=isolation.SAMPLE_EVERY_S)


# -- kernels that try to end the process --------------------------------------------------------


@pytest.mark.parametrize("mode", ["--isolate", "--no-isolate"])
@pytest.mark.parametrize(("fixture", "reason"), [("sys_exit_zero", "sys.exit(0)"),
                                                  ("os_exit_zero", "os._exit(0)")])
def test_exiting_kernels_are_errors(golden: Path, mode: str, fixture: str, reason: str
                                    ) -> None:
    code, report = verify(str(golden), "--impl", f"impl_fixtures:{fixture}", mode,
                          "--family", "rank3", "--family", "divisible")
    assert code == 1
    three_d = [c for c in report["cases"] if is_3d(c)]
    assert three_d
    for c in report["cases"]:
        if is_3d(c):
            assert c["verdict"] == "ERROR" and reason in c["message"], c
        else:
            assert c["verdict"] == "PASS", c


def test_exit_is_never_a_rejection_of_an_invalid_call(golden: Path) -> None:
    code, report = verify(str(golden), "--impl", "impl_fixtures:sys_exit_zero",
                          "--no-isolate", "--family", "invalid")
    exiting = [c for c in report["cases"] if "rank_grad3" in c["id"]]  # 3-D gradOutput
    assert exiting and code == 1
    assert all(c["verdict"] == "ERROR" and "sys.exit(0)" in c["message"] for c in exiting)


def test_native_exit_is_contained_by_the_worker(golden: Path) -> None:
    code, report = verify(str(golden), "--impl", "impl_fixtures:native_exit_zero",
                          "--family", "rank3")
    assert code == 1 and report["cases"]
    assert all(c["verdict"] == "ERROR" and "exited with code 0" in c["message"]
               for c in report["cases"])


# -- inputs are read-only and verified unchanged -----------------------------------------------


@pytest.mark.parametrize("mode", ["--isolate", "--no-isolate"])
def test_writing_into_inputs_is_an_error(golden: Path, mode: str) -> None:
    code, report = verify(str(golden), "--impl", "impl_fixtures:writes_inputs_pointer", mode,
                          "--family", "divisible")
    assert code == 1 and report["cases"]
    for c in report["cases"]:
        assert c["verdict"] == "ERROR", c
        assert "implementation wrote into its inputs (gradOutput" in c["message"], c
    code, report = verify(str(golden), "--impl", "impl_fixtures:writes_inputs_numpy", mode,
                          "--family", "divisible")
    assert code == 1
    assert all(c["verdict"] == "ERROR" and "read-only" in c["message"]
               for c in report["cases"])


def test_guarded_run_checks_inputs_in_process(golden: Path) -> None:
    with open_golden(golden) as gf:
        case = gf.case(next(i for i in gf.ids() if "-div0-" in i))
        call = CallInputs(case, gf.data(case.id).inputs)
        good = guarded_run(create("impl_fixtures:correct"), call)
        assert good.crashed is None and good.output is not None
        bad = guarded_run(create("impl_fixtures:writes_inputs_pointer"), call)
        assert bad.crashed and "gradOutput" in bad.crashed


# -- process groups, stderr, traceback frames ---------------------------------------------------


def test_a_hung_kernels_child_does_not_hold_the_pipe(golden: Path, tmp_path: Path) -> None:
    """`aclcheck verify ... | tee`: the pipe closes when aclcheck exits, although the
    kernel started a child that sleeps (an hour) with stdout open: the worker's group is
    killed. Were the pipe held, reading it would outlast the run's guard timeout."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(REPO)]))
    proc = subprocess.run(
        [sys.executable, "-m", "aclcheck", "verify", str(golden), "--impl",
         "impl_fixtures:child_holds_stdout", "--family", "rank3", "--timeout", "2"],
        capture_output=True, env=env, cwd=tmp_path, timeout=900)
    assert proc.returncode == 1
    assert b"timeout" in proc.stdout


def test_worker_stderr_goes_to_the_case_not_the_console(golden: Path,
                                                        capfd: pytest.CaptureFixture[str]
                                                        ) -> None:
    code, report = verify(str(golden), "--impl", "impl_fixtures:stderr_then_abort",
                          "--family", "rank3")
    assert code == 1 and report["cases"]
    for c in report["cases"]:
        assert c["verdict"] == "ERROR" and "SIGABRT" in c["message"]
        assert "free(): invalid size" in c["detail"], c
    assert "free(): invalid size" not in capfd.readouterr().err


@pytest.mark.parametrize("mode", ["--isolate", "--no-isolate"])
def test_kernel_exception_shows_its_frames(golden: Path, mode: str) -> None:
    code, report = verify(str(golden), "--impl", "impl_fixtures:raises", mode,
                          "--family", "divisible")
    assert code == 1
    for c in report["cases"]:
        assert c["message"].startswith("raised on a valid call: RuntimeError")
        assert "impl_fixtures.py:" in c["detail"] and "in raises" in c["detail"], c


def test_memory_limit_needs_isolation(golden: Path) -> None:
    result = CliRunner().invoke(cli, ["verify", str(golden), "--impl", "impl_fixtures:correct",
                                      "--no-isolate", "--memory-limit", "512"])
    assert result.exit_code == 2
    assert "--memory-limit" in result.output and "isolation" in result.output


EXITING = '''
import os, sys

def sys_exit(grad_output, self):
    sys.exit(0)

def os_exit(grad_output, self):
    os._exit(0)
'''


@pytest.mark.parametrize("kernel", ["sys_exit", "os_exit"])
@pytest.mark.parametrize("mode", ["--aclcheck-isolate", "--aclcheck-no-isolate"])
def test_pytest_session_fails_when_a_kernel_exits(pytester: pytest.Pytester, golden: Path,
                                                  kernel: str, mode: str) -> None:
    pytester.makepyfile(exiting_kernel=EXITING)
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess(
        f"--aclcheck-golden={golden}", "--aclcheck-impl", f"exiting_kernel:{kernel}", mode,
        "-p", "no:cacheprovider", "-p", "no:benchmark", "-k", "div0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 2 and "passed" not in outcomes
    result.stdout.fnmatch_lines(["*ERROR: the implementation tried to end the process*"])


def test_cli_prints_heartbeats_outside_a_terminal(golden: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring: heartbeats reach stderr (the rule itself is tested above with an
    injected clock). One hung case, beats every 0.05 s for 3 s: a line appears unless
    the parent got no CPU for the whole 3 s."""
    monkeypatch.setattr(isolation, "HEARTBEAT_EVERY_S", 0.05)
    with open_golden(golden) as gf:
        case_id = next(i for i in gf.ids() if "rank3" in i)
    result = CliRunner().invoke(cli, ["verify", str(golden), "--impl", "impl_fixtures:hangs",
                                      "--id", case_id, "--timeout", "3"])
    assert result.exit_code == 1
    assert f"aclcheck: {case_id}: still running after" in result.stderr
    assert "allowed by --timeout 3 s" in result.stdout


def test_a_dead_zygote_falls_back_to_spawned_workers(golden: Path) -> None:
    impl = create("impl_fixtures:correct")
    with open_golden(golden) as gf:
        case = gf.case(next(i for i in gf.ids() if "-div0-" in i))
        inputs = gf.data(case.id).inputs
        with CaseRunner(impl, RunOptions()) as runner:
            worker = runner.isolated()
            assert worker.zygote is not None
            os.kill(worker.zygote.pid, 9)
            outcome = runner.call(CallInputs(case, inputs))
            assert outcome.crashed is None and outcome.output is not None
            assert worker.spawned == 1 and worker.zygote is None
