"""What one adaptive-pooling case's arrays cost while generated (generate's memory limit):
its inputs' storage buffers as laid out, and the float64 arrays its reference makes."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from aclcheck.cases import Case
from aclcheck.dtypes import NUMPY_DTYPES


def case_bytes(case: Case, float64_arrays: Mapping[str, int]) -> int:
    """Bytes of every non-null input's storage, plus, for a case with a golden, 8 bytes an
    element of `float64_arrays[role]` arrays of each role's shape (golden and copies)."""
    total = 0
    for role in case.inputs():
        if role.name in case.null:
            continue
        desc = case.tensor_desc(role.name)
        total += case.view_geometry(role.name)[2] * np.dtype(NUMPY_DTYPES[desc.dtype]).itemsize
    if case.positive:
        total += 8 * sum(n * math.prod(case.tensor_desc(role).shape)
                         for role, n in float64_arrays.items())
    return total
