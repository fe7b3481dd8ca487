"""Which output elements a product's path computes exactly, and the RNE check there.

A per-element budget cannot see how a kernel breaks ties: at an exact tie both
neighbours are half an ULP away. Where the reference can prove that the product's path
(contract.md section 6, as budget.ProductPath describes it) computes an element exactly
before the final conversion to the output dtype, the only correct output is the
round-to-nearest-even value of the golden, ties to even. The proof, per element x:

- every window reaching x has a power-of-two area kh*kw, so the scale 1/(kh*kw) is exact
  in every format the path rounds it to (and the golden's g/(kh*kw) is the path's term);
- every term and every partial sum is representable in the accumulation format, in any
  order: all terms are integer multiples of one power of two q (q = the smallest of
  the plane's gradOutput quanta, the largest power of two dividing each value, divided
  by the largest window area), q is at
  least the accumulation format's smallest subnormal, and m[x] (the sum of the terms'
  magnitudes) is below 2**precision_acc * q and the format's max;
- or x has one term and the path's term rounding is itself the rounding to the output
  dtype (the 1x1 fill path, and the matmul path whose terms are rounded to the input
  dtype): out = RNE(g * scale) = RNE(golden).

FLOAT32 outputs are not judged here: no product converts a wider accumulator to FLOAT32,
so no tie can be exact before a final conversion. An override that widens the budget
turns the check off (the standard says so in a note).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aclcheck.budget import BudgetModel, budget_model
from aclcheck.dtypes import FLOAT32, FloatFormat, correctly_rounded, quantum, ulp
from aclcheck.reference import SpreadPlan, backward, spread_plan


@dataclass(frozen=True)
class ExactPlan:
    """The case-level part of the proof: which rows and columns have only power-of-two
    windows, the largest such area, and the formats involved."""

    out: FloatFormat  # output (= input) format
    acc: FloatFormat  # accumulation format
    ok: np.ndarray  # bool (H, W): every window reaching the element has a pow2 area
    single: np.ndarray | None  # bool (H, W): ok and one term, on a path whose term
    # rounding is the final rounding (None: not such a path)
    max_area: int

    def plane_bounds(self, grad: np.ndarray) -> np.ndarray:
        """Per plane of a gradOutput block (..., Ho, Wo): the bound 2**p_acc * q below which
        m proves an element exact (0 where no element of the plane can be proven)."""
        g = np.asarray(grad, dtype=np.float64).reshape(-1, *grad.shape[-2:])
        if g.shape[0] == 0 or g[0].size == 0:
            return np.zeros(g.shape[0])
        q = quantum(g).min(axis=(1, 2)) / self.max_area  # inf: an all-zero plane
        bound = np.ldexp(np.minimum(q, self.acc.max_value), self.acc.precision)
        bound = np.minimum(bound, self.acc.max_value)
        return np.where(q >= self.acc.smallest_subnormal, bound, 0.0)


def _pow2_rows(plan: SpreadPlan) -> np.ndarray:
    """Input positions whose covering windows all have power-of-two sizes."""
    sizes = np.append(plan.sizes, 1)  # the pad slot (out_size) counts as fine
    pow2 = (sizes > 0) & ((sizes & (sizes - 1)) == 0)
    if plan.index.size == 0:
        return np.zeros(plan.in_size, dtype=bool)
    return np.all(pow2[plan.index], axis=0)


def exact_plan(model: BudgetModel, out_hw: tuple[int, int],
               in_hw: tuple[int, int]) -> ExactPlan | None:
    """The plan of one case, or None when no element can be proven exact (FLOAT32
    output, or no row or no column with power-of-two windows only)."""
    if model.fmt is FLOAT32:
        return None
    ph = spread_plan(int(out_hw[0]), int(in_hw[0]))
    pw = spread_plan(int(out_hw[1]), int(in_hw[1]))
    rows, cols = _pow2_rows(ph), _pow2_rows(pw)
    if not rows.any() or not cols.any():
        return None
    area = int(ph.sizes.max()) * int(pw.sizes.max())
    scale = model.path.scale_format
    if area <= 0 or 1.0 / area < scale.smallest_subnormal:
        return None
    ok = np.multiply.outer(rows, cols)
    single = None
    if model.path.name == "global-1x1" or model.path.accumulate is model.fmt:
        single = ok & (model.k() == 1)
    return ExactPlan(model.fmt, model.path.accumulate, ok, single, area)


def select(plan: ExactPlan, m3: np.ndarray, bounds: np.ndarray, rows: slice,
           cols: slice) -> np.ndarray:
    """Flat indices (C order within the piece) of the proven-exact elements of a piece:
    m3 (P, rows, cols) the sums of magnitudes, bounds (P,) the planes' bounds."""
    ok = plan.ok[rows, cols]
    cand = np.less(m3, bounds[:, None, None])
    cand &= ok
    if plan.single is not None:
        cand |= plan.single[rows, cols]
    return np.flatnonzero(cand)


