"""How large a failing case's errors are, before anything is said about why.

The wrong elements of a comparison (those the gating standard fails) are measured in ULP
of the output dtype from the correctly rounded golden and in multiples of the budget, and
checked for being a neighbour of the exact value (one of the two values of the dtype that
bracket the golden) and for sitting on an exact tie. The class follows from those numbers:

    gross      some element >= GROSS_ULP ULP or >= GROSS_RATIO x its budget off
    few-ulp    at most GROSS_ULP - 1 ULP, but some element is not a neighbour of the exact value
    one-ulp    every wrong element is a neighbour of the exact value (a rounding question)
    ties-only  ... and every one sits on an exact tie (a tie-breaking question)
    special    only NaN/inf mismatches

Rounding or tie language may lead a report only for the last two classes. Tallies are fed
piece by piece and merge (shards, cases); a Magnitude is plain data for reports.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from aclcheck.dtypes import FloatFormat, correctly_rounded, held, ordered_bits, ordered_distance
from aclcheck.judging.case.roundings import neighbours

#: An element this many ULP off is gross, whatever its budget.
GROSS_ULP = 4
#: An element this many times over its budget is gross.
GROSS_RATIO = 16.0

#: ULP histogram: exact counts for 0..ULP_EXACT-1, then BINS_PER_OCTAVE bins per octave.
ULP_EXACT = 16
BINS_PER_OCTAVE = 8
_ULP_BINS = ULP_EXACT + BINS_PER_OCTAVE * 64
#: Ratio histogram: BINS_PER_OCTAVE bins per octave from 2**RATIO_MIN_EXP.
RATIO_MIN_EXP = -16
_RATIO_BINS = BINS_PER_OCTAVE * 96


class MagnitudeClass(StrEnum):
    """The size class of a case's errors (values are stable: reports carry them)."""

    NONE = "none"
    GROSS = "gross"
    FEW_ULP = "few-ulp"
    ONE_ULP = "one-ulp"
    TIES_ONLY = "ties-only"
    SPECIAL = "special"

    @property
    def rounding(self) -> bool:
        """Rounding or tie language may lead for this class."""
        return self in (MagnitudeClass.ONE_ULP, MagnitudeClass.TIES_ONLY)


#: Classes in the order a headline names them (largest errors first).
CLASS_ORDER: tuple[MagnitudeClass, ...] = (
    MagnitudeClass.GROSS, MagnitudeClass.SPECIAL, MagnitudeClass.FEW_ULP,
    MagnitudeClass.ONE_ULP, MagnitudeClass.TIES_ONLY,
)


def _ordered(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Ordered integers of float64 values of fmt (adjacent values differ by 1)."""
    return ordered_bits(held(values, fmt), fmt).astype(np.int64)


def _ulp_bin(ulps: np.ndarray) -> np.ndarray:
    u = np.asarray(ulps, dtype=np.float64)
    big = np.floor((np.log2(np.maximum(u, ULP_EXACT)) - math.log2(ULP_EXACT))
                   * BINS_PER_OCTAVE).astype(np.int64) + ULP_EXACT
    return np.clip(np.where(u < ULP_EXACT, u, big), 0, _ULP_BINS - 1).astype(np.int64)


def _ulp_value(b: int) -> float:
    if b < ULP_EXACT:
        return float(b)
    return ULP_EXACT * 2.0 ** ((b - ULP_EXACT + 0.5) / BINS_PER_OCTAVE)


def _ratio_bin(ratios: np.ndarray) -> np.ndarray:
    r = np.asarray(ratios, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.floor((np.log2(np.maximum(r, 2.0 ** RATIO_MIN_EXP)) - RATIO_MIN_EXP)
                     * BINS_PER_OCTAVE)
    return np.clip(np.nan_to_num(b, nan=_RATIO_BINS - 1, posinf=_RATIO_BINS - 1),
                   0, _RATIO_BINS - 1).astype(np.int64)


def _ratio_value(b: int) -> float:
    return 2.0 ** (RATIO_MIN_EXP + (b + 0.5) / BINS_PER_OCTAVE)


def _median_bin(hist: np.ndarray) -> int:
    cum = np.cumsum(hist)
    return int(np.searchsorted(cum, (cum[-1] + 1) // 2)) if cum.size and cum[-1] else 0


@dataclass(frozen=True)
class Magnitude:
    """The size of one case's (or a group's) errors; plain data, JSON-able."""

    cls: MagnitudeClass
    wrong: int  # wrong elements (gate failures)
    elements: int  # elements compared
    special: int = 0  # of which NaN/inf mismatches
    neighbours: int = 0  # of the numeric ones: neighbours of the exact value
    ties: int = 0  # of those: at an exact tie
    median_ulp: float = 0.0
    max_ulp: float = 0.0
    median_ratio: float = 0.0  # error / budget
    max_ratio: float = 0.0

    @property
    def share(self) -> float:
        """Share of the elements that are wrong."""
        return self.wrong / self.elements if self.elements else 0.0

    def text(self) -> str:
        """`gross: median 900 ULP (758x budget) on 94 % of elements, max 2048 ULP
        (1730x budget)`."""
        if self.cls is MagnitudeClass.NONE:
            return "no wrong elements"
        share = _percent(self.share)
        if self.cls is MagnitudeClass.SPECIAL:
            return f"special: {self.special} NaN/inf mismatches ({share} of elements)"
        text = (f"{self.cls.value}: median {_number(self.median_ulp)} ULP "
                f"({_number(self.median_ratio)}x budget) on {share} of elements")
        if self.max_ulp > self.median_ulp:  # what made the class, when the median does not
            text += (f", max {_number(self.max_ulp)} ULP "
                     f"({_number(self.max_ratio)}x budget)")
        if self.special:
            text += f", {self.special} NaN/inf mismatches"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"class": self.cls.value, "wrong": self.wrong, "elements": self.elements,
                "special": self.special, "neighbours": self.neighbours, "ties": self.ties,
                "median_ulp": self.median_ulp, "max_ulp": self.max_ulp,
                "median_ratio": self.median_ratio, "max_ratio": self.max_ratio}

    @classmethod
    def from_json(cls, data: object) -> Magnitude | None:
        """A report's magnitude entry (None when absent); ValueError when malformed."""
        if data is None:
            return None
        if not isinstance(data, dict):
            raise ValueError("'magnitude': not an object")
        try:
            kind = MagnitudeClass(data["class"])
            ints = {k: _count(data.get(k, 0), k) for k in
                    ("wrong", "elements", "special", "neighbours", "ties")}
            floats = {k: _float(data.get(k, 0.0), k) for k in
                      ("median_ulp", "max_ulp", "median_ratio", "max_ratio")}
        except (KeyError, ValueError) as exc:
            raise ValueError(f"'magnitude': {exc}") from None
        return cls(kind, **ints, **floats)


