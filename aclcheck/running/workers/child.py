"""The child's side of an isolated run, in the worker process (aclcheck.running.workers.
parent is the parent's): build the adapter from its spec, then serve calls until told to
stop, answering each with plain data (aclcheck.running.workers.wire). A zygote imports this
module (its entry points are named in aclcheck.running.workers.lifetime), and `preload`
builds the adapter once there (never run) so forked workers start warm.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import socket
import time
from dataclasses import replace
from typing import Any

from aclcheck.cases.call import Outcome
from aclcheck.impls.base import CallInputs, describe_exception, exit_refused, guarded_run
from aclcheck.running.recall import TwinOf
from aclcheck.running.workers import wire
from aclcheck.running.workers.wire import AdapterInfo, Channel, ProtocolError, one_line


def worker_main(sock_fd: int, log_fd: int, spec: str, deterministic: bool | None,
                 memory_limit: int | None, check_supports: bool,
                 threads: int | None = None) -> None:
    """Build the adapter from its spec (its kernels on at most `threads` threads where
    given: aclcheck.cores), then serve calls until told to stop."""
    from aclcheck.impls.registry import create

    faulthandler.disable()  # a crash is reported by the parent, not dumped on stderr
    for fd in (1, 2):  # stdout too: a kernel's text never reaches the console raw
        os.dup2(log_fd, fd)
    os.close(log_fd)
    if memory_limit:
        import resource

        # address-space cap: a runaway allocation raises MemoryError (or the kernel
        # kills the worker) instead of taking the machine down
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    channel = Channel(socket.socket(fileno=sock_fd))
    try:
        with exit_refused():
            impl = create(spec)
            note = impl.set_deterministic(deterministic) if deterministic is not None else None
            if threads:
                impl.set_threads(threads)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        text = f"sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else str(exc)
        channel.send(wire.SETUP_ERROR, 0, {"type": type(exc).__name__,
                                           "error": one_line(text or type(exc).__name__)})
        return
    channel.send(wire.READY, 0, {"info": AdapterInfo.of(impl).to_json(),
                                 "note": None if note is None else str(note)})
    while True:
        try:
            head = channel.read_head(None)
        except (EOFError, OSError, ProtocolError):
            return
        if head.kind != wire.CALL:
            return
        call = pickle.loads(channel.read_data(head, None, 1 << 62))  # the parent's data
        # a tuple: calls made one after the other, answered in turn (seq, seq + 1, ...)
        for i, one in enumerate(call if isinstance(call, tuple) else (call,)):
            if not serve_call(channel, impl, one, head.seq + i, check_supports):
                break  # the kernel raised KeyboardInterrupt: the run stops here


def serve_call(channel: Channel, impl: Any, call: CallInputs | TwinOf, seq: int,
                check_supports: bool) -> bool:
    """Answer one call (a TwinOf built here first, and answered without its output: the
    parent judges only the call after it, and would read and hold a whole output for
    nothing); False once the kernel raised KeyboardInterrupt (the run stops)."""
    is_twin = isinstance(call, TwinOf)
    if isinstance(call, TwinOf):
        try:
            call = call.build()
        except Exception as exc:  # noqa: BLE001 - e.g. MemoryError under --memory-limit
            failed = Outcome(raised=f"the twin call cannot be built: {describe_exception(exc)}")
            meta, data = wire.encode_outcome(failed, call.case, 0.0)
            channel.send(wire.OUTCOME, seq, meta, data)
            return True
    if check_supports:
        try:
            reason = impl.supports(call.case)
        except Exception as exc:  # noqa: BLE001 - the adapter's bug: this case's ERROR
            reason = True
            failed = Outcome(raised=f"supports() raised {describe_exception(exc)}")
            meta, data = wire.encode_outcome(failed, call.case, 0.0)
            channel.send(wire.OUTCOME, seq, meta, data)
            return True
        if reason is not True:
            channel.send(wire.UNSUPPORTED, seq, {"reason": one_line(reason)})
            return True
    start = time.perf_counter()
    try:
        outcome = guarded_run(impl, call)
    except KeyboardInterrupt:  # raised by the kernel: the run stops, as in-process
        channel.send(wire.INTERRUPTED, seq)
        return False
    seconds = time.perf_counter() - start  # the call's own time, no queueing
    if is_twin:
        outcome = replace(outcome, output=None)
    try:
        meta, data = wire.encode_outcome(outcome, call.case, seconds)
    except Exception as exc:  # noqa: BLE001 - e.g. an output whose dtype cannot be read
        meta, data = wire.encode_outcome(
            Outcome(raised=f"output cannot be returned: {exc}"), call.case, seconds)
    channel.send(wire.OUTCOME, seq, meta, data)
    return True


def zygote_worker(fds: list[int], args: tuple[Any, ...]) -> None:
    """A forked worker's start (the zygote calls it): the socket and log fds, then the
    arguments of worker_main."""
    worker_main(fds[0], fds[1], *args)


def preload(spec: str) -> dict[str, Any]:
    """In the zygote: import what the adapter needs by building it once (never run); its
    capabilities as plain data."""
    from aclcheck.impls.registry import create
    from aclcheck.ops import OPERATORS

    for _ in OPERATORS.values():  # every operator's folder, once here, not in each fork
        pass
    with exit_refused():
        impl = create(spec)
    try:
        return AdapterInfo.of(impl).to_json()
    finally:
        impl.close()

