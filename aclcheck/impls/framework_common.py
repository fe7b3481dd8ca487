"""What the framework adapters share: importing a framework, the device suffix, calls
they cannot make (scalars), and bfloat16 across a framework boundary that has no numpy
bfloat16. The operator's call itself is its glue (aclcheck.ops)."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

import ml_dtypes
import numpy as np

from aclcheck.cases import Case
from aclcheck.errors import ImplementationUnavailable, UnknownImplementation


def import_framework(module: str, label: str, extra: str, tested: str) -> Any:
    """Import a framework (its import-time warnings silenced), or raise
    ImplementationUnavailable with one line: not installed, or installed but broken."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(module)
    except ImportError as exc:
        if getattr(exc, "name", None) == module:
            raise ImplementationUnavailable(
                f"{label} is not installed (pip install 'aclcheck[{extra}]', tested with "
                f"{tested})") from None
        raise ImplementationUnavailable(f"{label} is installed but does not import: "
                                        f"{first_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - a broken install is a usage error, not a crash
        raise ImplementationUnavailable(f"{label} is installed but does not import: "
                                        f"{first_line(exc)}") from None


def first_line(exc: BaseException) -> str:
    """'TypeName: first line of the message' (framework errors carry C++ stacks)."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def parse_device(framework: str, suffix: str, valid: tuple[str, ...],
                 default: str = "cpu") -> tuple[str, int]:
    """'gpu:1' -> ('gpu', 1); '' -> (default, 0). Unknown names are a usage error that
    lists the valid ones."""
    name, _, index = (suffix or default).partition(":")
    if name not in valid:
        raise UnknownImplementation(f"unknown {framework} device {name!r}; valid: "
                                    f"{', '.join(valid)}")
    if index and not index.isdigit():
        raise UnknownImplementation(f"{framework}:{suffix}: the device index must be a "
                                    "non-negative integer")
    return name, int(index or 0)


def scalar_reason(case: Case) -> str | None:
    """Rank-0 inputs cannot be pooled at all (SKIP, not a finding)."""
    if any(len(case.tensor_desc(r.name).shape) == 0 for r in case.inputs()):
        return "scalar tensors"
    return None


def is_bfloat16(array: np.ndarray) -> bool:
    return array.dtype == ml_dtypes.bfloat16


def widen_bfloat16(array: np.ndarray) -> np.ndarray:
    """bfloat16 -> float32 (exact: every bfloat16 is a float32), other dtypes unchanged.
    The framework casts back to its own bfloat16 on the device."""
    return array.astype(np.float32) if is_bfloat16(array) else array


def narrow_to_bfloat16(array: np.ndarray) -> np.ndarray:
    """float32 values that came from a framework bfloat16 (exact) -> ml_dtypes.bfloat16."""
    return array.astype(ml_dtypes.bfloat16)
