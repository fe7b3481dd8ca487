"""Kernels wrong only on what a vendor case states (tests/test_vendor_cases.py)."""

from __future__ import annotations

import numpy as np

from tests.kernels import window_sum


def storage_as_contiguous(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Reads gradOutput's memory in storage order as if the view were row-major (a
    kernel that ignores the strides an aclTensor carries)."""
    g = np.asarray(grad_output)
    flat = np.ascontiguousarray(g.transpose(0, 1, 3, 2)).reshape(g.shape) \
        if g.ndim == 4 and g.strides[-1] > g.strides[-2] else g
    return window_sum(flat, self)
