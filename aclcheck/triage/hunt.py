"""Search beyond the suite: random valid calls judged on the fly until something fails.

The operator's space draws a valid call (the contract says it must succeed) of a product
and dtype: for adaptive pooling any rank and documented format, shapes with divisible,
non-divisible, upsampling, global and identity windows, every memory layout and every
value distribution (special values included). `search` judges drawn cases until the
wanted number of failures or the time limit; the CLI then shrinks what it found.

Seeded: the same seed draws the same cases in the same order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from aclcheck.cases import Case
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.judging.gate.gate import UNJUDGED
from aclcheck.ops.operator import CaseSpace

Judge = Callable[[Case], CaseVerdict]
#: progress(tries, failures found, last case)
Progress = Callable[[int, int, Case], None]


@dataclass
class HuntResult:
    found: list[tuple[Case, CaseVerdict]] = field(default_factory=list)
    tries: int = 0
    skipped: int = 0
    judged: int = 0  # calls whose verdict says something (not SKIP, not MISTRUSTED)
    seconds: float = 0.0
    timed_out: bool = False


def search(judge: Judge, space: CaseSpace, rng: np.random.Generator,
           products: Sequence[str], dtypes: Sequence[str], *, max_time: float,
           failures: int = 1, progress: Progress | None = None) -> HuntResult:
    """Judge random cases of `space` until `failures` of them fail or `max_time` seconds
    pass."""
    start = time.monotonic()
    result = HuntResult()
    while len(result.found) < failures:
        if time.monotonic() - start > max_time:
            result.timed_out = True
            break
        case = space.random_case(rng, products, dtypes, result.tries)
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
