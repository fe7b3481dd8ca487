"""Magnitude classes (aclcheck/judging/case/magnitude.py) and the rounding modes they rest on
(aclcheck/judging/case/roundings.py): size first, rounding language only for neighbours."""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np
import pytest

from aclcheck.dtypes import BFLOAT16, FLOAT16, FLOAT32, correctly_rounded
from aclcheck.judging.case.magnitude import (
    Magnitude,
    MagnitudeClass,
    MagnitudeTally,
    magnitude_class,
    magnitude_headline,
    summarize_magnitudes,
)
from aclcheck.judging.case.roundings import Rounding, is_neighbour, neighbours, rounded

FMTS = (FLOAT16, BFLOAT16, FLOAT32)


@pytest.mark.parametrize("fmt", FMTS, ids=lambda f: f.name)
def test_neighbours_bracket_every_value(fmt) -> None:  # noqa: ANN001
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-8, 4, 2000),
                        [0.0, -0.0, 1.0, -1.0, fmt.max_value * 1.0000001, -fmt.max_value,
                         fmt.smallest_subnormal / 3]])
    down, up = neighbours(x, fmt)
    assert np.all(down <= x) and np.all(up >= x)
    rne = correctly_rounded(x, fmt)
    assert np.all((rne == down) | (rne == up))
    inside = np.isfinite(up) & (down != up)
    # adjacent: nothing of fmt lies strictly between them (one ULP apart)
    mid = correctly_rounded((down[inside] + up[inside]) / 2, fmt)
    assert np.all((mid == down[inside]) | (mid == up[inside]))
    exact = x == rne
    assert np.all(down[exact] == x[exact]) and np.all(up[exact] == x[exact])
    assert np.isnan(neighbours(np.array([np.nan]), fmt)[0][0])


def test_roundings_pick_the_right_neighbour() -> None:
    one, ulp = 1.0, 2.0 ** -10  # float16 spacing above 1
    x = np.array([one + ulp / 2, one + ulp / 4, -(one + ulp / 2), one + 3 * ulp / 4])
    assert list(rounded(x, FLOAT16, Rounding.NEAREST)) == [one, one, -one, one + ulp]
    assert list(rounded(x, FLOAT16, Rounding.TIES_AWAY)) == [one + ulp, one, -(one + ulp),
                                                             one + ulp]
    assert list(rounded(x, FLOAT16, Rounding.TOWARD_ZERO)) == [one, one, -one, one]
    assert list(rounded(x, FLOAT16, Rounding.UP)) == [one + ulp, one + ulp, -one, one + ulp]
    tiny = np.array([FLOAT16.smallest_subnormal * 3, 2.0 ** -14])
    assert list(rounded(tiny, FLOAT16, Rounding.NEAREST_FTZ)) == [0.0, 2.0 ** -14]
    assert rounded(np.array([70000.0]), FLOAT16, Rounding.TOWARD_ZERO)[0] == 65504.0


def test_is_neighbour_is_not_one_ulp() -> None:
    """A value one ULP from RNE(x) on the far side of x is no neighbour of x."""
    x = np.array([1.0 + 2.0 ** -12])  # just above 1 in float16
    assert is_neighbour(np.array([1.0]), x, FLOAT16)[0]
    assert is_neighbour(np.array([1.0 + 2.0 ** -10]), x, FLOAT16)[0]
    assert not is_neighbour(np.array([1.0 - 2.0 ** -11]), x, FLOAT16)[0]


def _tally(golden: np.ndarray, actual: np.ndarray, allowed: float, fmt=FLOAT16,  # noqa: ANN001
           elements: int | None = None) -> Magnitude:
    t = MagnitudeTally()
    t.add_elements(elements if elements is not None else golden.size)
    t.add_wrong(golden, actual, np.full(golden.shape, allowed), fmt)
    return t.result()


def test_gross_errors_are_gross_whatever_their_ties() -> None:
    g = np.array([0.5 + 2.0 ** -12, 1.0, 2.0])  # the first is a float16 tie
    a = np.array([0.5 + 2.0 ** -11, 1.5, 3.0])  # a tie "rounded away", and gross errors
    m = _tally(g, a, 2.0 ** -12, elements=10)
    assert m.cls is MagnitudeClass.GROSS
    assert m.max_ulp == 512 and m.share == pytest.approx(0.3)
    assert m.text().startswith("gross: median ")


def test_ties_only_and_one_ulp() -> None:
    tie = np.array([0.5 + 2.0 ** -12, -(0.25 + 2.0 ** -13)])
    away = np.array([0.5 + 2.0 ** -11, -(0.25 + 2.0 ** -12)])
    m = _tally(tie, away, 2.0 ** -13)
    assert m.cls is MagnitudeClass.TIES_ONLY and m.cls.rounding
    assert (m.neighbours, m.ties) == (2, 2)
    g = np.array([0.5 + 2.0 ** -13])  # not a tie; a = the far neighbour (RNE is 0.5)
    m = _tally(g, np.array([0.5 + 2.0 ** -11]), 2.0 ** -13)
    assert m.cls is MagnitudeClass.ONE_ULP and m.max_ulp == 1


