"""From (case model, data, outcome) to a verdict: the rules of conformance in one place.

Pure: no I/O, no adapters called, no operator asked (the case model carries what the
operator knows). The runner feeds it; reports render what it returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.cases.acl import SUCCESS, status_name
from aclcheck.cases.call import Capabilities, Outcome, ReturnedValue
from aclcheck.judging.case.compare import Comparison, compare_output
from aclcheck.judging.case.model import CaseModel
from aclcheck.judging.case.overflow import judged_mode
from aclcheck.judging.case.standards import refusal
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict, divergence_note
from aclcheck.options import DEFAULT_STANDARD


@dataclass(frozen=True)
class JudgeOptions:
    """How numbers are judged: standards (first gates), overrides, accumulation."""

    standards: tuple[str, ...] = ("aclcheck",)
    overrides: object | None = None
    accumulate: str | None = None
    #: the overflow mode to judge special values in (None: each product's default)
    overflow_mode: str | None = None


def _base(case: Case, verdict: Verdict, message: str, **kw: object) -> CaseVerdict:
    return CaseVerdict(case_id=case.id, verdict=verdict, message=message, product=case.product,
                       dtype=case.dtype, format=case.format, family=case.family,
                       expected_status=case.expected_status,
                       vendor_status=getattr(case, "vendor_status", None),
                       source=getattr(case, "source", None) or "",
                       **kw)  # type: ignore[arg-type]


def judge_rejection(case: Case, outcome: Outcome, caps: Capabilities) -> CaseVerdict:
    """Verdict of a call the contract says must be rejected (161001 / 161002)."""
    expected = case.expected_status
    common = {"time_s": outcome.time_s, "actual_status": outcome.status}
    if outcome.crashed:
        return _base(case, Verdict.ERROR, f"crashed on an invalid call "
                     f"({case.expectation.reason}): {outcome.crashed}", **common)
    if caps.has_status_codes:
        if outcome.status == expected:
            return _base(case, Verdict.PASS, f"rejected with {expected} "
                         f"({case.expectation.reason})", **common)
        got = "success (accepted)" if outcome.status == SUCCESS else (
            f"{outcome.status} {status_name(outcome.status)}" if outcome.status is not None
            else f"no status ({outcome.raised})")
        return _base(case, Verdict.WRONG_STATUS,
                     f"expected {expected} {status_name(expected)} "
                     f"({case.expectation.reason}), got {got}", **common)
    if outcome.raised is not None:
        return _base(case, Verdict.PASS, f"rejected ({case.expectation.reason}): "
                     f"{_first_line(outcome.raised)}", **common)
    return _base(case, Verdict.WRONG_STATUS, f"accepted an invalid call "
                 f"({case.expectation.reason}); expected a rejection "
                 f"({expected} {status_name(expected)})", **common)


def judge_unspecified(case: Case, outcome: Outcome) -> CaseVerdict:
    """Undocumented calls never fail: say what the implementation did."""
    if outcome.crashed:
        answer, did = "crashed", f"crashed: {outcome.crashed}"
    elif outcome.raised is not None:
        answer, did = "rejected", f"rejected: {_first_line(outcome.raised)}"
    elif outcome.status not in (None, SUCCESS):
        answer = f"returned {outcome.status}"
        did = f"{answer} {status_name(outcome.status)}"
    else:
        answer = did = "accepted"
    divergence = f"{case.expectation.reason}; the implementation {did}"
    kind = "+".join((*case.expectation.kinds, answer))
    return _base(case, Verdict.PASS, f"unspecified call, {did}",
                 notes=(divergence_note(divergence),), divergence=divergence,
                 divergence_kind=kind, actual_status=outcome.status, time_s=outcome.time_s)


def check_output(case: Case, output: object) -> str | None:
    """Why an output is not a usable out tensor (ERROR), or None. An isolated call's
    other results arrive described (ReturnedValue), never as objects."""
    if output is None:
        return "returned None instead of an array"
    want_dtype, want = case.expected_output()
    if isinstance(output, ReturnedValue):
        if output.shape is None:
            return f"returned {output.type_name}, not a numpy array"
        if output.shape != want:
            return f"returned shape {output.shape}, expected {want}"
        if output.dtype != str(want_dtype):
            return f"returned dtype {output.dtype}, expected {want_dtype}"
        return "returned an array the worker did not send"  # never: decode_outcome
    if not isinstance(output, np.ndarray):
        return f"returned {type(output).__name__}, not a numpy array"
    if tuple(output.shape) != want:
        return f"returned shape {tuple(output.shape)}, expected {want}"
    if output.dtype != want_dtype:
        return f"returned dtype {output.dtype}, expected {want_dtype}"
    return None


def judge_success(model: CaseModel, data: CaseData, outcome: Outcome, caps: Capabilities,
                  opts: JudgeOptions) -> CaseVerdict:
    """Verdict of a call the contract says must succeed."""
    case, golden = data.case, data.golden
    common = {"time_s": outcome.time_s, "actual_status": outcome.status}
    if outcome.crashed:
        return _base(case, Verdict.ERROR, outcome.crashed, **common)
    if caps.has_status_codes and outcome.status not in (None, SUCCESS):
        return _base(case, Verdict.UNIMPLEMENTED, f"rejected a valid call with "
                     f"{outcome.status} {status_name(outcome.status)}"
                     + (f": {outcome.raised}" if outcome.raised else ""), **common)
    if outcome.raised is not None:
        return _base(case, Verdict.ERROR, f"raised on a valid call: "
                     f"{_first_line(outcome.raised)}", detail=outcome.raised, **common)
    problem = check_output(case, outcome.output)
    if problem:
        return _base(case, Verdict.ERROR, problem, **common)
    output: np.ndarray = outcome.output  # type: ignore[assignment]
    if not case.out_written:
        state = _unwritten_state(output)
        return _base(case, Verdict.PASS, model.expectation.unwritten
                     or "out is documented as not written", notes=(f"out {state}",), **common)
    if golden is None or golden.size == 0:
        return _base(case, Verdict.PASS, "empty tensor: nothing to compare", **common)
    assert model.numbers is not None  # a valid call of a float dtype
    numbers, mode_note = model.numbers, None
    refused = refusal(opts.standards[0] if opts.standards else DEFAULT_STANDARD,
                      numbers.fmt.name)
    if refused is not None:  # the gating standard has no numbers for this dtype (float64)
        return _base(case, Verdict.SKIP, f"not judged: {refused}", **common)
    if opts.overflow_mode is not None:
        mode, mode_note = judged_mode(numbers.product, opts.overflow_mode)
        numbers = replace(numbers, overflow=mode)
    result: Comparison = compare_output(numbers, data.values(), golden, output, opts.standards,
                                        opts.overrides)  # type: ignore[arg-type]
    standards = {s.name: s.passed for s in result.standards}
    notes = tuple(result.notes) + tuple(outcome.notes) + ((mode_note,) if mode_note else ())
    metrics = _json_metrics(result.metrics)
    if not result.passed:
        gate = result.standards[0] if result.standards else None
        headline = gate.detail if gate is not None and gate.detail else "out of tolerance"
        size = result.magnitude
        if size is not None:  # the size of the errors leads, then why the gate failed
            headline = f"{size.text()}; {headline}"
        return _base(case, Verdict.FAIL, headline, detail=result.message(), metrics=metrics,
                     standards=standards, notes=notes, evidence=result.evidence,
                     hints=result.hints, magnitude=size, **common)
    if not discriminating(golden):
        return _base(case, Verdict.MISTRUSTED, "golden is all zeros: the case cannot "
                     "discriminate", metrics=metrics, standards=standards, notes=notes,
                     **common)
    return _base(case, Verdict.PASS, "within tolerance", metrics=metrics,
                 standards=standards, notes=notes, **common)


def discriminating(golden: np.ndarray) -> bool:
    """False when the golden cannot tell a correct kernel from a broken one (a pass then
    is MISTRUSTED): no nonzero element (all zeros, or empty). NaN and inf count as
    nonzero."""
    g = np.asarray(golden)
    return bool(g.size) and bool(np.any(g != 0))


def judge(model: CaseModel, data: CaseData, outcome: Outcome, caps: Capabilities,
          opts: JudgeOptions) -> CaseVerdict:
    """The verdict of one case (its model built once by its operator, its data) from
    what the implementation returned."""
    case = data.case
    exp = model.expectation
    if outcome.skipped is not None and not outcome.crashed:
        return skipped(case, outcome.skipped)
    # a crash is never an acceptable answer, but to a call whose values no check reads
    # (made isolated for that reason: a device error is what such a call may get)
    if outcome.crashed and exp.unspecified and not exp.isolated_only:
        return _base(case, Verdict.ERROR, f"crashed on an undocumented call "
                     f"({exp.reason}): {outcome.crashed}", time_s=outcome.time_s)
    if exp.unspecified:
        return judge_unspecified(case, outcome)
    if not exp.success:
        return judge_rejection(case, outcome, caps)
    return judge_success(model, data, outcome, caps, opts)


def skipped(case: Case, reason: str) -> CaseVerdict:
    return _base(case, Verdict.SKIP, reason)


def lost(case: Case, reason: str) -> CaseVerdict:
    """The ERROR of a case whose run never came back (the executor's worker that ran it
    died, or it outlasted every allowance of its calls)."""
    return _base(case, Verdict.ERROR, reason)


def _unwritten_state(output: np.ndarray) -> str:
    if output.size == 0:
        return "is empty"
    as64 = output.astype(np.float64)
    if np.all(np.isnan(as64)):
        return "left alone (still the NaN sentinel)"
    if not np.any(as64):
        return "zeroed by the implementation"
    return "holds values the implementation wrote or left from allocation"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _json_metrics(metrics: dict[str, object]) -> dict[str, object]:
    """Metrics as JSON-safe values (NaN/inf become strings)."""
    out: dict[str, object] = {}
    for key, value in metrics.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)
        out[key] = value
    return out
