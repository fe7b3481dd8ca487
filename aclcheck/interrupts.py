"""Ctrl-C, the same at every moment of a command-line run: one line, exit 130, no traceback,
and never an interrupt that the run survives.

A run has two phases. Until the command starts (imports, argument parsing, `--help`)
nothing needs cleaning up, so SIGINT prints the line and ends the process at once, even
inside an import. Once the command runs, SIGINT raises KeyboardInterrupt as usual (reports
of what was judged are still written, marked partial) and is also remembered, because
the exception can be lost: raised while a weakref callback or a `__del__` runs (garbage
collection at any allocation), Python prints "Exception ignored" and goes on; a kernel
may swallow it (`except BaseException: pass`); a framework may replace the process's
SIGINT handler (MindSpore does at its first op). The loops check() the flag before they
block and after every case, so none of these can make the run go on.

Child processes never see Ctrl-C: the parent decides, then ends them. Those started from
the parent's process group (spawned workers, pool workers) start with SIGINT blocked
(`held_for_children`) and ignore it from their first instruction (`child_ignores`).

Nothing here changes a process that did not ask (pytest, a library user): the handlers
are installed only by the command-line entry point.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

#: the exit status of an interrupted command (128 + SIGINT, as shells report it)
EXIT_INTERRUPTED = 130
#: the one line an interrupted command prints
MESSAGE = "aclcheck: interrupted"

_pending = False


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _exit_now(signum: int, frame: FrameType | None) -> None:
    """Start-up: nothing to clean up or report yet."""
    os.write(2, (MESSAGE + "\n").encode())
    os._exit(EXIT_INTERRUPTED)


def _raise(signum: int, frame: FrameType | None) -> None:
    """The command runs: unwind (partial reports), and remember it happened."""
    global _pending
    _pending = True
    raise KeyboardInterrupt


def _unraisable(info: Any) -> None:
    """A KeyboardInterrupt lost in a finalizer is remembered (the flag), not printed as
    an 'Exception ignored' traceback; anything else goes to Python's own hook."""
    if info.exc_type is not None and issubclass(info.exc_type, KeyboardInterrupt):
        return
    sys.__unraisablehook__(info)


def exit_at_once() -> None:
    """Entry point, first thing: a Ctrl-C before the command starts ends the process."""
    signal.signal(signal.SIGINT, _exit_now)
    sys.unraisablehook = _unraisable


def command_starts() -> None:
    """The command is about to run: Ctrl-C raises (and is remembered) from now on. Only
    where exit_at_once() was called, so in-process callers keep their own handler."""
    if _main_thread() and signal.getsignal(signal.SIGINT) is _exit_now:
        signal.signal(signal.SIGINT, _raise)


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C arrived that nobody acted on (swallowed)."""
    if _pending:
        raise KeyboardInterrupt


def reassert() -> None:
    """Install the process's own SIGINT handler again at the OS level, in case code that
    just ran (a framework's runtime) replaced it behind Python's back."""
    if not _main_thread():
        return
    handler = signal.getsignal(signal.SIGINT)
    if handler is not None:
        signal.signal(signal.SIGINT, handler)


@contextlib.contextmanager
def held_for_children() -> Iterator[None]:
    """Block SIGINT while child processes start: they inherit the blocked mask (through
    exec too), so a Ctrl-C during their start-up cannot reach them before they ignore it
    (`child_ignores`); this process gets it as soon as the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def child_ignores() -> None:
    """In a child started under held_for_children(): ignore SIGINT (dropping one that
    arrived while blocked) and unblock it. The parent handles Ctrl-C and ends the child."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
