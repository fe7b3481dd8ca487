"""Metrics and verdicts of one (golden, actual) pair under one or more standards.

Everything is computed in float64 from the raw outputs, chunk by chunk over the leading
dims (and over rows of very large planes), so memory stays at a few chunk-sized
temporaries plus one plane-block of m (the operator's backward of its inputs' magnitudes,
from the case's NumericModel) whatever the case size. Special values follow the rules of
the product's overflow mode (judging.case.overflow; docs/contract.md section 10) for every
standard; one that breaks them counts as an element with infinite error.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from aclcheck.arrays import plane_blocks
from aclcheck.judging.case.budget import BudgetModel
from aclcheck.judging.case.evidence import Evidence, EvidenceBuilder
from aclcheck.judging.case.exactness import BlockBounds, Prover
from aclcheck.judging.case.hints import Hint, HintTally, Worst, WorstTally, special_notes
from aclcheck.judging.case.magnitude import Magnitude, MagnitudeTally
from aclcheck.judging.case.metrics import Totals, metrics_of
from aclcheck.judging.case.model import ExactPlan, NumericModel
from aclcheck.judging.case.overflow import OverflowMode
from aclcheck.judging.case.overrides import Overrides
from aclcheck.judging.case.pieces import Piece, float64_values, make_piece
from aclcheck.judging.case.rule import Standard, StandardResult, StandardTally
from aclcheck.judging.case.standards import get_standard, refusal
from aclcheck.options import DEFAULT_STANDARD

#: Elements per sub-chunk: the hot loop's arrays (a dozen float64 temporaries) stay in
#: cache-sized pieces.
CHUNK_ELEMS = 1 << 16
#: Elements per block of planes for which m is computed in one reference call.
BLOCK_ELEMS = 1 << 20


_TINY = np.finfo(np.float64).tiny


# -- public records -----------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """Outcome of compare_output(): gating verdict, metrics, per-standard verdicts, worst elements.

    metrics values are finite floats or ints (JSON-able): error metrics cover the elements
    compared numerically (golden and actual finite); special values are counted in
    nan_mismatch / inf_mismatch (and special_matched).
    """

    passed: bool
    metrics: dict[str, float | int]
    standards: tuple[StandardResult, ...]
    worst: tuple[Worst, ...]
    notes: tuple[str, ...] = ()
    hints: tuple[Hint, ...] = field(default=())
    evidence: Evidence | None = None  # where the errors sit (failing comparisons only)
    index_names: tuple[str, ...] = ()  # names of a worst element's index entries
    #: how large the wrong elements' errors are (None: nothing compared)
    magnitude: Magnitude | None = None

    @property
    def gating(self) -> StandardResult:
        return self.standards[0]

    def message(self) -> str:
        """Multi-line human detail: verdicts, worst elements, hints at the likely bug."""
        lines = []
        if self.magnitude is not None and not self.passed:
            lines.append(self.magnitude.text())
        for res in self.standards:
            verdict = "PASS" if res.passed else "FAIL"
            lines.append(f"{res.name}: {verdict} - {res.detail}")
        m = self.metrics
        lines.append(
            f"max abs err {m['max_abs_err']:.3g}, max rel err {m['max_rel_err']:.3g}, "
            f"max ULP {m['max_ulp']}, MERE {m['mere']:.3g}, RMSE {m['rmse']:.3g}, "
            f"cosine {m['cosine']:.6f}, NaN/inf mismatches {m['nan_mismatch']}/"
            f"{m['inf_mismatch']}"
        )
        if self.worst:
            lines.append(f"worst elements under {self.gating.name} (index: golden, actual, "
                         "error, allowed):")
            for w in self.worst:
                ratio = w.error / w.budget if w.budget > 0 else math.inf
                ratio_text = f" ({ratio:.3g}x)" if math.isfinite(ratio) else ""
                lines.append(
                    f"  {_index_text(w.index, self.index_names)}: {w.golden:.9g}, "
                    f"{w.actual:.9g}, "
                    f"{w.error:.3g}, {w.budget:.3g}{ratio_text}"
                )
        lines.extend(f"hint: {h.text}" for h in self.hints)
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


def _index_text(index: tuple[int, ...], names: tuple[str, ...]) -> str:
    if names and len(names) == len(index):
        return "[" + ", ".join(f"{k}={v}" for k, v in zip(names, index, strict=True)) + "]"
    return str(list(index))


# -- the comparison -----------------------------------------------------------------------


def _empty(names: Sequence[str]) -> Comparison:
    metrics = metrics_of(Totals(), 0, 0.0, 0)
    results = tuple(StandardResult(n, True, 0.0, "empty: nothing to compare") for n in names)
    return Comparison(True, metrics, results, (), ("empty output: nothing to compare",))


def compare_output(
    numbers: NumericModel,
    inputs: Mapping[str, np.ndarray],
    golden: np.ndarray,
    actual: np.ndarray,
    standards: Sequence[str] = (DEFAULT_STANDARD,),
    overrides: Overrides | None = None,
) -> Comparison:
    """Metrics and verdicts of `actual` against the float64 `golden` (same shape), for a
    case whose numbers the operator describes (`numbers`; `inputs`: the case's logical
    input values by role, for the magnitudes and quanta its numerics compute).

    standards: names of the standards to judge by; the first one gates `passed` and picks
    the worst elements. A failing comparison carries its evidence (aclcheck.judging.
    evidence: a downsampled error/allowed map, failing planes, a histogram) for the
    reports. A shown-beside standard without numbers for the output's dtype (float64:
    standards.refusal) is left out with a note. Raises ValueError for an unknown standard
    name, a gating standard without such numbers, or a shape mismatch (the caller checks
    shapes first).
    """
    names = list(dict.fromkeys(standards)) or [DEFAULT_STANDARD]
    for name in names:
        get_standard(name)
    gate_refused = refusal(names[0], numbers.fmt.name)
    if gate_refused is not None:
        raise ValueError(gate_refused)
    left_out = tuple(why for name in names[1:]
                     if (why := refusal(name, numbers.fmt.name)) is not None)
    names = [name for name in names if refusal(name, numbers.fmt.name) is None]
    golden = np.asarray(golden)
    actual = np.asarray(actual)
    if golden.shape != actual.shape:
        raise ValueError(f"shape mismatch: golden {golden.shape}, actual {actual.shape}")
    if golden.size == 0:
        result = _empty(names)
    else:
        run = _Run(golden, numbers, names, overrides)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            run.all_blocks(golden, actual, inputs)
        result = run.outcome()
    if left_out:
        result = replace(result, notes=result.notes + tuple(f"not judged: {why}"
                                                            for why in left_out))
    return result


class _Run:
    """State of one comparison: the standards' tallies, running metrics, worst elements,
    hints, and the per-piece inputs they share (budget terms, proven-exact elements)."""

    def __init__(self, golden: np.ndarray, numbers: NumericModel, names: list[str],
                 overrides: Overrides | None) -> None:
        self.shape = golden.shape
        self.h, self.w = int(self.shape[-2]), int(self.shape[-1])
        self.numbers = numbers
        self.fmt = numbers.fmt
        dtype, product = numbers.fmt.name, numbers.product
        params = get_standard(DEFAULT_STANDARD).params_for(dtype, product, overrides)
        self.model = BudgetModel.of(numbers, float(params["c"]), float(params["atol"]))
        self.rules: list[Standard] = [
            get_standard(name)(get_standard(name).params_for(dtype, product, overrides),
                               self.fmt, self.model)
            for name in names
        ]
        self.tallies: list[StandardTally] = [rule.tally() for rule in self.rules]
        self.gate = self.tallies[0]
        self.totals = Totals()
        self.worst = WorstTally()
        self.magnitude = MagnitudeTally()
        self.lead = tuple(int(s) for s in self.shape[:-2])
        #: made on the first failure: most comparisons pass, and never ask for hints
        self.hints: HintTally | None = None
        #: made where it may be asked for (a second chunk, a failure); until then the
        #: first chunk's (score, start) waits in `_first`: a one-chunk comparison that
        #: passes builds no map
        self.evidence: EvidenceBuilder | None = None
        self._first: tuple[np.ndarray, int] | None = None
        self.standard = names[0]
        self.track_path = self.model.path.scale_note is not None
        self.exact = numbers.exact
        self.planes_alike = numbers.terms.plane_factors(self.lead) is None
        full = (slice(None), slice(None))
        self.full_coefs = (self.coefs(*full) if self.h * self.w <= CHUNK_ELEMS
                           and self.planes_alike else None)

    def coefs(self, rows: slice, cols: slice, planes: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """coef, floor and (when the path note is tracked) coef without eps_scale."""
        model = self.model
        base = (model.coef(rows, cols, with_scale=False, planes=planes) if self.track_path
                else None)
        return model.coef(rows, cols, planes=planes), model.floor(rows, cols, planes=planes), base

    def all_blocks(self, golden: np.ndarray, actual: np.ndarray,
                   inputs: Mapping[str, np.ndarray]) -> None:
        lead, terms, exact = self.lead, self.numbers.terms, self.exact
        h, w = self.h, self.w
        plane = h * w
        for idx in plane_blocks(lead, max(1, BLOCK_ELEMS // plane)):
            g3 = np.asarray(golden[idx], dtype=np.float64).reshape(-1, h, w)
            a3 = actual[idx].reshape(-1, h, w)  # a view, or a copy of one small block
            m3 = self.numbers.numerics.magnitudes(inputs, idx).reshape(-1, h, w)
            factors = None if self.planes_alike else terms.plane_factors(lead, idx)
            proof = None
            if exact is not None:
                proof = _BlockProof(exact, BlockBounds(exact, partial(
                    self.numbers.numerics.quanta, inputs, idx)), lead, idx)
            base = _flat_start(idx, self.shape)
            unjudged = self.unjudged_planes(g3)
            for ps, rs, cs in _chunks(g3.shape[0], h, w):
                start = base + ps.start * plane + (rs.start or 0) * w + (cs.start or 0)
                self.chunk(g3[ps, rs, cs], a3[ps, rs, cs], m3[ps, rs, cs], rs, cs, start,
                           None if proof is None else (proof, ps.start),
                           None if factors is None else factors[ps],
                           None if unjudged is None else unjudged[ps, rs, cs])

    def unjudged_planes(self, g3: np.ndarray) -> np.ndarray | None:
        """Saturation mode: the elements of planes whose golden holds inf or NaN (an inf
        or NaN input reaches its plane's golden), which that mode does not judge."""
        if self.numbers.overflow != OverflowMode.SATURATION:
            return None
        planes = ~np.isfinite(g3).all(axis=(1, 2))
        if not planes.any():
            return None
        return np.broadcast_to(planes[:, None, None], g3.shape)

    def piece(self, g3: np.ndarray, a3: np.ndarray, m3: np.ndarray, rows: slice,
              cols: slice, proof: tuple[_BlockProof, int] | None,
              planes: np.ndarray | None, unjudged: np.ndarray | None = None) -> Piece:
        """The Piece of one chunk: values, budget terms, special values, exact elements."""
        fmt = self.fmt
        full = rows == slice(None) and cols == slice(None)
        coef, floor, coef0 = self.full_coefs if full and self.full_coefs else self.coefs(
            rows, cols, planes)
        g = np.ascontiguousarray(g3).reshape(-1)
        a = float64_values(a3).reshape(-1)
        extra3 = np.multiply(m3, coef)
        extra3 += floor
        extra0 = None
        if coef0 is not None:
            extra0 = np.multiply(m3, coef0)
            extra0 += floor
            extra0 = extra0.reshape(-1)
        ch, specials = make_piece(
            g, a, extra3.reshape(-1), fmt, m=m3.reshape(-1),
            acc_overflow=self.model.acc_overflow, extra0=extra0,
            exact=None if proof is None else proof[0].prover(m3, proof[1], rows, cols),
            mode=self.numbers.overflow,
            unjudged=None if unjudged is None else np.ascontiguousarray(unjudged).reshape(-1))
        if specials is not None:
            self.totals.add(specials)
        return ch

    def chunk(self, g3: np.ndarray, a3: np.ndarray, m3: np.ndarray, rows: slice, cols: slice,
              start: int, proof: tuple[_BlockProof, int] | None = None,
              planes: np.ndarray | None = None, unjudged: np.ndarray | None = None) -> None:
        ch = self.piece(g3, a3, m3, rows, cols, proof, planes, unjudged)
        self.totals.update(ch, self.fmt)
        budget = ch.budget
        ratio = np.divide(ch.err, budget)
        self.totals.max_budget_ratio = max(self.totals.max_budget_ratio, float(ratio.max()))
        gate_fail = gate_allowed = None
        before = self.gate.fails
        for rule, tally in zip(self.rules, self.tallies, strict=True):
            allowed = rule.allowed(ch)
            fail = rule.count(ch, allowed, tally)
            if tally is self.gate:
                gate_fail, gate_allowed = fail, allowed
        assert gate_fail is not None and gate_allowed is not None
        if gate_allowed is budget:
            score = ratio
        else:
            score = np.divide(ch.err, np.maximum(gate_allowed, _TINY))
        if ch.bad is not None:
            score = np.where(ch.bad, np.inf, score)
        failed = self.gate.fails > before
        if failed:  # a failure the allowed error does not show (an exact-rounding one)
            score = np.where(gate_fail, np.maximum(score, 1.0), score)
        self.worst.offer(score, start, ch.raw_g, ch.raw_a, gate_allowed)
        if self.evidence is None and self._first is None and not failed:
            self._first = (score, start)
        else:
            self.evidence_builder().add(score, gate_fail if failed else None, start)
        self.magnitude.add_elements(ch.raw_g.size)
        if gate_fail.any():
            self.magnitude.add_wrong(ch.raw_g[gate_fail], ch.raw_a[gate_fail],
                                     budget[gate_fail], self.fmt)
        if failed:
            if self.hints is None:
                self.hints = HintTally(self.model, self.numbers.plane_axes, self.lead)
            self.hints.update(gate_fail, start)

    def evidence_builder(self) -> EvidenceBuilder:
        """The evidence map's builder, with the first chunk folded in."""
        if self.evidence is None:
            self.evidence = EvidenceBuilder(self.shape, self.standard)
            if self._first is not None:
                self.evidence.add(self._first[0], None, self._first[1])
                self._first = None
        return self.evidence

    def outcome(self) -> Comparison:
        n = math.prod(self.shape)
        metrics = metrics_of(self.totals, n, self.gate.ratio(n), self.gate.fails)
        results = tuple(rule.result(tally, n, metrics)
                        for rule, tally in zip(self.rules, self.tallies, strict=True))
        notes = list(dict.fromkeys(note for r in results for note in r.notes))
        notes.extend(special_notes(self.totals.near_threshold, self.totals.acc_overflow,
                                   self.fmt, self.model, self.numbers.overflow,
                                   self.totals.saturated, self.totals.unjudged))
        hints = results[0].hints
        if self.gate.explained < self.gate.fails and self.hints is not None:
            # some failures the gate cannot explain
            hints += self.hints.hints(float(metrics["error_balance"]), float(metrics["mere"]))
        return Comparison(
            passed=results[0].passed,
            metrics=metrics,
            standards=results,
            worst=self.worst.records(self.shape),
            notes=tuple(notes),
            hints=hints,
            evidence=None if results[0].passed else self.evidence_builder().result(),
            index_names=self.numbers.index_names,
            magnitude=self.magnitude.result(),
        )


class _BlockProof:
    """The exactness proof's parts of one block of planes, shared by its pieces."""

    def __init__(self, plan: ExactPlan, bounds: BlockBounds, lead: tuple[int, ...],
                 block: tuple[slice, ...]) -> None:
        self.plan, self.bounds = plan, bounds
        self.plane_ok = plan.ok.plane_factors(lead, block)
        self.plane_single = (plan.single.plane_factors(lead, block)
                             if plan.single is not None else None)

    def prover(self, m3: np.ndarray, first_plane: int, rows: slice, cols: slice) -> Prover:
        return Prover(self.plan, m3, self.bounds, first_plane, rows, cols, self.plane_ok,
                      self.plane_single)


def _chunks(planes: int, h: int, w: int) -> Iterator[tuple[slice, slice, slice]]:
    """(planes, rows, cols) pieces of a block of at most CHUNK_ELEMS elements (at least one
    row of one plane, or a piece of a row when a row alone is larger), each a contiguous
    range in C order."""
    plane = h * w
    if plane <= CHUNK_ELEMS:
        step = max(1, CHUNK_ELEMS // max(plane, 1))
        for p in range(0, planes, step):
            yield slice(p, min(p + step, planes)), slice(None), slice(None)
    elif w <= CHUNK_ELEMS:
        step = CHUNK_ELEMS // w
        for p in range(planes):
            for r in range(0, h, step):
                yield slice(p, p + 1), slice(r, min(r + step, h)), slice(None)
    else:
        for p in range(planes):
            for r in range(h):
                for c in range(0, w, CHUNK_ELEMS):
                    yield slice(p, p + 1), slice(r, r + 1), slice(c, min(c + CHUNK_ELEMS, w))


def _flat_start(idx: tuple[slice, ...], shape: tuple[int, ...]) -> int:
    """C-order flat index of a block's first element."""
    start = [s.start or 0 for s in idx] + [0] * (len(shape) - len(idx))
    return int(np.ravel_multi_index(start, shape))
