"""The zygote's side of ending workers: kill a worker's process group, reap it, and sweep
the orphans its descendants became (the zygote is their subreaper on Linux, see
aclcheck.running.workers.zygote) until none is left."""

from __future__ import annotations

import contextlib
import os
import signal

#: rounds of an orphan sweep (each kills what the previous round's deaths reparented)
SWEEP_ROUNDS = 100


def kill_group(pid: int, alive: bool = True) -> None:
    """SIGKILL the process group `pid` leads (the worker and whatever it started); when
    the worker is known `alive` (not reaped: its pid cannot be reused) but has not made
    its group yet, SIGKILL the worker itself."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def shutdown(live: set[int]) -> None:
    """Kill every worker's group, then sweep orphans until none is left, and exit."""
    for pid in list(live):
        kill_group(pid)
    for pid in list(live):
        reap_child(pid)
    live.clear()
    sweep(live)
    os._exit(0)


def _children() -> list[int]:
    """This process's children (Linux /proc; [] elsewhere), zombies included."""
    me = os.getpid()
    try:
        found: list[int] = []
        for tid in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{tid}/children") as f:
                found += [int(x) for x in f.read().split()]
        return found
    except OSError:
        pass
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(me):
            found.append(int(name))
    return found


def sweep(live: set[int]) -> None:
    """Kill and reap every child that is not a live worker: the orphans a dead worker's
    descendants became (each death may reparent more, hence the rounds)."""
    for _ in range(SWEEP_ROUNDS):
        orphans = [pid for pid in _children() if pid not in live]
        if not orphans:
            return
        for pid in orphans:
            kill_group(pid)
        for pid in orphans:
            reap_child(pid)


def reap_child(pid: int) -> int | None:
    """Wait for child `pid`; its exit code (negative: a signal; None: not a child)."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)
