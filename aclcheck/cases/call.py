"""A call as an implementation receives it and what comes back: plain data that crosses
the worker boundary (aclcheck.running.workers.wire) and reaches the judge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aclcheck.cases.layouts import StridedTensor
from aclcheck.cases.record import Case


@dataclass(frozen=True)
class CallInputs:
    """A case's call as the implementation receives it: the input tensors by role (None
    = null pointer), and the overflow mode it is judged in ("inf-nan" or "saturation";
    None: the product's default). `call.<role name>`: an input by its role name."""

    case: Case
    inputs: Mapping[str, StridedTensor | None]
    overflow_mode: str | None = None

    def __getattr__(self, name: str) -> StridedTensor | None:
        inputs = self.__dict__.get("inputs")
        if name.startswith("_") or inputs is None or name not in inputs:
            raise AttributeError(name)
        return inputs[name]


@dataclass(frozen=True)
class Outcome:
    """What one call returned.

    status: the aclnn status for adapters that report codes (None for the others);
    output: the out tensor (None when rejected or nothing came back);
    raised: the exception text when the implementation raised (a rejection for adapters
    without status codes, an ERROR on a valid call), its first line the message, then the
    last frames (file:line); crashed: the process died or hung, or the implementation
    tried to end the process or wrote into its inputs (never a rejection);
    log: what it wrote to stdout and stderr during the call (isolated workers capture it);
    skipped: the adapter declined the case in its worker (`supports()`): a SKIP;
    deterministic_refused: the adapter could not run this call in deterministic mode
    (its notes say why), so run-to-run differences are reported, not judged;
    unusable: the implementation cannot be called the way the adapter calls it (a
    callable with the wrong signature): a usage error of the whole run, not a verdict.
    """

    status: int | None = None
    output: object = None
    time_s: float = 0.0
    raised: str | None = None
    crashed: str | None = None
    notes: tuple[str, ...] = ()
    log: str = ""
    skipped: str | None = None
    deterministic_refused: bool = False
    unusable: str | None = None


@dataclass(frozen=True)
class ReturnedValue:
    """What an isolated call returned when it was not the expected array: described by
    the worker (type name; shape and dtype text for arrays), never sent across."""

    type_name: str
    shape: tuple[int, ...] | None = None
    dtype: str | None = None


@dataclass(frozen=True)
class Capabilities:
    """What the judge needs to know about the adapter (picklable, unlike adapters)."""

    name: str
    has_status_codes: bool
    models_products: bool
    dtypes: tuple[str, ...] | None = None  # None: any

    @classmethod
    def of(cls, impl: Any) -> Capabilities:
        """From an adapter (an Implementation, or a WorkerAdapter's reported data)."""
        dtypes = tuple(impl.dtypes) if impl.dtypes is not None else None
        return cls(impl.name, impl.has_status_codes, impl.models_products, dtypes)
