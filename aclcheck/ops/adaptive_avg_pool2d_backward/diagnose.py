"""The diagnosis hooks of aclnnAdaptiveAvgPool2dBackward: what a failure signature groups
one of its cases by (judging.diagnosis.signature.CaseFacts), and the evidence of one failing case:
the what-if models (bugs.py) re-judged on the kernel's output, and where its wrong
elements sit (judging.diagnosis.clues, ops.adaptive.clues).

A model is judged by the interval of judging.diagnosis.reproduce with the error bound of the
case's product path (its own accumulation for a precision model, 0 where the exactness
proof holds), so it explains an output only where a kernel with that bug could have
written it.
"""

from __future__ import annotations

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.dtypes import FLOAT_FORMATS, float_format, plane_quanta
from aclcheck.judging.case.budget import BudgetModel
from aclcheck.judging.case.exactness import proven_mask
from aclcheck.judging.case.pieces import float64_values
from aclcheck.judging.diagnosis.clues import generic_clues, rounding_clues
from aclcheck.judging.diagnosis.reproduce import (
    CaseClues,
    ModelResult,
    Reproduction,
    WhatIf,
    inside,
    reproduce,
)
from aclcheck.judging.diagnosis.signature import CaseFacts
from aclcheck.ops.adaptive.clues import window_findings
from aclcheck.ops.adaptive.facts import WindowTable, case_facts, family_now, window_tables
from aclcheck.ops.adaptive.windows import spread_plan
from aclcheck.ops.adaptive_avg_pool2d_backward import bugs, contract
from aclcheck.ops.adaptive_avg_pool2d_backward.numerics import budget_model, numeric_model

#: Cases with more output elements are not re-judged against the models (their
#: evidence says so; the ranking counts them failing and unexplained).
REJUDGE_ELEMENTS = 1 << 18
#: c of the error bound a model is judged with (the default standard's).
MODEL_C = 2.0


#: the spatial axes of this operator's cases
AXES = ("H", "W")


def facts(case: Case, verdict: str) -> CaseFacts:
    """What a failure signature groups this case by."""
    rules = contract.PRODUCTS.get(case.product)
    return case_facts(case, verdict, AXES, rules.accumulate if rules is not None else "")


def windows(case: Case) -> tuple[WindowTable, ...]:
    """(axis, window starts, window ends) of each spatial axis: the tables a printed
    case shows beside its values."""
    return window_tables(case, AXES)


def family(case: Case) -> str:
    """The family label of a case named for its shapes now (shrink)."""
    return family_now(case, AXES)


def scene(data: CaseData) -> bugs.Scene | None:
    """What the models read about a case (None: not a valid call of a float dtype)."""
    case, grad_t, golden = data.case, data.inputs.get("grad_output"), data.golden
    if grad_t is None or golden is None or case.dtype not in FLOAT_FORMATS:
        return None
    grad = grad_t.view()
    if grad.ndim < 2 or golden.ndim < 2:
        return None
    in_hw = (int(golden.shape[-2]), int(golden.shape[-1]))
    plans = (spread_plan(int(grad.shape[-2]), in_hw[0]),
             spread_plan(int(grad.shape[-1]), in_hw[1]))
    return bugs.Scene(grad, in_hw, case.dtype, np.asarray(golden, dtype=np.float64), plans)


