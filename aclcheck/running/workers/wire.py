"""The worker protocol: what crosses from a worker (a process that runs kernel code) to
the parent, as plain data only.

A frame is a fixed header, a JSON object and raw bytes:

    magic b"ACW1" | kind u8 | 3 pad bytes | seq u32 | meta length u32 | data length u64
    meta: UTF-8 JSON, one object (at most MAX_META bytes); data: an output array's bytes

The parent reads a frame with a deadline and size caps (`Channel.read_head`,
`Channel.read_into`): a partial frame, a frame too large, a frame for another call or
anything but the kinds below is a `ProtocolError` or a `FrameTimeout`, never a hang and
never code run. `decode_outcome` checks every field of an answer and rebuilds the output
array from its bytes only when its dtype and shape are the ones the case expects (a
worker sends the bytes of no other array: `encode_outcome`). Texts are clipped.

The other direction, the parent's calls, is the parent's own pickle: a worker trusts its
parent, never the reverse.
"""

from __future__ import annotations

import json
import math
import pickle
import select
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.call import Outcome, ReturnedValue
from aclcheck.impls.base import Implementation

MAGIC = b"ACW1"
_HEAD = struct.Struct("!4sB3xIIQ")
HEAD_BYTES = _HEAD.size

# frame kinds, worker -> parent
READY = 1  # meta: {"info": adapter info, "note": deterministic-mode note or null}
SETUP_ERROR = 2  # meta: {"error": text}
OUTCOME = 3  # meta: see encode_outcome; data: the output's bytes (or nothing)
UNSUPPORTED = 4  # meta: {"reason": text}: the adapter declines the case (SKIP)
INTERRUPTED = 5  # the kernel raised KeyboardInterrupt: the run stops
# parent -> worker
CALL = 16  # data: pickle of a CallInputs, or of a tuple of them answered in turn (seq, seq+1...)
STOP = 17  # no more calls: exit

#: largest JSON part of a frame the parent reads (answers hold a few clipped texts)
MAX_META = 1 << 20
#: longest text kept from a worker (exception text, notes, reasons)
MAX_TEXT = 16384
#: most notes kept per answer
MAX_NOTES = 32
#: most dimensions of a described output
MAX_DIMS = 32
#: a frame whose data is at most this many bytes goes in one write (copied once)
SMALL_FRAME = 1 << 16


class ProtocolError(Exception):
    """A worker's frame that breaks the protocol (its text says how)."""


class FrameTimeout(Exception):
    """The deadline passed before a whole frame arrived (`partial`: some of it did)."""

    def __init__(self, partial: bool) -> None:
        super().__init__("part of an answer" if partial else "no answer")
        self.partial = partial


@dataclass(frozen=True)
class Head:
    """A frame's header and JSON part; its data (data_len bytes) is still to be read."""

    kind: int
    seq: int
    meta: dict[str, Any]
    data_len: int


Clock = Callable[[], float]


