"""The bare verify loop of bench_scale (h5py read + torch float64 backward + allclose),
with two of aclcheck's guarantees added by hand, as simply as we could write them:

- isolation: every call runs in a forked worker (inputs and output pickled over a
  socketpair), so a crash or a hang cannot take the run down; the parent reads and
  judges one case while the worker computes the next. The calls the contract rejects
  cross too (the worker answers them without running anything: less than aclcheck does);
- the stale-state check (unless --no-recall): a second worker runs the case's twin
  (values x -2, bfloat16's sign flipped) and then the case again, whose output must
  equal the first bit for bit.

Nothing else: no record checks, no error budgets, no hang clock, no reports. It shows
what those two guarantees cost on their own, beside `aclcheck verify --impl reference`
(bench_scale.py --part verify-isolated). Workers run torch on one thread: with two
workers spinning on their own thread pools, a run took three times as long.

    python benchmarks/bare_isolated.py BARE_FILE [--no-recall]
"""

from __future__ import annotations

import os
import pickle
import queue
import socket
import struct
import sys
import threading
from collections.abc import Iterator
from typing import Any

import h5py
import numpy as np
import torch

backward = torch.ops.aten._adaptive_avg_pool2d_backward
HEAD = struct.Struct("<Q")
Call = tuple[str, np.ndarray | None, np.ndarray | None]  # dtype, gradOutput, self


def _send(sock: socket.socket, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=5)
    sock.sendall(HEAD.pack(len(data)) + data)


def _recv(sock: socket.socket) -> Any:
    head = bytearray()
    while len(head) < HEAD.size:
        part = sock.recv(HEAD.size - len(head))
        if not part:
            raise SystemExit("a worker died")
        head += part
    buf = bytearray(HEAD.unpack(head)[0])
    view, got = memoryview(buf), 0
    while got < len(buf):
        got += sock.recv_into(view[got:])
    return pickle.loads(buf)


def _as_torch(arr: np.ndarray, dtype: str) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(arr))
    return t.view(torch.bfloat16) if dtype == "bfloat16" else t


def _run(call: Call) -> np.ndarray | None:
    dtype, grad, self_ = call
    if grad is None or self_ is None:  # a call the contract rejects: answered, not run
        return None
    return backward(_as_torch(grad, dtype).double(), _as_torch(self_, dtype).double()).numpy()


def _serve(sock: socket.socket) -> None:
    torch.set_num_threads(1)
    while (calls := _recv(sock)) is not None:
        for call in calls:  # the recall worker gets the twin and the call in one message
            _send(sock, _run(call))
    os._exit(0)


class Worker:
    """A forked worker and a thread that sends to it (the parent sends the next call
    while the worker may be sending its answer: neither may block the other)."""

    def __init__(self) -> None:
        self.sock, child = socket.socketpair()
        if os.fork() == 0:
            self.sock.close()
            _serve(child)
        child.close()
        self.outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        while True:
            msg = self.outbox.get()
            _send(self.sock, msg)
            if msg is None:
                return

    def send(self, calls: list[Call] | None) -> None:
        self.outbox.put(calls)

    def answer(self) -> Any:
        return _recv(self.sock)

    def close(self) -> None:
        self.send(None)
        self.thread.join()
        os.wait()


def _twin(call: Call) -> Call:
    dtype, grad, self_ = call
    assert grad is not None
    flipped = grad ^ np.uint16(0x8000) if dtype == "bfloat16" else grad * -2
    return dtype, flipped, self_


def _cases(path: str) -> Iterator[tuple[Call, np.ndarray | None]]:
    """(call, golden) of every case; the bare loop's empty cases are left out as it
    leaves them out (torch refuses empty tensors)."""
    with h5py.File(path, "r") as f:
        for group in f.values():
            dtype = str(group.attrs["dtype"])
            if "golden" not in group:
                yield (dtype, None, None), None
                continue
            grad, self_ = group["grad_output"][()], group["self"][()]
            if 0 in grad.shape or 0 in self_.shape:
                continue
            yield (dtype, grad, self_), group["golden"][()]


def main() -> None:
    path, recall = sys.argv[1], "--no-recall" not in sys.argv[2:]
    case_worker, recall_worker = Worker(), Worker()
    counts = {"valid": 0, "rejected": 0, "allclose": 0, "repeat equal": 0}
    checking: np.ndarray | None = None  # the first output whose repeat is still out

    def settle_recall() -> None:
        nonlocal checking
        if checking is not None:
            recall_worker.answer()  # the twin's output: not judged
            counts["repeat equal"] += np.array_equal(checking, recall_worker.answer(),
                                                     equal_nan=True)
            checking = None

    def judge(call: Call, golden: np.ndarray | None) -> None:
        nonlocal checking
        out = case_worker.answer()
        if golden is None:
            counts["rejected"] += 1
            return
        if recall:
            settle_recall()
            recall_worker.send([_twin(call), call])
            checking = out
        counts["valid"] += 1
        counts["allclose"] += np.allclose(out, golden, equal_nan=True)

    ahead: tuple[Call, np.ndarray | None] | None = None
    for call, golden in _cases(path):
        case_worker.send([call])
        if ahead is not None:
            judge(*ahead)
        ahead = call, golden
    if ahead is not None:
        judge(*ahead)
    settle_recall()
    case_worker.close()
    recall_worker.close()
    print("bare isolated verify: " + ", ".join(f"{v} {k}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
