"""A case's tensors, made from its record alone: the values of each input role laid out
in memory, and the float64 golden. Bit-identical for the same record on any machine, in
any order, because every random draw comes from generators seeded by the case's own
seed alone."""

from __future__ import annotations

import numpy as np

from aclcheck.arrays import ResultBuffers
from aclcheck.cases import Case, CaseData
from aclcheck.cases.layouts import StridedTensor, place
from aclcheck.ops import operator_of


def make_inputs(case: Case) -> tuple[StridedTensor | None, ...]:
    """The input tensors in role order, laid out per the case's layout (None where passed
    as null)."""
    op = operator_of(case)
    return tuple(None if r.name in case.null  # values are drawn fresh: the layout owns them
                 else place(op.values(case, r.name), case.layout, op.spatial_rank, owned=True)
                 for r in case.inputs())


def make_tensors(case: Case, buffers: ResultBuffers | None = None) -> CaseData:
    """Inputs and golden of a case (the golden only where the call must succeed).

    buffers: where a loop over cases keeps golden memory for reuse (see ResultBuffers).
    """
    inputs = dict(zip((r.name for r in case.inputs()), make_inputs(case), strict=True))
    golden = None
    if case.positive:
        shape = case.expected_output()[1]
        out = buffers.take(shape) if buffers is not None else None
        values = {name: t.view() for name, t in inputs.items() if t is not None}
        golden = operator_of(case).golden(case, values, out)
        # The sign and payload of a NaN are not part of any contract and differ between
        # CPUs (x86's default NaN is negative, Arm's positive) and between vectorised and
        # scalar adds: store one canonical quiet NaN so golden bytes are the same anywhere.
        np.copyto(golden, np.nan, where=np.isnan(golden))
    return CaseData(case, inputs, golden)
