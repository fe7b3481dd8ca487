"""The adapter protocol: how aclcheck calls an implementation and what comes back."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aclcheck.cases import Case
from aclcheck.layouts import StridedTensor


@dataclass(frozen=True)
class Outcome:
    """What one call returned.

    status: the aclnn status for adapters that report codes (None for the others);
    output: the out tensor (None when rejected or nothing came back);
    raised: the exception text when the implementation raised (a rejection for adapters
    without status codes, an ERROR on a valid call); crashed: the process died or hung.
    """

    status: int | None = None
    output: object = None
    time_s: float = 0.0
    raised: str | None = None
    crashed: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallInputs:
    """A case's call as the implementation receives it (None = null pointer)."""

    case: Case
    grad_output: StridedTensor | None
    self: StridedTensor | None


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

    def run(self, call: CallInputs) -> Outcome:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (devices, libraries)."""


def timed_call(fn: Callable[[], object]) -> tuple[object, float, str | None]:
    """Run fn; (result, seconds, exception text or None). Never raises Exception."""
    start = time.perf_counter()
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - any exception is the implementation's answer
        return None, time.perf_counter() - start, f"{type(exc).__name__}: {exc}"
    return result, time.perf_counter() - start, None


def numpy_view(tensor: StridedTensor | None) -> np.ndarray | None:
    """The logical numpy view of a tensor (strides and offset kept, no copy)."""
    return None if tensor is None else tensor.view()
