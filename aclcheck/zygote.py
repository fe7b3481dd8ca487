"""A zygote: a process forked once at start-up that forks isolated workers on request.

Forked before the parent runs the adapter (its modules imported, nothing run: no OpenMP
pool, no device context, no threads), it stays that clean for the whole run, so a worker
costs one fork (milliseconds) instead of a fresh interpreter that re-imports the
framework (seconds). Each worker leads its own process group, so killing the group also
ends anything the kernel started (a child that keeps stdout open must not block
`aclcheck ... | tee`). The zygote reaps the workers and reports their exit status.

Linux and macOS only (fork); the caller falls back to spawned workers elsewhere.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
from collections.abc import Callable
from typing import Any

#: the worker's entry point: (connection fd, arguments) -> never returns
WorkerMain = Callable[[int, tuple[Any, ...]], None]

_MAX_MESSAGE = 1 << 16


def kill_group(pid: int) -> None:
    """SIGKILL the process group `pid` leads (the worker and whatever it started)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Zygote:
    """Forks itself now; `fork_worker` then forks workers from that clean copy."""

    def __init__(self, worker_main: WorkerMain) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:  # the zygote
            status = 0
            try:
                ours.close()
                _serve(theirs, worker_main)
            except BaseException:  # noqa: BLE001 - a forked copy must never return
                status = 1
            finally:
                os._exit(status)
        theirs.close()
        self.pid = pid
        self._sock = ours

    def _ask(self, message: tuple[Any, ...], fds: list[int] | None = None) -> Any:
        data = pickle.dumps(message)
        if fds:
            socket.send_fds(self._sock, [data], fds)
        else:
            self._sock.sendall(data)
        reply = self._sock.recv(_MAX_MESSAGE)
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
        """End the zygote (it kills the workers still alive) and wait for it."""
        try:
            self._sock.close()
        finally:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass


def _serve(sock: socket.socket, worker_main: WorkerMain) -> None:
    """The zygote's loop: fork workers, reap them; on EOF kill the survivors and exit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
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
