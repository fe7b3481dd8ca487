"""Value draws every operator's inputs use: the vendor suites' random distributions,
IEEE special values, subnormal and near-max values, and the values of non-float dtypes
(used by invalid calls only). float64 before rounding to the tensor's dtype; each draw
reads only the generator it is given (seeded per case and tensor), so values never
depend on which other cases were made.
"""

from __future__ import annotations

import math

import numpy as np

from aclcheck.dtypes import FLOAT_FORMATS, NUMPY_DTYPES

#: Distributions of special values (special_floats draws them).
SPECIAL_DISTS: tuple[str, ...] = ("special", "inf-fill", "nan-fill", "subnormal", "near-max")


def random_floats(rng: np.random.Generator, shape: tuple[int, ...], dist: str,
                   dtype: str) -> np.ndarray:
    """float64 values of one of the random distributions (before rounding to dtype)."""
    n = math.prod(shape)
    if dist == "uniform":
        return rng.uniform(-5.0, 5.0, n).reshape(shape)
    if dist == "small":
        return rng.uniform(-1e-3, 1e-3, n).reshape(shape)
    if dist == "ones":
        return np.ones(shape)
    # normal / outliers: the vendor's parameterisation, one (mean, std) per tensor
    if rng.random() < 0.5:
        mean, std = rng.uniform(-100.0, 100.0), rng.uniform(1.0, 25.0)
    else:
        mean, std = rng.uniform(-5.0, 5.0), rng.uniform(0.1, 2.0)
    vals = rng.normal(mean, std, n)
    if dist == "outliers" and n:
        k = max(1, n // 100)
        pick = rng.choice(n, size=k, replace=False)
        vals[pick] *= 1000.0
        if dtype in FLOAT_FORMATS:  # outliers, not overflow: x1000 passes fp16's 65504
            limit = FLOAT_FORMATS[dtype].max_value / 8
            np.clip(vals, -limit, limit, out=vals)
    return vals.reshape(shape)


def special_floats(rng: np.random.Generator, shape: tuple[int, ...], dist: str,
                    dtype: str) -> np.ndarray:
    fmt = FLOAT_FORMATS[dtype]
    n = math.prod(shape)
    if dist == "inf-fill":
        sign = 1.0 if rng.random() < 0.5 else -1.0
        return np.full(shape, sign * np.inf)
    if dist == "nan-fill":
        return np.full(shape, np.nan)
    if dist == "subnormal":
        tiny = fmt.smallest_subnormal
        return (rng.integers(-64, 65, n) * tiny).reshape(shape)
    if dist == "near-max":
        mags = rng.uniform(0.5, 1.0, n) * fmt.max_value
        return (np.where(rng.random(n) < 0.5, -1.0, 1.0) * mags).reshape(shape)
    # "special": ordinary values with each IEEE special sprinkled in
    vals = rng.uniform(-5.0, 5.0, n)
    if n:
        specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, fmt.smallest_subnormal,
                             -fmt.smallest_subnormal * 3, fmt.max_value, -fmt.max_value])
        k = min(n, max(len(specials), n // 8))
        pick = rng.choice(n, size=k, replace=False)
        vals[pick] = specials[np.arange(k) % len(specials)]
    return vals.reshape(shape)


def other_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Values of a dtype without a float format (float64, integers, bool), in that
    dtype: small numbers, enough for a call that must be rejected anyway."""
    n = math.prod(shape)
    if dtype == "float64":
        return rng.uniform(-5.0, 5.0, n).reshape(shape)
    if dtype == "bool":
        return rng.integers(0, 2, n).reshape(shape).astype(np.bool_)
    np_dtype = NUMPY_DTYPES[dtype]
    info = np.iinfo(np_dtype)
    lo, hi = max(info.min, -5), min(info.max, 5)
    return rng.integers(lo, hi + 1, n).reshape(shape).astype(np_dtype)
