"""Measured geometry (issue 38): a kernel linear in one input, measured on one-hot inputs.

Per plane, such a kernel computes out = M · x. Calling it with one-hot x (value 1, exact in
every float format) shows which positions each input cell reaches (its window, per axis:
start, end) and with what weight; cells whose contract windows lie two apart or more share
a call (a position is attributed to the one cell whose window, widened by one, holds it;
a position no cell or two cells claim sends those cells back one per call). A plane-mapping
call puts one cell per plane, each at a different cell, and reads where each landed
(where that does not add up, one plane of ones per call).

Knows no tensor and no operator: the operator gives its contract as a Geometry and a
`Measure` (one call: logical values of the linear input -> logical output, float64; None
when the call failed). Differences come back as data (Difference), fitted to formula
families (aclcheck.judging.diagnosis.probe_fit); the words are the report's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aclcheck.dtypes import FloatFormat, correctly_rounded
from aclcheck.judging.case.roundings import is_neighbour
from aclcheck.judging.diagnosis.probe_fit import (
    Difference,
    Geometry,
    Quantity,
    axis_differences,
    plane_difference,
    weight_difference,
)

#: one call: (planes, *outs) float64 values of the linear input -> (planes, *ins) output
Measure = Callable[[np.ndarray], "np.ndarray | None"]

#: the default number of calls one run's probe may make (all shapes together)
DEFAULT_BUDGET = 200


@dataclass(frozen=True)
class Measured:
    """What the probe read: per axis the window of each index (-1, -1: nothing written),
    the weight per cell (NaN: nothing written), where each plane landed (-1: nowhere,
    -2: several planes)."""

    starts: tuple[tuple[int, ...], ...]
    ends: tuple[tuple[int, ...], ...]
    weights: np.ndarray
    landing: tuple[int, ...]


@dataclass(frozen=True)
class ProbeResult:
    """The probe's finding for one shape: the differences (empty: M as contracted)."""

    geometry: Geometry
    measured: Measured | None  # None: the calls failed or the budget ran out
    differences: tuple[Difference, ...]
    calls: int
    layout: str = ""  # the memory layout of the calls (the caller's label)


def spacing(starts: tuple[int, ...], ends: tuple[int, ...]) -> int:
    """The least index step s at which windows i and i+s leave a gap of two positions."""
    o = len(starts)
    for s in range(1, o):
        if all(ends[i] + 2 <= starts[i + s] for i in range(o - s)):
            return s
    return max(o, 1)


