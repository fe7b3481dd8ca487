"""The error metrics of a comparison, summed chunk by chunk (aclcheck.judging.case.compare
feeds the chunks): max abs/rel/ULP error, MERE, MARE, RMSE, error balance, cosine and
the special-value counts the standards and the reports read."""

from __future__ import annotations

import math

import numpy as np

from aclcheck.dtypes import FloatFormat, max_ulp_distance
from aclcheck.judging.case.pieces import Piece, SpecialCounts


class Totals:
    """Running sums of the metrics over a comparison's chunks."""

    def __init__(self) -> None:
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.max_ulp = 0
        self.rel_sum = 0.0
        self.rel_max = 0.0
        self.signed_sum = 0.0
        self.sq = 0.0
        self.dot_ag = 0.0
        self.dot_aa = 0.0
        self.dot_gg = 0.0
        self.numeric = 0
        self.nan_bad = 0
        self.inf_bad = 0
        self.special_ok = 0
        self.max_budget_ratio = 0.0
        self.near_threshold = 0
        self.acc_overflow = 0
        self.saturated = 0
        self.unjudged = 0

    def add(self, counts: SpecialCounts) -> None:
        """A piece's special values."""
        self.nan_bad += counts.nan_bad
        self.inf_bad += counts.inf_bad
        self.special_ok += counts.matched
        self.near_threshold += counts.near_threshold
        self.acc_overflow += counts.acc_overflow
        self.saturated += counts.saturated
        self.unjudged += counts.unjudged

    def update(self, ch: Piece, fmt: FloatFormat) -> None:
        if ch.g.size == 0:
            return
        self.numeric += ch.numeric
        err, d, g, a = ch.err, ch.d, ch.g, ch.a
        self.max_abs = max(self.max_abs, float(err.max()))
        # einsum, not np.dot: BLAS dot spawns threads that stall on busy machines
        self.sq += float(np.einsum("i,i->", d, d))
        self.dot_ag += float(np.einsum("i,i->", a, g))
        self.dot_aa += float(np.einsum("i,i->", a, a))
        self.dot_gg += float(np.einsum("i,i->", g, g))
        den = ch.absg + 1e-7
        signed = np.divide(d, den)
        self.signed_sum += float(signed.sum())
        np.abs(signed, out=signed)
        self.rel_sum += float(signed.sum())
        self.rel_max = max(self.rel_max, float(signed.max()))
        rel = ch.rel
        top = float(np.fmax.reduce(rel))
        if not math.isfinite(top):  # zero goldens: excluded from the relative error
            rel = np.where(ch.absg == 0, 0.0, rel)
            top = float(np.fmax.reduce(rel))
        self.max_rel = max(self.max_rel, top if math.isfinite(top) else 0.0)
        self.max_ulp = max(self.max_ulp, max_ulp_distance(a, g, fmt))


def metrics_of(t: Totals, n: int, ratio: float, mismatches: int) -> dict[str, float | int]:
    """The metrics record of a comparison of `n` elements (JSON-able numbers)."""
    num = t.numeric
    norm = math.sqrt(t.dot_aa) * math.sqrt(t.dot_gg)
    if norm > 0:
        cosine = t.dot_ag / norm
    else:
        cosine = 1.0 if t.dot_aa == t.dot_gg else 0.0
    return {
        "elements": n,
        "numeric_elements": num,
        "max_abs_err": t.max_abs,
        "max_rel_err": t.max_rel,
        "max_ulp": t.max_ulp,
        "mismatch_ratio": ratio,
        "mismatches": mismatches,
        "mere": t.rel_sum / num if num else 0.0,
        "mare": t.rel_max,
        "rmse": math.sqrt(t.sq / num) if num else 0.0,
        "error_balance": t.signed_sum / num if num else 0.0,
        "cosine": float(min(1.0, max(-1.0, cosine))),
        "nan_mismatch": t.nan_bad,
        "inf_mismatch": t.inf_bad,
        "special_matched": t.special_ok,
        "max_budget_ratio": t.max_budget_ratio,
    }