def _count(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**62:
        raise ValueError(f"{key!r} is not a count")
    return value


def _float(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0 <= float(value) <= 1e300:
        raise ValueError(f"{key!r} is not a non-negative number")
    return float(value)


def _percent(share: float) -> str:
    pct = 100.0 * share
    if pct >= 10 or pct == 0:
        return f"{pct:.0f} %"
    return f"{pct:.2g} %"


def _number(x: float) -> str:
    if not math.isfinite(x):
        return "inf"
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def magnitude_class(max_ulp: float, max_ratio: float, numeric: int, neighbours: int,
                    ties: int, special: int) -> MagnitudeClass:
    """The class of a set of wrong elements from its numbers (see the module doc)."""
    if numeric == 0:
        return MagnitudeClass.SPECIAL if special else MagnitudeClass.NONE
    if max_ulp >= GROSS_ULP or max_ratio >= GROSS_RATIO or special:
        return MagnitudeClass.GROSS
    if neighbours < numeric:
        return MagnitudeClass.FEW_ULP
    if ties == numeric:
        return MagnitudeClass.TIES_ONLY
    return MagnitudeClass.ONE_ULP


class MagnitudeTally:
    """Running tally of the wrong elements of one comparison (or of merged ones)."""

    def __init__(self) -> None:
        self.elements = 0
        self.special = 0
        self.neighbours = 0
        self.ties = 0
        self.max_ulp = 0.0
        self.max_ratio = 0.0
        self.ulp_hist = np.zeros(_ULP_BINS, dtype=np.int64)
        self.ratio_hist = np.zeros(_RATIO_BINS, dtype=np.int64)

    @property
    def numeric(self) -> int:
        return int(self.ulp_hist.sum())

    def add_elements(self, n: int) -> None:
        """Count compared elements (wrong or not)."""
        self.elements += int(n)

    def add_wrong(self, golden: np.ndarray, actual: np.ndarray, allowed: np.ndarray,
                  fmt: FloatFormat) -> None:
        """Wrong elements (float64 golden, actual values of fmt, the budget there):
        special-value mismatches counted, the numeric ones measured."""
        g = np.asarray(golden, dtype=np.float64).reshape(-1)
        a = np.asarray(actual, dtype=np.float64).reshape(-1)
        allowed = np.broadcast_to(np.asarray(allowed, dtype=np.float64), g.shape)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            r = correctly_rounded(g, fmt)
        # beyond the dtype's range (the golden rounds to inf) is a special value too
        finite = np.isfinite(g) & np.isfinite(a) & np.isfinite(r)
        self.add_special(int(g.size - np.count_nonzero(finite)))
        if not finite.any():
            return
        g, a, r, allowed = g[finite], a[finite], r[finite], allowed[finite]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ulps = ordered_distance(_ordered(a, fmt), _ordered(r, fmt)).astype(np.float64)
            ratios = np.divide(np.abs(a - g), allowed)
            down, up = neighbours(g, fmt)
        neighbour = (a == down) | (a == up)
        tie = ((g - down) == (up - g)) & (down != up)
        self.update(ulps, ratios, neighbour, tie)

    def update(self, ulps: np.ndarray, ratios: np.ndarray, neighbour: np.ndarray,
               tie: np.ndarray) -> None:
        """Wrong numeric elements: their ULP distances from the rounded golden, error /
        budget ratios (inf where the budget is 0), neighbour-of-exact and at-tie flags."""
        if np.size(ulps) == 0:
            return
        u = np.asarray(ulps, dtype=np.float64)
        r = np.asarray(ratios, dtype=np.float64)
        nb = np.asarray(neighbour, dtype=bool)
        self.ulp_hist += np.bincount(_ulp_bin(u), minlength=_ULP_BINS)
        self.ratio_hist += np.bincount(_ratio_bin(r), minlength=_RATIO_BINS)
        self.max_ulp = max(self.max_ulp, float(u.max()))
        top = float(np.nanmax(r)) if np.any(~np.isnan(r)) else 0.0
        self.max_ratio = max(self.max_ratio, top)
        self.neighbours += int(np.count_nonzero(nb))
        self.ties += int(np.count_nonzero(nb & np.asarray(tie, dtype=bool)))

    def add_special(self, n: int) -> None:
        """NaN/inf mismatches (wrong, without a ULP distance)."""
        self.special += int(n)

    def merge(self, other: MagnitudeTally) -> None:
        self.elements += other.elements
        self.special += other.special
        self.neighbours += other.neighbours
        self.ties += other.ties
        self.max_ulp = max(self.max_ulp, other.max_ulp)
        self.max_ratio = max(self.max_ratio, other.max_ratio)
        self.ulp_hist += other.ulp_hist
        self.ratio_hist += other.ratio_hist

    def result(self) -> Magnitude:
        numeric = self.numeric
        cls = magnitude_class(self.max_ulp, self.max_ratio, numeric, self.neighbours, self.ties,
                              self.special)
        median_ulp = _ulp_value(_median_bin(self.ulp_hist)) if numeric else 0.0
        median_ratio = _ratio_value(_median_bin(self.ratio_hist)) if numeric else 0.0
        max_ratio = self.max_ratio if math.isfinite(self.max_ratio) else 1e300
        return Magnitude(cls, numeric + self.special, self.elements, self.special,
                         self.neighbours, self.ties, min(median_ulp, self.max_ulp),
                         self.max_ulp, min(median_ratio, max_ratio), max_ratio)


# -- the run's headline ------------------------------------------------------------------


@dataclass(frozen=True)
class ClassSummary:
    """One magnitude class over the failing cases of a run."""

    cls: MagnitudeClass
    cases: int
    wrong: int
    elements: int
    median_ulp: float  # median of the cases' medians, weighted by their wrong elements
    median_ratio: float
    max_ulp: float = 0.0  # the largest of the cases
    max_ratio: float = 0.0

    def text(self) -> str:
        """`gross: median 900 ULP (758x budget) on 94 % of elements of 97 cases`."""
        share = _percent(self.wrong / self.elements if self.elements else 0.0)
        cases = f"{self.cases} case{'s' if self.cases != 1 else ''}"
        if self.cls is MagnitudeClass.SPECIAL:
            return f"special: NaN/inf mismatches on {share} of elements of {cases}"
        text = (f"{self.cls.value}: median {_number(self.median_ulp)} ULP "
                f"({_number(self.median_ratio)}x budget) on {share} of elements of {cases}")
        if self.max_ulp > self.median_ulp:
            text += (f", max {_number(self.max_ulp)} ULP "
                     f"({_number(self.max_ratio)}x budget)")
        return text


def _weighted_median(values: list[float], weights: list[int]) -> float:
    if not values:
        return 0.0
    order = sorted(range(len(values)), key=lambda i: values[i])
    half = sum(weights) / 2.0
    acc = 0
    for i in order:
        acc += weights[i]
        if acc >= half:
            return values[i]
    return values[order[-1]]


def summarize_magnitudes(magnitudes: Iterable[Magnitude]) -> tuple[ClassSummary, ...]:
    """Per class (largest first): the cases, elements and medians of a run's failing cases."""
    groups: dict[MagnitudeClass, list[Magnitude]] = {}
    for m in magnitudes:
        if m.cls is not MagnitudeClass.NONE:
            groups.setdefault(m.cls, []).append(m)
    out = []
    for cls in CLASS_ORDER:
        items = groups.get(cls, [])
        if not items:
            continue
        weights = [max(m.wrong, 1) for m in items]
        out.append(ClassSummary(
            cls, len(items), sum(m.wrong for m in items), sum(m.elements for m in items),
            _weighted_median([m.median_ulp for m in items], weights),
            _weighted_median([m.median_ratio for m in items], weights),
            max(m.max_ulp for m in items), max(m.max_ratio for m in items)))
    return tuple(out)


def magnitude_headline(classes: Iterable[ClassSummary]) -> str | None:
    """The run's magnitude headline (summarize_magnitudes' classes, largest errors first);
    None when no element was wrong."""
    return "; ".join(s.text() for s in classes) or None
