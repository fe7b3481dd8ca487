"""The input values the adaptive-pooling operators share: the average-pooling operators'
value distributions, each input role's own random stream, and the floats of a
distribution no operator shapes itself (the vendor suites' random ones, IEEE specials)."""

from __future__ import annotations

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.values import SPECIAL_DISTS, random_floats, special_floats

#: The average-pooling operators' value distributions: the vendor suites' four random
#: ones, then exact golden, IEEE special values, overflow edge, ones and rounding ties.
AVERAGE_DISTRIBUTIONS: tuple[str, ...] = (
    "normal", "uniform", "small", "outliers", "exact-int", "special", "inf-fill",
    "nan-fill", "subnormal", "near-max", "ones", "ties",
)
#: Random-number stream of each input role (independent draws per tensor).
STREAMS: dict[str, int] = {"grad_output": 1, "self": 2, "indices": 3}


def role_rng(case: Case, role: str) -> np.random.Generator:
    """The generator of one input role's values: the case's seed, the role's stream."""
    return np.random.default_rng([case.seed, STREAMS[role]])


def drawn_floats(rng: np.random.Generator, shape: tuple[int, ...], dist: str,
                 dtype: str) -> np.ndarray:
    """float64 values of an IEEE-special or a random distribution (not yet rounded)."""
    if dist in SPECIAL_DISTS:
        return special_floats(rng, shape, dist, dtype)
    return random_floats(rng, shape, dist, dtype)
