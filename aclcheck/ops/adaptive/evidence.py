"""The evidence of one failing case of an adaptive-pooling operator (the 3D average
pooling, the max pooling): where its wrong elements sit (judging.diagnosis.clues, and
ops.adaptive.clues along the window axes), which rounding of the final conversion
explains a one-ULP failure, and which of the operator's what-if models (if it has any)
reproduce the output. An element is wrong, and a model's output matches, by the
contract's interval of the case's product path (judging.diagnosis.reproduce.contract_interval)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.dtypes import JUDGED_FORMATS, judged_format
from aclcheck.judging.case.model import CaseModel
from aclcheck.judging.case.pieces import float64_values
from aclcheck.judging.diagnosis.clues import generic_clues, rounding_clues
from aclcheck.judging.diagnosis.codes import DiagnosisCode
from aclcheck.judging.diagnosis.reproduce import (
    CaseClues,
    ModelResult,
    contract_interval,
    inside,
    reproduce,
)
from aclcheck.ops.adaptive.clues import window_findings

#: Cases with more output elements get no evidence (it says so; the ranking counts them
#: failing and unexplained).
REJUDGE_ELEMENTS = 1 << 18
#: c of the error bound an element is judged wrong with (the default standard's)
BOUND_C = 2.0


#: An operator's what-if models on a case: (code, the bug in words, the model's output bit
#: for bit as float64 values of the dtype), for each model that can show on it.
WhatIfs = Callable[[CaseData], Iterable[tuple[DiagnosisCode, str, np.ndarray]]]


def window_evidence(data: CaseData, output: np.ndarray, axes: tuple[str, ...],
                    model: Callable[[Case], CaseModel], what_ifs: WhatIfs | None = None
                    ) -> CaseClues:
    """The diagnosis evidence of one failing case from the kernel's output: `axes` the
    spatial axes (gradOutput's last dims map onto the output's), `model` the operator's,
    `what_ifs` its models (None: it has none)."""
    with np.errstate(all="ignore"):  # broken kernels write inf and NaN
        return _evidence(data, output, axes, model, what_ifs)


def _evidence(data: CaseData, output: np.ndarray, axes: tuple[str, ...],
              model: Callable[[Case], CaseModel], what_ifs: WhatIfs | None) -> CaseClues:
    case, golden = data.case, data.golden
    grad = data.inputs.get("grad_output")
    if grad is None or golden is None or case.dtype not in JUDGED_FORMATS \
            or golden.size > REJUDGE_ELEMENTS or output.shape != golden.shape \
            or golden.ndim < len(axes) or not np.any(golden):
        return CaseClues(case.id, judged=False)
    numbers = model(case).numbers
    if numbers is None:
        return CaseClues(case.id, judged=False)
    g = np.asarray(golden, dtype=np.float64)
    actual = float64_values(output)
    fmt = judged_format(case.dtype)
    extra, proven = contract_interval(numbers, data.values(), g.shape, BOUND_C)
    wrong = ~inside(g, actual, extra, fmt, proven=proven)
    if not wrong.any():  # the gate failed on something the interval allows
        return CaseClues(case.id)
    rank = len(axes)
    sizes = tuple(zip((int(x) for x in grad.shape[-rank:]), (int(x) for x in g.shape[-rank:]),
                      strict=True))
    found = generic_clues(wrong, g, actual, batch_rank=g.ndim - rank)
    found += window_findings(wrong, g, actual, sizes, fmt.precision)
    found += rounding_clues(wrong, g, actual, fmt)
    results = tuple(
        ModelResult(code, summary, res.explained, res.exact)
        for code, summary, values in (what_ifs(data) if what_ifs is not None else ())
        for res in (reproduce(values, actual, extra, fmt, proven=proven,
                              exact_output=values),))
    return CaseClues(case.id, results, tuple(found))
