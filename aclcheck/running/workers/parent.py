"""The parent's side of an isolated run: calls to a worker process that may crash, hang
or misbehave (the worker's side is aclcheck.running.workers.child). One long-lived
worker at a time, replaced only after it died, hung, broke the protocol or may be
corrupted (the caller says when). Workers come from a zygote (see
aclcheck.running.workers.zygote): forked from one that imported the adapter
(milliseconds) when the adapter is fork-safe, else each a fresh interpreter it starts. A
zygote that dies is replaced by a fresh exec-mode one. Where workers come from and how
they end is the job of the runner's `WorkerLifetime` (aclcheck.running.workers.lifetime).

What crosses back is plain data (aclcheck.running.workers.wire): frames read with a
deadline and size caps, an output array rebuilt from its bytes only when it has the
dtype and shape the case expects. Anything else (a partial or oversized frame, an answer
to another call, a worker that stops reading its calls) is that case's ERROR and the
worker is replaced.

Every worker leads its own process group: a crash or a hang kills the whole group, and
the zygote sweeps whatever left it. What a worker writes to stdout and stderr (glibc's
"free(): invalid size", a kernel's warnings) goes to an unlinked temporary file (nothing
left behind, even when aclcheck is killed); the tail of it, read by seeking, comes back
with that call's outcome. When a call is hung is a `CallWatch`'s word
(aclcheck.running.workers.cpu_watch): the worker's CPU time against the run's comparable
calls (a spinning call ends within a fraction of a second of CPU), the wall clock's
allowance for a call that uses no CPU, the timeout for everything. Calls that look
blocked are set aside (`Parked`) while the next cases run in a fresh worker.
"""

from __future__ import annotations

import contextlib
import math
import select
import time
from collections.abc import Callable
from dataclasses import replace

from aclcheck import interrupts
from aclcheck.cases import Case
from aclcheck.cases.acl import SUCCESS, UNSPECIFIED
from aclcheck.cases.call import Outcome
from aclcheck.impls.base import CallInputs
from aclcheck.running.workers import cpu_watch, wire
from aclcheck.running.workers.hangs import CallClock
from aclcheck.running.workers.inflight import (
    LiveWorker,
    PendingCall,
    WorkerStartError,
    call_size,
    describe_exit,
)
from aclcheck.running.workers.lifetime import START_ALLOWANCE_S, Now, WorkerLifetime
from aclcheck.running.workers.wire import AdapterInfo, FrameTimeout, ProtocolError
from aclcheck.running.workers.zygote import Zygote

#: a heartbeat line every this many seconds while one call is awaited
HEARTBEAT_EVERY_S = 10.0
#: seconds between two looks at the CPU time of a worker whose call has not answered
SAMPLE_EVERY_S = 0.1
#: a call that used no CPU for this long may be set aside (collect(park_idle=True))
PARK_IDLE_S = 0.5
#: seconds the rest of an answer that began may take once the cap (--timeout) has passed
#: (its bytes were written while the parent was busy elsewhere)
ANSWER_GRACE_S = 1.0
#: what _wait says of a call to set aside
PARK = "park"
#: seconds between two looks at a set-aside call's CPU time
LOOK_EVERY_S = 0.1

Heartbeat = Callable[[str], None]
#: cpu_time(pid): the CPU seconds a process has used (None: unknown)
CpuTime = Callable[[int], float | None]


# -- the parent's side -----------------------------------------------------------------------


def rejected(case: Case) -> bool:
    """Whether the contract rejects the call (a status other than success or
    unspecified): the calls the CPU (spinning) rule ends by default."""
    return case.expected_status not in (SUCCESS, UNSPECIFIED)


