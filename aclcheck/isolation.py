"""Run an implementation in a worker process that may crash, hang or misbehave.

One long-lived worker at a time, replaced only after it died, hung, or may be corrupted
(the caller says when). Workers are forked from a zygote (see aclcheck.zygote: a clean
process started once per run, modules imported, adapter never run) when the adapter is
fork-safe, so a replacement costs milliseconds; device adapters get spawned workers (a
fresh interpreter that pays the imports again).

Every worker leads its own process group: a crash or a hang kills the whole group. What
it writes to stderr (glibc's "free(): invalid size", a kernel's warnings) goes to a log
file and comes back with that call's outcome instead of reaching the console. How long a
call may run is a `CallClock`'s allowance (hang detection that adapts to the run),
capped by the timeout.
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from aclcheck import interrupts
from aclcheck.hangs import CallClock
from aclcheck.impls.base import CallInputs, Outcome, guarded_run
from aclcheck.zygote import Zygote, kill_group

#: seconds a worker may take to start (imports, devices): not a call, not the timeout
START_ALLOWANCE_S = 120.0
#: a heartbeat line every this many seconds while one call is awaited
HEARTBEAT_EVERY_S = 10.0
#: the tail of a worker's stderr kept per call
LOG_TAIL_CHARS = 4000

Heartbeat = Callable[[str], None]


def describe_exit(exitcode: int | None) -> str:
    """'killed by SIGSEGV (segmentation fault)' / 'exited with code 3'."""
    if exitcode is None:
        return "worker vanished"
    if exitcode < 0:
        try:
            sig = signal.Signals(-exitcode)
            text = signal.strsignal(sig) or ""
            return f"killed by {sig.name}" + (f" ({text.lower()})" if text else "")
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


def call_size(call: CallInputs) -> int:
    """Elements a call moves (gradOutput + self): what 'comparable calls' compares."""
    return sum(t.storage.size for t in (call.grad_output, call.self) if t is not None)


# -- the worker ------------------------------------------------------------------------------


def _worker_main(conn: Connection, spec: str, deterministic: bool | None,
                 memory_limit: int | None, log_path: str) -> None:
    """Build the adapter from its spec, then serve calls until the connection closes."""
    from aclcheck.impls.registry import create

    faulthandler.disable()  # a crash is reported by the parent, not dumped on stderr
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(log, 2)
    os.close(log)
    if memory_limit:
        import resource

        # address-space cap: a runaway allocation raises MemoryError (or the kernel
        # kills the worker) instead of taking the machine down
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    try:
        impl = create(spec)
        if deterministic is not None:
            impl.set_deterministic(deterministic)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        conn.send(("setup-error", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            call = conn.recv()  # a CallInputs: frozen dataclasses and numpy arrays
        except EOFError:
            return
        if call is None:
            return
        start = time.perf_counter()
        try:
            outcome = guarded_run(impl, call)
        except KeyboardInterrupt:  # raised by the kernel: the run stops, as in-process
            conn.send(("interrupted", None, 0.0))
            continue
        seconds = time.perf_counter() - start  # the call's own time, no queueing
        try:
            conn.send(("outcome", outcome, seconds))
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable output object
            conn.send(("outcome", Outcome(raised=f"output cannot be returned: {exc}"),
                       seconds))


def _zygote_worker(fd: int, args: tuple[Any, ...]) -> None:
    _worker_main(Connection(fd), *args)


def _spawned_worker(conn: Connection, *args: Any) -> None:
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    # started with SIGINT blocked (held_for_children): drop a Ctrl-C that arrived while
    # it was still in the terminal's process group, then behave as a forked worker does
    interrupts.child_ignores()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _worker_main(conn, *args)


def _preload(spec: str) -> None:
    """In the zygote: import what the adapter needs by building it once (never run)."""
    from aclcheck.impls.registry import create

    create(spec).close()


def start_zygote(spec: str) -> Zygote | None:
    """A zygote for a fork-safe adapter, or None where fork() is unavailable. It starts
    now and imports in the background while the caller reads its first cases."""
    if not hasattr(os, "fork"):
        return None
    return Zygote("aclcheck.isolation:_zygote_worker", "aclcheck.isolation:_preload", spec)


# -- the parent's side -----------------------------------------------------------------------


@dataclass
class _Live:
    """One running worker: its group, connection, exit-code source and stderr log."""

    pid: int
    conn: Connection
    log: Path
    process: Any = None  # the multiprocessing.Process of a spawned worker
    answered: int = 0
    log_offset: int = 0

    def new_log(self) -> str:
        """What the worker wrote to stderr since the last call (its tail)."""
        try:
            with self.log.open("rb") as f:
                f.seek(self.log_offset)
                data = f.read()
        except OSError:
            return ""
        self.log_offset += len(data)
        text = data.decode("utf-8", "replace").strip()
        return text if len(text) <= LOG_TAIL_CHARS else "..." + text[-LOG_TAIL_CHARS:]


class IsolatedRunner:
    """Calls an adapter (rebuilt from `spec`) in a worker process, hang-checked."""

    def __init__(self, spec: str, timeout: float, deterministic: bool | None = None,
                 memory_limit: int | None = None, start_method: str = "spawn", *,
                 zygote: Zygote | None = None, clock: CallClock | None = None,
                 heartbeat: Heartbeat | None = None) -> None:
        self.spec = spec
        self.memory_limit = memory_limit
        self.timeout = timeout
        self.deterministic = deterministic
        self.zygote = zygote
        self.clock = clock if clock is not None else CallClock(cap=timeout)
        self.heartbeat = heartbeat
        self._ctx = mp.get_context(start_method)
        self._live: _Live | None = None
        self._pending: tuple[str, int, bool] | None = None  # case id, size, first call
        self._sent_at = 0.0
        self._send_failed = False
        self._logdir = Path(tempfile.mkdtemp(prefix="aclcheck-workers-"))
        # removed by close(), or at exit when an owner never closes (a pool's cache)
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._logdir, True)
        #: workers started so far (a test proves fork-safe runs start no fresh process)
        self.started = 0
        self.spawned = 0
        self.restarts = 0

    # -- worker lifetime

    def _start(self) -> _Live:
        log = self._logdir / f"worker{self.started}.log"
        log.touch()
        args = (self.spec, self.deterministic, self.memory_limit, str(log))
        self.started += 1
        live = None
        if self.zygote is not None:
            try:
                pid, sock = self.zygote.fork_worker(args)
                live = _Live(pid, Connection(sock.detach()), log)
            except RuntimeError:  # the zygote is gone: spawned workers from now on
                self.zygote.close()
                self.zygote = None
        if live is None:
            parent, child = self._ctx.Pipe()
            proc = self._ctx.Process(target=_spawned_worker, args=(child, *args), daemon=True)
            with interrupts.held_for_children():  # Ctrl-C is the parent's, even at start
                proc.start()
            self.spawned += 1
            child.close()
            live = _Live(proc.pid, parent, log, process=proc)
        if not live.conn.poll(max(self.timeout, START_ALLOWANCE_S)):
            self._retire(live)
            raise RuntimeError(f"isolated worker for {self.spec} did not start")
        try:
            kind, payload = live.conn.recv()[:2]
        except (EOFError, OSError):
            code = self._retire(live)
            raise RuntimeError(f"isolated worker for {self.spec} died at start: "
                               f"{describe_exit(code)}" + _tail(live.new_log())) from None
        if kind != "ready":
            self._retire(live)
            raise RuntimeError(f"isolated worker for {self.spec}: {payload}")
        return live

    def _retire(self, live: _Live) -> int | None:
        """Kill the worker's whole group, reap it; its exit code (kept if it had died)."""
        # a zygote's worker is reaped only below; a spawned one may be reaped already
        kill_group(live.pid, alive=live.process is None or live.process.exitcode is None)
        if live.process is not None:
            live.process.join(5)
            code = live.process.exitcode
        else:
            assert self.zygote is not None
            code = self.zygote.reap(live.pid)
        live.conn.close()
        return code

    def _drop(self, live: _Live) -> int | None:
        code = self._retire(live)
        with contextlib.suppress(OSError):
            live.log.unlink()
        self._live = None
        return code

    # -- calls

    def submit(self, call: CallInputs) -> None:
        """Send one call; the worker computes while the caller does other work."""
        if self._live is None:
            self._live = self._start()
        self._pending = (call.case.id, call_size(call), self._live.answered == 0)
        self._sent_at = time.perf_counter()
        try:
            self._live.conn.send(call)
            self._send_failed = False
        except (BrokenPipeError, ConnectionResetError, OSError):
            self._send_failed = True  # the worker is gone: collect() says how

    def _wait(self, live: _Live, allowance: float, case_id: str) -> bool:
        """Poll for the answer until the allowance runs out; heartbeat on long waits."""
        next_beat = HEARTBEAT_EVERY_S
        while True:
            interrupts.check()  # a Ctrl-C swallowed meanwhile (in a finalizer) stops here
            elapsed = time.perf_counter() - self._sent_at
            remaining = allowance - elapsed
            if remaining <= 0:
                return False
            if live.conn.poll(min(remaining, max(0.0, next_beat - elapsed))):
                return True
            elapsed = time.perf_counter() - self._sent_at
            if elapsed >= next_beat and elapsed < allowance:
                if self.heartbeat is not None:
                    self.heartbeat(f"aclcheck: {case_id}: still running after {elapsed:.0f} s "
                                   f"(declared hung after {allowance:.0f} s)")
                next_beat += HEARTBEAT_EVERY_S

    def collect(self) -> Outcome:
        """The answer to the submitted call; a crash or a hang (counted from the
        submission) becomes Outcome(crashed=...) and the next call gets a fresh worker."""
        live, pending = self._live, self._pending
        assert live is not None and pending is not None, "collect() without submit()"
        case_id, size, first = pending
        allowance, why = self.clock.allowance(size, first)
        answered, died = False, self._send_failed
        if not died:
            try:
                answered = self._wait(live, allowance, case_id)
                if answered:
                    kind, outcome, seconds = live.conn.recv()
                    self._pending = None
                    if kind == "interrupted":
                        raise KeyboardInterrupt
                    live.answered += 1
                    self.clock.record(size, seconds, first)
                    log = live.new_log()
                    return replace(outcome, log=log) if log else outcome
            except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
                died = True  # the worker died mid-call
        elapsed = time.perf_counter() - self._sent_at
        self._pending = None
        log = live.new_log()
        code = self._drop(live)
        self.restarts += 1
        if died:
            reason = f"worker {describe_exit(code)}"
        else:
            reason = (f"timeout: no answer after {elapsed:.1f} s, allowed by {why} "
                      "(worker killed; hung?)")
        return Outcome(crashed=reason, time_s=elapsed, log=log)

    def run(self, call: CallInputs) -> Outcome:
        """One call, start to finish."""
        self.submit(call)
        return self.collect()

    def recycle(self) -> None:
        """Replace the worker: after it accepted an invalid call its memory may be
        corrupted (out-of-bounds reads and writes), which must not blame the next case."""
        if self._live is not None:
            self._drop(self._live)
            self.restarts += 1

    def close(self) -> None:
        """Stop the worker (and anything it started) and remove its log."""
        live = self._live
        if live is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                live.conn.send(None)
                # EOF once it has exited; a worker still on a call (Ctrl-C) is just killed
                live.conn.poll(0.1 if self._pending else 2.0)
            self._drop(live)
        self._cleanup()


def _tail(log: str) -> str:
    return f"\nworker stderr:\n{log}" if log else ""
