"""A case's tensors, made from its record alone: the values of each input role laid out
in memory, and the float64 golden. Bit-identical for the same record on any machine, in
any order, because every random draw comes from generators seeded by the case's own
seed alone."""

from __future__ import annotations

import numpy as np

from aclcheck.arrays import ResultBuffers
from aclcheck.cases import Case, CaseData
from aclcheck.cases.layouts import StridedTensor, place_at
from aclcheck.cases.record import VALUE_FACTS
from aclcheck.cases.values import in_dtype, stated_values
from aclcheck.dtypes import NUMPY_DTYPES
from aclcheck.ops import operator_of


def make_inputs(case: Case) -> tuple[StridedTensor | None, ...]:
    """The input tensors in role order, laid out per the case's layout or the view it
    states (None where passed as null)."""
    return tuple(None if r.name in case.null  # values are drawn fresh: the layout owns them
                 else unmade(case, r.name) if min(case.tensor_desc(r.name).shape,
                                                  default=0) < 0
                 else place_at(input_values(case, r.name), case.view_geometry(r.name),
                               owned=True)
                 for r in case.inputs())


def unmade(case: Case, name: str) -> StridedTensor:
    """A tensor with a negative dim (a call that must be refused): its description and no
    storage at all (there is nothing to lay out; only a status can be asked of it)."""
    desc = case.tensor_desc(name)
    dtype = np.dtype(NUMPY_DTYPES[desc.dtype])
    return StridedTensor(np.zeros(0, dtype), tuple(desc.shape), case.view_geometry(name)[0], 0)


def input_values(case: Case, name: str) -> np.ndarray:
    """The logical values of one input: the ones the case states (a range, a law, a fill,
    the values themselves), else the operator's draw of the case's distribution."""
    key = case.role(name).key
    stated = [(fact, getattr(case, f"{key}_{fact}", None)) for fact in VALUE_FACTS]
    stated = [(fact, spec) for fact, spec in stated if spec is not None]
    if not stated:
        return operator_of(case).values(case, name)
    fact, spec = stated[0]
    desc = case.tensor_desc(name)
    stream = 1 + [r.name for r in case.inputs()].index(name)
    rng = np.random.default_rng([case.seed, stream])
    return in_dtype(stated_values(rng, tuple(desc.shape), fact, spec), desc.dtype)


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
