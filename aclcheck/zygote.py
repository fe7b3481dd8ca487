"""A zygote: a clean process, started once per run, that forks isolated workers on request.

It is a fresh interpreter that imports what the adapter needs (the adapter is never run
there: no OpenMP pool, no device context, no threads), so it stays clean whatever the
parent did before (a pytest session or a library user may have run PyTorch in-process,
and a fork of that inherits a dead OpenMP pool: the child waits forever at its first
parallel region). A worker then costs one fork (milliseconds) instead of a fresh
interpreter that re-imports the framework (seconds). Each worker leads its own process
group, so killing the group also ends anything the kernel started (a child that keeps
stdout open must not block `aclcheck ... | tee`). The zygote reaps the workers, reports
their exit status, and dies with its parent (Linux: PR_SET_PDEATHSIG), taking its workers
with it.

POSIX only (fork); the caller falls back to spawned workers elsewhere.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import pickle
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from typing import Any

#: the worker's entry point: (connection fd, arguments) -> returns when done
WorkerMain = Callable[[int, tuple[Any, ...]], None]

_MAX_MESSAGE = 1 << 16
#: seconds the zygote may take to import the adapter's modules and answer a request
REQUEST_TIMEOUT_S = 300.0


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


def _resolve(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


class Zygote:
    """Starts the zygote; `fork_worker` then forks workers from it.

    worker_main, preload: "module:function" references; the zygote calls
    preload(preload_arg) once (imports), and worker_main(fd, args) in each worker.
    """

    def __init__(self, worker_main: str, preload: str, preload_arg: object) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = pickle.dumps((list(sys.path), worker_main, preload, preload_arg))
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "from aclcheck.zygote import main; main()",
             str(theirs.fileno())], pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
            process_group=0)  # its own group: a Ctrl-C at the terminal is the parent's
        theirs.close()
        ours.settimeout(REQUEST_TIMEOUT_S)
        ours.sendall(config)
        self.pid = self._proc.pid
        self._sock = ours

    def _ask(self, message: tuple[Any, ...], fds: list[int] | None = None) -> Any:
        data = pickle.dumps(message)
        try:
            if fds:
                socket.send_fds(self._sock, [data], fds)
            else:
                self._sock.sendall(data)
            reply = self._sock.recv(_MAX_MESSAGE)
        except OSError as exc:  # includes the timeout
            raise RuntimeError(f"the worker zygote does not answer: {exc}") from None
        if not reply:
            raise RuntimeError("the worker zygote exited")
        return pickle.loads(reply)

    def fork_worker(self, args: tuple[Any, ...]) -> tuple[int, socket.socket]:
        """A new worker running worker_main(fd, args); (its pid = its group id, our end
        of its connection)."""
        ours, theirs = socket.socketpair()
        try:
            pid = self._ask(("fork", args), [theirs.fileno()])
        finally:
            theirs.close()
        return pid, ours

    def reap(self, pid: int) -> int | None:
        """Wait for a worker (kill it first) and return its exit code, negative for a
        signal as in multiprocessing (None: already gone)."""
        code = self._ask(("reap", pid))
        return None if code is None else int(code)

    def close(self) -> None:
        """End the zygote (it kills the workers still alive) and wait for it. Idempotent."""
        if self._sock.fileno() < 0:
            return
        self._sock.close()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies (Linux; elsewhere EOF does the job)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def main() -> None:
    """The zygote process: read the configuration, import, then serve requests."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    sock = socket.socket(fileno=int(sys.argv[1]))
    data = sock.recv(_MAX_MESSAGE)
    if not data:
        return
    sys.path[:], worker_ref, preload_ref, preload_arg = pickle.loads(data)
    worker_main = _resolve(worker_ref)
    try:
        _resolve(preload_ref)(preload_arg)
    except Exception:  # noqa: BLE001, S110 - the worker reports a setup error itself
        pass
    _serve(sock, worker_main)


def _serve(sock: socket.socket, worker_main: WorkerMain) -> None:
    """The zygote's loop: fork workers, reap them; on EOF kill the survivors and exit."""
    live: set[int] = set()
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MESSAGE, 1)
        except OSError:
            data, fds = b"", []
        if not data:
            for pid in live:
                kill_group(pid)
            for pid in live:
                _wait(pid)
            return
        kind, arg = pickle.loads(data)
        if kind == "fork":
            pid = os.fork()
            if pid == 0:
                status = 0
                try:
                    os.setpgid(0, 0)
                    sock.close()
                    _die_with_parent()
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                    worker_main(fds[0], arg)
                except BaseException:  # noqa: BLE001 - the parent sees the exit status
                    status = 1
                finally:
                    os._exit(status)
            try:
                os.setpgid(pid, pid)  # also here: the parent may kill before the child ran
            except OSError:
                pass
            os.close(fds[0])
            live.add(pid)
            sock.sendall(pickle.dumps(pid))
        elif kind == "reap":
            live.discard(arg)
            sock.sendall(pickle.dumps(_wait(arg)))


def _wait(pid: int) -> int | None:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)