def test_tie_position_far_from_the_exact_value_is_not_a_tie_rounding() -> None:
    """The bug of issue 21: an output larger in magnitude at a tie position, 514 ULP off,
    is gross, not "a tie rounded away"."""
    g = np.array([0.5 + 2.0 ** -12])
    a = np.array([0.5 + 514 * 2.0 ** -11])
    m = _tally(g, a, 2.0 ** -12)
    assert m.cls is MagnitudeClass.GROSS and (m.neighbours, m.ties) == (0, 0)


def test_few_ulp_when_not_neighbours() -> None:
    g = np.array([1.0, 2.0])
    a = np.array([1.0 + 2.0 ** -10, 2.0 - 2.0 ** -10])  # 1 ULP off an exact value
    assert _tally(g, a, 2.0 ** -11).cls is MagnitudeClass.FEW_ULP


def test_special_values() -> None:
    g = np.array([1.0, 2.0])
    m = _tally(g, np.array([np.nan, np.inf]), 1e-3)
    assert m.cls is MagnitudeClass.SPECIAL and m.special == 2
    m = _tally(np.array([1.0, 2.0]), np.array([np.nan, 2.0 + 2.0 ** -9]), 1e-3)
    assert m.cls is MagnitudeClass.GROSS  # a NaN mismatch is never a rounding question


def test_bfloat16_ulps() -> None:
    g = np.array([1.0 + 2.0 ** -9])  # a bf16 tie between 1 and 1 + 2**-7 ... no: 2**-8
    a = np.array([float(np.float32(ml_dtypes.bfloat16(1.0 + 2.0 ** -7)))])
    m = _tally(g, a, 2.0 ** -9, fmt=BFLOAT16)
    assert m.max_ulp == 1 and m.cls in (MagnitudeClass.ONE_ULP, MagnitudeClass.TIES_ONLY)


def test_median_from_histogram_is_close() -> None:
    rng = np.random.default_rng(1)
    g = rng.standard_normal(5000)
    k = rng.integers(100, 2000, 5000)
    a = g + k * np.abs(g) * 2.0 ** -10  # about k float16 ULP off
    m = _tally(g, a, 1e-9)
    true = float(np.median(np.abs(
        _ordered16(correctly_rounded(a, FLOAT16)) - _ordered16(correctly_rounded(g, FLOAT16)))))
    assert abs(math.log2(m.median_ulp / true)) < 0.2


def _ordered16(x: np.ndarray) -> np.ndarray:
    from aclcheck.dtypes import ordered_bits
    return ordered_bits(x.astype(np.float16), FLOAT16).astype(np.int64)


def test_classify_table() -> None:
    assert magnitude_class(0, 0, 0, 0, 0, 0) is MagnitudeClass.NONE
    assert magnitude_class(4, 1.0, 5, 5, 5, 0) is MagnitudeClass.GROSS
    assert magnitude_class(1, 16.0, 5, 5, 5, 0) is MagnitudeClass.GROSS
    assert magnitude_class(3, 2.0, 5, 5, 0, 0) is MagnitudeClass.ONE_ULP
    assert magnitude_class(1, 2.0, 5, 4, 0, 0) is MagnitudeClass.FEW_ULP


def test_merge_and_headline() -> None:
    a = MagnitudeTally()
    a.add_elements(100)
    a.update(np.array([900.0, 950.0]), np.array([700.0, 800.0]), np.zeros(2, bool),
             np.zeros(2, bool))
    b = MagnitudeTally()
    b.add_elements(100)
    b.update(np.array([1.0]), np.array([2.0]), np.ones(1, bool), np.ones(1, bool))
    merged = MagnitudeTally()
    merged.merge(a)
    merged.merge(b)
    assert merged.result().wrong == 3 and merged.result().elements == 200
    cases = [a.result(), a.result(), b.result()]
    summary = summarize_magnitudes(cases)
    assert [s.cls for s in summary] == [MagnitudeClass.GROSS, MagnitudeClass.TIES_ONLY]
    text = magnitude_headline(summary)
    assert text is not None
    assert re.match(r"gross: median (8|9)\d\d ULP \(\d+x budget\) on 2 % of elements of "
                    r"2 cases, max \d+ ULP \(\d+x budget\); ties-only: median 1 ULP",
                    text), text
    assert text.index("gross") < text.index("ties-only")
    assert magnitude_headline(summarize_magnitudes([])) is None


def test_json_round_trip_and_checks() -> None:
    m = _tally(np.array([1.0, 2.0]), np.array([1.5, 2.0 + 2.0 ** -9]), 1e-4)
    assert Magnitude.from_json(m.to_json()) == m
    assert Magnitude.from_json(None) is None
    with pytest.raises(ValueError, match="magnitude"):
        Magnitude.from_json({"class": "huge"})
    with pytest.raises(ValueError, match="wrong"):
        Magnitude.from_json({**m.to_json(), "wrong": -1})
