"""The measuring probe run through the adapter (issue 38): for a run's failing cases,
the smallest shapes first, each shape's M measured by one-hot calls through the run's
CaseRunner (isolated and guarded like any call) and compared with the contract's
(aclcheck.judging.diagnosis.probe). Knows no tensor: the operator's Probe record names the linear
input and gives the contract's Geometry."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.cases.layouts import place
from aclcheck.dtypes import FLOAT_FORMATS
from aclcheck.judging.diagnosis.probe import DEFAULT_BUDGET, ProbeResult, probe
from aclcheck.judging.diagnosis.probe_fit import Difference
from aclcheck.judging.diagnosis.ranking import DiagnosisEntry, measured_entries
from aclcheck.ops import operator_of
from aclcheck.running.calls import CaseRunner
from aclcheck.running.runner import call_of

#: distinct failing shapes the probe measures beyond one per failing memory layout
MAX_SHAPES = 3
#: failing cases a run keeps for the probe (the smallest), beside the smallest of each
#: layout: a run's memory does not grow with its failures
KEEP = 64


class Failing:
    """The FAIL cases a run keeps for the probe: the KEEP smallest and the smallest of
    each memory layout (what probe_failures can pick), and how many failed in all."""

    def __init__(self) -> None:
        self.count = 0
        self._heap: list[tuple[int, int, Case]] = []  # (-size, order, case): largest first
        self._per_layout: dict[str, tuple[int, Case]] = {}

    def add(self, case: Case) -> None:
        size = _size(case)
        self.count += 1
        best = self._per_layout.get(case.layout)
        if best is None or size < best[0]:
            self._per_layout[case.layout] = (size, case)
        item = (-size, self.count, case)
        if len(self._heap) < KEEP:
            heapq.heappush(self._heap, item)
        elif item > self._heap[0]:
            heapq.heapreplace(self._heap, item)

    def cases(self) -> list[Case]:
        kept = {id(c): c for _, _, c in self._heap}
        kept.update((id(c), c) for _, c in self._per_layout.values())
        return list(kept.values())


def probe_failures(runner: CaseRunner, failing: Iterable[Case],
                   load: Callable[[Case], CaseData], budget: int = DEFAULT_BUDGET
                   ) -> tuple[ProbeResult, ...]:
    """One ProbeResult per failing shape measured (smallest first: the smallest of each
    failing memory layout, then others up to MAX_SHAPES), within `budget` calls in all;
    none for operators without a Probe record, non-float dtypes or a null linear input.
    Only the chosen cases are loaded."""
    shapes: dict[tuple, Case] = {}
    for case in sorted(failing, key=_size):
        op = operator_of(case)
        if op.probe is None or case.dtype not in FLOAT_FORMATS \
                or op.probe.linear_role in case.null:
            continue
        key = (op.name, case.dtype, case.layout,
               tuple(tuple(case.tensor_desc(r.name).shape) for r in case.inputs()))
        shapes.setdefault(key, case)
    # the smallest shape of each failing memory layout, then the smallest others
    layouts: dict[str, tuple] = {}
    for key, case in shapes.items():
        layouts.setdefault(case.layout, key)
    picked = list(layouts.values())
    picked += [k for k in shapes if k not in picked][:max(0, MAX_SHAPES - len(picked))]
    chosen = {k: shapes[k] for k in sorted(picked, key=lambda k: _size(shapes[k]))}
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


def measured(results: Sequence[ProbeResult], failing: int) -> tuple[DiagnosisEntry, ...]:
    """The diagnosis entries of a run's probe: each distinct (quantity, axis) difference
    once (as the shape that tells its formulas apart best measured it), with the number
    of shapes showing it and the memory layouts they were called in; those with a
    fitted formula first, then the one most shapes show (the probe's order among
    equals)."""
    found: dict[tuple, tuple[Difference, int, set[str]]] = {}
    for r in results:
        for d in r.differences:
            key = (d.quantity, d.axis)
            first, n, layouts = found.get(key, (d, 0, set()))
            if (not first.measured, len(first.others)) > (not d.measured, len(d.others)):
                first = d  # the shape that tells the formulas apart best
            found[key] = (first, n + 1, layouts | {r.layout})
    calls = sum(r.calls for r in results)
    # a fitted formula (a cause) before a symptom, then the one most shapes show
    ranked = sorted(found.values(), key=lambda f: (not f[0].measured, -f[1]))
    return measured_entries([(d, n, tuple(sorted(ls))) for d, n, ls in ranked],
                            len(results), calls, failing)


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

    return replace(probe(geo, measure, FLOAT_FORMATS[case.dtype], budget), layout=case.layout)
