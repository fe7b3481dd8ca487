"""The diagnosis hooks of aclnnAdaptiveMaxPool2dBackward: what a failure signature groups
one of its cases by (window kinds over H and W), the window tables a printed case shows,
and the evidence of one failing case (ops.adaptive.evidence: where its wrong elements sit,
which rounding explains a one-ULP failure, which what-if model of bugs.py reproduces the
output). No measuring probe: the probe measures a window geometry, and this operator's
linear map is the one its indices name."""

from __future__ import annotations

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.judging.diagnosis.codes import DiagnosisCode
from aclcheck.judging.diagnosis.reproduce import CaseClues
from aclcheck.judging.diagnosis.signature import CaseFacts
from aclcheck.ops.adaptive.evidence import window_evidence
from aclcheck.ops.adaptive.facts import WindowTable, case_facts, family_now, window_tables
from aclcheck.ops.adaptive_max_pool2d_backward import bugs, contract
from aclcheck.ops.adaptive_max_pool2d_backward.numerics import model

AXES = ("H", "W")


def facts(case: Case, verdict: str) -> CaseFacts:
    """What a failure signature groups this case by."""
    rules = contract.PRODUCTS.get(case.product)
    return case_facts(case, verdict, AXES, rules.accumulate if rules is not None else "")


def windows(case: Case) -> tuple[WindowTable, ...]:
    """(axis, window starts, window ends) of H and W: the tables a printed case shows."""
    return window_tables(case, AXES)


def family(case: Case) -> str:
    """The family label of a case named for its shapes now (shrink)."""
    return family_now(case, AXES)


def what_ifs(data: CaseData) -> list[tuple[DiagnosisCode, str, np.ndarray]]:
    """The what-if models that can show on a case, with their outputs."""
    v = data.values()
    grad, indices = v.get("grad_output"), v.get("indices")
    if grad is None or indices is None or data.golden is None:
        return []
    return bugs.what_ifs(grad, indices, tuple(data.golden.shape), data.case.dtype)


def evidence(data: CaseData, output: np.ndarray) -> CaseClues:
    """The diagnosis evidence of one failing case from the kernel's output."""
    return window_evidence(data, output, AXES, model, what_ifs)
