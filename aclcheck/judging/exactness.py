"""Which output elements a product's path computes exactly, and the RNE check there.

A per-element budget cannot see how a kernel breaks ties: at an exact tie both
neighbours are half an ULP away. Where the reference can prove that the product's path
(docs/contract.md section 6, as budget.ProductPath describes it) computes an element exactly
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

import math
from dataclasses import dataclass

import numpy as np

from aclcheck.dtypes import (
    FLOAT32,
    FloatFormat,
    correctly_rounded,
    quantum,
    quantum_exponent,
    ulp,
)
from aclcheck.judging.budget import BudgetModel, budget_model
from aclcheck.ops.adaptive.windows import pow2_positions, spread_plan
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward


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
        grad = np.asarray(grad)
        planes = math.prod(grad.shape[:-2])
        if planes == 0 or grad.size == 0:
            return np.zeros(planes)
        if grad.dtype == self.out.np_dtype and self.out.bits_dtype.itemsize == 2:
            e = quantum_exponent(grad, self.out).reshape(planes, -1).min(axis=1)
            q = np.where(e < 1 << 19, np.ldexp(1.0, np.minimum(e, 1100)), np.inf)
        else:
            q = quantum(grad.astype(np.float64)).reshape(planes, -1).min(axis=1)
        q = q / self.max_area  # inf: an all-zero plane
        bound = np.ldexp(np.minimum(q, self.acc.max_value), self.acc.precision)
        bound = np.minimum(bound, self.acc.max_value)
        return np.where(q >= self.acc.smallest_subnormal, bound, 0.0)


def exact_plan(model: BudgetModel, out_hw: tuple[int, int],
               in_hw: tuple[int, int]) -> ExactPlan | None:
    """The plan of one case, or None when no element can be proven exact (FLOAT32
    output, or no row or no column with power-of-two windows only)."""
    if model.fmt is FLOAT32:
        return None
    ph = spread_plan(int(out_hw[0]), int(in_hw[0]))
    pw = spread_plan(int(out_hw[1]), int(in_hw[1]))
    rows, cols = pow2_positions(ph), pow2_positions(pw)
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


def proven_mask(plan: ExactPlan, m3: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """bool (P, H, W): the elements of whole planes proven exact, m3 the sums of
    magnitudes, bounds (P,) the planes' bounds (the comparison asks Prover instead)."""
    mask = np.less(m3, bounds[:, None, None])
    mask &= plan.ok
    if plan.single is not None:
        mask |= plan.single
    return mask


class BlockBounds:
    """The plane bounds of a block of gradOutput planes, computed on first use (once
    per block, shared by its pieces)."""

    def __init__(self, plan: ExactPlan, grad3: np.ndarray) -> None:
        self.plan, self.grad3 = plan, grad3
        self._bounds: np.ndarray | None = None

    def get(self) -> np.ndarray:
        if self._bounds is None:
            self._bounds = self.plan.plane_bounds(self.grad3)
        return self._bounds


@dataclass(frozen=True)
class Prover:
    """The proof for one piece, asked lazily: only elements whose output may differ from
    the RNE value need it (and their block's plane bounds are computed then), so a
    passing piece costs nothing here."""

    plan: ExactPlan
    m3: np.ndarray  # (P, rows, cols) sums of magnitudes
    block: BlockBounds  # bounds of the block's planes
    first_plane: int  # index of the piece's first plane in its block
    rows: slice
    cols: slice

    def proven(self, flat: np.ndarray) -> np.ndarray:
        """Which of the piece's elements at C-order indices `flat` are proven exact."""
        p, r, c = np.unravel_index(flat, self.m3.shape)
        res = self.plan.ok[self.rows, self.cols][r, c]
        res &= self.m3[p, r, c] < self.block.get()[p + self.first_plane]
        if self.plan.single is not None:
            res |= self.plan.single[self.rows, self.cols][r, c]
        return res


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
    """Running tally of the RNE check over the pieces of one comparison. Failing
    elements are classified (tie away from / toward zero, or not a tie) in batches, so a
    piece with a few failures pays for one comparison, not for the classification."""

    BATCH = 1 << 16

    def __init__(self) -> None:
        self.possible = False  # some piece had elements the proof can reach
        self.away = 0  # exact ties rounded away from zero (RNE gives the even neighbour)
        self.toward = 0  # exact ties rounded toward zero, to the odd neighbour
        self.off = 0  # exactly computed non-tie elements not equal to the RNE value
        self._fmt: FloatFormat | None = None
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []  # (golden, actual)
        self._pending_n = 0

    @property
    def failed(self) -> int:
        self._classify()
        return self.away + self.toward + self.off

    def update(self, prover: Prover, g: np.ndarray, a: np.ndarray, suspects: np.ndarray,
               fmt: FloatFormat, fail: np.ndarray) -> int:
        """Judge a piece (g, a raw float64; suspects: the flat indices whose output may
        not be RNE(g), Piece.off_nearest): proven-exact elements whose output is not the
        RNE value fail. Marks them in `fail`, returns how many were not marked before."""
        if suspects.size == 0:
            return 0
        bad = suspects[np.not_equal(a[suspects], correctly_rounded(g[suspects], fmt))]
        if bad.size == 0:
            return 0
        bad = bad[prover.proven(bad)]
        if bad.size == 0:
            return 0
        self._fmt = fmt
        self._pending.append((g[bad], a[bad]))
        self._pending_n += bad.size
        if self._pending_n >= self.BATCH:
            self._classify()
        new = int(np.count_nonzero(~fail[bad]))
        fail[bad] = True
        return new

    def _classify(self) -> None:
        if not self._pending or self._fmt is None:
            return
        gv = np.concatenate([p[0] for p in self._pending])
        av = np.concatenate([p[1] for p in self._pending])
        self._pending, self._pending_n = [], 0
        tie = is_tie(gv, self._fmt)
        away = tie & (np.abs(av) > np.abs(gv))
        toward = tie & (np.abs(av) < np.abs(gv))
        self.away += int(np.count_nonzero(away))
        self.toward += int(np.count_nonzero(toward))
        self.off += int(np.count_nonzero(~away & ~toward))

    def message(self) -> str:
        self._classify()
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
    flat = g.reshape(-1)[proven_mask(plan, m3, plan.plane_bounds(np.asarray(grad))).reshape(-1)]
    flat = flat[np.isfinite(flat)]
    return int(flat.size), int(np.count_nonzero(is_tie(flat, plan.out)))
