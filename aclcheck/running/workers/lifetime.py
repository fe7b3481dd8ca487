"""Parent side: where an isolated runner's workers come from and how they end. Forked by a
zygote (aclcheck.running.workers.zygote; `start_zygote`), or each a fresh interpreter
from an exec-mode zygote the runner starts itself once the given one is gone; started
with a deadline for their READY frame; killed with their whole group and reaped by their
zygote. A `spare` lifetime keeps the next worker forked ahead, so replacing one (after an
invalid call, a crash, a hang) costs the run no wait. The runner that makes the calls
(aclcheck.running.workers.parent.IsolatedRunner) holds one `WorkerLifetime`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from aclcheck.running.workers import wire
from aclcheck.running.workers.inflight import LiveWorker, WorkerStartError, describe_exit
from aclcheck.running.workers.wire import (
    AdapterInfo,
    Channel,
    FrameTimeout,
    ProtocolError,
    one_line,
)
from aclcheck.running.workers.zygote import Zygote, ZygoteError, kill_group

#: seconds a worker (and a zygote's import) may take to start: not a call, not the timeout
START_ALLOWANCE_S = 120.0
#: consecutive failed worker starts after which the remaining calls are ERROR at once
MAX_START_FAILURES = 3

Now = Callable[[], float]

#: the child side's entry points (aclcheck.running.workers.child), run by a zygote
_CHILD = "aclcheck.running.workers.child"
_FORKED_WORKER = f"{_CHILD}:zygote_worker"


def start_zygote(spec: str) -> Zygote | None:
    """A zygote that imports `spec`'s adapter and forks workers from it, or None where
    fork() is unavailable. It imports in the background: `Zygote.ready` waits."""
    if not hasattr(os, "fork"):
        return None
    return Zygote(_FORKED_WORKER, f"{_CHILD}:preload", spec)


def start_exec_zygote() -> Zygote | None:
    """A zygote whose every worker is a fresh interpreter (device adapters)."""
    if not hasattr(os, "fork"):
        return None
    return Zygote(_FORKED_WORKER)


@dataclass
class Spare:
    """A worker asked of a zygote and not yet taken (its fork answer unread)."""

    zygote: Zygote
    seq: int
    sock: socket.socket
    log: IO[bytes]


class WorkerLifetime:
    """Starts, keeps ahead and retires one runner's workers (see the module docstring).
    zygote: where workers come from (its owner closes it); the other arguments are the
    worker's (aclcheck.running.workers.child.worker_main)."""

    def __init__(self, spec: str, deterministic: bool | None, memory_limit: int | None, *,
                 zygote: Zygote | None, check_supports: bool, threads: int | None,
                 spare: bool, start_allowance: float | None, now: Now = time.monotonic
                 ) -> None:
        self.spec = spec
        self.deterministic = deterministic
        self.memory_limit = memory_limit
        self.zygote = zygote
        self.check_supports = check_supports
        self.threads = threads
        #: keep the next worker forked ahead (see _fork_ahead)
        self.spare = spare
        self.ahead: Spare | None = None
        self.start_allowance = (START_ALLOWANCE_S if start_allowance is None
                                else start_allowance)
        self.now = now
        self._own: Zygote | None = None  # the exec-mode zygote this runner started
        self._start_failures = 0
        self._last_start_error: WorkerStartError | None = None
        #: workers started so far (a test proves fork-safe runs start no fresh process)
        self.started = 0
        self.spawned = 0

    def _zygote(self) -> Zygote:
        if self.zygote is not None:
            return self.zygote
        if self._own is None:
            self._own = start_exec_zygote()
            if self._own is None:
                raise WorkerStartError("exit", "no fork() on this platform")
        return self._own

    def _fork(self, args: tuple[Any, ...], log: IO[bytes]) -> tuple[int, socket.socket, Zygote]:
        for _ in range(2):
            zygote = self._zygote()
            try:
                pid, sock = zygote.fork_worker(args, [log.fileno()])
                return pid, sock, zygote
            except ZygoteError as exc:
                error = exc
                if zygote is self.zygote:  # the given one is gone: our own from now on
                    self.zygote = None
                else:
                    self._own = None
                    zygote.close()
        raise WorkerStartError("exit", str(error))

    def start(self) -> LiveWorker:
        """A worker that said READY (WorkerStartError otherwise); after MAX_START_FAILURES
        failed starts in a row, the last failure again without a try."""
        if self._start_failures >= MAX_START_FAILURES and self._last_start_error is not None:
            last = self._last_start_error
            raise WorkerStartError(last.kind, f"{last.text} ({self._start_failures} "
                                              "starts failed in a row; not tried again)")
        try:
            live = self._start_once()
        except WorkerStartError as exc:
            self._start_failures += 1
            self._last_start_error = exc
            raise
        self._start_failures = 0
        return live

    def _new_log(self) -> IO[bytes]:
        """The unlinked file a worker's stdout and stderr go to."""
        import fcntl  # POSIX, as workers are

        log = tempfile.TemporaryFile(prefix="aclcheck-worker-")
        flags = fcntl.fcntl(log.fileno(), fcntl.F_GETFL)
        fcntl.fcntl(log.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)  # shared with the worker
        return log

    def _args(self) -> tuple[Any, ...]:
        return (self.spec, self.deterministic, self.memory_limit, self.check_supports,
                self.threads)

    def _start_once(self) -> LiveWorker:
        forked = self.take_spare()
        if forked is not None:
            try:
                return self._ready(*forked)
            except WorkerStartError:
                pass  # the spare died meanwhile (with its zygote, say): a fresh fork
        log = self._new_log()
        try:
            pid, sock, zygote = self._fork(self._args(), log)
        except BaseException:
            log.close()
            raise
        return self._ready(pid, sock, zygote, log)

    def _ready(self, pid: int, sock: socket.socket, zygote: Zygote, log: IO[bytes]
               ) -> LiveWorker:
        """The forked worker, once it said READY (WorkerStartError otherwise)."""
        self.started += 1
        self.spawned += not zygote.preloads
        live = LiveWorker(pid, Channel(sock, self.now), log, zygote)
        try:
            head = live.channel.read_head(self.now() + self.start_allowance)
        except FrameTimeout:
            self.retire(live)
            cap = " (--timeout caps a worker's start too)" if (
                self.start_allowance < START_ALLOWANCE_S) else ""
            raise WorkerStartError("timeout", f"did not start within "
                                              f"{self.start_allowance:g} s{cap}") from None
        except (EOFError, OSError):
            tail = live.new_log()
            code = self.retire(live)
            raise WorkerStartError("exit", f"died at start: {describe_exit(code)}"
                                   + (f" ({one_line(tail)[-300:]})" if tail else "")) from None
        except ProtocolError as exc:
            self.retire(live)
            raise WorkerStartError("protocol", str(exc)) from None
        try:
            if head.kind == wire.SETUP_ERROR:
                kind = head.meta.get("type")
                raise WorkerStartError(kind if isinstance(kind, str) else "error",
                                       wire.text_field(head.meta, "error"))
            if head.kind != wire.READY:
                raise ProtocolError(f"a frame of kind {head.kind} where READY was due")
            live.info = AdapterInfo.from_json(head.meta.get("info"))
            note = head.meta.get("note")
            live.note = None if note is None else wire.text_field(head.meta, "note")
        except (ProtocolError, ValueError) as exc:
            self.retire(live)
            raise WorkerStartError("protocol", str(exc)) from None
        except WorkerStartError:
            self.retire(live)
            raise
        self._fork_ahead()
        return live

    # -- the spare: the next worker, forked ahead

    def _fork_ahead(self) -> None:
        """Fork the next worker now, while this one works (`spare` runners of a forking
        zygote): a worker replaced after an invalid call, a crash or a hang then costs
        the run no wait. A spare that cannot be asked for is simply not there."""
        if not self.spare or self.ahead is not None:
            return
        zygote = self.zygote if self.zygote is not None else self._own
        if zygote is None or not zygote.preloads:
            return
        log = self._new_log()
        try:
            seq, sock = zygote.fork_start(self._args(), [log.fileno()])
        except (ZygoteError, OSError):
            log.close()
            return
        self.ahead = Spare(zygote, seq, sock, log)

    def take_spare(self) -> tuple[int, socket.socket, Zygote, IO[bytes]] | None:
        """The spare, forked (None: there is none, or its zygote failed it)."""
        spare, self.ahead = self.ahead, None
        if spare is None:
            return None
        try:
            pid, sock = spare.zygote.fork_finish(spare.seq, spare.sock)
        except (ZygoteError, OSError):
            spare.log.close()
            return None
        return pid, sock, spare.zygote, spare.log

    def close_spare(self) -> None:
        """Retire the worker forked ahead, if any."""
        forked = self.take_spare()
        if forked is not None:
            pid, sock, zygote, log = forked
            self.retire(LiveWorker(pid, Channel(sock, self.now), log, zygote))

    def retire(self, live: LiveWorker, wait: bool = True) -> int | None:
        """Kill the worker's whole group and have its zygote reap it (and sweep what it
        left behind); its exit code (`wait`: else the zygote reaps it while the caller
        goes on, and the code is None)."""
        kill_group(live.pid, alive=True)
        code = None
        with contextlib.suppress(ZygoteError):
            if wait:
                code = live.zygote.reap(live.pid)
            else:
                live.zygote.reap_later(live.pid)
        live.channel.close()
        live.log.close()
        return code

    def close_own_zygote(self) -> None:
        """Close the exec-mode zygote this lifetime started, if any."""
        if self._own is not None:
            self._own.close()
            self._own = None