class _Bounds:
    """The error bounds of the models on one case: the budget model and the proven-exact
    elements of each accumulation, computed once (every model of a case shares them)."""

    def __init__(self, sc: bugs.Scene, product: str) -> None:
        self.sc, self.product = sc, product
        self._paths: dict[str | None, tuple[BudgetModel, np.ndarray]] = {}

    def _path(self, accumulate: str | None) -> tuple[BudgetModel, np.ndarray]:
        if accumulate not in self._paths:
            sc = self.sc
            grad = np.asarray(sc.grad)
            out_hw = (int(grad.shape[-2]), int(grad.shape[-1]))
            model = budget_model(self.product, sc.dtype, out_hw, sc.in_hw, c=MODEL_C,
                                 accumulate=accumulate)
            proven = np.zeros(sc.golden.shape, dtype=bool)
            numbers = numeric_model(self.product, sc.dtype, grad.shape, sc.in_hw, accumulate)
            plan = numbers.exact if numbers is not None else None
            if plan is not None:
                m3 = np.asarray(sc.magnitudes).reshape(-1, *sc.in_hw)
                quanta = plane_quanta(grad, m3.shape[0], sc.fmt)
                proven = proven_mask(plan, m3, plan.plane_bounds(quanta)).reshape(
                    sc.golden.shape)
            self._paths[accumulate] = (model, proven)
        return self._paths[accumulate]

    def interval(self, what: WhatIf) -> tuple[np.ndarray, np.ndarray | None]:
        """(E, proven) of a model: the error bound its kernel's sums may add (the bug's
        own terms and magnitudes) and the elements the exactness proof computes exactly
        (None: its own magnitudes, no proof)."""
        sc = self.sc
        model, proven = self._path(what.accumulate)
        k = (what.terms if what.terms is not None else model.k()).astype(np.float64)
        m = what.magnitudes if what.magnitudes is not None else sc.magnitudes
        path = model.path
        u, eta = path.accumulate.unit_roundoff, path.underflow_unit
        extra = (model.c * k * u + path.roundoff + path.scale_error) * m \
            + model.c * k * eta + model.atol
        return (np.broadcast_to(extra, sc.golden.shape),
                proven if what.magnitudes is None else None)

    def rejudge(self, what: WhatIf, actual: np.ndarray) -> Reproduction:
        extra, proven = self.interval(what)
        return reproduce(what.values, actual, extra, self.sc.fmt, what.rounding, proven,
                         what.exact)

    def wrong(self, actual: np.ndarray) -> np.ndarray:
        right = WhatIf(self.sc.golden)
        extra, proven = self.interval(right)
        return ~inside(right.values, actual, extra, self.sc.fmt, right.rounding, proven)


def rejudge(sc: bugs.Scene, what: WhatIf, actual: np.ndarray, product: str) -> Reproduction:
    """One model against one output (judging.diagnosis.reproduce on the product's error bound)."""
    return _Bounds(sc, product).rejudge(what, actual)


def evidence(data: CaseData, output: np.ndarray) -> CaseClues:
    """The diagnosis evidence of one failing case from the kernel's output."""
    with np.errstate(all="ignore"):  # models of broken kernels overflow and make NaN
        return _evidence(data, output)


def _evidence(data: CaseData, output: np.ndarray) -> CaseClues:
    case = data.case
    sc = scene(data)
    if sc is None or sc.golden.size > REJUDGE_ELEMENTS or output.shape != sc.golden.shape:
        return CaseClues(case.id, judged=False)
    if not np.any(sc.golden):  # the golden cancels to zero: nothing to tell bugs apart
        return CaseClues(case.id, judged=False)
    actual = float64_values(output)
    bounds = _Bounds(sc, case.product)
    wrong = bounds.wrong(actual)
    if not wrong.any():  # the gate failed on something the interval allows
        return CaseClues(case.id)
    results = []
    for model, what in bugs.what_ifs(sc):
        res = bounds.rejudge(what, actual)
        results.append(ModelResult(model.code, model.summary, res.explained, res.exact,
                                   precision=what.accumulate is not None,
                                   accumulate=case.dtype if what.accumulate == "input"
                                   else what.accumulate))
    grad = sc.grad
    windows = ((int(grad.shape[-2]), sc.in_hw[0]), (int(grad.shape[-1]), sc.in_hw[1]))
    found = generic_clues(wrong, sc.golden, actual, batch_rank=sc.golden.ndim - 2)
    found += window_findings(wrong, sc.golden, actual, windows,
                             float_format(case.dtype).precision)
    found += rounding_clues(wrong, sc.golden, actual, float_format(case.dtype))
    return CaseClues(case.id, tuple(results), tuple(found))
