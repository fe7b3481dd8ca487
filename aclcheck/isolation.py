"""Run an implementation in a worker process that may crash or hang.

One long-lived worker per run, replaced only after a crash or a timeout, so isolation
costs one process start plus the pickling of each case's arrays. The worker is forked
(milliseconds, modules already imported) when the parent never runs the adapter itself
and the adapter is fork-safe; otherwise it is spawned (safe after torch or OpenMP threads
exist in the parent, but it pays the imports again).
"""

from __future__ import annotations

import faulthandler
import multiprocessing as mp
import signal
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from aclcheck.impls.base import CallInputs, Outcome


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


def _worker_main(conn: Connection, spec: str, deterministic: bool | None,
                 memory_limit: int | None = None, forked: bool = False) -> None:
    """Child process: build the adapter from its spec, then serve calls until closed."""
    from aclcheck.impls.registry import create

    faulthandler.disable()  # a crash is reported by the parent, not dumped on stderr
    if forked and "torch" in sys.modules:
        # an OpenMP pool the parent may have started does not survive fork(): a parallel
        # region in the child would wait forever for its threads (a known libgomp limit)
        sys.modules["torch"].set_num_threads(1)

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
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        call = message  # a CallInputs: plain frozen dataclasses and numpy arrays
        try:
            outcome = impl.run(call)
        except Exception as exc:  # noqa: BLE001 - an adapter bug is this case's ERROR
            outcome = Outcome(raised=f"{type(exc).__name__}: {exc}")
        try:
            conn.send(("outcome", outcome))
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable output object
            conn.send(("outcome", Outcome(raised=f"output cannot be returned: {exc}")))


@dataclass
class _Live:
    process: Any
    conn: Connection


class IsolatedRunner:
    """Calls an adapter (rebuilt from `spec`) in a worker process with a per-call timeout."""

    def __init__(self, spec: str, timeout: float, deterministic: bool | None = None,
                 memory_limit: int | None = None, start_method: str = "spawn") -> None:
        self.spec = spec
        self.memory_limit = memory_limit
        self.timeout = timeout
        self.deterministic = deterministic
        self._ctx = mp.get_context(start_method)
        self._live: _Live | None = None
        self._sent_at = 0.0
        self._send_failed = False
        self.restarts = 0

    def _start(self) -> _Live:
        parent, child = self._ctx.Pipe()
        forked = self._ctx.get_start_method() == "fork"
        proc = self._ctx.Process(
            target=_worker_main, daemon=True,
            args=(child, self.spec, self.deterministic, self.memory_limit, forked))
        proc.start()
        child.close()
        live = _Live(proc, parent)
        # adapter start-up (imports, devices) gets its own generous allowance
        if not parent.poll(max(self.timeout, 120.0)):
            self._kill(live)
            raise RuntimeError(f"isolated worker for {self.spec} did not start")
        try:
            kind, payload = parent.recv()
        except EOFError:
            proc.join(5)
            raise RuntimeError(f"isolated worker for {self.spec} died at start: "
                               f"{describe_exit(proc.exitcode)}") from None
        if kind != "ready":
            self._kill(live)
            raise RuntimeError(f"isolated worker for {self.spec}: {payload}")
        return live

    def _kill(self, live: _Live) -> None:
        if live.process.is_alive():
            live.process.kill()
        live.process.join(5)
        live.conn.close()

    def submit(self, call: CallInputs) -> None:
        """Send one call; the worker computes while the caller does other work."""
        if self._live is None:
            self._live = self._start()
        self._sent_at = time.perf_counter()
        try:
            self._live.conn.send(call)
            self._send_failed = False
        except (BrokenPipeError, ConnectionResetError, OSError):
            self._send_failed = True  # the worker is gone: collect() says how

    def collect(self) -> Outcome:
        """The answer to the submitted call; a crash or a timeout (counted from the
        submission) becomes Outcome(crashed=...) and the next call gets a fresh worker."""
        live = self._live
        assert live is not None, "collect() without submit()"
        ready = True
        if not self._send_failed:
            remaining = max(0.0, self.timeout - (time.perf_counter() - self._sent_at))
            try:
                ready = live.conn.poll(remaining)
                if ready:
                    _kind, outcome = live.conn.recv()
                    return outcome
            except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
                ready = True  # the worker died mid-call
        elapsed = time.perf_counter() - self._sent_at
        if not ready and live.process.is_alive():
            reason = f"timeout: no answer after {self.timeout:g} s (worker killed)"
        else:
            live.process.join(5)
            reason = f"worker {describe_exit(live.process.exitcode)}"
        self._kill(live)
        self._live = None
        self.restarts += 1
        return Outcome(crashed=reason, time_s=elapsed)

    def run(self, call: CallInputs) -> Outcome:
        """One call, start to finish."""
        self.submit(call)
        return self.collect()

    def recycle(self) -> None:
        """Replace the worker: after it accepted an invalid call its memory may be
        corrupted (out-of-bounds reads and writes), which must not blame the next case."""
        if self._live is not None:
            self._kill(self._live)
            self._live = None
            self.restarts += 1

    def close(self) -> None:
        if self._live is not None:
            try:
                self._live.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            self._live.process.join(5)
            self._kill(self._live)
            self._live = None
