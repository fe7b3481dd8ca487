"""Replacing a worker costs the run no wait: a `spare` runner keeps its next worker forked
ahead (aclcheck.running.workers.lifetime), the zygote answers requests in order while the parent
goes on (fork_start / fork_finish, reap_later), and the stale-state check's twin is built
in the worker from the case's own call (recall.TwinOf)."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path

import numpy as np
import pytest

from aclcheck.impls.base import CallInputs
from aclcheck.running import recall
from aclcheck.running.workers.lifetime import start_zygote
from aclcheck.running.workers.parent import IsolatedRunner
from aclcheck.store.dispatch import open_golden


@pytest.fixture(scope="module")
def call(valid_3d_4d_golden: Path) -> CallInputs:
    """A valid 4-D call."""
    with open_golden(valid_3d_4d_golden) as gf:
        case = next(gf.case(i) for i in gf.ids() if len(gf.case(i).self_shape) == 4)
        return CallInputs(case, gf.data(case.id).inputs)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _worker_args() -> tuple[object, ...]:
    return ("impl_fixtures:correct", None, None, False, None)


def test_the_zygote_answers_requests_in_order_while_the_parent_goes_on() -> None:
    zygote = start_zygote("impl_fixtures:correct")
    assert zygote is not None
    logs = [tempfile.TemporaryFile() for _ in range(3)]
    try:
        ahead = zygote.fork_start(_worker_args(), [logs[0].fileno()])  # not awaited
        pid_a, sock_a = zygote.fork_worker(_worker_args(), [logs[1].fileno()])
        zygote.reap_later(pid_a)  # its answer is read and dropped with a later one
        pid_b, sock_b = zygote.fork_finish(*ahead)  # answered before the later fork
        pid_c, sock_c = zygote.fork_worker(_worker_args(), [logs[2].fileno()])
        assert len({pid_a, pid_b, pid_c}) == 3
        assert not _alive(pid_a)  # the zygote reaped it before answering the last fork
        assert zygote.reap(pid_b) is not None and zygote.reap(pid_c) is not None
        for sock in (sock_a, sock_b, sock_c):
            sock.close()
    finally:
        zygote.close()
        for log in logs:
            log.close()


def test_a_spare_runner_replaces_its_worker_with_the_one_forked_ahead(
        call: CallInputs) -> None:
    zygote = start_zygote("impl_fixtures:correct")
    worker = IsolatedRunner("impl_fixtures:correct", timeout=300, zygote=zygote, spare=True)
    try:
        first = worker.run(call)
        assert isinstance(first.output, np.ndarray)
        assert worker._live is not None and worker.lifetime.ahead is not None  # forked ahead
        old = worker._live.pid
        worker.recycle()  # after an invalid call: killed now, reaped by the zygote later
        again = worker.run(call)
        assert np.array_equal(first.output, again.output)
        assert worker.started == 2 and worker.spawned == 0
        assert worker._live is not None and worker._live.pid != old
        assert worker.lifetime.ahead is not None  # the next one, forked ahead again
        spare = worker.lifetime.ahead
        live = worker._live.pid
    finally:
        worker.close()
        assert zygote is not None
        zygote.close()
    assert not _alive(old) and not _alive(live)
    assert spare.sock.fileno() == -1  # the spare was taken and retired at close


def test_a_runner_without_spare_forks_nothing_ahead(call: CallInputs) -> None:
    zygote = start_zygote("impl_fixtures:correct")
    worker = IsolatedRunner("impl_fixtures:correct", timeout=300, zygote=zygote)
    try:
        worker.run(call)
        assert worker.lifetime.ahead is None
    finally:
        worker.close()
        assert zygote is not None
        zygote.close()


def test_a_twin_crosses_as_the_calls_own_inputs_and_is_built_where_it_runs(
        call: CallInputs) -> None:
    twin = recall.TwinOf(call, spatial_rank=2)
    assert twin.case.layout != call.case.layout  # the twin's case, for the parent's clocks
    sent = pickle.loads(pickle.dumps((twin, call), protocol=4))
    assert sent[0].call is sent[1]  # the call's data crosses once for both calls
    built, direct = sent[0].build(), recall.twin(call, spatial_rank=2)
    assert built.case == direct.case
    for role, tensor in direct.inputs.items():
        other = built.inputs[role]
        assert (tensor is None) == (other is None)
        if tensor is not None and other is not None:
            assert np.array_equal(tensor.view(), other.view(), equal_nan=True)
            assert tensor.strides == other.strides


class _Frames:
    """A worker's channel that keeps what it sends: (kind, seq, meta, data bytes)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int, dict[str, object], bytes]] = []

    def send(self, kind: int, seq: int = 0, meta: dict[str, object] | None = None,
             data: bytes | memoryview = b"", deadline: float | None = None) -> None:
        self.sent.append((kind, seq, meta or {}, bytes(data)))