class _Budget:
    """Calls left (a counter the probe of one run shares)."""

    def __init__(self, calls: int) -> None:
        self.left = calls
        self.used = 0

    def take(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        self.used += 1
        return True


def _owner(geo: Geometry, cells: list[tuple[int, ...]], pos: tuple[int, ...]
           ) -> int | None:
    """The one cell whose contract window, widened by one per axis, holds `pos`."""
    found = None
    for n, cell in enumerate(cells):
        if all(geo.starts[a][c] - 1 <= p <= geo.ends[a][c]
               for a, (c, p) in enumerate(zip(cell, pos, strict=True))):
            if found is not None:
                return None
            found = n
    return found


def _attribute(geo: Geometry, cells: list[tuple[int, ...]], plane: np.ndarray
               ) -> dict[int, list[tuple[tuple[int, ...], float]]] | None:
    """Nonzero positions of one output plane grouped by owning cell (None: one is owned
    by no cell or by two: the reconstruction does not add up)."""
    out: dict[int, list[tuple[tuple[int, ...], float]]] = {n: [] for n in range(len(cells))}
    for pos in zip(*np.nonzero(plane), strict=True):
        p = tuple(int(x) for x in pos)
        n = _owner(geo, cells, p)
        if n is None:
            return None
        out[n].append((p, float(plane[p])))
    return out


def _one_hot(geo: Geometry, placed: dict[int, list[tuple[int, ...]]]) -> np.ndarray:
    x = np.zeros((geo.planes, *geo.outs))
    for plane, cells in placed.items():
        for cell in cells:
            x[(plane, *cell)] = 1.0
    return x


def _landing(geo: Geometry, measure: Measure, budget: _Budget) -> tuple[int, ...] | None:
    """Where each plane's cell lands: one call per group of planes (a distinct cell each)."""
    cells = [c for c in itertools.product(*(range(0, o, spacing(s, e)) for o, s, e in
                                            zip(geo.outs, geo.starts, geo.ends, strict=True)))]
    landing = [-1] * geo.planes
    for first in range(0, geo.planes, len(cells)):
        group = list(range(first, min(first + len(cells), geo.planes)))
        if not budget.take():
            return None
        y = measure(_one_hot(geo, {p: [cells[k]] for k, p in enumerate(group)}))
        if y is None:
            return None
        mine = [cells[k] for k in range(len(group))]
        owned = [_attribute(geo, mine, y[q]) for q in range(geo.planes)]
        for q, by_cell in enumerate(owned):
            for k, hits in (by_cell or {}).items():
                if hits:
                    p = group[k]
                    landing[p] = q if landing[p] in (-1, q) else -2
        if any(o is None for o in owned) or any(landing[p] < 0 for p in group):
            for p in group:  # hits no cell claims, or claimed twice: one plane per call
                if not budget.take():
                    return None
                x = np.zeros((geo.planes, *geo.outs))
                x[p] = 1.0  # every cell: a window the kernel leaves empty hides nothing
                y = measure(x)
                if y is None:
                    return None
                hit = [q for q in range(geo.planes) if np.any(y[q] != 0)]
                landing[p] = hit[0] if len(hit) == 1 else (-1 if not hit else -2)
    return tuple(landing)


def _windows(geo: Geometry, measure: Measure, budget: _Budget, source: int, target: int
             ) -> dict[tuple[int, ...], list[tuple[tuple[int, ...], float]]] | None:
    """Each cell's response (positions and values) in plane `target` of one-hots in
    plane `source`; cells of one colour share a call, one per call where they do not
    add up."""
    steps = [spacing(s, e) for s, e in zip(geo.starts, geo.ends, strict=True)]
    found: dict[tuple[int, ...], list[tuple[tuple[int, ...], float]]] = {}
    for colour in itertools.product(*(range(s) for s in steps)):
        cells = list(itertools.product(*(range(c, o, s) for c, o, s in
                                         zip(colour, geo.outs, steps, strict=True))))
        groups = [cells]
        while groups:
            group = groups.pop()
            if not budget.take():
                return None
            y = measure(_one_hot(geo, {source: group}))
            if y is None:
                return None
            owned = _attribute(geo, group, y[target])
            if len(group) > 1 and (owned is None or not all(owned.values())):
                # does not add up, or a cell reached nothing (its hits may sit in
                # another's window): one cell per call
                groups.extend([c] for c in group)
                continue
            if owned is None:  # one cell, hits beyond its widened window: read them all
                plane = y[target]
                owned = {0: [(tuple(int(v) for v in p), float(plane[tuple(p)]))
                             for p in zip(*np.nonzero(plane), strict=True)]}
            for k, cell in enumerate(group):
                found[cell] = owned[k]
    return found


def _decode(geo: Geometry, hits: dict[tuple[int, ...], list[tuple[tuple[int, ...], float]]],
            landing: tuple[int, ...]) -> Measured:
    """Per axis index the window (the most common over the cells of that index), weight
    per cell (the most common value of its response)."""
    rank = len(geo.outs)
    weights = np.full(geo.outs, np.nan)
    per_axis: list[list[list[tuple[int, int]]]] = [[[] for _ in range(o)] for o in geo.outs]
    for cell, got in hits.items():
        if not got:
            continue
        pos = np.array([p for p, _ in got])
        vals, counts = np.unique([v for _, v in got], return_counts=True)
        weights[cell] = vals[np.argmax(counts)]
        for a in range(rank):
            per_axis[a][cell[a]].append((int(pos[:, a].min()), int(pos[:, a].max()) + 1))
    starts, ends = [], []
    for a in range(rank):
        picked = [max(set(b), key=b.count) if b else (-1, -1) for b in per_axis[a]]
        starts.append(tuple(s for s, _ in picked))
        ends.append(tuple(e for _, e in picked))
    return Measured(tuple(starts), tuple(ends), weights, landing)


def probe(geo: Geometry, measure: Measure, fmt: FloatFormat, budget: int = DEFAULT_BUDGET
          ) -> ProbeResult:
    """Measure one shape's M within `budget` calls and compare it with the contract's."""
    left = _Budget(budget)
    landing = _landing(geo, measure, left)
    if landing is None:
        return ProbeResult(geo, None, (), left.used)
    own = [p for p in range(geo.planes) if landing[p] == p]
    single = [p for p in range(geo.planes) if landing[p] >= 0]
    source = own[0] if own else (single[0] if single else None)
    hits = None if source is None else _windows(geo, measure, left, source, landing[source])
    if hits is None:
        measured = Measured(geo.starts, geo.ends, np.full(geo.outs, np.nan), landing)
        diffs = tuple(d for d in (plane_difference(landing),) if d is not None)
        return ProbeResult(geo, None if source is not None else measured, diffs, left.used)
    measured = _decode(geo, hits, landing)
    return ProbeResult(geo, measured, differences(geo, measured, fmt), left.used)


def differences(geo: Geometry, m: Measured, fmt: FloatFormat) -> tuple[Difference, ...]:
    """The measured M against the contract's, in the contract's terms (planes, then
    windows per axis, then weights)."""
    out: list[Difference] = []
    plane = plane_difference(m.landing)
    if plane is not None:
        out.append(plane)
    for a, axis in enumerate(geo.axes):
        out.extend(axis_differences(axis, geo.outs[a], geo.ins[a], geo.starts[a],
                                    geo.ends[a], m.starts[a], m.ends[a], geo, a))
    seen = ~np.isnan(m.weights)
    rounding_only = bool(np.all(is_neighbour(m.weights[seen], geo.weights[seen], fmt)))
    if not rounding_only and not any(d.quantity in (Quantity.START, Quantity.END)
                                     for d in out):  # one ULP: the cast's (clues.py)
        expected = correctly_rounded(geo.weights, fmt)
        w = weight_difference(geo, m.weights, expected, fmt)
        if w is not None:
            out.append(w)
    return tuple(out)
