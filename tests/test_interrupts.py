"""Ctrl-C at any moment: one line, exit 130, never a traceback, never a run that goes on.

Each test starts the real command-line entry point in a process group of its own (the
terminal's foreground group, as a shell makes it) and sends SIGINT to that group at a
moment the test picks deterministically: while a given module is being imported, while
a kernel runs (the kernel itself sends it), or after the n-th task went to a process
pool. No sleeping, no timing: the signal arrives exactly there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
REPO = TESTS.parent

#: runs `aclcheck ARGS...` as the console script does, with a Ctrl-C at TRIGGER:
#: "import:MODULE" (while MODULE is first imported), "submit:N" (after the N-th task went
#: to a process pool), "call:MODULE:CLASS:N" (after the N-th CLASS.run call returned),
#: "finalizer:MODULE:CLASS:METHOD" (inside a finalizer that runs after the first
#: CLASS.METHOD call: Python loses a KeyboardInterrupt raised there) or "kernel" (the
#: kernel sends it: impl_fixtures.ctrl_c & co.)
LAUNCHER = r'''
import os, signal, sys

trigger, args = sys.argv[1], sys.argv[2:]
os.environ["ACLCHECK_TEST_TERMINAL"] = str(os.getpgrp())


def ctrl_c():
    os.killpg(os.getpgrp(), signal.SIGINT)


kind, _, what = trigger.partition(":")
if kind == "import":
    class CtrlCOnImport:
        def find_spec(self, name, path=None, target=None):
            if name == what:
                sys.meta_path.remove(self)
                ctrl_c()
            return None

    sys.meta_path.insert(0, CtrlCOnImport())
elif kind == "submit":
    import concurrent.futures

    submit, submitted = concurrent.futures.ProcessPoolExecutor.submit, []

    def counting(self, *args, **kwargs):
        future = submit(self, *args, **kwargs)
        submitted.append(future)
        if len(submitted) == int(what):
            ctrl_c()
        return future

    concurrent.futures.ProcessPoolExecutor.submit = counting
elif kind == "call":
    import importlib

    module, name, n = what.split(":")
    cls = getattr(importlib.import_module(module), name)
    run, calls = cls.run, []

    def counting_run(self, call):
        outcome = run(self, call)
        calls.append(outcome)
        if len(calls) == int(n):
            ctrl_c()
        return outcome

    cls.run = counting_run
elif kind == "finalizer":
    import importlib

    module, name, method = what.split(":")
    cls = getattr(importlib.import_module(module), name)
    original, fired = getattr(cls, method), []

    class Lost:
        def __del__(self):
            ctrl_c()
            for _ in range(10**6):  # the handler runs here, inside the finalizer
                pass

    def then_lost(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        if not fired:
            fired.append(True)
            Lost()  # unreferenced at once: its __del__ runs now
        return result

    setattr(cls, method, then_lost)
sys.argv = ["aclcheck", *args]
from aclcheck.cli import main

main()
'''


def interrupted_run(trigger: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(REPO)]))
    return subprocess.run([sys.executable, "-c", LAUNCHER, trigger, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, process_group=0,
                          stdin=subprocess.DEVNULL, timeout=900)


def assert_polite(proc: subprocess.CompletedProcess[str]) -> None:
    """Exit 130, one 'interrupted' line on stderr, no traceback anywhere."""
    everything = proc.stdout + proc.stderr
    assert proc.returncode == 130, everything
    assert "Traceback" not in everything and "Aborted" not in everything, everything
    assert proc.stderr.count("aclcheck: interrupted") == 1, proc.stderr


@pytest.mark.parametrize(("module", "command"), [
    ("click", ["products"]),
    ("click", ["--version"]),
    ("numpy", ["verify", "{golden}"]),
    ("h5py", ["inspect", "{golden}"]),
    ("ml_dtypes", ["generate", "-o", "{out}", "--family", "divisible"]),
])
def test_ctrl_c_during_start_up_imports(isolation_golden: Path, tmp_path: Path, module: str,
                                        command: list[str]) -> None:
    args = [a.format(golden=isolation_golden, out=tmp_path / "new.h5") for a in command]
    proc = interrupted_run(f"import:{module}", *args, cwd=tmp_path)
    assert_polite(proc)
    assert proc.stderr == "aclcheck: interrupted\n" and proc.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("mode", [[], ["--no-isolate"], ["--jobs", "2"]])
@pytest.mark.parametrize("kernel", ["ctrl_c", "ctrl_c_swallowed"])
def test_ctrl_c_while_a_kernel_runs(isolation_golden: Path, tmp_path: Path, kernel: str,
                                    mode: list[str]) -> None:
    """In the worker, in-process, or in a pool worker's worker; a kernel that swallows
    the interrupt (in-process it sees it) stops the run all the same."""
    report = tmp_path / "r.json"
    proc = interrupted_run("kernel", "verify", str(isolation_golden), "--impl",
                           f"impl_fixtures:{kernel}", "--family", "divisible",
                           "--family", "rank3", "--json", str(report), *mode, cwd=tmp_path)
    assert_polite(proc)
    assert "aclcheck: interrupted after" in proc.stderr
    data = json.loads(report.read_text())
    assert data["interrupted"] is True  # the partial report, marked
    assert all(c["verdict"] == "PASS" for c in data["cases"])  # only 4-D cases got judged


def test_ctrl_c_while_a_pool_generates(tmp_path: Path) -> None:
    out = tmp_path / "suite.h5"
    proc = interrupted_run("submit:2", "generate", "-o", str(out), "--jobs", "2", cwd=tmp_path)
    assert_polite(proc)
    assert proc.stderr.strip().splitlines()[-1] == "aclcheck: interrupted"
    assert not out.exists() and not list(tmp_path.glob("*.tmp.h5"))


def test_ctrl_c_after_mindspore_replaced_the_handler(tmp_path: Path) -> None:
    """MindSpore's runtime installs its own SIGINT handler at its first op: in-process
    (--no-isolate) a Ctrl-C then ended aclcheck by SIGTERM, without a report."""
    pytest.importorskip("mindspore")
    report = tmp_path / "r.json"
    proc = interrupted_run("call:aclcheck.impls.mindspore_impl:MindSporeImpl:3", "verify",
                           str(REPO / "golden" / "ci-suite.h5"), "--impl", "mindspore",
                           "--no-isolate", "--product", "atlas-a2", "--dtype", "float32",
                           "--family", "divisible", "--json", str(report), cwd=tmp_path)
    assert_polite(proc)
    assert json.loads(report.read_text())["interrupted"] is True


@pytest.mark.parametrize(("where", "kernel", "mode"), [
    ("aclcheck.running.workers.parent:IsolatedRunner:submit", "hangs", []),
    ("aclcheck.impls.callable_impl:CallableImpl:run", "correct", ["--no-isolate"])])
def test_ctrl_c_lost_in_a_finalizer_still_stops_the_run(isolation_golden: Path,
                                                        tmp_path: Path, where: str,
                                                        kernel: str, mode: list[str]) -> None:
    """Garbage collection may run a finalizer at any allocation; a KeyboardInterrupt
    raised in it is lost (Python prints 'Exception ignored' and goes on). Seen under load:
    the run went on until the hung case timed out. Unless the Ctrl-C is acted on, this
    run ends with a hang on a 3-D case (isolated) or with every case judged."""
    report = tmp_path / "r.json"
    proc = interrupted_run(f"finalizer:{where}", "verify", str(isolation_golden), "--impl",
                           f"impl_fixtures:{kernel}", "--family", "divisible", "--family",
                           "rank3", "--json", str(report), *mode, cwd=tmp_path)
    assert_polite(proc)
    assert "Exception ignored" not in proc.stderr
    data = json.loads(report.read_text())
    assert data["interrupted"] is True
    assert not any(c["verdict"] == "ERROR" for c in data["cases"])  # no hang waited out
