"""The measuring probe run through the adapter (issue 38): for a run's failing cases,
the smallest shapes first, each shape's M measured by one-hot calls through the run's
CaseRunner (isolated and guarded like any call) and compared with the contract's
(aclcheck.judging.probe). Knows no tensor: the operator's Probe record names the linear
input and gives the contract's Geometry."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.cases.layouts import place
from aclcheck.dtypes import FLOAT_FORMATS
from aclcheck.judging.diagnosis import Entry, measured_entries
from aclcheck.judging.probe import DEFAULT_BUDGET, ProbeResult, probe
from aclcheck.judging.probe_fit import Difference
from aclcheck.ops import operator_of
from aclcheck.running.runner import CaseRunner, call_of

#: distinct failing shapes the probe measures at most
MAX_SHAPES = 3


def probe_failures(runner: CaseRunner, failing: Iterable[Case],
                   load: Callable[[Case], CaseData], budget: int = DEFAULT_BUDGET
                   ) -> tuple[ProbeResult, ...]:
    """One ProbeResult per failing shape measured (smallest first, MAX_SHAPES at most),
    within `budget` calls in all; none for operators without a Probe record, non-float
    dtypes or a null linear input. Only the chosen cases are loaded."""
    chosen: dict[tuple, Case] = {}
    for case in sorted(failing, key=_size):
        op = operator_of(case)
        if op.probe is None or case.dtype not in FLOAT_FORMATS \
                or op.probe.linear_role in case.null:
            continue
        key = (op.name, case.dtype, case.layout,
               tuple(tuple(case.tensor_desc(r.name).shape) for r in case.inputs()))
        chosen.setdefault(key, case)
        if len(chosen) >= MAX_SHAPES:
            break
    out: list[ProbeResult] = []
    for case in chosen.values():
        if budget <= 0:
            break
        result = probe_case(runner, load(case), budget)
        budget -= result.calls
        out.append(result)
    return tuple(out)


def _size(case: Case) -> int:
    return sum(math.prod(case.tensor_desc(r.name).shape) for r in case.inputs())


def measured(results: Sequence[ProbeResult], failing: int) -> tuple[Entry, ...]:
    """The diagnosis entries of a run's probe: each distinct (quantity, axis) difference
    once (as the shape that tells its formulas apart best measured it), with the number
    of shapes showing it."""
    found: dict[tuple, tuple[Difference, int]] = {}
    for r in results:
        for d in r.differences:
            key = (d.quantity, d.axis)
            first, n = found.get(key, (d, 0))
            if (not first.measured, len(first.others)) > (not d.measured, len(d.others)):
                first = d  # the shape that tells the formulas apart best
            found[key] = (first, n + 1)
    calls = sum(r.calls for r in results)
    return measured_entries(list(found.values()), len(results), calls, failing)


def probe_case(runner: CaseRunner, data: CaseData, budget: int) -> ProbeResult:
    """The measured M of one failing case's shape (its other inputs, dtype, layout)."""
    case = data.case
    op = operator_of(case)
    assert op.probe is not None
    role = op.probe.linear_role
    geo = op.probe.geometry(case)
    linear = data.inputs[role]
    assert linear is not None
    overflow = runner.opts.judge.overflow_mode

    def measure(values: np.ndarray) -> np.ndarray | None:
        tensor = place(values.reshape(linear.shape).astype(linear.dtype), case.layout,
                       op.spatial_rank)
        outcome = runner.call(call_of(case, {**data.inputs, role: tensor}, overflow))
        if outcome.raised or outcome.crashed or not isinstance(outcome.output, np.ndarray):
            return None
        return np.asarray(outcome.output, dtype=np.float64).reshape(geo.planes, *geo.ins)

    return probe(geo, measure, FLOAT_FORMATS[case.dtype], budget)
