"""Value draws every operator's inputs use: the vendor suites' random distributions,
IEEE special values, subnormal and near-max values, and the values of non-float dtypes
(used by invalid calls only). float64 before rounding to the tensor's dtype; each draw
reads only the generator it is given (seeded per case and tensor), so values never
depend on which other cases were made.
"""

from __future__ import annotations

import math

import numpy as np

from aclcheck.dtypes import FLOAT_FORMATS, NUMPY_DTYPES, round_to

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
    if dtype.startswith("complex"):
        return (rng.uniform(-5.0, 5.0, n) + 1j * rng.uniform(-5.0, 5.0, n)
                ).reshape(shape).astype(NUMPY_DTYPES[dtype])
    np_dtype = NUMPY_DTYPES[dtype]
    info = np.iinfo(np_dtype)
    lo, hi = max(info.min, -5), min(info.max, 5)
    return rng.integers(lo, hi + 1, n).reshape(shape).astype(np_dtype)


# -- values a case states (vendor cases: ranges, laws, fills, the values themselves) -------

#: The constant fills a case may name besides a number.
FILL_WORDS: dict[str, float] = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf,
                                "nan": math.nan}


def fill_value(text: str) -> float:
    """The constant of a fill ("inf", "-inf", "nan" or a number); ValueError otherwise."""
    key = text.strip().lower()
    if key in FILL_WORDS:
        return FILL_WORDS[key]
    return float(key)


def value_spec_problem(fact: str, spec: object, numel: int | None = None) -> str | None:
    """Why a stated value spec (fact: range, normal, fill, values) cannot be drawn, or
    None."""
    if fact == "fill":
        try:
            fill_value(str(spec))
        except ValueError:
            return f"fill {spec!r}: not inf, -inf, nan or a number"
        return None
    vals = tuple(spec)  # type: ignore[call-overload]
    if fact == "range":
        if len(vals) != 2 or not all(math.isfinite(v) for v in vals) or vals[0] > vals[1]:
            return f"range {list(vals)}: need [lo, hi], finite, lo <= hi"
    elif fact == "normal":
        if len(vals) not in (2, 4) or not all(math.isfinite(v) for v in vals):
            return (f"normal {list(vals)}: need [mean, std] or [mean_lo, mean_hi, std_lo, "
                    "std_hi], finite")
        if len(vals) == 4 and (vals[0] > vals[1] or vals[2] > vals[3]):
            return f"normal {list(vals)}: each range needs lo <= hi"
        if min(vals[1:2] if len(vals) == 2 else vals[2:]) < 0:
            return f"normal {list(vals)}: a std must be >= 0"
    elif fact == "values":
        if numel is not None and len(vals) != numel:
            return f"values: {len(vals)} given, the tensor has {numel} elements"
    return None


def stated_values(rng: np.random.Generator, shape: tuple[int, ...], fact: str,
                  spec: object) -> np.ndarray:
    """float64 values a case states for a tensor (before conversion to its dtype): a
    uniform range [lo, hi], a normal law (mean, std, or both drawn from ranges, as ATK's
    "nd" does), a constant fill, or the values themselves in row-major order."""
    n = math.prod(shape)
    if fact == "fill":
        return np.full(shape, fill_value(str(spec)))
    vals = tuple(float(v) for v in spec)  # type: ignore[attr-defined]
    if fact == "range":
        return rng.uniform(vals[0], vals[1], n).reshape(shape)
    if fact == "normal":
        if len(vals) == 4:
            mean, std = rng.uniform(vals[0], vals[1]), rng.uniform(vals[2], vals[3])
        else:
            mean, std = vals
        return rng.normal(mean, std, n).reshape(shape)
    return np.asarray(vals, dtype=np.float64).reshape(shape)


def in_dtype(vals: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values converted to `dtype` as a caller's host code would: rounded to
    nearest for floats, truncated toward zero for integers (NaN and infinities to 0 and
    the type's bounds), nonzero for bool."""
    if dtype in FLOAT_FORMATS:
        with np.errstate(over="ignore"):
            return round_to(vals, FLOAT_FORMATS[dtype])
    np_dtype = np.dtype(NUMPY_DTYPES[dtype])
    if np_dtype.kind in "fc":
        return vals.astype(np_dtype)
    if np_dtype == np.bool_:
        return vals != 0
    info = np.iinfo(np_dtype)
    clean = np.nan_to_num(np.trunc(vals), nan=0.0, posinf=info.max, neginf=info.min)
    return np.clip(clean, info.min, info.max).astype(np_dtype)