def test_a_twin_is_answered_without_its_output(call: CallInputs) -> None:
    """The recall worker answers the twin with its status and time but no output bytes
    (the parent judges only the call after it); the call itself comes back whole."""
    from aclcheck.impls.registry import create
    from aclcheck.running.workers import wire
    from aclcheck.running.workers.child import serve_call as _serve_call

    channel, impl = _Frames(), create("reference")
    assert _serve_call(channel, impl, recall.TwinOf(call, spatial_rank=2), 7, False)
    assert _serve_call(channel, impl, call, 8, False)
    (kind, seq, meta, data), (kind2, seq2, meta2, data2) = channel.sent
    assert (kind, seq, kind2, seq2) == (wire.OUTCOME, 7, wire.OUTCOME, 8)
    assert meta["output"] is None and data == b"" and meta["crashed"] is None
    dtype, shape = call.case.expected_output()
    assert meta2["output"] == {"type": "ndarray", "dtype": str(dtype), "shape": list(shape)}
    assert len(data2) == np.empty(shape, dtype).nbytes > 0


def _wait_closed(sock_fileno: int) -> None:
    """Until the peer's end of a worker channel is closed (an event, not a delay)."""
    import select

    poller = select.poll()
    poller.register(sock_fileno, 0)  # POLLHUP only: a buffered answer does not count
    assert poller.poll(60_000)


def test_a_worker_dead_between_calls_does_not_blame_the_next_call(call: CallInputs) -> None:
    """Killed from outside after answering, the worker cannot take the next call: the call
    goes to a fresh worker (once) instead of being that case's ERROR."""
    zygote = start_zygote("impl_fixtures:correct")
    assert zygote is not None
    worker = IsolatedRunner("impl_fixtures:correct", timeout=600, zygote=zygote, spare=True)
    try:
        assert worker.run(call).crashed is None
        live = worker._live
        assert live is not None
        os.kill(live.pid, 9)
        _wait_closed(live.channel.fileno())
        again = worker.run(call)
        assert again.crashed is None and isinstance(again.output, np.ndarray)
        assert worker.restarts == 1
    finally:
        worker.close()
        zygote.close()


def test_a_spare_that_said_ready_and_died_is_not_handed_the_call(call: CallInputs,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """The spare's READY is already buffered when it dies (its zygote was killed, say):
    the call it would have got goes to a fresh worker."""
    zygote = start_zygote("impl_fixtures:correct")
    assert zygote is not None
    worker = IsolatedRunner("impl_fixtures:correct", timeout=600, zygote=zygote, spare=True)
    try:
        assert worker.run(call).crashed is None
        spare = worker.lifetime.take_spare()  # forked ahead when the first worker said READY
        assert spare is not None
        pid, sock, _, _ = spare
        import select

        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        assert poller.poll(60_000)  # its READY is there
        os.kill(pid, 9)
        _wait_closed(sock.fileno())
        taken = [spare]
        monkeypatch.setattr(worker.lifetime, "take_spare", lambda: taken.pop() if taken else None)
        worker.recycle()  # the next call needs a new worker: the dead spare comes first
        again = worker.run(call)
        assert again.crashed is None and isinstance(again.output, np.ndarray)
    finally:
        worker.close()
        zygote.close()
