"""The adapter protocol: how aclcheck calls an implementation and what comes back."""

from __future__ import annotations

import os
import time
import traceback
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import ClassVar

import numpy as np

from aclcheck import interrupts
from aclcheck.cases import Case
from aclcheck.cases.call import CallInputs, Outcome, ReturnedValue
from aclcheck.cases.layouts import StridedTensor
from aclcheck.judging.case.overflow import product_modes

__all__ = ["CallInputs", "ExitAttempt", "Implementation", "Outcome", "ReturnedValue",
           "describe_exception", "exit_refused", "guarded_run", "input_checksums",
           "numpy_view", "overflow_mode_of", "timed_call"]


class Implementation:
    """Base adapter. Subclasses set the class attributes and implement `run`.

    has_status_codes: reports aclnn status codes (else a raise is the only rejection).
    models_products: knows product rules (dtype lists, null pointers) and the out tensor.
    can_be_deterministic: `set_deterministic` does something.
    """

    name: str = "?"
    description: str = ""
    has_status_codes: bool = False
    models_products: bool = False
    dtypes: tuple[str, ...] | None = None  # None: any
    products: tuple[str, ...] | None = None  # None: any
    #: spec string that rebuilds this adapter in another process (see impls.registry)
    spec: str = ""
    #: a forked copy of a parent that imported (but never ran) the adapter works; false
    #: for device runtimes (CUDA, NPU, CANN) that must start in a fresh process
    fork_safe: bool = False
    #: a framework adapter's devices whose adapter is fork-safe, declared on the class so
    #: that impls.registry.static_fork_safe knows it before anything is built
    FORK_SAFE_DEVICES: ClassVar[tuple[str, ...]] = ()
    #: the adapter makes the operator's call (False: it reads outcomes stored elsewhere,
    #: so no call of it can harm this process)
    makes_calls: ClassVar[bool] = True

    def supports(self, case: Case) -> bool | str:
        """True, or the reason this adapter cannot run the case (reported as SKIP)."""
        if self.products is not None and case.product not in self.products:
            return f"{self.name} does not support product {case.product}"
        if self.dtypes is not None and case.positive and case.dtype not in self.dtypes:
            return f"{self.name} does not support dtype {case.dtype}"
        return True

    def set_deterministic(self, on: bool) -> str | None:
        """Switch deterministic mode; returns a note when the adapter cannot comply.

        Plain callables have one mode only: they must be deterministic when asked.
        """
        return None

    def set_threads(self, n: int) -> None:
        """Use at most `n` threads per call (a worker that shares the cores with another
        one computing at the same time). Adapters without a thread pool of their own
        ignore it."""

    def run(self, call: CallInputs) -> Outcome:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (devices, libraries)."""


def overflow_mode_of(call: CallInputs) -> str:
    """The overflow mode the call is judged in ("inf-nan" or "saturation"): the run's
    choice where it made one, else the product's default (docs/contract.md section 10)."""
    if call.overflow_mode is not None:
        return call.overflow_mode
    return product_modes(call.case.product)[0].value


def timed_call(fn: Callable[[], object]) -> tuple[object, float, str | None]:
    """Run fn; (result, seconds, exception text or None). Never raises Exception.

    The text is "Type: message" followed by the last frames of the traceback (file:line),
    so a kernel's own bug can be found from the report."""
    start = time.perf_counter()
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - any exception is the implementation's answer
        return None, time.perf_counter() - start, describe_exception(exc)
    return result, time.perf_counter() - start, None


#: frames of a kernel's traceback kept in the verdict detail (innermost last)
TRACEBACK_FRAMES = 4


#: longest exception message kept (a kernel's message may hold a whole array)
MESSAGE_CHARS = 16384


