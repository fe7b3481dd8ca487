"""What a comparison finds besides the verdicts: the worst elements, where the failures
sit (hints at the likely bug), and the special values the overflow rules accepted.

Running tallies the chunked loop of compare.py feeds piece by piece.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from aclcheck.dtypes import FloatFormat
from aclcheck.judging.case.budget import BudgetModel
from aclcheck.judging.case.model import Axis

#: Worst elements kept.
WORST_COUNT = 5


class HintCode(StrEnum):
    """What a hint at the likely bug says, as generic code compares it (shrink keeps a
    failure's codes; the text is for people)."""

    LAST_ROW = "last-row"
    LAST_COLUMN = "last-column"
    LAST_ROW_AND_COLUMN = "last-row-and-column"
    OVERLAP_ONLY = "overlap-only"
    BIASED_ABOVE = "biased-above"  # the side is part of what a failure is (shrink keeps it)
    BIASED_BELOW = "biased-below"
    TIES_AWAY = "ties-away"
    NOT_RNE = "not-rne"
    #: one answer right, the other wrong, the same call made twice (running.recall)
    DEPENDS_ON_EARLIER_CALLS = "depends-on-earlier-calls"


@dataclass(frozen=True)
class Hint:
    """A hint at the likely bug: its code, and its text rendered once, where the numbers
    are known. `code` is None for a hint read back from a report that holds only text."""

    code: HintCode | None
    text: str

    def __str__(self) -> str:
        return self.text

    def __contains__(self, part: str) -> bool:
        return part in self.text


@dataclass(frozen=True)
class Worst:
    """One element with a large error/allowed ratio under the gating standard.

    golden/actual are the raw values (may be NaN or inf); error = |actual - golden| (inf
    or NaN for special-value mismatches); budget = the error the standard allows there.
    """

    index: tuple[int, ...]
    golden: float
    actual: float
    error: float
    budget: float


class WorstTally:
    """Keeps the WORST_COUNT elements with the largest error/allowed ratio."""

    def __init__(self) -> None:
        self.items: list[tuple[float, int, float, float, float]] = []

    def threshold(self) -> float:
        return self.items[-1][0] if len(self.items) >= WORST_COUNT else -1.0

    def offer(self, score: np.ndarray, base: int, g: np.ndarray, a: np.ndarray,
              allowed: np.ndarray) -> None:
        if score.size == 0 or float(score.max()) <= self.threshold():
            return
        k = min(WORST_COUNT, score.size)
        pick = np.argpartition(-score, k - 1)[:k]
        for i in pick:
            s = float(score[i])
            if s > self.threshold():
                self.items.append((s, base + int(i), float(g[i]), float(a[i]),
                                   float(allowed[i])))
                self.items.sort(key=lambda t: (-t[0], t[1]))
                del self.items[WORST_COUNT:]

    def records(self, shape: tuple[int, ...]) -> tuple[Worst, ...]:
        out = []
        for _s, flat, g, a, allowed in self.items:
            index = tuple(int(v) for v in np.unravel_index(flat, shape))
            with np.errstate(invalid="ignore"):
                error = abs(a - g) if not (math.isnan(a) and math.isnan(g)) else 0.0
            out.append(Worst(index, g, a, float(error), allowed))
        return tuple(out)


class HintTally:
    """Where failures sit (rows, columns of a plane, overlap) to point at the likely bug.
    `axes`: the plane's row and column axes (their names and words in the hints);
    `lead`: the sizes of the output's leading axes."""

    def __init__(self, model: BudgetModel, axes: tuple[Axis, Axis],
                 lead: tuple[int, ...] = ()) -> None:
        self.axes = axes
        self.counts_h, self.counts_w = model.terms.vectors[-2], model.terms.vectors[-1]
        self.h, self.w = len(self.counts_h), len(self.counts_w)
        self.planes = model.terms.plane_factors(lead)  # None: every plane alike
        self.max_terms = model.terms.max()
        self.rows = np.zeros(self.h, dtype=np.int64)
        self.cols = np.zeros(self.w, dtype=np.int64)
        self.total = 0
        self.multi = 0  # failures where more than one term reaches the element

    def update(self, fail: np.ndarray, base: int) -> None:
        """Record the failing elements of a chunk starting at flat index `base`."""
        idx = np.flatnonzero(fail)
        if idx.size == 0:
            return
        pos = (idx + base) % (self.h * self.w)
        rows, cols = pos // self.w, pos % self.w
        self.rows += np.bincount(rows, minlength=self.h)
        self.cols += np.bincount(cols, minlength=self.w)
        self.total += idx.size
        k = self.counts_h[rows] * self.counts_w[cols]
        if self.planes is not None:
            k = k * self.planes[(idx + base) // (self.h * self.w)]
        self.multi += int(np.count_nonzero(k > 1))

    def hints(self, balance: float, mere: float) -> tuple[Hint, ...]:
        if not self.total:
            return ()
        out = []
        row, col = self.axes
        if self.h > 1 and self.rows[-1] == self.total:
            out.append(Hint(HintCode.LAST_ROW, (
                f"every failing element is in the last {row.word} ({row.name}={self.h - 1}): "
                f"dropped tail {row.word} or off-by-one end index?")))
        elif self.w > 1 and self.cols[-1] == self.total:
            out.append(Hint(HintCode.LAST_COLUMN, (
                f"every failing element is in the last {col.word} ({col.name}={self.w - 1}): "
                f"dropped tail {col.word} or off-by-one end index?")))
        elif self.h > 1 and self.w > 1 and self.rows[-1] + self.cols[-1] >= self.total:
            out.append(Hint(HintCode.LAST_ROW_AND_COLUMN, (
                f"failures sit in the last {row.word} and {col.word}: tail handling?")))
        if self.multi == self.total and self.max_terms > 1:
            out.append(Hint(HintCode.OVERLAP_ONLY, (
                "failures only where windows overlap (k > 1): window bounds or "
                "accumulation?")))
        if mere > 0 and abs(balance) > 0.5 * mere:
            sign = "above" if balance > 0 else "below"
            code = HintCode.BIASED_ABOVE if balance > 0 else HintCode.BIASED_BELOW
            out.append(Hint(code, (
                f"errors are biased ({sign} the golden on average): wrong divisor or "
                "rounding mode?")))
        return tuple(out)


def special_notes(near_threshold: int, acc_overflow: int, fmt: FloatFormat,
                  model: BudgetModel, mode: str = "inf-nan", saturated: int = 0,
                  unjudged: int = 0) -> list[str]:
    """Notes on the special values the overflow rules (of `mode`) accepted."""
    out = []
    if near_threshold:
        out.append(f"{near_threshold} element(s) within the budget of the "
                   f"{fmt.name} overflow threshold: inf accepted")
    if acc_overflow:
        accepted = "inf/NaN" if mode == "inf-nan" else "any finite value (saturation mode)"
        out.append(f"{acc_overflow} element(s) accepted as {accepted}: the terms' "
                   f"summed magnitude can overflow the {model.path.overflow_format.name} "
                   + ("accumulator" if model.path.overflow_format is model.path.accumulate
                      else "intermediates"))
    if saturated:
        out.append(f"{saturated} element(s) saturated to the largest finite {fmt.name} "
                   "value where the golden overflows (saturation mode)")
    if unjudged:
        out.append(f"{unjudged} element(s) not judged: planes with inf/NaN inputs "
                   "(saturation mode, docs/contract.md section 10)")
    return out