class Channel:
    """Frames over a connected stream socket. Reads with a deadline (a clock value;
    None: wait forever, for a worker reading its parent's calls)."""

    def __init__(self, sock: socket.socket, clock: Clock = time.monotonic) -> None:
        self.sock = sock
        self.clock = clock
        # non-blocking for good: a read or write that would block waits in poll() with
        # the deadline's remaining time (one system call per read where data is there,
        # against three for a socket timeout set before each read)
        sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        self.sock.close()

    # -- sending

    def send(self, kind: int, seq: int = 0, meta: dict[str, Any] | None = None,
             data: bytes | memoryview = b"", deadline: float | None = None) -> None:
        """One frame; FrameTimeout when the peer does not take it by the deadline."""
        raw = json.dumps(meta or {}, allow_nan=False, separators=(",", ":")).encode()
        view = memoryview(data).cast("B") if len(data) else memoryview(b"")
        head = _HEAD.pack(MAGIC, kind, seq & 0xFFFFFFFF, len(raw), view.nbytes)
        if view.nbytes <= SMALL_FRAME:  # one write: the peer wakes once
            self._send_all(memoryview(b"".join((head, raw, view))), deadline)
            return
        self._send_all(memoryview(head + raw), deadline)
        self._send_all(view, deadline, sent_before=True)

    def _send_all(self, view: memoryview, deadline: float | None,
                  sent_before: bool = False) -> None:
        sent = 0
        while sent < view.nbytes:
            try:
                sent += self.sock.send(view[sent:])
            except BlockingIOError:
                self._await(select.POLLOUT, deadline, partial=sent_before or sent > 0)

    def send_call(self, seq: int, call: object, deadline: float | None) -> None:
        # protocol 4: arrays arrive owning their memory, so the worker makes them read-only
        self.send(CALL, seq, data=pickle.dumps(call, protocol=4), deadline=deadline)

    # -- receiving

    def read_head(self, deadline: float | None, max_meta: int = MAX_META) -> Head:
        """The next frame's header and JSON part (EOFError: the peer closed)."""
        head = bytearray(HEAD_BYTES)
        self._read_exact(memoryview(head), deadline, first=True)
        magic, kind, seq, meta_len, data_len = _HEAD.unpack(head)
        if magic != MAGIC:
            raise ProtocolError("not a frame of the worker protocol")
        if meta_len > max_meta:
            raise ProtocolError(f"a {meta_len}-byte answer header (at most {max_meta})")
        raw = bytearray(meta_len)
        self._read_exact(memoryview(raw), deadline)
        try:
            meta = json.loads(raw.decode("utf-8")) if meta_len else {}
        except (ValueError, RecursionError) as exc:
            raise ProtocolError(f"unreadable answer header: {_clip(str(exc), 200)}") from None
        if not isinstance(meta, dict):
            raise ProtocolError("the answer header is not a JSON object")
        return Head(kind, seq, meta, data_len)

    def read_into(self, buffer: memoryview, deadline: float | None) -> None:
        """Exactly len(buffer) bytes of a frame's data."""
        self._read_exact(buffer.cast("B"), deadline)

    def read_data(self, head: Head, deadline: float | None, limit: int) -> bytearray:
        if head.data_len > limit:
            raise ProtocolError(f"{head.data_len} bytes of data (at most {limit})")
        buf = bytearray(head.data_len)
        self._read_exact(memoryview(buf), deadline)
        return buf

    def _await(self, event: int, deadline: float | None, partial: bool) -> None:
        """Wait until the socket is ready for `event` (FrameTimeout once the deadline
        passes; an error or hang-up is left to the next read or write to report)."""
        poller = select.poll()
        poller.register(self.sock.fileno(), event)
        while True:
            if deadline is None:
                timeout_ms = -1
            else:
                remaining = deadline - self.clock()
                if remaining <= 0:
                    raise FrameTimeout(partial)
                timeout_ms = max(1, math.ceil(remaining * 1000))
            if poller.poll(timeout_ms):
                return

    def _read_exact(self, view: memoryview, deadline: float | None, first: bool = False
                    ) -> None:
        got = 0
        while got < view.nbytes:
            try:
                n = self.sock.recv_into(view[got:])
            except BlockingIOError:
                self._await(select.POLLIN, deadline, partial=not (first and got == 0))
                continue
            if n == 0:
                raise EOFError("the worker closed its connection")
            got += n


# -- answers: encoded by the worker, decoded (and checked) by the parent --------------------


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f" ... ({len(text) - limit} more)"