def describe_exception(exc: BaseException) -> str:
    """'Type: message' then up to TRACEBACK_FRAMES innermost frames as '  at file:line in fn'."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a kernel's exception whose __str__ raises
        message = "(its message cannot be shown)"
    if len(message) > MESSAGE_CHARS:
        message = message[:MESSAGE_CHARS] + f" ... ({len(message) - MESSAGE_CHARS} more)"
    text = f"{type(exc).__name__}: {message}"
    frames = traceback.extract_tb(exc.__traceback__)[-TRACEBACK_FRAMES:]
    where = [f"  at {f.filename}:{f.lineno} in {f.name}" for f in frames]
    return "\n".join([text, *where]) if where else text


class ExitAttempt(BaseException):  # noqa: N818 - it names what the kernel tried
    """Raised in place of os._exit() while an implementation runs in this process (a
    BaseException, like SystemExit: `except Exception` in a kernel or adapter must not
    turn it into a rejection)."""


@contextmanager
def exit_refused() -> Iterator[None]:
    """os._exit() from Python code in a kernel raises ExitAttempt instead of ending the
    process with a status the CI would read as success. (A C-level exit cannot be caught
    in-process: only an isolated worker contains it.)"""
    real = os._exit

    def refuse(status: int) -> None:
        raise ExitAttempt(f"os._exit({status})")

    os._exit = refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


def input_checksums(call: CallInputs) -> tuple[int | None, ...]:
    """CRC-32 of each input's whole storage, in role order (None for a null pointer)."""
    return tuple(None if t is None else zlib.crc32(t.storage.reshape(-1).view(np.uint8))
                 for t in call.inputs.values())


def _read_only(call: CallInputs) -> None:
    for t in call.inputs.values():
        if t is not None and t.storage.flags.writeable and t.storage.flags.owndata:
            t.storage.setflags(write=False)


def guarded_run(impl: Implementation, call: CallInputs) -> Outcome:
    """impl.run(call) as aclcheck makes every call, in-process or in a worker.

    Inputs are read-only and verified unchanged afterwards (a C kernel can write through a
    raw pointer): a change is a crash-class answer, never a pass. SystemExit, os._exit and
    any other exception become this call's answer; KeyboardInterrupt still stops the run.
    """
    _read_only(call)
    before = input_checksums(call)
    start = time.perf_counter()
    try:
        with exit_refused():
            try:
                outcome = impl.run(call)
            finally:
                interrupts.reassert()  # a framework's runtime may have replaced it
        interrupts.check()  # a Ctrl-C the implementation swallowed still stops the run
    except KeyboardInterrupt:
        raise
    except (SystemExit, ExitAttempt) as exc:
        what = exc.args[0] if isinstance(exc, ExitAttempt) else f"sys.exit({exc.code!r})"
        return Outcome(crashed=f"the implementation tried to end the process: {what}",
                       time_s=time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - an adapter bug is this case's ERROR
        return Outcome(raised=describe_exception(exc), time_s=time.perf_counter() - start)
    except BaseException as exc:  # noqa: BLE001 - GeneratorExit & co.: never a rejection
        return Outcome(crashed=f"the implementation raised {type(exc).__name__}",
                       time_s=time.perf_counter() - start)
    if isinstance(outcome.output, np.ndarray) and type(outcome.output) is not np.ndarray:
        # an ndarray subclass may override shape, dtype or indexing: judge its memory
        # through the base class (the C implementation, none of the subclass's code)
        outcome = replace(outcome, output=np.ndarray.view(outcome.output, np.ndarray))
    names = [call.case.role(name).api for name in call.inputs]
    changed = [name for name, a, b in zip(names, before, input_checksums(call), strict=True)
               if a != b]
    if changed:
        return replace(outcome, crashed=f"implementation wrote into its inputs "
                                        f"({', '.join(changed)} changed during the call)")
    return outcome


def numpy_view(tensor: StridedTensor | None) -> np.ndarray | None:
    """The logical numpy view of a tensor (strides and offset kept, no copy)."""
    return None if tensor is None else tensor.view()
