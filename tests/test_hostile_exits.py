"""Every process aclcheck starts ends when aclcheck ends, however it ends (kill -9
included), and a case whose executor worker died is that case's ERROR, never a hang or
an internal error (issue 36, routes 4 and 6).

The kill tests run aclcheck as a real process, wait for what it started (a marker file
the kernel writes, or the pool's workers), kill it with SIGKILL and wait for every
process it started to end. Their only limit is a liveness bound far above the half
second a worker takes to notice (aclcheck.executors.PARENT_LOOK_S).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import Future
from pathlib import Path

import hostile_modules as hm
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.errors import WorkerLost
from aclcheck.store.dispatch import open_golden
from aclcheck.store.golden_writer import Prepared
from aclcheck.suite.generate import CaseStream, iter_prepared
from aclcheck.suite.selection import Selection

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

#: how long the processes aclcheck started may take to end after it was killed (they
#: look every 0.5 s; the bound is for a loaded machine, never reached when they work)
GONE_WITHIN_S = 60.0

BLOCKS_ONCE_CALLED = '''
import os
import time
from pathlib import Path


def fn(grad_output, self):
    Path(os.environ["HOSTILE_MARKER"], str(os.getpid())).touch()
    time.sleep(600)
    return correct(grad_output, self)
'''

ENDS_ITS_PROCESS_ON_3D = '''
import json
import os
import signal


def fn(grad_output, self):
    if self.ndim == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return correct(grad_output, self)
'''


def _ppids() -> dict[int, int]:
    """pid -> parent pid of every process now."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            found[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def _descendants(root: int) -> set[int]:
    parents = _ppids()
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    """Those of `pids` still running (a zombie has ended)."""
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _wait_for(condition, what: str, limit: float = GONE_WITHIN_S):  # type: ignore[no-untyped-def]
    end = time.monotonic() + limit
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {limit:g} s: {what}")


def _kill_and_check(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL aclcheck and assert that everything it started ends."""
    started = _descendants(proc.pid)
    assert started, "aclcheck started no process"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    try:
        _wait_for(lambda: not _alive(started), "every process aclcheck started ends")
    finally:
        for pid in _alive(started):
            os.kill(pid, signal.SIGKILL)


def _aclcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "aclcheck", *args],
                            env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_kill_9_of_verify_jobs_leaves_no_process(isolation_golden: Path,
                                                 tmp_path: Path) -> None:
    """Pool workers, their zygotes and the zygotes' workers, the resource tracker."""
    marker = tmp_path / "called"
    marker.mkdir()
    spec = hm.write_module(tmp_path, BLOCKS_ONCE_CALLED)
    proc = _aclcheck("verify", str(isolation_golden), "--impl", spec, "--jobs", "2",
                     "--timeout", "600", env={"HOSTILE_MARKER": str(marker)})
    try:
        _wait_for(lambda: len(list(marker.iterdir())) >= 2, "both pool workers call")
        _kill_and_check(proc)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_kill_9_of_generate_jobs_leaves_no_process(tmp_path: Path) -> None:
    proc = _aclcheck("generate", "--output", str(tmp_path / "g.h5"), "--seed", "3",
                     "--count", "100000", "--jobs", "2")
    try:
        _wait_for(lambda: len(_descendants(proc.pid)) >= 2, "both pool workers start")
        _kill_and_check(proc)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("fan_out", [("--jobs", "2"), ("--executor", "dask-local:2")],
                         ids=["jobs", "dask-local"])
def test_a_kernel_that_kills_its_executor_worker_is_an_error_not_a_hang(
        valid_3d_4d_golden: Path, tmp_path: Path, fan_out: tuple[str, str]) -> None:
    """Under --no-isolate the kernel runs in the executor's worker: a worker it kills
    fails its case (retried once on a fresh worker, then ERROR) and the run goes on."""
    if fan_out[0] == "--executor":
        pytest.importorskip("distributed")
    spec = hm.write_module(tmp_path, ENDS_ITS_PROCESS_ON_3D)
    report = tmp_path / "r.json"
    result = CliRunner().invoke(cli, ["verify", str(valid_3d_4d_golden), "--impl", spec,
                                      "--no-isolate", *fan_out, "--json", str(report)])
    assert result.exit_code == 1, result.output
    cases = json.loads(report.read_text())["cases"]
    rank3 = [c for c in cases if c["family"] == "rank3"]
    assert rank3 and all(c["verdict"] == "ERROR" for c in rank3)
    assert all("worker" in c["message"] and "retried once" in c["message"] for c in rank3)
    with open_golden(valid_3d_4d_golden) as gf:
        assert len(cases) == len(gf.ids())  # every case judged: the run went on


class BrokenProcessPool(Exception):
    """Named as the exception a process pool's future raises when its worker died."""


class DyingExecutor:
    """Runs each submitted task here; the first `deaths` submissions fail as a dead
    worker's would."""

    def __init__(self, deaths: int) -> None:
        self.deaths, self.submitted = deaths, 0

    def submit(self, fn, *args):  # type: ignore[no-untyped-def]
        self.submitted += 1
        future: Future = Future()
        if self.submitted <= self.deaths:
            future.set_exception(BrokenProcessPool("a worker was terminated abruptly"))
        else:
            future.set_result(fn(*args))
        return future


@pytest.mark.parametrize("shard", [None, (1, 2)], ids=["places", "cases"])
def test_generate_redoes_a_batch_whose_worker_died_once_and_stops_clearly_on_two(
        shard: tuple[int, int] | None) -> None:
    """generate's work is its own and deterministic: a batch lost once is made again
    (the same cases and bytes as with no loss); lost twice, a WorkerLost naming it, not exit 4's
    internal error."""
    stream = CaseStream(Selection(count=1, seed=2, families=("divisible", "rank3")), shard,
                        1 << 30)
    def made(batches: list[Prepared]) -> tuple[list[str], bytes]:
        ids = [c.id for p in batches for c in p.cases]
        data = b"".join(p.pools[k].tobytes() for p in batches for k in sorted(p.pools))
        return ids, data

    again = list(iter_prepared(stream, executor=DyingExecutor(1)))
    assert made(again) == made(list(iter_prepared(stream, executor=DyingExecutor(0))))
    with pytest.raises(WorkerLost, match="lost the worker making a batch"):
        list(iter_prepared(stream, executor=DyingExecutor(2)))
