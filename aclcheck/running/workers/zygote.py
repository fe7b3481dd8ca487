"""A zygote: a clean process, started once per run, that starts isolated workers on request.

It is a fresh interpreter, so it stays clean whatever the parent did before (a pytest
session or a library user may have run PyTorch in-process, and a fork of that inherits
a dead OpenMP pool: the child waits forever at its first parallel region). Two modes:

  * preload: it imports what the adapter needs by building it once (`preload`; the
    adapter is never run there: no OpenMP pool, no device context, no threads) and
    reports what the preload returned (plain data) or why it failed; each worker is
    then one fork (milliseconds) instead of a fresh interpreter that re-imports the
    framework (seconds);
  * exec (no preload): each worker is a fresh interpreter started from here (device
    runtimes that must start in a fresh process).

Everything it sends the parent is JSON (`Zygote` reads it with a deadline and a size
cap): the zygote ran kernel code when it imported the adapter, so the parent never
unpickles what it says. The parent's requests are the parent's own pickles.

Each worker leads its own process group, so killing the group also ends what the kernel
started. On Linux the zygote is a child subreaper: whatever a worker started that left
its group (`setsid`) is reparented here when the worker dies, and every reap sweeps such
orphans, killed with their groups, until none is left; so does the zygote's shutdown
(the parent closed the connection, or died: PR_SET_PDEATHSIG sends SIGTERM here, and
workers die with the zygote).

POSIX only (fork); the caller runs in-process elsewhere.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import importlib
import json
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import IO, Any

from aclcheck.running.workers.orphans import kill_group as kill_group
from aclcheck.running.workers.orphans import reap_child, shutdown, sweep

#: the worker's entry point: (its file descriptors, arguments) -> returns when done
WorkerMain = Callable[[list[int], tuple[Any, ...]], None]

_MAX_MESSAGE = 1 << 16
#: seconds the zygote may take to answer a request (a fork, a reap: milliseconds)
REQUEST_TIMEOUT_S = 30.0
#: seconds its preload (imports) may take when a request has to wait for it
PRELOAD_ALLOWANCE_S = 120.0
PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class ZygoteError(RuntimeError):
    """The zygote is gone or broke the protocol: start workers another way."""


class PreloadError(Exception):
    """The preload failed: `kind` is the exception's type name, "exit" (the zygote ended
    while importing) or "timeout"; `text` one line."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind
        self.text = text


def _resolve(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def _one_line(text: str, limit: int = 2000) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit] + " ..."


