"""Test-only implementations for the verify pipeline: misbehaving adapters of every kind.

Imported by spec (`impl_fixtures:NAME`) in-process and in isolated workers, so each is a
plain module-level function with the adapter signature fn(grad_output, self) -> out.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

import numpy as np

from aclcheck.dtypes import FLOAT_FORMATS, NUMPY_DTYPES, correctly_rounded
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward


def _dtype_name(a: np.ndarray) -> str:
    return next(name for name, t in NUMPY_DTYPES.items() if np.dtype(t) == a.dtype)


def correct(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """The reference rounded once: correct everywhere; rejects what the contract can
    check without products (rank, N/C, dtype mismatch) by raising."""
    if grad_output.ndim != self.ndim or grad_output.ndim not in (3, 4):
        raise ValueError("rank mismatch")
    if grad_output.shape[:-2] != self.shape[:-2]:
        raise ValueError("N/C mismatch")
    if grad_output.dtype != self.dtype:
        raise TypeError("dtype mismatch")
    fmt = FLOAT_FORMATS[_dtype_name(self)]
    out = backward(grad_output, self.shape[-2:])
    with np.errstate(over="ignore"):
        return correctly_rounded(out, fmt).astype(self.dtype)


def accepts_everything(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Correct numbers, but never validates N/C: accepts invalid calls."""
    return np.zeros(self.shape, dtype=self.dtype)


def returns_none(grad_output: np.ndarray, self: np.ndarray) -> None:
    return None


def returns_list(grad_output: np.ndarray, self: np.ndarray) -> list[float]:
    return [0.0]


def returns_float64(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    return backward(grad_output, self.shape[-2:])


def raises(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    raise RuntimeError("kernel launch failed: \x1b[31mcontrol\x07 chars\x00")


def segfaults(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Dereferences a null pointer on 3-D inputs (a real SIGSEGV), correct otherwise."""
    if grad_output.ndim == 3:
        ctypes.string_at(0)
    return correct(grad_output, self)


def aborts(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    if grad_output.ndim == 3:
        os.abort()
    return correct(grad_output, self)


def exits(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    if grad_output.ndim == 3:
        os._exit(7)
    return correct(grad_output, self)


def exits_natively(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """libc's _exit(7) on 3-D inputs: no Python code runs, only isolation contains it."""
    if grad_output.ndim == 3:
        ctypes.CDLL(None)._exit(7)
    return correct(grad_output, self)


def hangs(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    if grad_output.ndim == 3:
        time.sleep(600)
    return correct(grad_output, self)


def noisy(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Correct up to random last-bit noise: passes tolerances, fails determinism."""
    out = correct(grad_output, self)
    if out.size and out.dtype == np.float32:
        bits = out.view(np.uint32).copy()
        bits ^= np.random.default_rng().integers(0, 2, out.size, dtype=np.uint32).reshape(
            out.shape)
        finite = np.isfinite(out)
        return np.where(finite, bits.view(np.float32), out)
    return out


noisy.aclcheck_dtypes = ("float32",)  # type: ignore[attr-defined]


def allocates_forever(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Memory blow-up on 3-D inputs: asks for far more than the worker's cap. The memory
    is reserved, never touched, so the cap is reached within microseconds whatever the
    load: no other limit (the hang floor) can fire first."""
    if grad_output.ndim == 3:
        hog = [np.empty(2**27) for _ in range(64)]  # 64 GiB of address space if allowed
        return hog[0]
    return correct(grad_output, self)


def writes_out(grad_output: np.ndarray, self: np.ndarray, out: np.ndarray) -> None:
    """out= style: writes every element but the last (left as aclcheck's NaN sentinel)."""
    result = correct(grad_output, self)
    out.reshape(-1)[:-1] = result.reshape(-1)[:-1]


def writes_out_fully(grad_output: np.ndarray, self: np.ndarray, out: np.ndarray) -> None:
    out[...] = correct(grad_output, self)


def interrupts(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Ctrl-C arrives while a 3-D case runs."""
    if grad_output.ndim == 3:
        raise KeyboardInterrupt
    return correct(grad_output, self)


def raises_markup(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Raises text rich would read as markup or emoji, with a terminal escape sequence and
    a lone surrogate: must be printed literally, never end the run."""
    raise ValueError("cannot open [/tmp/x] [bold]b[/bold] [link=javascript:alert(1)]l[/link]"
                     " :smile: \x1b[2J\udc80")


def float32_only(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """`correct`, declaring float32 its only dtype: its probes in other dtypes are SKIP."""
    return correct(grad_output, self)


float32_only.aclcheck_dtypes = ("float32",)  # type: ignore[attr-defined]


# -- kernels that try to end the process, write into their inputs, or leave children ------


def sys_exit_zero(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """sys.exit(0) on 3-D inputs: must be ERROR, never a silent exit 0."""
    if grad_output.ndim == 3:
        sys.exit(0)
    return correct(grad_output, self)


def os_exit_zero(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    if grad_output.ndim == 3:
        os._exit(0)
    return correct(grad_output, self)


def native_exit_zero(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """libc _exit(0): only an isolated worker can contain it."""
    if grad_output.ndim == 3:
        ctypes.CDLL(None)._exit(0)
    return correct(grad_output, self)


def writes_inputs_numpy(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Scales gradOutput in place before computing (numpy refuses: read-only input)."""
    grad_output *= 2
    return correct(grad_output, self)


def writes_inputs_pointer(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """A C kernel's bug: zeroes the first bytes of gradOutput through its raw pointer,
    then returns the correct result of the original values."""
    result = correct(grad_output, self)
    if grad_output.size:
        ctypes.memset(grad_output.ctypes.data, 0, grad_output.itemsize)
    return result


def stderr_then_abort(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """What glibc does on heap corruption: a line on fd 2, then SIGABRT (3-D inputs)."""
    if grad_output.ndim == 3:
        os.write(2, b"free(): invalid size\n")
        os.abort()
    return correct(grad_output, self)


def child_holds_stdout(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Starts a child that keeps stdout open, then hangs (3-D inputs)."""
    if grad_output.ndim == 3:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        time.sleep(600)
    return correct(grad_output, self)


# -- Ctrl-C at the terminal while a kernel runs (tests/test_interrupts.py) ------------------


def _ctrl_c_at_the_terminal() -> None:
    """SIGINT to the process group the test started aclcheck in, as a terminal sends it
    on Ctrl-C (the group's id is in ACLCHECK_TEST_TERMINAL)."""
    os.killpg(int(os.environ["ACLCHECK_TEST_TERMINAL"]), signal.SIGINT)


def ctrl_c(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Ctrl-C while a 3-D case runs, then a long wait: the run must stop there."""
    if grad_output.ndim == 3:
        _ctrl_c_at_the_terminal()
        time.sleep(600)
    return correct(grad_output, self)


def ctrl_c_swallowed(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Like ctrl_c, but catches everything (KeyboardInterrupt too) and answers: a kernel
    must not be able to make the run go on after Ctrl-C."""
    if grad_output.ndim == 3:
        try:
            _ctrl_c_at_the_terminal()
            time.sleep(600)
        except BaseException:  # noqa: BLE001, S110 - the point of this kernel
            pass
    return correct(grad_output, self)