def encode_outcome(outcome: Outcome, case: Case, seconds: float
                   ) -> tuple[dict[str, Any], memoryview | bytes]:
    """Worker side: an Outcome as (meta, data). The output's bytes go only when its dtype
    and shape are what the case expects; anything else is described, not sent."""
    meta: dict[str, Any] = {
        "status": outcome.status if isinstance(outcome.status, int) else None,
        "time_s": _finite(outcome.time_s), "seconds": _finite(seconds),
        "raised": None if outcome.raised is None else _clip(str(outcome.raised)),
        "crashed": None if outcome.crashed is None else _clip(str(outcome.crashed)),
        "notes": [_clip(str(n)) for n in tuple(outcome.notes)[:MAX_NOTES]],
        "deterministic_refused": bool(outcome.deterministic_refused),
        "unusable": None if outcome.unusable is None else _clip(str(outcome.unusable)),
        "output": None,
    }
    out = outcome.output
    if out is None:
        return meta, b""
    if not isinstance(out, np.ndarray):
        meta["output"] = {"type": _clip(type(out).__name__, 200)}
        return meta, b""
    array = out.view(np.ndarray)
    dtype, shape = case.expected_output()
    meta["output"] = {"type": "ndarray", "dtype": _clip(str(array.dtype), 200),
                      "shape": [int(d) for d in array.shape[:MAX_DIMS]]}
    if array.dtype != dtype or tuple(array.shape) != shape:
        return meta, b""
    return meta, memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def _finite(value: object) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return x if math.isfinite(x) else 0.0