class IsolatedRunner:
    """Calls an adapter (rebuilt from `spec`) in a worker process, hang-checked.

    zygote: where workers come from (its owner closes it); without one, or once it is
    gone, the runner starts its own exec-mode zygote. check_supports: the worker asks
    the adapter's own supports() first and may answer "declined" (a SKIP). clock: the
    wall-clock allowances (its CPU counterpart is made here); cpu_time reads a worker's
    CPU seconds (tests inject one); threads: the most threads the adapter's kernels may
    use (aclcheck.cores; None: its default); spare: keep the next worker forked ahead
    (a forking zygote's), so that replacing one costs no wait.
    """

    def __init__(self, spec: str, timeout: float, deterministic: bool | None = None,
                 memory_limit: int | None = None, *, zygote: Zygote | None = None,
                 clock: CallClock | None = None, heartbeat: Heartbeat | None = None,
                 check_supports: bool = False, start_allowance: float | None = None,
                 threads: int | None = None, spare: bool = False,
                 now: Now = time.monotonic,
                 cpu_time: CpuTime = cpu_watch.process_cpu_seconds,
                 spin_all: bool = False) -> None:
        # --timeout caps every wait, a worker's start (a stopped spare) included
        start = START_ALLOWANCE_S if start_allowance is None else start_allowance
        #: where its workers come from and how they end
        self.lifetime = WorkerLifetime(spec, deterministic, memory_limit, zygote=zygote,
                                       check_supports=check_supports, threads=threads,
                                       spare=spare, start_allowance=min(start, timeout),
                                       now=now)
        self.check_supports = check_supports
        self.now = now
        if zygote is not None:
            zygote.cap_requests(timeout)
        self.timeout = timeout
        self.clock = clock if clock is not None else CallClock(cap=timeout)
        self.cpu_clock = cpu_watch.cpu_clock(self.clock)
        self.cpu_time = cpu_time
        self.spin_all = spin_all
        self.heartbeat = heartbeat
        self._live: LiveWorker | None = None
        self._pending: PendingCall | None = None
        self._then: PendingCall | None = None  # sent behind the pending call (submit)
        self._seq = 0
        #: calls set aside while they looked blocked, each with its worker
        self.parked: list[Parked] = []
        self.restarts = 0

    @property
    def zygote(self) -> Zygote | None:
        """The given zygote workers come from (None once it is gone)."""
        return self.lifetime.zygote

    @property
    def threads(self) -> int | None:
        """The most threads the adapter's kernels may use (None: its default)."""
        return self.lifetime.threads

    @property
    def started(self) -> int:
        """Workers started so far."""
        return self.lifetime.started

    @property
    def spawned(self) -> int:
        """Workers started as fresh interpreters (not forks of a preloading zygote)."""
        return self.lifetime.spawned

    def describe(self) -> tuple[AdapterInfo, str | None]:
        """Start a worker (if none runs) and return what it says of its adapter, and its
        deterministic-mode note; WorkerStartError when it cannot start."""
        if self._live is None:
            self._live = self.lifetime.start()
        assert self._live.info is not None
        return self._live.info, self._live.note

    @property
    def note(self) -> str | None:
        """The running worker's deterministic-mode note (None: none, or no worker)."""
        return self._live.note if self._live is not None else None

    def _drop(self, live: LiveWorker) -> int | None:
        code = self.lifetime.retire(live)
        self._live = None
        return code

    # -- calls

    def submit(self, call: CallInputs, then: CallInputs | None = None) -> None:
        """Send one call; the worker computes while the caller does other work. `then`:
        the call the worker makes right after it, sent in the same frame (one wake-up of
        the worker for both); collect() gives each answer in turn."""
        self._seq += 1
        pending = PendingCall(self._seq, call, call_size(call), first=False)
        self._pending = pending
        self._then = None if then is None else PendingCall(0, then, call_size(then), False)
        if self._then is not None:
            self._seq += 1
            self._then.seq = self._seq
        payload = call if then is None else (call, then)
        for attempt in range(2):
            if self._live is None:
                try:
                    self._live = self.lifetime.start()
                except WorkerStartError as exc:
                    pending.failed = Outcome(crashed=f"worker could not start: {exc.text}")
                    return
            live = self._live
            self._arm(live, pending)
            try:
                live.channel.send_call(pending.seq, payload, pending.deadline)
                return
            except FrameTimeout:
                pending.send_error = "timeout"  # the worker does not read its calls
                return
            except OSError:
                # the worker died before it took the whole call (between calls: a spare
                # whose zygote died after it said READY, a kill from outside): it goes to
                # a fresh worker once; a second death while taking it is the call's own
                if attempt == 0:
                    self._drop(live)
                    self.restarts += 1
                    continue
                pending.send_error = "died"  # collect() says how
                return

    def _arm(self, live: LiveWorker, pending: PendingCall) -> None:
        """Start the call's clocks: from now, in this worker."""
        pending.first = live.answered == 0
        allowance, pending.why = self.clock.allowance(pending.size, pending.first)
        pending.watch = cpu_watch.watch(self.clock, self.cpu_clock, pending.size,
                                        pending.first,
                                        spin=self.spin_all or rejected(pending.call.case))
        mark, live.cpu_mark = live.cpu_mark, None
        pending.cpu0 = mark if mark is not None else self.cpu_time(live.pid)
        pending.sent_at = self.now()
        pending.deadline = pending.sent_at + allowance

    def _cpu_used(self, live: LiveWorker, pending: PendingCall, mark: bool = False) -> float | None:
        """The worker's CPU seconds since the call was sent (None: unknown); `mark`: the
        call has answered, and the reading starts the worker's next call."""
        now = self.cpu_time(live.pid)
        if mark:
            live.cpu_mark = now
        return None if now is None or pending.cpu0 is None else max(0.0, now - pending.cpu0)

    def _wait(self, live: LiveWorker, pending: PendingCall, park_idle: bool = False) -> str | None:
        """Wait for the answer's first byte (None) until the call's watch says it is hung
        (why), or, with `park_idle`, it looks blocked (PARK); heartbeat on long waits. The
        watch looks at the worker's CPU time every SAMPLE_EVERY_S: a call that answers
        sooner costs no look."""
        assert pending.watch is not None
        poller = select.poll()
        poller.register(live.channel.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        next_beat = pending.sent_at + HEARTBEAT_EVERY_S
        next_look = pending.sent_at + SAMPLE_EVERY_S
        if poller.poll(0):  # answered while the caller was busy: never a hang
            return None
        while True:
            interrupts.check()  # a Ctrl-C swallowed meanwhile (in a finalizer) stops here
            now = self.now()
            if now >= next_look:
                hung = pending.watch.observe(now - pending.sent_at, self._cpu_used(live, pending))
                if hung is not None:
                    return hung
                if park_idle and pending.watch.idle(PARK_IDLE_S):
                    return PARK
                next_look = now + SAMPLE_EVERY_S
            if poller.poll(max(0, math.ceil((min(next_look, next_beat) - now) * 1000))):
                return None
            now = self.now()
            if next_beat <= now:
                if self.heartbeat is not None:
                    w = pending.watch
                    spin = f"at {w.cpu_allowance:.3g} s of CPU, " if w.spin else ""
                    self.heartbeat(f"aclcheck: {pending.call.case.id}: still running after "
                                   f"{now - pending.sent_at:.0f} s (declared hung after "
                                   f"{w.wall_allowance:.0f} s without CPU use, {spin}or at "
                                   f"{w.cap:g} s)")
                next_beat += HEARTBEAT_EVERY_S

    def _answer(self, live: LiveWorker, pending: PendingCall) -> Outcome:
        """Read and check the answer to the pending call (ProtocolError, FrameTimeout,
        EOFError, OSError otherwise)."""
        head = live.channel.read_head(pending.deadline)
        if head.seq != pending.seq:
            raise ProtocolError("an answer to another call")
        if head.kind == wire.INTERRUPTED:
            raise KeyboardInterrupt
        if head.kind == wire.UNSUPPORTED:
            if not self.check_supports or head.data_len:
                raise ProtocolError("a case declined by an adapter that cannot decline")
            return Outcome(skipped=wire.text_field(head.meta, "reason"))
        if head.kind != wire.OUTCOME:
            raise ProtocolError(f"a frame of kind {head.kind} where an answer was due")
        answer = wire.decode_outcome(head, pending.call.case, self.now() - pending.sent_at)
        if answer.array is not None and answer.array.nbytes:
            live.channel.read_into(memoryview(answer.array.reshape(-1).view("u1")),
                                   pending.deadline)
        live.answered += 1
        self.clock.record(pending.size, answer.seconds, pending.first)
        cpu = self._cpu_used(live, pending, mark=True)
        if cpu is not None:
            self.cpu_clock.record(pending.size, cpu, pending.first)
        log = live.new_log()
        return replace(answer.outcome, log=log) if log else answer.outcome

    def collect(self, park_idle: bool = False) -> Outcome | Parked:
        """The answer to the submitted call; a crash, a hang (counted from the submission)
        or a broken answer becomes Outcome(crashed=...), and the next call gets a fresh
        worker. `park_idle`: a call that looks blocked (no CPU used for PARK_IDLE_S) is
        set aside with its worker (a `Parked`, which gives its outcome later) and the
        next call gets a fresh worker: a blocked call does not stall the run. A `then`
        call is submitted next: its clocks start now in the worker that answered, or it
        goes to a fresh worker where that one ended (a crash or hang is its own call's)."""
        live, pending = self._live, self._pending
        assert pending is not None, "collect() without submit()"
        self._pending, then, self._then = None, self._then, None
        outcome = self._collect(live, pending, park_idle and then is None)
        if then is not None and live is not None and live is self._live:
            self._arm(live, then)  # the worker starts on it once it has answered
            self._pending = then
        elif then is not None:
            self.submit(then.call)
        return outcome

    def _collect(self, live: LiveWorker | None, pending: PendingCall, park_idle: bool
                 ) -> Outcome | Parked:
        if pending.failed is not None:
            return pending.failed
        assert live is not None
        hung = None
        if pending.send_error is None:
            hung = self._wait(live, pending, park_idle)
            if hung == PARK:
                self._live = None
                parked = Parked(self, live, pending)
                self.parked.append(parked)
                return parked
        return self.settle(live, pending, hung)

    def settle(self, live: LiveWorker, pending: PendingCall, hung: str | None) -> Outcome:
        """The outcome of a call whose wait is over (`hung`: why it is hung; None: its
        answer is arriving). The worker goes unless it answered and is the running one."""
        died, partial, broken = pending.send_error == "died", False, ""
        running = live is self._live
        if pending.send_error is None and hung is None:
            # the rest of the answer is due within the allowance, or a floor from now,
            # but never past the cap (--timeout) unless it is already there (a moment)
            now = self.now()
            pending.deadline = min(max(pending.deadline, now + self.clock.floor),
                                   max(pending.sent_at + self.clock.cap, now + ANSWER_GRACE_S))
            try:
                outcome = self._answer(live, pending)
                if not running:
                    self.lifetime.retire(live)
                return outcome
            except FrameTimeout as exc:
                partial = exc.partial
            except (EOFError, OSError):
                died = True  # the worker died mid-call
            except ProtocolError as exc:
                broken = str(exc)
        elapsed = self.now() - pending.sent_at
        log = live.new_log()
        code = self._drop(live) if running else self.lifetime.retire(live)
        self.restarts += 1
        if broken:
            reason = f"the worker broke the protocol: {broken} (worker killed)"
        elif died:
            reason = f"worker {describe_exit(code)}"
        elif pending.send_error == "timeout":
            reason = (f"timeout: the worker did not take the call within {elapsed:.1f} s, "
                      f"allowed by {pending.why} (worker killed)")
        elif partial:
            reason = (f"timeout: only part of an answer after {elapsed:.1f} s, allowed by "
                      f"{pending.why} (worker killed)")
        else:
            reason = f"timeout: {hung} (worker killed; hung?)"
        return Outcome(crashed=reason, time_s=elapsed, log=log)

    def run(self, call: CallInputs) -> Outcome:
        """One call, start to finish."""
        self.submit(call)
        return self.collect()  # type: ignore[return-value]

    def recycle(self) -> None:
        """Replace the worker: after it accepted an invalid call its memory may be
        corrupted (out-of-bounds reads and writes), which must not blame the next case."""
        if self._live is not None:
            self.lifetime.retire(self._live, wait=False)
            self._live = None
            self.restarts += 1

    def close(self) -> None:
        """Stop the worker (and anything it started), set-aside workers and the runner's
        own zygote."""
        for parked in self.parked:
            self.lifetime.retire(parked.live)
        self.parked.clear()
        self.lifetime.close_spare()
        live = self._live
        try:
            if live is not None:
                with contextlib.suppress(OSError, FrameTimeout):
                    live.channel.send(wire.STOP, deadline=self.now() + 0.5)
                    # EOF once it has exited; a worker still on a call (Ctrl-C) is killed
                    poller = select.poll()
                    poller.register(live.channel.fileno(), select.POLLIN | select.POLLHUP)
                    poller.poll(100 if self._pending else 2000)
                self._drop(live)
        finally:
            self.lifetime.close_own_zygote()


class Parked:
    """A call set aside while it looked blocked (collect(park_idle=True)): its worker runs
    out its allowance apart while the next cases run in a fresh one, and its outcome is
    exactly what waiting would have given. `poll()` without waiting, `wait()` until it is
    settled."""

    def __init__(self, runner: IsolatedRunner, live: LiveWorker, pending: PendingCall) -> None:
        self.runner = runner
        self.live = live
        self.pending = pending
        self.outcome: Outcome | None = None
        self._next_look = 0.0

    @property
    def case_id(self) -> str:
        return self.pending.call.case.id

    def _settle(self, hung: str | None) -> Outcome:
        self.outcome = self.runner.settle(self.live, self.pending, hung)
        if self in self.runner.parked:
            self.runner.parked.remove(self)
        return self.outcome

    def poll(self) -> Outcome | None:
        """The outcome once the call has answered or is hung; None meanwhile."""
        if self.outcome is not None:
            return self.outcome
        try:
            answered = bool(select.select([self.live.channel.fileno()], [], [], 0)[0])
        except (OSError, ValueError):
            answered = True  # the connection is gone: settle says how
        if answered:
            return self._settle(None)
        r, p = self.runner, self.pending
        now = r.now()
        if now < self._next_look:
            return None
        self._next_look = now + LOOK_EVERY_S
        assert p.watch is not None
        hung = p.watch.observe(now - p.sent_at, r._cpu_used(self.live, p))
        return None if hung is None else self._settle(hung)

    def wait(self) -> Outcome:
        """The outcome, waiting for it (the call's watch decides when it is hung)."""
        if self.outcome is None:
            self._settle(self.runner._wait(self.live, self.pending))
        assert self.outcome is not None
        return self.outcome
