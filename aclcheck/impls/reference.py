"""`--impl reference`: the float64 reference rounded once to the case dtype (and, where
the call is judged in saturation mode, converted as that mode does: the mode reaches it
as it reaches every adapter, on the call).

It answers invalid calls with the contract's expected status, so it passes every case by
construction: a self-test of the pipeline (store, comparison, reports), not a kernel.
"""

from __future__ import annotations

from aclcheck.arrays import ResultBuffers
from aclcheck.cases.acl import SUCCESS, UNSPECIFIED
from aclcheck.cases.call import Outcome
from aclcheck.dtypes import NUMPY_DTYPES, correctly_rounded, judged_format
from aclcheck.impls.base import CallInputs, Implementation, overflow_mode_of, timed_call
from aclcheck.judging.case.overflow import OverflowMode, saturate
from aclcheck.ops import operator_of


class ReferenceImpl(Implementation):
    name = "reference"
    description = "float64 reference, correctly rounded to the case dtype (pipeline self-test)"
    has_status_codes = True
    models_products = True
    spec = "reference"
    fork_safe = True

    def __init__(self) -> None:
        self.buffers = ResultBuffers()  # float64 results reused from call to call

    def run(self, call: CallInputs) -> Outcome:
        case = call.case
        expected = case.expectation.status
        if expected not in (SUCCESS, UNSPECIFIED):
            return Outcome(status=expected)
        if expected == UNSPECIFIED:
            return Outcome(status=SUCCESS, notes=("reference accepts undocumented calls",))
        fmt = judged_format(case.dtype)  # FLOAT64 too: a DOUBLE call some code accepts
        values = {name: t.view() for name, t in call.inputs.items() if t is not None}

        def compute() -> object:
            out = self.buffers.take(case.expected_output()[1])
            out = operator_of(case).golden(case, values, out)
            rounded = correctly_rounded(out, fmt).astype(NUMPY_DTYPES[case.dtype])
            if overflow_mode_of(call) == OverflowMode.SATURATION:
                return saturate(rounded, fmt)
            return rounded

        output, seconds, raised = timed_call(compute)
        return Outcome(status=SUCCESS if raised is None else None, output=output,
                       time_s=seconds, raised=raised)