def _text(meta: dict[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProtocolError(f"answer field {key!r} is not a text")
    return _clip(value)


def _seconds(meta: dict[str, Any], key: str, elapsed: float) -> float:
    """A time the worker reports, within what the parent measured (0..elapsed)."""
    value = meta.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(f"answer field {key!r} is not a number")
    x = float(value)
    if not math.isfinite(x):
        raise ProtocolError(f"answer field {key!r} is not finite")
    return min(max(x, 0.0), max(elapsed, 0.0))


def _status(meta: dict[str, Any]) -> int | None:
    value = meta.get("status")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not -2**63 <= value < 2**63:
        raise ProtocolError("answer field 'status' is not a 64-bit integer")
    return value


def _notes(meta: dict[str, Any]) -> tuple[str, ...]:
    value = meta.get("notes", [])
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise ProtocolError("answer field 'notes' is not a list of texts")
    return tuple(_clip(n) for n in value[:MAX_NOTES])


@dataclass(frozen=True)
class Answer:
    """An OUTCOME frame's header, checked: what the parent still needs to read."""

    outcome: Outcome  # output not filled in yet when `array` is set
    seconds: float  # the call's own time, for the hang clock
    array: np.ndarray | None  # the buffer the frame's data fills (the expected array)


def decode_outcome(head: Head, case: Case, elapsed: float) -> Answer:
    """Parent side: check an OUTCOME header against the case. The data length must be
    exactly the expected output's size when the worker declares that array, 0 otherwise."""
    meta = head.meta
    time_s = _seconds(meta, "time_s", elapsed)
    seconds = _seconds(meta, "seconds", elapsed)
    refused = meta.get("deterministic_refused", False)
    if not isinstance(refused, bool):
        raise ProtocolError("answer field 'deterministic_refused' is not true or false")
    fields = {"status": _status(meta), "time_s": time_s, "raised": _text(meta, "raised"),
              "crashed": _text(meta, "crashed"), "notes": _notes(meta),
              "deterministic_refused": refused, "unusable": _text(meta, "unusable")}
    described = meta.get("output")
    output: object = None
    array = None
    if described is not None:
        if not isinstance(described, dict) or not isinstance(described.get("type"), str):
            raise ProtocolError("answer field 'output' is not a description")
        type_name = _clip(described["type"], 200)
        if type_name != "ndarray":
            output = ReturnedValue(type_name)
        else:
            shape = _shape(described.get("shape"))
            dtype_text = described.get("dtype")
            if not isinstance(dtype_text, str):
                raise ProtocolError("answer field 'output.dtype' is not a text")
            dtype, want = case.expected_output()
            if shape == want and dtype_text == str(dtype):
                array = np.empty(want, dtype=dtype)
                output = array
            else:
                output = ReturnedValue("ndarray", shape, _clip(dtype_text, 200))
    expected_len = array.nbytes if array is not None else 0
    if head.data_len != expected_len:
        raise ProtocolError(f"{head.data_len} bytes of output data where "
                            f"{expected_len} were announced")
    return Answer(Outcome(output=output, **fields), seconds, array)  # type: ignore[arg-type]


def _shape(value: object) -> tuple[int, ...]:
    if not isinstance(value, list) or len(value) > MAX_DIMS or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**62 for d in value):
        raise ProtocolError("answer field 'output.shape' is not a shape")
    return tuple(value)


def text_field(meta: dict[str, Any], key: str) -> str:
    """A required text of a READY / SETUP_ERROR / UNSUPPORTED frame, clipped."""
    value = _text(meta, key)
    if value is None:
        raise ProtocolError(f"frame field {key!r} is missing")
    return value


def one_line(text: object) -> str:
    """A message on one line, at most 2000 characters (what a worker puts into a frame)."""
    return " ".join(str(text).split())[:2000]


# -- what a worker says about the adapter it built ------------------------------------------

#: longest adapter name / description / dtype or product name accepted from a worker
MAX_NAME, MAX_DESCRIPTION, MAX_ITEMS = 200, 2000, 64


@dataclass(frozen=True)
class AdapterInfo:
    """An adapter's capabilities as plain data: what the parent knows of an adapter that
    only its workers build (see aclcheck.running.workers.adapter). `declines`: its `supports()` is
    its own, so its workers may decline a case (SKIP)."""

    name: str
    description: str
    has_status_codes: bool
    models_products: bool
    dtypes: tuple[str, ...] | None
    products: tuple[str, ...] | None
    fork_safe: bool
    declines: bool

    @classmethod
    def of(cls, impl: Implementation) -> AdapterInfo:
        def listed(v: object) -> tuple[str, ...] | None:
            return None if v is None else tuple(str(x) for x in v)  # type: ignore[attr-defined]

        return cls(str(impl.name), str(impl.description), bool(impl.has_status_codes),
                   bool(impl.models_products), listed(impl.dtypes), listed(impl.products),
                   bool(impl.fork_safe), type(impl).supports is not Implementation.supports)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "has_status_codes": self.has_status_codes,
                "models_products": self.models_products,
                "dtypes": None if self.dtypes is None else list(self.dtypes),
                "products": None if self.products is None else list(self.products),
                "fork_safe": self.fork_safe, "declines": self.declines}

    @classmethod
    def from_json(cls, data: object) -> AdapterInfo:
        """Checked: ValueError naming the first field that is not what it must be."""
        if not isinstance(data, dict):
            raise ValueError("no adapter description")

        def text(key: str, limit: int, nonempty: bool = False) -> str:
            value = data.get(key)
            if not isinstance(value, str) or len(value) > limit or (nonempty and not value):
                raise ValueError(f"adapter field {key!r}: not a text of at most {limit} "
                                 "characters")
            return value

        def flag(key: str) -> bool:
            value = data.get(key)
            if not isinstance(value, bool):
                raise ValueError(f"adapter field {key!r}: not true or false")
            return value

        def names(key: str) -> tuple[str, ...] | None:
            value = data.get(key)
            if value is None:
                return None
            if not isinstance(value, list) or len(value) > MAX_ITEMS or not all(
                    isinstance(v, str) and 0 < len(v) <= 64 for v in value):
                raise ValueError(f"adapter field {key!r}: not a list of names")
            return tuple(value)

        return cls(text("name", MAX_NAME, nonempty=True), text("description", MAX_DESCRIPTION),
                   flag("has_status_codes"), flag("models_products"), names("dtypes"),
                   names("products"), flag("fork_safe"), flag("declines"))
