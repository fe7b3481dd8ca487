"""Special values under the two overflow modes (docs/contract.md section 10)."""

from __future__ import annotations

import numpy as np

from aclcheck.dtypes import FLOAT16, FLOAT32
from aclcheck.judging.overflow import OverflowMode, classify

INF, NAN = np.inf, np.nan
MAX16 = FLOAT16.max_value


def _one(g, a, *, m=None, extra=1.0, mode=OverflowMode.INF_NAN, acc=FLOAT32, unjudged=None,
         fmt=FLOAT16):
    """Classify one element: 'numeric', 'ok' or 'bad' (and the Specials record)."""
    arr = lambda x: np.array([x], dtype=np.float64)  # noqa: E731
    s = classify(arr(g), arr(a), arr(extra), arr(abs(g) if m is None else m), fmt,
                 acc.overflow_threshold, mode,
                 None if unjudged is None else np.array([unjudged]))
    kind = "numeric" if s.numeric[0] else "ok" if s.ok[0] else "bad"
    assert s.numeric[0] + s.ok[0] + s.bad[0] == 1
    return kind, s


class TestInfNan:
    def test_overflow_must_be_inf(self):
        assert _one(70000.0, INF)[0] == "ok"
        assert _one(70000.0, MAX16)[0] == "bad"
        assert _one(-70000.0, -INF)[0] == "ok"

    def test_near_the_threshold_inf_or_the_number(self):
        thr = FLOAT16.overflow_threshold
        kind, s = _one(thr - 0.5, INF, extra=1.0)
        assert kind == "ok" and s.near_threshold == 1
        assert _one(thr - 0.5, MAX16, extra=1.0)[0] == "numeric"

    def test_nan_and_inf_must_match_and_an_accumulator_may_overflow(self):
        assert _one(NAN, NAN)[0] == "ok"
        assert _one(NAN, 1.0)[0] == "bad"
        assert _one(INF, INF)[0] == "ok" and _one(INF, -INF)[0] == "bad"
        kind, s = _one(3.0, NAN, m=1e39, fmt=FLOAT32)
        assert kind == "ok" and s.acc_overflow == 1
        assert _one(3.0, NAN)[0] == "bad"
        assert _one(3.0, 3.0)[0] == "numeric"


class TestSaturation:
    S = OverflowMode.SATURATION

    def test_overflow_must_be_the_largest_finite_value(self):
        kind, s = _one(70000.0, MAX16, mode=self.S)
        assert kind == "ok" and s.saturated == 1
        assert _one(-70000.0, -MAX16, mode=self.S)[0] == "ok"
        assert _one(70000.0, INF, mode=self.S)[0] == "bad"
        assert _one(70000.0, 60000.0, mode=self.S)[0] == "bad"
        assert _one(70000.0, -MAX16, mode=self.S)[0] == "bad"

    def test_finite_inputs_never_give_inf_or_nan(self):
        assert _one(3.0, INF, mode=self.S)[0] == "bad"
        assert _one(3.0, NAN, mode=self.S)[0] == "bad"
        assert _one(3.0, 3.0, mode=self.S)[0] == "numeric"

    def test_a_saturating_accumulator_leaves_any_finite_value(self):
        kind, s = _one(3.0, 123.0, m=1e5, mode=self.S, acc=FLOAT16)
        assert kind == "ok" and s.acc_overflow == 1
        assert _one(3.0, INF, m=1e5, mode=self.S, acc=FLOAT16)[0] == "bad"
        assert _one(3.0, 123.0, m=1e4, mode=self.S, acc=FLOAT16)[0] == "numeric"

    def test_planes_with_inf_or_nan_inputs_are_not_judged(self):
        kind, s = _one(3.0, INF, mode=self.S, unjudged=True)
        assert kind == "ok" and s.unjudged == 1
        assert _one(NAN, 5.0, mode=self.S)[0] == "ok"  # a non-finite golden: inputs were
        assert _one(3.0, 5.0, mode=self.S, unjudged=False)[0] == "numeric"
