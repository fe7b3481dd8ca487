"""The float64 reference of aclnnAdaptiveMaxPool2dBackward: gradients scattered to the
positions the indices name, added where several cells name one position.

On a valid case at most (ceil(Ho/H)+1)(ceil(Wo/W)+1) terms meet on a position, each a
16- or 32-bit float value, added in float64 in the row-major cell order the kernels use
(np.add.at adds in index order): the sum is exact wherever the terms' exponents lie within
29 of each other (every family's values), and within far less than a FLOAT32 ulp anyway.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from aclcheck.cases import Case
from aclcheck.ops.adaptive import footprint


def scatter(grad_output: np.ndarray, indices: np.ndarray, hw: tuple[int, int],
            out: np.ndarray | None = None, absolute: bool = False) -> np.ndarray:
    """out[..., p] = sum of grad_output[..., cell] over the cells naming p (float64, shape
    grad_output's leading dims + hw); `absolute`: of |grad_output| (the error budget's m).
    Indices must be valid positions of the plane (0 <= p < H*W)."""
    g = np.asarray(grad_output, dtype=np.float64)
    idx = np.asarray(indices, dtype=np.int64)
    lead = g.shape[:-2]
    planes, cells, size = math.prod(lead), math.prod(g.shape[-2:]), hw[0] * hw[1]
    res = np.zeros(lead + tuple(hw)) if out is None else out
    flat = res.reshape(planes * size)
    res.fill(0.0)
    if planes * cells:
        base = (np.arange(planes, dtype=np.int64) * size)[:, None]
        pos = (idx.reshape(planes, cells) + base).reshape(-1)
        vals = np.abs(g) if absolute else g
        with np.errstate(invalid="ignore"):  # inf + -inf on one position: NaN
            np.add.at(flat, pos, vals.reshape(-1))
    return res


def golden(case: Case, inputs: Mapping[str, np.ndarray], out: np.ndarray | None = None
           ) -> np.ndarray:
    """The float64 golden of a case from its logical input values (into `out`)."""
    hw = tuple(case.tensor_desc("self").shape[-2:])
    return scatter(inputs["grad_output"], inputs["indices"], (hw[0], hw[1]), out)


def naive(grad_output: np.ndarray, indices: np.ndarray, hw: tuple[int, int]) -> np.ndarray:
    """An independent loop over cells (tests): the same sum, one Python add at a time."""
    g = np.asarray(grad_output, dtype=np.float64)
    lead = g.shape[:-2]
    res = np.zeros(lead + tuple(hw))
    for plane in np.ndindex(*lead):
        for i in range(g.shape[-2]):
            for j in range(g.shape[-1]):
                p = int(indices[plane + (i, j)])
                res[plane + divmod(p, hw[1])] += g[plane + (i, j)]
    return res


def case_bytes(case: Case) -> int:
    """Memory one case's arrays need while generated: the input storage buffers as laid
    out, the float64 golden, and float64 copies of gradOutput and the indices."""
    return footprint.case_bytes(case, {"self": 1, "grad_output": 2})
