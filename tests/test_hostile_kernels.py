"""Red team, kernel side (issue "gate integrity, round 3"): one hostile kernel module per
class of attack (tests/hostile_modules.py), each asserted to be defended: no exit 0 for a
kernel that was not judged correct, no hang past a deadline, nothing the kernel says
run or unpickled in aclcheck's process, nothing it leaves behind.

Classes: attacks while imported; through the worker protocol; on resources (output
floods, descendants that leave the process group, a killed zygote); on the inputs while
the run reads them; on the gate (declining every case); on aclcheck's own process in
--no-isolate runs (its code, working directory, umask, exit handlers); hostile text.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

import aclcheck.judging.case.compare
import aclcheck.judging.case.judge
import aclcheck.running.runner
from aclcheck.cli import cli
from aclcheck.impls.base import CallInputs
from aclcheck.running.workers import inflight as isolation  # LOG_TAIL_CHARS
from aclcheck.running.workers import lifetime
from aclcheck.running.workers.lifetime import start_zygote
from aclcheck.running.workers.parent import IsolatedRunner
from aclcheck.store.dispatch import open_golden
from aclcheck.suite.selection import Selection
from tests import hostile_modules as hm

REPO = Path(__file__).parent.parent
SELECTION = Selection(products=("atlas-a2",), dtypes=("float32",),
                      families=("divisible", "rank3"), seed=5)


@pytest.fixture(scope="module")
def golden(valid_3d_4d_golden: Path) -> Path:
    return valid_3d_4d_golden


@pytest.fixture(scope="module")
def ids(golden: Path) -> dict[str, list[str]]:
    """Case ids by rank (the 3-D ones are where the kernels attack)."""
    with open_golden(golden) as gf:
        cases = [gf.case(i) for i in gf.ids()]
    return {"3d": [c.id for c in cases if len(c.self_shape) == 3],
            "4d": [c.id for c in cases if len(c.self_shape) == 4]}


def verify(*args: str, report: Path | None = None) -> tuple[int, str, dict]:
    """verify in this process; (exit code, output, JSON report or {})."""
    extra = ["--json", str(report)] if report is not None else []
    result = CliRunner().invoke(cli, ["verify", *args, *extra], catch_exceptions=False)
    data = json.loads(report.read_text()) if report is not None and report.exists() else {}
    return result.exit_code, result.output, data


def cli_run_ok(*args: str) -> bool:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False).exit_code == 0


def one_error_line(out: str) -> str:
    errors = [line for line in out.splitlines() if line.startswith("aclcheck: error:")]
    assert len(errors) == 1 and "Traceback" not in out, out
    return errors[0]


# -- attacks while imported ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["--isolate", "--no-isolate"])
@pytest.mark.parametrize(("source", "fragment"), [
    (hm.EXIT_ON_IMPORT, "tried to end the process while imported: sys.exit(0)"),
    (hm.OS_EXIT_ON_IMPORT, "tried to end the process while imported: os._exit(0)"),
    (hm.NATIVE_EXIT_ON_IMPORT, "the process loading it exited with code 0"),
    (hm.RAISE_ON_IMPORT, "RuntimeError: broken at import"),
])
def test_a_module_that_exits_or_raises_on_import_is_a_usage_error(
        golden: Path, tmp_path: Path, mode: str, source: str, fragment: str) -> None:
    spec = hm.write_module(tmp_path, source)
    code, out, report = verify(str(golden), "--impl", spec, mode, report=tmp_path / "r.json")
    assert code == 2, out
    assert fragment in one_error_line(out)
    assert not report  # nothing ran, nothing written


def test_a_module_that_blocks_on_import_meets_a_deadline(
        golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifetime, "START_ALLOWANCE_S", 2.0)  # the only limit that can fire
    spec = hm.write_module(tmp_path, hm.BLOCK_ON_IMPORT)
    code, out, _ = verify(str(golden), "--impl", spec)
    assert code == 2
    assert "did not finish within 2 s" in one_error_line(out)


def test_hunt_refuses_a_module_that_exits_on_import(tmp_path: Path) -> None:
    spec = hm.write_module(tmp_path, hm.EXIT_ON_IMPORT)
    result = CliRunner().invoke(cli, ["hunt", "--impl", spec, "--max-time", "1", "-o",
                                      str(tmp_path / "found")], catch_exceptions=False)
    assert result.exit_code == 2
    assert "tried to end the process" in one_error_line(result.output)


def test_isolated_runs_never_import_the_kernel_here(golden: Path, tmp_path: Path) -> None:
    """The module replaces aclcheck's judge when imported and computes wrong answers:
    only its workers are changed; this process judges, and judges FAIL. What it prints
    while imported never reaches the console."""
    judge_before, runner_judge = aclcheck.judging.case.judge.judge, aclcheck.running.runner.judge
    spec = hm.write_module(tmp_path, hm.PATCH_JUDGE_ON_IMPORT, "patcher")
    code, out, report = verify(str(golden), "--impl", spec, "--family", "divisible",
                               report=tmp_path / "r.json")
    assert code == 1
    assert report["cases"] and all(c["verdict"] == "FAIL" for c in report["cases"])
    assert report["isolation"] == "workers"
    assert (aclcheck.judging.case.judge.judge is judge_before
            and aclcheck.running.runner.judge is runner_judge)
    assert not any(name.startswith("patcher") for name in sys.modules)
    assert "KERNEL TEXT" not in out and "\x1b[2J" not in out


def test_a_zygote_that_lies_about_its_workers_is_not_believed(golden: Path, tmp_path: Path
                                                              ) -> None:
    """The module makes its zygote name this process as the worker: acting on that would
    kill aclcheck. The answer is refused, and workers come from a fresh zygote."""
    spec = hm.write_module(tmp_path, hm.ZYGOTE_LIES_ABOUT_PIDS)
    code, out, report = verify(str(golden), "--impl", spec, "--family", "divisible",
                               report=tmp_path / "r.json")
    assert code == 0, out
    assert report["cases"] and all(c["verdict"] == "PASS" for c in report["cases"])


PLUGIN = {"evil_plugin_mod.py": "import sys\nsys.exit(0)\n",
          "evil_plugin-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evil-plugin\n"
                                                "Version: 1.0\n",
          "evil_plugin-1.0.dist-info/entry_points.txt":
              "[aclcheck.implementations]\nevil = evil_plugin_mod:make\n"}


def test_a_plugin_that_exits_on_import_is_one_row_and_a_usage_error(
        golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in PLUGIN.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = verify(str(golden), "--impl", "evil")
    assert code == 2 and "tried to end the process while imported" in one_error_line(out)
    assert "evil_plugin_mod" not in sys.modules
    from aclcheck.impls.registry import available
    from aclcheck.running.workers.adapter import describe

    rows = {info.name: info for info in available(describe)}
    assert not rows["evil"].available and "end the process" in rows["evil"].note
    assert rows["reference"].available and "evil_plugin_mod" not in sys.modules


# -- attacks through the worker protocol ---------------------------------------------------


@pytest.mark.parametrize(("source", "fragment"), [
    (hm.UNPICKLE_BOMB, "returned Bomb, not a numpy array"),
    (hm.GARBAGE_FRAME, "broke the protocol: not a frame of the worker protocol"),
    (hm.PARTIAL_FRAME, "timeout: only part of an answer"),
    (hm.HUGE_FRAME, "1099511627776 bytes of output data where"),
    (hm.WRONG_SEQ, "broke the protocol: an answer to another call"),
], ids=["unpickle-bomb", "garbage", "partial-frame", "huge-frame", "wrong-seq"])
def test_what_a_worker_sends_is_checked_plain_data(golden: Path, ids: dict, tmp_path: Path,
                                                   source: str, fragment: str) -> None:
    spec = hm.write_module(tmp_path, source)
    code, out, report = verify(str(golden), "--impl", spec, "--timeout", "2",
                               "--id", ids["3d"][0], "--id", ids["3d"][1],
                               report=tmp_path / "r.json")
    assert code == 1, out
    assert len(report["cases"]) == 2
    for case in report["cases"]:
        assert case["verdict"] == "ERROR" and fragment in case["message"], case


def test_a_callable_cannot_decline_the_cases_it_would_fail(golden: Path, ids: dict,
                                                           tmp_path: Path) -> None:
    spec = hm.write_module(tmp_path, hm.DECLINES_WHAT_IT_FAILS)
    code, _, report = verify(str(golden), "--impl", spec, "--timeout", "2",
                             report=tmp_path / "r.json")
    assert code == 1
    verdicts = {c["id"]: c for c in report["cases"]}
    for cid in ids["3d"]:
        assert verdicts[cid]["verdict"] == "ERROR"
        assert "cannot decline" in verdicts[cid]["message"]
    assert all(verdicts[cid]["verdict"] == "PASS" for cid in ids["4d"])


def test_a_worker_that_stops_reading_its_calls_meets_the_deadline(
        golden: Path, ids: dict, tmp_path: Path) -> None:
    spec = hm.write_module(tmp_path, hm.STOPS_READING)
    # one call per case: the stale-state check's second call (or the sequence stage's)
    # would find the worker deaf (and report the first case as depending on earlier
    # calls, rightly)
    code, _, report = verify(str(golden), "--impl", spec, "--timeout", "2",
                             "--family", "divisible", "--no-stale-check", "--sequences",
                             "0", report=tmp_path / "r.json")
    assert code == 1
    verdicts = [c["verdict"] for c in report["cases"]]
    assert verdicts[0] == "PASS" and "ERROR" in verdicts  # every other call, a new worker
    assert all("timeout" in c["message"] for c in report["cases"] if c["verdict"] == "ERROR")


@pytest.mark.parametrize("meta", [
    {"status": True}, {"status": 2 ** 70}, {"time_s": "1"}, {"seconds": float("inf")},
    {"raised": 3}, {"notes": "x"}, {"notes": [1]}, {"output": "ndarray"},
    {"output": {"type": "ndarray", "dtype": "float32", "shape": [-1]}},
    {"output": {"type": "ndarray", "dtype": "float32", "shape": [2 ** 63]}},
    {"output": {"type": "ndarray", "dtype": 5, "shape": [1]}},
], ids=lambda m: json.dumps(m, default=str)[:40])
def test_every_field_of_an_answer_is_checked(golden: Path, ids: dict, meta: dict) -> None:
    from aclcheck.running.workers.wire import Head, ProtocolError, decode_outcome

    with open_golden(golden) as gf:
        case = gf.case(ids["4d"][0])
    with pytest.raises(ProtocolError):
        decode_outcome(Head(3, 1, meta, 0), case, 1.0)


def test_times_an_answer_claims_are_bounded_by_what_was_measured(golden: Path,
                                                                  ids: dict) -> None:
    from aclcheck.running.workers.wire import Head, decode_outcome

    with open_golden(golden) as gf:
        case = gf.case(ids["4d"][0])
    answer = decode_outcome(Head(3, 1, {"time_s": 1e300, "seconds": -5}, 0), case, 0.25)
    assert answer.outcome.time_s == 0.25 and answer.seconds == 0.0


@pytest.mark.parametrize("change", [
    {"name": ""}, {"name": "x" * 1000}, {"has_status_codes": 1}, {"dtypes": "float32"},
    {"dtypes": ["x" * 100]}, {"products": [None]}, {"fork_safe": None}, {"declines": "yes"},
])
def test_what_a_worker_says_of_its_adapter_is_checked(change: dict) -> None:
    from aclcheck.running.workers.wire import AdapterInfo

    good = {"name": "k", "description": "", "has_status_codes": False,
            "models_products": False, "dtypes": None, "products": None, "fork_safe": True,
            "declines": False}
    assert AdapterInfo.from_json(good).name == "k"
    with pytest.raises(ValueError):
        AdapterInfo.from_json({**good, **change})


def test_a_call_the_worker_never_takes_meets_the_deadline() -> None:
    """The parent's send has the call's deadline too (a peer that never reads)."""
    import socket
    import time

    from aclcheck.running.workers.wire import Channel, FrameTimeout

    ours, theirs = socket.socketpair()
    try:
        with pytest.raises(FrameTimeout):
            Channel(ours).send_call(1, b"x" * (64 << 20), deadline=time.monotonic() + 0.5)
    finally:
        ours.close()
        theirs.close()


# -- resources -------------------------------------------------------------------------------


def test_an_output_flood_is_read_as_its_tail(golden: Path, ids: dict, tmp_path: Path) -> None:
    """64 MiB on stdout and stderr: this process keeps a few KiB (read by seeking)."""
    spec = hm.write_module(tmp_path, hm.FLOODS_OUTPUT)
    with open_golden(golden) as gf:
        case = gf.case(ids["4d"][0])
        inputs = gf.data(case.id).inputs
    zygote = start_zygote(spec)
    worker = IsolatedRunner(spec, timeout=60, zygote=zygote)
    try:
        tracemalloc.start()
        outcome = worker.run(CallInputs(case, inputs))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        worker.close()
        zygote.close()
    assert outcome.crashed is None and outcome.output is not None
    assert outcome.log.startswith("...") and outcome.log.endswith("LAST LINE \x1b[2J")
    assert len(outcome.log) <= isolation.LOG_TAIL_CHARS + 3
    assert peak < 8 << 20, peak


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_grandchild_in_its_own_session_is_killed(golden: Path, ids: dict, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("HOSTILE_PIDS", str(pids))
    spec = hm.write_module(tmp_path, hm.SETSID_GRANDCHILD)
    code, _, report = verify(str(golden), "--impl", spec, "--timeout", "2", "--id",
                             ids["3d"][0], report=tmp_path / "r.json")
    assert code == 1 and "timeout" in report["cases"][0]["message"]
    started = [int(x) for x in pids.read_text().split()]
    assert started and all(_dead(pid) for pid in started)  # swept by the zygote (subreaper)


def test_a_killed_zygote_is_replaced(golden: Path, ids: dict, tmp_path: Path) -> None:
    spec = hm.write_module(tmp_path, hm.KILLS_ZYGOTE)
    code, _, report = verify(str(golden), "--impl", spec, "--id", ids["3d"][0],
                             *[a for cid in ids["4d"][:2] for a in ("--id", cid)],
                             report=tmp_path / "r.json")
    assert code == 1
    verdicts = {c["id"]: c["verdict"] for c in report["cases"]}
    assert verdicts[ids["3d"][0]] == "ERROR"
    assert all(verdicts[cid] == "PASS" for cid in ids["4d"][:2])


def test_a_stopped_zygote_meets_a_deadline_and_is_replaced(
        golden: Path, ids: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aclcheck.running.workers import zygote

    monkeypatch.setattr(zygote, "REQUEST_TIMEOUT_S", 2.0)  # the limit under test
    spec = hm.write_module(tmp_path, hm.STOPS_ZYGOTE)
    code, _, report = verify(str(golden), "--impl", spec, "--id", ids["3d"][0],
                             *[a for cid in ids["4d"][:1] for a in ("--id", cid)],
                             report=tmp_path / "r.json")
    assert code == 1
    verdicts = {c["id"]: c["verdict"] for c in report["cases"]}
    assert verdicts[ids["3d"][0]] == "ERROR" and verdicts[ids["4d"][0]] == "PASS"


def test_nothing_is_left_behind_when_aclcheck_is_killed(golden: Path, ids: dict,
                                                        tmp_path: Path) -> None:
    """SIGKILL to aclcheck mid-call: its zygote, worker and the worker's setsid grandchild
    end, and no temporary file stays (the workers' output files are unlinked)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    pids = tmp_path / "pids"
    spec = hm.write_module(tmp_path, hm.SETSID_GRANDCHILD)
    env = dict(os.environ, TMPDIR=str(temp), HOSTILE_PIDS=str(pids))
    proc = subprocess.Popen([sys.executable, "-m", "aclcheck", "verify", str(golden),
                             "--impl", spec, "--timeout", "600", "--id", ids["3d"][0]],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1200):  # until the grandchild started: the call is under way
            if (pids.exists() and pids.read_text().strip()) or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert proc.poll() is None and pids.read_text().strip(), "the kernel never ran"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    grandchild = int(pids.read_text().split()[0])
    for _ in range(600):  # the zygote's clean-up (its parent-death signal) takes moments
        if _dead(grandchild):
            break
        time.sleep(0.1)
    assert _dead(grandchild)
    assert list(temp.iterdir()) == []


# -- the inputs while the run reads them ------------------------------------------------------


def test_a_golden_file_changed_during_the_run_fails_the_gate(
        golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "suite.h5"
    copy.write_bytes(golden.read_bytes())
    monkeypatch.setenv("HOSTILE_GOLDEN", str(copy))
    spec = hm.write_module(tmp_path, hm.TOUCHES_GOLDEN)
    code, out, report = verify(str(copy), "--impl", spec, "--family", "divisible",
                               report=tmp_path / "r.json")
    assert all(c["verdict"] == "PASS" for c in report["cases"])
    assert code == 1
    assert "changed while the run read it" in out


# -- the gate ----------------------------------------------------------------------------------


def test_a_kernel_that_declares_nothing_is_not_a_pass(golden: Path, tmp_path: Path) -> None:
    spec = hm.write_module(tmp_path, hm.DECLARES_NOTHING)
    code, out, report = verify(str(golden), "--impl", spec, report=tmp_path / "r.json")
    assert report["summary"]["skipped"] == report["summary"]["cases"] > 0
    assert code == 1
    assert "gate failed: no case was judged" in out
    result = CliRunner().invoke(cli, ["hunt", "--impl", spec, "--max-time", "1", "-o",
                                      str(tmp_path / "found")], catch_exceptions=False)
    assert result.exit_code == 1 and "no call was judged" in result.output


# -- hostile text ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["--isolate", "--no-isolate"])
def test_a_kernels_text_is_escaped_in_every_report(golden: Path, ids: dict, tmp_path: Path,
                                                   mode: str, monkeypatch: pytest.MonkeyPatch
                                                   ) -> None:
    if mode == "--isolate":  # what a worker prints comes back in the case's detail
        monkeypatch.setenv("HOSTILE_PRINT", "1")
    spec = hm.write_module(tmp_path, hm.RAISES_HOSTILE_TEXT)
    junit, html = tmp_path / "r.xml", tmp_path / "r.html"
    code, out, report = verify(str(golden), "--impl", spec, mode, "--id", ids["4d"][0], "-v",
                               "--junit", str(junit), "--html", str(html),
                               report=tmp_path / "r.json")
    assert code == 1 and report["cases"][0]["verdict"] == "ERROR"
    for raw in ("\x1b", "\x07", "\x00", "\u202e", "\udc80"):
        assert raw not in out, repr(raw)
        assert raw not in junit.read_text(errors="surrogateescape"), repr(raw)
    assert "\\x1b[2J" in out and "\\u202e" in out
    ET.parse(junit)  # valid XML
    page = html.read_text()
    assert "<script>alert(1)</script>" not in page and "&lt;/script&gt;" in page


def test_a_kernels_text_never_breaks_a_case_file(golden: Path, ids: dict,
                                                 tmp_path: Path) -> None:
    from aclcheck.suite.casefile import load_case_file

    spec = hm.write_module(tmp_path, hm.RAISES_HOSTILE_TEXT)
    cases = tmp_path / "regressions.toml"
    result = CliRunner().invoke(cli, ["shrink", str(golden), "--id", ids["4d"][0], "--impl",
                                      spec, "--max-time", "3", "--append", str(cases)],
                                catch_exceptions=False)
    assert result.exit_code == 1, result.output
    loaded = load_case_file(cases)
    assert [c.id for c in loaded.cases] and "injected" not in [c.id for c in loaded.cases]
    assert "\\x1b[2J" in cases.read_text()


# -- attacks on aclcheck's own process (--no-isolate) ----------------------------------------


def test_in_process_kernels_cannot_replace_the_judge(golden: Path, tmp_path: Path) -> None:
    judge = aclcheck.running.runner.judge
    compare_code = aclcheck.judging.case.compare.compare_output.__code__
    spec = hm.write_module(tmp_path, hm.PATCHES_JUDGE_WHEN_CALLED)
    code, out, report = verify(str(golden), "--impl", spec, "--no-isolate", "--family",
                               "divisible", report=tmp_path / "r.json")
    assert code == 1
    assert report["isolation"] == "in-process" and "ran in this process" in out
    page = tmp_path / "page.html"
    assert cli_run_ok("report", str(tmp_path / "r.json"), "--html", str(page))
    assert "ran in aclcheck&#39;s own process" in page.read_text()
    for case in report["cases"]:
        assert case["verdict"] == "ERROR", case
        assert "changed aclcheck's own process: aclcheck.running.runner.judge" in case["message"]
    assert (aclcheck.running.runner.judge is judge
            and aclcheck.judging.case.compare.compare_output.__code__ is compare_code)


def test_in_process_kernels_cannot_move_or_lock_the_reports(
        golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("HOSTILE_ELSEWHERE", str(elsewhere))
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    umask = os.umask(0o022)
    try:
        spec = hm.write_module(tmp_path, hm.CHANGES_CWD_AND_UMASK)
        result = CliRunner().invoke(cli, ["verify", str(golden), "--impl", spec,
                                          "--no-isolate", "--family", "divisible",
                                          "--json", "r.json"], catch_exceptions=False)
        assert Path.cwd() == here and os.umask(0o022) == 0o022  # put back after each call
    finally:
        os.umask(umask)
    assert result.exit_code == 1
    report = here / "r.json"
    assert report.exists() and not list(elsewhere.iterdir())
    assert report.stat().st_mode & 0o777 == 0o644
    cases = json.loads(report.read_text())["cases"]
    assert all("the working directory" in c["message"] for c in cases)


def test_in_process_exit_handlers_cannot_turn_a_failure_into_exit_0(
        golden: Path, tmp_path: Path) -> None:
    spec = hm.write_module(tmp_path, hm.REGISTERS_EXIT_ZERO)
    done = subprocess.run([sys.executable, "-m", "aclcheck", "verify", str(golden), "--impl",
                           spec, "--no-isolate", "--family", "divisible"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]


# -- what a worker says about itself is data, never a capability ---------------------------


@pytest.mark.parametrize("source", ["NOISY", "CLAIMS_REFUSAL_IN_ANSWERS",
                                    "CLAIMS_REFUSAL_WHEN_READY"])
def test_a_plain_callable_cannot_excuse_itself_from_determinism(
        golden: Path, ids: dict, tmp_path: Path, source: str) -> None:
    """A non-deterministic `module:function` kernel is NONDETERMINISTIC under --repeat
    --deterministic whatever its worker claims: a refusal in its answers or a "cannot
    switch" note in its READY frame (a plain callable has one mode)."""
    text = hm.CORRECT + hm._NOISY + "\nfn = noisy\n" if source == "NOISY" else getattr(hm, source)
    spec = hm.write_module(tmp_path, text)
    code, out, report = verify(str(golden), "--impl", spec, "--repeat", "3",
                               "--deterministic", "--no-stale-check",
                               *[a for cid in ids["3d"] for a in ("--id", cid)],
                               report=tmp_path / "r.json")
    verdicts = [c["verdict"] for c in report["cases"]]
    assert code == 1 and "NONDETERMINISTIC" in verdicts, (verdicts, out[-1500:])


def test_stopped_spare_and_recall_workers_wait_no_longer_than_the_timeout(
        golden: Path, ids: dict, tmp_path: Path) -> None:
    """The kernel SIGSTOPs its zygote's other workers (the spare forked ahead, the
    stale-state check's worker) and kills itself: every wait that follows (a worker's
    start, a fork request, a call) is capped by --timeout, so the run ends in a few
    timeouts, not the 120 s start allowance per stopped worker; the 4-D cases pass."""
    spec = hm.write_module(tmp_path, hm.STOPS_SIBLINGS)
    report = tmp_path / "r.json"
    # 8 s: a fresh worker's start on a loaded 2-core machine (the suite's -n 2) took over
    # 3 s, and the 4-D cases' workers must start within it; still far below 120 s
    proc = subprocess.run([sys.executable, "-m", "aclcheck", "verify", str(golden), "--impl",
                           spec, "--timeout", "8", "--json", str(report)],
                          capture_output=True, text=True, timeout=100)  # a guard: 120 s before
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    verdicts = {c["id"]: c for c in json.loads(report.read_text())["cases"]}
    assert all(verdicts[cid]["verdict"] == "PASS" for cid in ids["4d"]), \
        [(cid, verdicts[cid]["verdict"], verdicts[cid]["message"]) for cid in ids["4d"]]
    assert all(verdicts[cid]["verdict"] == "ERROR" for cid in ids["3d"])
    assert not any("120" in c["message"] for c in verdicts.values())


@pytest.mark.parametrize("isolate", ["--isolate", "--no-isolate"])
def test_an_array_subclass_lying_about_its_shape_is_an_error_not_a_crash(
        golden: Path, tmp_path: Path, isolate: str) -> None:
    """Isolated or in this process, an output whose class claims the expected shape and
    dtype over three bytes of memory is each case's ERROR; the run goes on, the reports
    are written."""
    spec = hm.write_module(tmp_path, hm.LYING_ARRAY)
    code, out, report = verify(str(golden), "--impl", spec, isolate, "--no-stale-check",
                               report=tmp_path / "r.json")
    assert code == 1 and "internal error" not in out, out[-2000:]
    assert report["cases"] and all(c["verdict"] == "ERROR" and "returned" in c["message"]
                                   for c in report["cases"]), report["cases"][0]
