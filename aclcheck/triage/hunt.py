"""Search beyond the suite: random valid calls judged on the fly until something fails.

`random_case` draws a valid call (the contract says it must succeed) of a product and
dtype: rank 3 or 4, any documented format, shapes with divisible, non-divisible,
upsampling, global and identity windows, every memory layout and every value
distribution (special values included). `search` judges drawn cases until the wanted
number of failures or the time limit; the CLI then shrinks what it found.

Seeded: the same seed draws the same cases in the same order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from aclcheck import contract
from aclcheck.cases import DISTRIBUTIONS, Case, make_id
from aclcheck.judging.gate import UNJUDGED
from aclcheck.judging.verdicts import CaseVerdict, Verdict
from aclcheck.layouts import LAYOUTS

Judge = Callable[[Case], CaseVerdict]
#: progress(tries, failures found, last case)
Progress = Callable[[int, int, Case], None]

#: Window kinds of one axis (output size from the input size), drawn uniformly.
WINDOW_KINDS: tuple[str, ...] = ("divisible", "nondivisible", "upsampling", "global",
                                 "identity")
#: Distributions weighted toward the ordinary random ones.
#: "ties" needs the `rounding` family's shapes (aclcheck.ties): not drawn here
_DISTS = tuple(d for d in DISTRIBUTIONS if d != "ties")
_DIST_WEIGHTS = np.array([4.0 if d in ("normal", "uniform") else 1.0 for d in _DISTS])


def _in_size(rng: np.random.Generator) -> int:
    """Mostly small sizes (fast, and where tails and overlaps show), sometimes larger."""
    return int(rng.integers(1, 21)) if rng.random() < 0.75 else int(rng.integers(21, 97))


def _out_size(rng: np.random.Generator, size: int) -> int:
    kind = WINDOW_KINDS[int(rng.integers(len(WINDOW_KINDS)))]
    if kind == "divisible":
        divisors = [d for d in range(1, size + 1) if size % d == 0]
        return int(divisors[int(rng.integers(len(divisors)))])
    if kind == "nondivisible":
        return int(rng.integers(1, size + 1))
    if kind == "upsampling":
        return int(rng.integers(size + 1, 2 * size + 2))
    return 1 if kind == "global" else size


def random_case(rng: np.random.Generator, products: Sequence[str], dtypes: Sequence[str],
                index: int) -> Case | None:
    """One random valid call, or None when no product offers any of the dtypes."""
    pairs = [(p, d) for p in products for d in contract.PRODUCTS[p].dtypes
             if not dtypes or d in dtypes]
    if not pairs:
        return None
    while True:
        product, dtype = pairs[int(rng.integers(len(pairs)))]
        rank = 4 if rng.random() < 0.7 else 3
        fmt_choices = contract.supported_formats_for_rank(rank)
        fmt = fmt_choices[int(rng.integers(len(fmt_choices)))]
        lead = (int(rng.integers(1, 4)), int(rng.integers(1, 9)))[-(rank - 2):]
        h, w = _in_size(rng), _in_size(rng)
        self_shape = (*lead, h, w)
        grad_shape = (*lead, _out_size(rng, h), _out_size(rng, w))
        dist = str(rng.choice(_DISTS, p=_DIST_WEIGHTS / _DIST_WEIGHTS.sum()))
        layout = LAYOUTS[int(rng.integers(len(LAYOUTS)))]
        case = Case(id=make_id(product, dtype, fmt, f"hunt{index}", self_shape, grad_shape,
                               dist, layout),
                    family="hunt", product=product, dtype=dtype, format=fmt,
                    self_shape=self_shape, grad_shape=grad_shape,
                    seed=int(rng.integers(2**63)), distribution=dist, layout=layout)
        if case.positive and not case.expectation.unspecified:
            return case


@dataclass
class HuntResult:
    found: list[tuple[Case, CaseVerdict]] = field(default_factory=list)
    tries: int = 0
    skipped: int = 0
    judged: int = 0  # calls whose verdict says something (not SKIP, not MISTRUSTED)
    seconds: float = 0.0
    timed_out: bool = False


def search(judge: Judge, rng: np.random.Generator, products: Sequence[str],
           dtypes: Sequence[str], *, max_time: float, failures: int = 1,
           progress: Progress | None = None) -> HuntResult:
    """Judge random cases until `failures` of them fail or `max_time` seconds pass."""
    start = time.monotonic()
    result = HuntResult()
    while len(result.found) < failures:
        if time.monotonic() - start > max_time:
            result.timed_out = True
            break
        case = random_case(rng, products, dtypes, result.tries)
        if case is None:
            break
        result.tries += 1
        verdict = judge(case)
        result.judged += verdict.verdict not in UNJUDGED
        if verdict.verdict == Verdict.SKIP:
            result.skipped += 1
        elif verdict.failing:
            result.found.append((case, verdict))
        if progress is not None:
            progress(result.tries, len(result.found), case)
    result.seconds = time.monotonic() - start
    return result
