"""The contract's M of adaptive average pooling backward for the measuring probe
(aclcheck.judging.diagnosis.probe): the windows of every spatial axis (windows.py) and the weight
1/(product of the window sizes) of every output cell; both operators declare it."""

from __future__ import annotations

import math

import numpy as np

from aclcheck.cases import Case
from aclcheck.judging.diagnosis.probe import Geometry
from aclcheck.ops.adaptive.windows import window_bounds


def geometry(case: Case, axes: tuple[str, ...], linear: str = "grad_output",
             output: str = "self") -> Geometry:
    """The contract's Geometry of a case: the linear input's spatial sizes are the
    windows' count, the output's (self's shape) their range."""
    outs = tuple(int(x) for x in case.tensor_desc(linear).shape[-len(axes):])
    full = tuple(int(x) for x in case.tensor_desc(output).shape)
    return shapes_geometry(axes, outs, full[-len(axes):], math.prod(full[:-len(axes)]))


def shapes_geometry(axes: tuple[str, ...], outs: tuple[int, ...], ins: tuple[int, ...],
                    planes: int) -> Geometry:
    """The contract's Geometry for spatial sizes `outs` (the linear input) -> `ins`."""
    bounds = [window_bounds(o, i) for o, i in zip(outs, ins, strict=True)]
    weights = np.ones(outs)
    for a, (s, e) in enumerate(bounds):
        shape = [1] * len(axes)
        shape[a] = outs[a]
        weights = weights / (e - s).astype(np.float64).reshape(shape)
    return Geometry(axes, outs, ins, tuple(tuple(int(x) for x in s) for s, _ in bounds),
                    tuple(tuple(int(x) for x in e) for _, e in bounds), weights,
                    planes)
