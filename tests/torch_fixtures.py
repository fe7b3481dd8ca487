"""Test-only PyTorch implementations (spec `torch_fixtures:NAME`); imports torch at module
level, as a real adapter does, so an isolated run's zygote has it loaded before any call.
"""

from __future__ import annotations

import numpy as np
import torch  # noqa: F401 - loaded up front: the first call pays no import
from kernels import torch_cpu_native


def spins_on_nc(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """PyTorch CPU in the case dtype; spins forever on an N/C mismatch (as PyTorch 2.13's
    unchecked kernel sometimes does), rejects the other invalid calls by raising."""
    if grad_output.ndim != self.ndim or grad_output.dtype != self.dtype:
        raise ValueError("invalid call")
    if grad_output.shape[:-2] != self.shape[:-2]:
        while True:
            pass
    return torch_cpu_native(grad_output, self)
