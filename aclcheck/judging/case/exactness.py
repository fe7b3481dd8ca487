"""Which output elements a product's path computes exactly, and the RNE check there.

A per-element budget cannot see how a kernel breaks ties: at an exact tie both
neighbours are half an ULP away. Where the reference can prove that the product's path
(docs/contract.md section 6, as a NumericPath describes it) computes an element exactly
before the final conversion to the output dtype, the only correct output is the
round-to-nearest-even value of the golden, ties to even. The proof, per element x:

- every window reaching x has a power-of-two area kh*kw, so the scale 1/(kh*kw) is exact
  in every format the path rounds it to (and the golden's g/(kh*kw) is the path's term);
- every term and every partial sum is representable in the accumulation format, in any
  order: all terms are integer multiples of one power of two q (q = the smallest of
  the quanta of the plane's input values, the largest power of two dividing each value,
  divided by the largest window area), q is at least the accumulation format's smallest
  subnormal, and m[x] (the sum of the terms'
  magnitudes) is below 2**precision_acc * q and the format's max;
- or x has one term and the path's term rounding is itself the rounding to the output
  dtype (the 1x1 fill path, and the matmul path whose terms are rounded to the input
  dtype): out = RNE(g * scale) = RNE(golden).

FLOAT32 outputs are not judged here: no product converts a wider accumulator to FLOAT32,
so no tie can be exact before a final conversion. An override that widens the budget
turns the check off (the standard says so in a note). The case-level plan (ExactPlan) is
the operator's, in the case's NumericModel; this module applies it to the data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from aclcheck.dtypes import FloatFormat, correctly_rounded, ulp
from aclcheck.judging.case.hints import Hint, HintCode
from aclcheck.judging.case.model import AxisTables, ExactPlan, NumericModel
from aclcheck.judging.case.roundings import is_neighbour


def proven_mask(plan: ExactPlan, m3: np.ndarray, bounds: np.ndarray,
                lead: tuple[int, ...] = ()) -> np.ndarray:
    """bool (P, H, W): the elements of whole planes proven exact, m3 the sums of
    magnitudes, bounds (P,) the planes' bounds, `lead` the sizes of the leading axes
    (the comparison asks Prover instead)."""
    mask = np.less(m3, bounds[:, None, None])
    mask &= _table(plan.ok, lead)
    if plan.single is not None:
        mask |= _table(plan.single, lead)
    return mask


def _table(table: AxisTables, lead: tuple[int, ...]) -> np.ndarray:
    factors = table.plane_factors(lead)
    grid = table.grid()
    return grid if factors is None else np.multiply.outer(factors, grid)


class BlockBounds:
    """The plane bounds of a block of output planes, computed on first use (once per
    block, shared by its pieces) from the quanta of the inputs reaching them."""

    def __init__(self, plan: ExactPlan, quanta: Callable[[], np.ndarray]) -> None:
        self.plan, self.quanta = plan, quanta
        self._bounds: np.ndarray | None = None

    def get(self) -> np.ndarray:
        if self._bounds is None:
            self._bounds = self.plan.plane_bounds(self.quanta())
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
    #: per plane of the block, the leading axes' part of ok / single (None: all true)
    plane_ok: np.ndarray | None = None
    plane_single: np.ndarray | None = None

    def proven(self, flat: np.ndarray) -> np.ndarray:
        """Which of the piece's elements at C-order indices `flat` are proven exact."""
        p, r, c = np.unravel_index(flat, self.m3.shape)
        plane = p + self.first_plane
        res = self.plan.ok.grid(self.rows, self.cols)[r, c]
        if self.plane_ok is not None:
            res &= self.plane_ok[plane]
        res &= self.m3[p, r, c] < self.block.get()[plane]
        if self.plan.single is not None:
            single = self.plan.single.grid(self.rows, self.cols)[r, c]
            if self.plane_single is not None:
                single &= self.plane_single[plane]
            res |= single
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
        self.off = 0  # exactly computed non-tie elements on the other neighbour
        #: exactly computed elements not a neighbour of the exact value: not a rounding
        #: question at all (a tie counts as rounded only when the output is a neighbour)
        self.far = 0
        self._fmt: FloatFormat | None = None
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []  # (golden, actual)
        self._pending_n = 0

    @property
    def failed(self) -> int:
        self._classify()
        return self.away + self.toward + self.off + self.far

    def update(self, prover: Prover, g: np.ndarray, a: np.ndarray, suspects: np.ndarray,
               fmt: FloatFormat, fail: np.ndarray, saturating: bool = False) -> int:
        """Judge a piece (g, a raw float64; suspects: the flat indices whose output may
        not be RNE(g), Piece.off_nearest): proven-exact elements whose output is not the
        RNE value fail (in saturation mode an RNE of inf is the largest finite value of
        its sign). Marks them in `fail`, returns how many were not marked before."""
        if suspects.size == 0:
            return 0
        want = correctly_rounded(g[suspects], fmt)
        if saturating:
            want = np.where(np.isinf(want), np.copysign(fmt.max_value, want), want)
        bad = suspects[np.not_equal(a[suspects], want)]
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
        near = is_neighbour(av, gv, self._fmt)
        tie = is_tie(gv, self._fmt) & near
        away = tie & (np.abs(av) > np.abs(gv))
        toward = tie & (np.abs(av) < np.abs(gv))
        self.away += int(np.count_nonzero(away))
        self.toward += int(np.count_nonzero(toward))
        self.off += int(np.count_nonzero(near & ~away & ~toward))
        self.far += int(np.count_nonzero(~near))

    @property
    def rounding_only(self) -> bool:
        """Every failure is a neighbour of its exact value (a rounding question)."""
        self._classify()
        return self.far == 0

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
                f"{self.off} exactly computed elements on the wrong neighbour of their "
                "exact value")
        if self.far:
            text += ("; " if text else "") + (
                f"{self.far} exactly computed elements not a neighbour of their exact "
                "value (more than a rounding error)")
        return text

    def hint(self) -> Hint | None:
        """A rounding hint, only when every failure is a neighbour of its exact value."""
        if not self.rounding_only:
            return None
        if self.away and not (self.toward or self.off):
            return Hint(HintCode.TIES_AWAY, (
                "the final conversion rounds ties away from zero (round-half-away); the "
                "contract asks round-to-nearest-even"))
        return Hint(HintCode.NOT_RNE, (
            "the conversion to the output dtype is not round-to-nearest-even: ties away "
            "from zero, truncation, rounding toward +inf, or a bias added before "
            "converting?"))


def count_exact_ties(numbers: NumericModel, inputs: Mapping[str, np.ndarray],
                     golden: np.ndarray) -> tuple[int, int]:
    """(elements proven exact, of which exact ties) of one case on its product's path,
    for `aclcheck inspect` and the suite's docs (whole arrays: small cases)."""
    plan = numbers.exact
    if plan is None or golden.size == 0 or any(np.size(v) == 0 for v in inputs.values()):
        return 0, 0
    g = np.asarray(golden, dtype=np.float64)
    h, w = g.shape[-2:]
    planes = g.size // (h * w)
    m3 = numbers.numerics.magnitudes(inputs, ()).reshape(planes, h, w)
    bounds = plan.plane_bounds(numbers.numerics.quanta(inputs, ()))
    flat = g.reshape(-1)[proven_mask(plan, m3, bounds, g.shape[:-2]).reshape(-1)]
    flat = flat[np.isfinite(flat)]
    return int(flat.size), int(np.count_nonzero(is_tie(flat, plan.out)))
