"""aclcheck's own standard (the default): every element within its error budget
(budget.py), and the round-to-nearest-even result, bit for bit, where the product's path
computes an element exactly (exactness.py). docs/tolerances.md says why and how c was
measured."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from aclcheck.dtypes import half_ulp
from aclcheck.judging.case.exactness import ExactTally
from aclcheck.judging.case.hints import Hint
from aclcheck.judging.case.pieces import Piece
from aclcheck.judging.case.rule import (
    FLOAT64_ROW,
    STANDARD_DTYPES,
    OverrideLookup,
    Standard,
    StandardResult,
    StandardTally,
    same_for_every_dtype,
)
from aclcheck.options import DEFAULT_STANDARD

#: c of the default standard, chosen from measurement (docs/tolerances.md): the largest
#: error of correct FP32-accumulating kernels beyond the output's half ULP, in units of
#: k * u_acc * m, was 0.87 on the default suite plus upsampling and special cases; the
#: worst-case bound of the A2/A3 path is (k + 1) * u * m <= 2 * k * u * m.
DEFAULT_C = 2.0


@dataclass
class AclcheckTally(StandardTally):
    path_saved: int = 0  # elements within budget only thanks to the scale term
    exact: ExactTally = field(default_factory=ExactTally)


class Aclcheck(Standard):
    name = DEFAULT_STANDARD
    title = "aclcheck per-element error budget (default)"
    source = "aclcheck (docs/tolerances.md); product paths from docs/contract.md section 6"
    #: {magnitude_source}: what m sums, in the operator's words (its Display)
    rule = ("every element within ulp_out(|g|+E)/2 + E, E = ((c*k + r)*u_acc + eps_scale)*m "
            "+ c*k*eta_acc + atol; m = backward of {magnitude_source}, k = terms per "
            "element; where the product's path computes an element exactly, the RNE result "
            "(ties to even) bit for bit; NaN/inf must match")
    #: float64 too: the budget is derived from the path (DOUBLE's 1x1x1 path, contract code)
    table = same_for_every_dtype({"c": DEFAULT_C, "atol": 0.0, "accumulate": ""},
                                 STANDARD_DTYPES + (FLOAT64_ROW,))
    help = {
        "c": "multiplier of k * u_acc * m (measured, see docs/tolerances.md)",
        "atol": "extra absolute allowance per element (default 0)",
        "accumulate": "accumulation: '' = the product's, float32, input, float16, bfloat16",
    }

    @property
    def widened(self) -> bool:
        """The overrides widen the budget: the exact-rounding check is off."""
        return float(self.params["c"]) > DEFAULT_C or float(self.params["atol"]) > 0.0

    def tally(self) -> AclcheckTally:
        return AclcheckTally()

    def allowed(self, ch: Piece) -> np.ndarray:
        return ch.budget

    def count(self, ch: Piece, allowed: np.ndarray, tally: StandardTally) -> np.ndarray:
        assert isinstance(tally, AclcheckTally)
        if ch.extra0 is not None:
            budget0 = np.add(ch.absg, ch.extra0)
            half_ulp(budget0, self.fmt, out=budget0)
            budget0 += ch.extra0
            saved = np.greater(ch.err, budget0)
            saved &= ch.err <= allowed
            tally.path_saved += int(np.count_nonzero(saved))
        fail = super().count(ch, allowed, tally)
        if ch.exact is not None:
            tally.exact.possible = True
            if not self.widened:
                new = tally.exact.update(ch.exact, ch.raw_g, ch.raw_a, ch.off_nearest,
                                         self.fmt, fail, ch.saturating)
                tally.fails += new
                tally.explained += new
        return fail

    def result(self, tally: StandardTally, n: int, metrics: Mapping[str, float | int]
               ) -> StandardResult:
        assert isinstance(tally, AclcheckTally)
        ratio = metrics.get("max_budget_ratio", 0.0)
        detail = (f"{tally.fails - tally.explained} of {n} elements over budget; max "
                  f"error/budget {ratio:.3g} "
                  f"(c={self.model.c:g}, {self.model.path.arithmetic}, "
                  f"{self.model.path.name} path)")
        notes: list[str] = []
        hints: list[Hint] = []
        if tally.path_saved and self.model.path.scale_note:
            notes.append(f"{tally.path_saved} element(s) {self.model.path.scale_note}")
        if self.widened and tally.exact.possible:
            notes.append("exact-rounding check off: the tolerance override widens the "
                         f"budget (c={self.model.c:g}, atol={self.model.atol:g})")
        elif tally.exact.failed:
            # rounding language leads only when every wrong element is a rounding error
            rounding = tally.exact.rounding_only and tally.fails == tally.explained
            detail = (f"{tally.exact.message()}; {detail}" if rounding
                      else f"{detail}; {tally.exact.message()}")
            hint = tally.exact.hint() if rounding else None
            if hint is not None:
                hints.append(hint)
        return StandardResult(self.name, tally.fails == 0, tally.ratio(n), detail,
                              tuple(notes), tuple(hints))


def accumulation(product: str, dtype: str, cli_accumulate: str | None,
                 overrides: OverrideLookup | None) -> str | None:
    """The accumulation the error budget of a case assumes: --accumulate, else the
    aclcheck standard's `accumulate` parameter (overrides applied), else None (the
    product's own)."""
    if cli_accumulate or dtype not in Aclcheck.table:  # no budget for other dtypes
        return cli_accumulate
    params = Aclcheck.params_for(dtype, product, overrides)
    return str(params["accumulate"]) or None
