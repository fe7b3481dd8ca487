"""Does a what-if model reproduce a kernel's output? The judgement of one model on one case.

A kernel with the model's bug computes the model's values v up to its own accumulation
error (at most E per element: the budget's accumulation part, 0 where the exactness proof
says the sum is exact) and then converts with the model's rounding rho. Its output is
therefore in [rho(v - E), rho(v + E)] (every rounding mode is monotone). The model
reproduces the output when every element lies in that interval (NaN where v is NaN), and
reproduces it exactly when every element is rho(v) bit for bit (or the model's own exact
output). This is stricter than a budget around v: a model never explains an element the
bug could not have produced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aclcheck.dtypes import FloatFormat
from aclcheck.judging.case.exactness import proven_mask
from aclcheck.judging.case.model import AxisTables, NumericModel
from aclcheck.judging.case.roundings import Rounding, rounded
from aclcheck.judging.diagnosis.clues import Clue
from aclcheck.judging.diagnosis.codes import DiagnosisCode


@dataclass(frozen=True)
class WhatIf:
    """A model's output for one case.

    values: float64, self's shape: what the bug computes before the final conversion.
    rounding: that conversion. accumulate: the accumulation whose error bound the
    kernel's sums may add (None: the product's). magnitudes, terms: m (the same
    computation on the inputs' magnitudes) and k (terms per element, any shape
    broadcasting to values) of the bug's own sums, which the error bound scales with
    (None: the case's).
    exact: the output bit for bit, as float64 values of the dtype (None: values converted
    with `rounding`).
    """

    values: np.ndarray
    rounding: Rounding = Rounding.NEAREST
    accumulate: str | None = None
    magnitudes: np.ndarray | None = None
    terms: np.ndarray | None = None
    exact: np.ndarray | None = None

    def output(self, fmt: FloatFormat) -> np.ndarray:
        """The output a kernel with this bug writes, as float64 values of fmt."""
        if self.exact is not None:
            return self.exact
        return rounded(self.values, fmt, self.rounding)


@dataclass(frozen=True)
class WhatIfModel:
    """One alternative computation of an operator: its diagnosis code, what it says, how
    to compute it from the operator's scene of a case (None: the bug cannot show there)."""

    code: DiagnosisCode
    summary: str  # the bug in words: "window end floor((i+1)*I/O) instead of ceil"
    compute: Callable[[Any], WhatIf | None]  # the operator's scene of one case -> output

    def __call__(self, scene: Any) -> WhatIf | None:
        return self.compute(scene)


@dataclass(frozen=True)
class Reproduction:
    """A model against one case's output."""

    explained: bool  # every element in the model's interval
    exact: bool  # every element the model's output bit for bit
    outside: int  # elements outside the interval
    elements: int


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b) | (np.isnan(a) & np.isnan(b))


