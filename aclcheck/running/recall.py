"""The stale-state check: each valid case called a second time, in the same worker, right
after a different call, and both answers judged (docs/contract.md section 11).

A kernel that keeps state between calls (an accumulator cleared in part, memory it
assumes fresh, a plan cached on too little) is right in a fresh process and wrong after
another call, or the reverse. The call in between is the case's *twin*: the same shapes
and dtypes, every float input times -2 (exact: no rounding) and laid out in another
memory layout (contiguous <-> channels-last), so leftovers of its sums (which never
cancel the case's own, as a plain negation's would), a plan cached for its layout, or its
output handed back all change the second answer. Only the second answer is judged; the twin's is
not (its values are not the case's).

Pure helpers over plain data; the case's lifecycle (aclcheck.running.runner) makes the calls.
"""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.call import CallInputs, Outcome
from aclcheck.cases.layouts import StridedTensor, place
from aclcheck.dtypes import JUDGED_FORMATS
from aclcheck.judging.case.hints import Hint, HintCode
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict

#: the layout the twin takes: channels-last, or contiguous for a channels-last case
TWIN_LAYOUT = "channels_last"
#: the twin's values: the case's times this (exact in every float format, overflow aside)
TWIN_SCALE = -2


class Recall(StrEnum):
    """What the second call of a case showed (`metrics["recall"]` where not SAME)."""

    SAME = "same"  # both answers bitwise equal
    WITHIN = "within"  # they differ, both judged alike (run-to-run variation)
    DEPENDS = "depends-on-earlier-calls"  # one answer passes, the other does not


def wanted(call: CallInputs, first: Outcome) -> bool:
    """Whether a case gets the second call: a valid call whose first answer came back
    as a non-empty array (an error is reported as such; an empty call runs no kernel)."""
    return (call.case.positive and not first.crashed and first.raised is None
            and isinstance(first.output, np.ndarray) and first.output.size > 0)


def twin_layout(call: CallInputs) -> str:
    """The layout the twin of `call` takes."""
    return "contiguous" if call.case.layout == TWIN_LAYOUT else TWIN_LAYOUT


def twin(call: CallInputs, spatial_rank: int) -> CallInputs:
    """The call made in between: every float input times TWIN_SCALE, in the other
    layout."""
    layout = twin_layout(call)
    inputs: dict[str, StridedTensor | None] = {}
    for role, tensor in call.inputs.items():
        if tensor is None:
            inputs[role] = None
            continue
        values = tensor.view()
        if values.dtype.name in JUDGED_FORMATS:  # float64 too (a valid DOUBLE call)
            with np.errstate(all="ignore"):
                values = values * values.dtype.type(TWIN_SCALE)
        inputs[role] = place(np.ascontiguousarray(values), layout, spatial_rank)
    return CallInputs(call.case.replace(layout=layout), inputs, call.overflow_mode)


class TwinOf:
    """The twin of `call`, built where it runs (`build`): an isolated worker gets the
    case's call once, for both calls of the check, and spends its own time on the twin,
    not the parent's. Stands for the twin where only its case and sizes matter (the
    parent's hang clock, the answer's expected shape)."""

    __slots__ = ("call", "spatial_rank", "_case")

    def __init__(self, call: CallInputs, spatial_rank: int) -> None:
        self.call = call
        self.spatial_rank = spatial_rank
        self._case: Case | None = None

    @property
    def case(self) -> Case:
        """The twin's case: the call's, in the twin's layout."""
        if self._case is None:
            self._case = self.call.case.replace(layout=twin_layout(self.call))
        return self._case

    @property
    def inputs(self) -> dict[str, StridedTensor | None]:
        """The call's inputs: the twin's have the same sizes."""
        return self.call.inputs

    def build(self) -> CallInputs:
        return twin(self.call, self.spatial_rank)

    def __reduce__(self) -> tuple[type[TwinOf], tuple[CallInputs, int]]:
        return TwinOf, (self.call, self.spatial_rank)


def same_answer(a: object, b: object) -> bool:
    """Bitwise equal output arrays (NaN payloads included)."""
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
            and a.shape == b.shape and a.dtype == b.dtype
            and np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                               np.ascontiguousarray(b).view(np.uint8)))


def classify(first: CaseVerdict, second: CaseVerdict) -> Recall:
    """DEPENDS where exactly one of two different answers passes, else WITHIN."""
    passed = (first.verdict == Verdict.PASS, second.verdict == Verdict.PASS)
    return Recall.DEPENDS if passed[0] != passed[1] else Recall.WITHIN


def merged(first: CaseVerdict, second: CaseVerdict) -> CaseVerdict:
    """The case's verdict once its second answer (different from the first) is judged:
    where exactly one answer passes, the failing one's verdict and numbers with the
    finding DEPENDS_ON_EARLIER_CALLS as a hint; otherwise the first verdict, the
    difference in its metrics."""
    kind = classify(first, second)
    if kind == Recall.WITHIN:
        return replace(first, metrics=dict(first.metrics, recall=kind.value))
    first_passed = first.verdict == Verdict.PASS
    failing = second if first_passed else first
    hint = Hint(HintCode.DEPENDS_ON_EARLIER_CALLS, _HINT_TEXT[first_passed])
    detail = "\n".join(filter(None, (failing.detail.rstrip("\n"), f"hint: {hint.text}")))
    return replace(failing, message=f"depends on earlier calls: {failing.message}",
                   metrics=dict(failing.metrics, recall=kind.value), notes=first.notes,
                   detail=detail, hints=failing.hints + (hint,), time_s=first.time_s)


_HINT_TEXT = {
    True: "right on its first call, wrong when called again after another call: state "
          "kept between calls (a workspace or accumulator not cleared, a cached plan)",
    False: "wrong on its first call (after the cases before it), right when called again "
           "after another call: state kept between calls",
}
