"""The diagnosis hooks of aclnnAdaptiveAvgPool3dBackward: what a failure signature groups
one of its cases by (judging.diagnosis.signature.CaseFacts, with D, H and W window kinds), the
window tables a printed case shows, and the evidence of one failing case: where its
wrong elements sit (judging.diagnosis.clues, ops.adaptive.clues over D, H and W) and which
rounding of the final conversion explains a one-ULP failure.

This operator has no what-if models: its run-level cause comes from the measuring probe
(judging.diagnosis.probe), which reads the kernel's own windows and weights. An element is wrong
where no correct kernel on the case's product path could have written it (the
contract's interval: judging.diagnosis.reproduce.contract_interval).
"""

from __future__ import annotations

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.judging.diagnosis.reproduce import CaseClues
from aclcheck.judging.diagnosis.signature import CaseFacts
from aclcheck.ops.adaptive.evidence import window_evidence
from aclcheck.ops.adaptive.facts import WindowTable, case_facts, family_now, window_tables
from aclcheck.ops.adaptive_avg_pool3d_backward import contract
from aclcheck.ops.adaptive_avg_pool3d_backward.numerics import model

#: the spatial axes of this operator's cases
AXES = ("D", "H", "W")
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


def evidence(data: CaseData, output: np.ndarray) -> CaseClues:
    """The diagnosis evidence of one failing case from the kernel's output."""
    return window_evidence(data, output, AXES, model)