def is_tie(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Finite float64 values exactly halfway between two adjacent values of `fmt` (the
    overflow threshold, max + half an ULP, counts: RNE takes it to inf)."""
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ax = np.abs(x)
        ar = np.abs(correctly_rounded(x, fmt))
        fin = np.isfinite(ar)
        arf = np.where(fin, ar, 0.0)
        up = arf > ax  # rounded up in magnitude
        lo = np.where(up, arf - ulp(np.nextafter(arf, 0.0), fmt), arf)
        hi = np.where(up, arf, arf + ulp(arf, fmt))
        mid = fin & (ax != ar) & ((ax - lo) == (hi - ax))
        return np.isfinite(x) & (mid | (~fin & (ax == fmt.overflow_threshold)))


class ExactTally:
    """Running tally of the RNE check over the pieces of one comparison."""

    def __init__(self) -> None:
        self.judged = 0  # elements judged exactly
        self.judged_possible = 0  # elements that would be judged (when the check is off)
        self.away = 0  # exact ties rounded away from zero (RNE gives the even neighbour)
        self.toward = 0  # exact ties rounded toward zero, to the odd neighbour
        self.off = 0  # exactly computed non-tie elements not equal to the RNE value
        self.ties_ok = 0  # exact ties rounded to even

    @property
    def failed(self) -> int:
        return self.away + self.toward + self.off

    def expected(self, ch_g: np.ndarray, idx: np.ndarray, fmt: FloatFormat) -> tuple[
            np.ndarray, np.ndarray]:
        """(indices kept, their RNE values): proven elements with a finite golden."""
        g = ch_g[idx]
        keep = np.isfinite(g)
        idx, g = idx[keep], g[keep]
        return idx, correctly_rounded(g, fmt)

    def update(self, idx: np.ndarray, g: np.ndarray, a: np.ndarray, rne: np.ndarray,
               fmt: FloatFormat, fail: np.ndarray) -> int:
        """Judge the proven elements idx of a piece (g, a raw float64, rne their RNE
        values); marks failures in `fail` and returns how many were not marked before."""
        self.judged += idx.size
        if idx.size == 0:
            return 0
        av = a[idx]
        wrong = av != rne
        tie = is_tie(g[idx], fmt)
        self.ties_ok += int(np.count_nonzero(tie & ~wrong))
        if not wrong.any():
            return 0
        gv = g[idx]
        away = tie & wrong & (np.abs(av) > np.abs(gv))
        toward = tie & wrong & (np.abs(av) < np.abs(gv))
        self.away += int(np.count_nonzero(away))
        self.toward += int(np.count_nonzero(toward))
        self.off += int(np.count_nonzero(wrong & ~away & ~toward))
        bad = idx[wrong]
        new = int(np.count_nonzero(~fail[bad]))
        fail[bad] = True
        return new

    def message(self) -> str:
        parts = []
        if self.away:
            parts.append(f"{self.away} exact ties rounded away from zero")
        if self.toward:
            parts.append(f"{self.toward} exact ties rounded toward zero (to the odd "
                         "neighbour)")
        text = "; ".join(parts)
        if text:
            text += "; RNE gives the even neighbour"
        if self.off:
            text += ("; " if text else "") + (
                f"{self.off} exactly computed elements not their round-to-nearest-even "
                "value")
        return text

    def hint(self) -> str:
        if self.away and not (self.toward or self.off):
            return ("the final conversion rounds ties away from zero (round-half-away); "
                    "the contract asks round-to-nearest-even")
        return ("the conversion to the output dtype is not round-to-nearest-even: "
                "ties away from zero, truncation, rounding toward +inf, or a bias added "
                "before converting?")


def exact_ties(product: str, dtype: str, grad: np.ndarray, golden: np.ndarray,
               accumulate: str | None = None) -> tuple[int, int]:
    """(elements proven exact, of which exact ties) of one case on its product's path,
    for `aclcheck inspect` and the suite's docs (whole arrays: small cases)."""
    if dtype not in ("float16", "bfloat16") or golden.size == 0 or grad.size == 0:
        return 0, 0
    g = np.asarray(golden, dtype=np.float64)
    in_hw = (int(g.shape[-2]), int(g.shape[-1]))
    out_hw = (int(grad.shape[-2]), int(grad.shape[-1]))
    plan = exact_plan(budget_model(product, dtype, out_hw, in_hw, c=0.0,
                                   accumulate=accumulate), out_hw, in_hw)
    if plan is None:
        return 0, 0
    m3 = backward(np.asarray(grad), in_hw, absolute=True).reshape(-1, *in_hw)
    idx = select(plan, m3, plan.plane_bounds(grad), slice(None), slice(None))
    flat = g.reshape(-1)[idx]
    flat = flat[np.isfinite(flat)]
    return int(flat.size), int(np.count_nonzero(is_tie(flat, plan.out)))