def inside(values: np.ndarray, actual: np.ndarray, extra: np.ndarray | float,
           fmt: FloatFormat, mode: Rounding = Rounding.NEAREST,
           proven: np.ndarray | None = None) -> np.ndarray:
    """bool, values' shape: the elements of `actual` a kernel computing `values` could
    have written (see the module doc; `reproduce` for the arguments)."""
    v = np.asarray(values, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    e = np.broadcast_to(np.asarray(extra, dtype=np.float64), v.shape)
    if proven is not None:
        e = np.where(proven, 0.0, e)
    with np.errstate(invalid="ignore", over="ignore"):
        lo = rounded(v - e, fmt, mode)
        hi = rounded(v + e, fmt, mode)
        ok = (a >= lo) & (a <= hi)
    return np.where(np.isnan(v), np.isnan(a), ok)


def _whole(table: AxisTables, shape: tuple[int, ...]) -> np.ndarray:
    """A per-axis table as one float64 array of `shape`."""
    out = np.ones((), dtype=np.float64)
    for size, v in zip(shape, table.vectors, strict=True):
        out = np.multiply.outer(out, np.ones(size) if v is None else v.astype(np.float64))
    return out


def contract_interval(numbers: NumericModel, inputs: Mapping[str, np.ndarray],
                      shape: tuple[int, ...], c: float) -> tuple[np.ndarray, np.ndarray | None]:
    """(E, proven) of the contract's own computation on a whole (small) output: the error
    bound a correct kernel's sums may add on the case's product path, and the elements
    the exactness proof computes exactly (None: none). With `inside` on the golden, the
    elements no correct kernel could have written, for operators without what-if models
    of their own."""
    path = numbers.path
    k = _whole(numbers.terms, shape)
    m = np.asarray(numbers.numerics.magnitudes(inputs, ()), dtype=np.float64).reshape(shape)
    u = path.accumulate.unit_roundoff
    extra = (c * k * u + path.roundoff + path.scale_error) * m + c * k * path.underflow_unit
    plan = numbers.exact
    if plan is None or len(shape) < 2:
        return extra, None
    bounds = plan.plane_bounds(np.asarray(numbers.numerics.quanta(inputs, ())).reshape(-1))
    proven = proven_mask(plan, m.reshape(-1, *shape[-2:]), bounds, shape[:-2])
    return extra, proven.reshape(shape)


def reproduce(values: np.ndarray, actual: np.ndarray, extra: np.ndarray | float,
              fmt: FloatFormat, mode: Rounding = Rounding.NEAREST,
              proven: np.ndarray | None = None,
              exact_output: np.ndarray | None = None) -> Reproduction:
    """Judge `actual` (values of fmt, any float array) against a model's float64 `values`.

    extra: E per element (or one number); proven: bool mask of elements whose sum is exact
    (E = 0 there); exact_output: the model's own bit-exact output (default rho(values)).
    """
    v = np.asarray(values, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    ok = inside(v, a, extra, fmt, mode, proven)
    out = exact_output if exact_output is not None else rounded(v, fmt, mode)
    exact = bool(np.all(_same(np.asarray(out, dtype=np.float64), a)))
    outside = int(v.size - np.count_nonzero(ok))
    return Reproduction(explained=outside == 0, exact=exact, outside=outside,
                        elements=int(v.size))


@dataclass(frozen=True)
class ModelResult:
    """One what-if model against one failing case."""

    code: DiagnosisCode
    summary: str  # the bug in words
    explained: bool
    exact: bool
    precision: bool = False  # the model widens the error bound instead of moving values
    accumulate: str | None = None  # that wider accumulation (for the message)


@dataclass(frozen=True)
class CaseClues:
    """The diagnosis evidence of one failing case."""

    case_id: str
    models: tuple[ModelResult, ...] = ()
    findings: tuple[Clue, ...] = ()
    judged: bool = True  # False: too large to re-judge (counts as failing, unexplained)

    @property
    def explained_by(self) -> tuple[ModelResult, ...]:
        return tuple(m for m in self.models if m.explained or m.exact)

    @property
    def ordered_findings(self) -> tuple[Clue, ...]:
        """Findings by the share of the wrong elements they account for."""
        return tuple(sorted(self.findings, key=lambda f: (-f.share, f.code.value)))

    def lines(self) -> list[str]:
        """What this case's evidence says, for its detail."""
        out = [f"reproduced by: {m.summary} "
               f"({'bit-exactly' if m.exact else 'within the error bound'}) [{m.code.value}]"
               for m in self.explained_by]
        out += [f"finding: {f.text} ({100 * f.share:.0f} % of wrong elements) "
                f"[{f.code.value}]" for f in self.ordered_findings]
        if not self.judged:
            out.append("not re-judged against the what-if models (too large)")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"explained_by": [{"code": m.code.value, "exact": m.exact}
                                 for m in self.explained_by],
                "findings": [f.to_json() for f in self.ordered_findings],
                "judged": self.judged}
