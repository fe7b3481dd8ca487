"""A worker and the call in flight, as the isolated runner (aclcheck.running.workers.parent)
keeps them: plain records, the tail of the worker's output, how a worker ended."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import IO

from aclcheck.cases.call import Outcome
from aclcheck.impls.base import CallInputs
from aclcheck.running.workers.cpu_watch import CallWatch
from aclcheck.running.workers.wire import AdapterInfo, Channel
from aclcheck.running.workers.zygote import Zygote

#: the tail of a worker's output kept per call (characters; read as 4x as many bytes)
LOG_TAIL_CHARS = 4000


class WorkerStartError(Exception):
    """A worker that could not start: `kind` is what went wrong ("timeout", "exit",
    "protocol", or the adapter's exception type name), `text` one line."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind
        self.text = text


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
    """Elements a call moves (its inputs): what 'comparable calls' compares."""
    return sum(t.storage.size for t in call.inputs.values() if t is not None)


@dataclass
class LiveWorker:
    """One running worker: its group, connection, zygote and output log."""

    pid: int
    channel: Channel
    log: IO[bytes]
    zygote: Zygote
    answered: int = 0
    info: AdapterInfo | None = None
    note: str | None = None
    #: the worker's CPU seconds read at its last answer: the next call's start (it idles
    #: in between), so a call costs one read of /proc, not two
    cpu_mark: float | None = None

    def new_log(self) -> str:
        """The tail of what the worker wrote since the last call (read by seeking; the
        file is emptied after each read, so it never accumulates)."""
        fd = self.log.fileno()
        try:
            size = os.fstat(fd).st_size
            if not size:
                return ""
            start = max(0, size - 4 * LOG_TAIL_CHARS)
            data = os.pread(fd, size - start, start)
            os.ftruncate(fd, 0)
        except OSError:
            return ""
        text = data.decode("utf-8", "replace").strip()
        cut = start > 0 or len(text) > LOG_TAIL_CHARS
        text = text[-LOG_TAIL_CHARS:]
        return "..." + text if cut and text else text


@dataclass
class PendingCall:
    """The call in flight."""

    seq: int
    call: CallInputs
    size: int
    first: bool
    sent_at: float = 0.0
    deadline: float = 0.0
    why: str = ""
    watch: CallWatch | None = None  # when the call is hung (None: no worker took it)
    cpu0: float | None = None  # the worker's CPU seconds when the call was sent
    failed: Outcome | None = None  # no worker took it (could not start)
    send_error: str | None = None  # the worker died, or did not take the call in time