class Zygote:
    """Starts the zygote; `ready` waits for its preload, `fork_worker` starts workers.

    worker_main, preload: "module:function" references; with a preload the zygote calls
    preload(preload_arg) once and forks each worker, which runs worker_main(fds, args);
    without one (exec mode) each worker is a fresh interpreter that runs worker_main.
    """

    def __init__(self, worker_main: str, preload: str | None = None,
                 preload_arg: object = None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = pickle.dumps((list(sys.path), worker_main, preload, preload_arg))
        self.log: IO[bytes] = tempfile.TemporaryFile(prefix="aclcheck-zygote-")
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "from aclcheck.running.workers.zygote import main; main()",
             str(theirs.fileno())], pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
            stdout=self.log, stderr=self.log,
            process_group=0)  # its own group: a Ctrl-C at the terminal is the parent's
        theirs.close()
        ours.settimeout(REQUEST_TIMEOUT_S)
        ours.sendall(config)  # a fresh socket: the zygote reads it after its start-up
        self.pid = self._proc.pid
        self.preloads = preload is not None
        self._sock = ours
        #: seconds a fork or reap request may wait for its answer (cap_requests)
        self.request_timeout = REQUEST_TIMEOUT_S
        self._seq = 0
        self._ready: tuple[bool, Any] | None = None  # (ok, value or PreloadError)
        #: requests sent whose answer is not read yet (answered in order), answers read
        #: while waiting for a later one, and requests whose answer nobody waits for
        self._waiting: list[int] = []
        self._unclaimed: dict[int, dict[str, Any]] = {}
        self._dropped: set[int] = set()

    def cap_requests(self, seconds: float) -> None:
        """Wait at most `seconds` for any answer (a run's --timeout caps every wait: a
        stopped zygote must not stall it for the default allowance)."""
        self.request_timeout = min(self.request_timeout, seconds)

    # -- the preload's report

    def ready(self, timeout: float = PRELOAD_ALLOWANCE_S) -> Any:
        """What the preload returned (plain data; None in exec mode), waiting up to
        `timeout` seconds; PreloadError when it failed, ended the zygote or took longer."""
        if self._ready is None:
            self._ready = self._read_report(timeout)
        ok, value = self._ready
        if not ok:
            raise value
        return value

    def reported(self) -> bool:
        """Whether the preload's report is in (or the zygote is gone): `ready` would not
        wait. Never waits itself (the caller reads cases meanwhile)."""
        if self._ready is not None:
            return True
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def _read_report(self, timeout: float) -> tuple[bool, Any]:
        try:
            self._sock.settimeout(max(timeout, 0.001))
            data = self._sock.recv(_MAX_MESSAGE)
        except TimeoutError:
            return False, PreloadError("timeout", f"did not finish within {timeout:g} s")
        except OSError:
            data = b""  # as EOF: the zygote is gone
        if not data:
            try:
                code = self._proc.wait(10)
            except subprocess.TimeoutExpired:
                code = None
            return False, PreloadError("exit", _exit_text(code))
        try:
            report = _reply(data, 0)
        except ZygoteError as exc:
            return False, PreloadError("protocol", str(exc))
        if report.get("kind") == "ready":
            return True, report.get("value")
        kind, text = report.get("type"), report.get("error")
        return False, PreloadError(kind if isinstance(kind, str) else "error",
                                   _one_line(text if isinstance(text, str) else "failed"))

    # -- requests

    def _request(self, kind: str, arg: object, fds: list[int] | None = None) -> int:
        """Send a request; its number, for `_answer`."""
        try:
            self.ready()
        except PreloadError as exc:
            raise ZygoteError(f"the worker zygote did not start: {exc.text}") from None
        self._seq += 1
        data = pickle.dumps((self._seq, kind, arg))
        try:
            self._sock.settimeout(self.request_timeout)
            if fds:
                socket.send_fds(self._sock, [data], fds)
            else:
                self._sock.sendall(data)
        except OSError as exc:  # includes the timeout
            raise ZygoteError(f"the worker zygote does not answer: {exc}") from None
        self._waiting.append(self._seq)
        return self._seq

    def _answer(self, seq: int) -> dict[str, Any]:
        """The answer to request `seq`; the zygote answers in order, so the answers to
        earlier requests are read first (kept for their askers, or dropped)."""
        while seq not in self._unclaimed:
            if seq not in self._waiting:
                raise ZygoteError(f"no request {seq} is waiting for an answer")
            try:
                self._sock.settimeout(self.request_timeout)
                reply = self._sock.recv(_MAX_MESSAGE)
            except OSError as exc:  # includes the timeout
                raise ZygoteError(f"the worker zygote does not answer: {exc}") from None
            if not reply:
                raise ZygoteError("the worker zygote exited")
            first = self._waiting.pop(0)
            answer = _reply(reply, first)
            if first in self._dropped:
                self._dropped.discard(first)
            else:
                self._unclaimed[first] = answer
        return self._unclaimed.pop(seq)

    def _ask(self, kind: str, arg: object, fds: list[int] | None = None) -> dict[str, Any]:
        return self._answer(self._request(kind, arg, fds))

    def fork_worker(self, args: tuple[Any, ...], fds: list[int] | None = None
                    ) -> tuple[int, socket.socket]:
        """A new worker running worker_main([its end of the connection, *fds], args);
        (its pid = its group id, our end of its connection)."""
        return self.fork_finish(*self.fork_start(args, fds))

    def fork_start(self, args: tuple[Any, ...], fds: list[int] | None = None
                   ) -> tuple[int, socket.socket]:
        """fork_worker's request, sent without waiting for the answer: (the request's
        number, our end of the connection) for fork_finish. The zygote forks while the
        caller goes on."""
        ours, theirs = socket.socketpair()
        try:
            seq = self._request("fork", args, [theirs.fileno(), *(fds or [])])
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return seq, ours

    def fork_finish(self, seq: int, ours: socket.socket) -> tuple[int, socket.socket]:
        """The worker fork_start asked for: (its pid, our end of its connection)."""
        try:
            pid = self._answer(seq).get("pid")
        except BaseException:
            ours.close()
            raise
        if (isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1
                or pid in (os.getpid(), os.getpgrp(), self.pid)):
            ours.close()
            raise ZygoteError(f"the worker zygote answered a fork with {pid!r}")
        return pid, ours

    def reap(self, pid: int) -> int | None:
        """Wait for a worker (kill it first), sweep what it left behind, and return its
        exit code, negative for a signal as in multiprocessing (None: already gone)."""
        code = self._ask("reap", pid).get("code")
        if isinstance(code, bool) or not isinstance(code, int | type(None)):
            raise ZygoteError(f"the worker zygote answered a reap with {code!r}")
        return code

    def reap_later(self, pid: int) -> None:
        """reap() for a worker whose exit code nobody needs, without waiting: the zygote
        reaps and sweeps while the caller goes on (its answer is read and dropped with
        the next request's)."""
        self._dropped.add(self._request("reap", pid))

    def close(self) -> None:
        """End the zygote (it kills its workers and their orphans) and wait for it.
        A zygote still importing is stopped at once. Idempotent."""
        if self._sock.fileno() < 0:
            return
        importing = self.preloads and not (self._ready and self._ready[0])  # or stuck
        with contextlib.suppress(ProcessLookupError):  # a kernel may have stopped it
            self._proc.send_signal(signal.SIGCONT)
        self._sock.close()
        if importing:
            with contextlib.suppress(ProcessLookupError):
                self._proc.send_signal(signal.SIGTERM)
        try:
            self._proc.wait(2 if importing else 10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self.log.close()

def _exit_text(code: int | None) -> str:
    if code is None:
        return "ended"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def _reply(data: bytes, seq: int) -> dict[str, Any]:
    """A zygote's JSON answer to request `seq` (anything else: ZygoteError)."""
    try:
        reply = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        raise ZygoteError("the worker zygote sent an unreadable answer") from None
    if not isinstance(reply, dict) or reply.get("seq") != seq:
        raise ZygoteError("the worker zygote answered another request")
    return reply


# -- the zygote process ------------------------------------------------------------------


def prctl(option: int, value: int) -> None:
    """Linux's prctl(option, value) on this process (nothing elsewhere, or on failure)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(option, value)
        except (OSError, AttributeError):
            pass


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    try:
        data = json.dumps(message, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        data = json.dumps({"seq": message.get("seq"), "kind": "error", "type": "TypeError",
                           "error": f"not plain data: {exc}"}).encode()
    sock.sendall(data)


def main() -> None:
    """The zygote process: read the configuration, preload, then serve requests."""
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # the parent died: clean up, then go
    prctl(_PR_SET_CHILD_SUBREAPER, 1)  # orphans of workers come here, to be swept
    live: set[int] = set()
    signal.signal(signal.SIGTERM, lambda *_: shutdown(live))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    sock = socket.socket(fileno=int(sys.argv[1]))
    data = sock.recv(_MAX_MESSAGE)
    if not data:
        return
    sys.path[:], worker_ref, preload_ref, preload_arg = pickle.loads(data)
    report: dict[str, Any] = {"seq": 0, "kind": "ready", "value": None}
    if preload_ref is not None:
        try:
            report["value"] = _resolve(preload_ref)(preload_arg)
        except BaseException as exc:  # noqa: BLE001 - reported, whatever the module did
            text = f"sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else str(exc)
            report = {"seq": 0, "kind": "error", "type": type(exc).__name__,
                      "error": _one_line(text or type(exc).__name__)}
    _flush()
    _send(sock, report)
    if report["kind"] != "ready":
        shutdown(live)
    _serve(sock, worker_ref, preload_ref is not None, live)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _serve(sock: socket.socket, worker_ref: str, forks: bool, live: set[int]) -> None:
    """The zygote's loop: start workers, reap them; on EOF shut down."""
    worker_main: WorkerMain | None = _resolve(worker_ref) if forks else None
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MESSAGE, 8)
        except OSError:
            data, fds = b"", []
        if not data:
            shutdown(live)
        seq, kind, arg = pickle.loads(data)  # the parent's own request
        if kind == "fork":
            _flush()
            pid = os.fork()
            if pid == 0:
                _worker(sock, fds, arg, worker_ref, worker_main)
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)  # also here: the parent may kill before the child ran
            for fd in fds:
                os.close(fd)
            live.add(pid)
            reply = {"seq": seq, "pid": pid}
        elif kind == "reap":
            live.discard(arg)
            kill_group(arg)
            code = reap_child(arg)
            sweep(live)
            reply = {"seq": seq, "code": code}
        else:
            continue
        try:
            _send(sock, reply)
        except OSError:  # the parent is gone (or gave up on us)
            shutdown(live)


def _worker(sock: socket.socket, fds: list[int], args: tuple[Any, ...], worker_ref: str,
            worker_main: WorkerMain | None) -> None:
    """In the forked child: become the worker (or exec a fresh interpreter that does)."""
    status = 0
    try:
        os.setpgid(0, 0)
        sock.close()
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # workers die with the zygote
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if worker_main is None:
            for fd in fds:
                os.set_inheritable(fd, True)
            payload = base64.b64encode(pickle.dumps((list(sys.path), worker_ref, args)))
            os.execv(sys.executable, [sys.executable, "-c", "from aclcheck.running.workers"
                                      ".zygote import exec_main; exec_main()",
                                      ",".join(map(str, fds)), payload.decode()])
        worker_main(fds, args)
    except BaseException:  # noqa: BLE001 - the parent sees the exit status
        status = 1
    finally:
        os._exit(status)


def exec_main() -> None:
    """A worker started as a fresh interpreter by an exec-mode zygote."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    fds = [int(x) for x in sys.argv[1].split(",")]
    sys.path[:], worker_ref, args = pickle.loads(base64.b64decode(sys.argv[2]))
    _resolve(worker_ref)(fds, args)
