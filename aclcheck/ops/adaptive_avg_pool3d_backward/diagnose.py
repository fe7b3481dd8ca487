"""The diagnosis hooks of aclnnAdaptiveAvgPool3dBackward: what a failure signature groups
one of its cases by (judging.signature.CaseFacts, with D, H and W window kinds), the
window tables a printed case shows, and the evidence of one failing case: where its
wrong elements sit (judging.clues, ops.adaptive.clues over D, H and W) and which
rounding of the final conversion explains a one-ULP failure.

This operator has no what-if models: its run-level cause comes from the measuring probe
(judging.probe), which reads the kernel's own windows and weights. An element is wrong
where no correct kernel on the case's product path could have written it (the
contract's interval: judging.reproduce.contract_interval).
"""

from __future__ import annotations

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.dtypes import JUDGED_FORMATS, judged_format
from aclcheck.judging.clues import findings, rounding_findings
from aclcheck.judging.pieces import load
from aclcheck.judging.reproduce import CaseEvidence, contract_interval, inside
from aclcheck.judging.signature import CaseFacts
from aclcheck.ops.adaptive.clues import window_findings
from aclcheck.ops.adaptive.facts import WindowTable, case_facts, family_now, window_tables
from aclcheck.ops.adaptive_avg_pool3d_backward import contract
from aclcheck.ops.adaptive_avg_pool3d_backward.numerics import model

#: the spatial axes of this operator's cases
AXES = ("D", "H", "W")
#: Cases with more output elements get no evidence (it says so; the ranking counts them
#: failing and unexplained).
REJUDGE_ELEMENTS = 1 << 18
#: c of the error bound an element is judged wrong with (the default standard's)
BOUND_C = 2.0


def facts(case: Case, verdict: str) -> CaseFacts:
    """What a failure signature groups this case by."""
    rules = contract.PRODUCTS.get(case.product)
    return case_facts(case, verdict, AXES, rules.accumulate if rules is not None else "")


def windows(case: Case) -> tuple[WindowTable, ...]:
    """(axis, window starts, window ends) of D, H and W: the tables a printed case shows
    beside its values."""
    return window_tables(case, AXES)


def family(case: Case) -> str:
    """The family label of a case named for its shapes now (shrink)."""
    return family_now(case, AXES)


def evidence(data: CaseData, output: np.ndarray) -> CaseEvidence:
    """The diagnosis evidence of one failing case from the kernel's output."""
    with np.errstate(all="ignore"):  # broken kernels write inf and NaN
        return _evidence(data, output)


def _evidence(data: CaseData, output: np.ndarray) -> CaseEvidence:
    case, golden = data.case, data.golden
    grad = data.inputs.get("grad_output")
    if grad is None or golden is None or case.dtype not in JUDGED_FORMATS \
            or golden.size > REJUDGE_ELEMENTS or output.shape != golden.shape \
            or golden.ndim < len(AXES) or not np.any(golden):
        return CaseEvidence(case.id, judged=False)
    numbers = model(case).numbers
    if numbers is None:
        return CaseEvidence(case.id, judged=False)
    g = np.asarray(golden, dtype=np.float64)
    actual = load(output)
    fmt = judged_format(case.dtype)
    extra, proven = contract_interval(numbers, data.values(), g.shape, BOUND_C)
    wrong = ~inside(g, actual, extra, fmt, proven=proven)
    if not wrong.any():  # the gate failed on something the interval allows
        return CaseEvidence(case.id)
    sizes = tuple(zip((int(x) for x in grad.shape[-3:]), (int(x) for x in g.shape[-3:]),
                      strict=True))
    found = findings(wrong, g, actual, batch_rank=g.ndim - len(AXES))
    found += window_findings(wrong, g, actual, sizes, fmt.precision)
    found += rounding_findings(wrong, g, actual, fmt)
    return CaseEvidence(case.id, (), tuple(found))
