"""Floating-point formats the operator accepts: rounding, ULP, and the storage codec.

One place that knows float16 / float32 / bfloat16 bit-level facts, so the reference,
the store and the comparison never disagree about what "one ULP" or "bf16" means.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    """Bit-level description of one compute dtype."""

    name: str  # canonical name: float16, float32, bfloat16
    short: str  # tag used in case ids: fp16, fp32, bf16
    np_dtype: np.dtype  # numpy dtype (ml_dtypes.bfloat16 for bf16)
    bits_dtype: np.dtype  # unsigned integer of the same width (storage of bf16)
    precision: int  # significand bits including the implicit one
    min_exp: int  # exponent of the smallest normal number (2**min_exp)
    max_value: float

    @property
    def unit_roundoff(self) -> float:
        """u = 2**-precision: the relative error bound of one round-to-nearest."""
        return 2.0 ** -self.precision

    @property
    def smallest_subnormal(self) -> float:
        return 2.0 ** (self.min_exp - self.precision + 1)

    @property
    def overflow_threshold(self) -> float:
        """Smallest magnitude that rounds to infinity (max + half an ULP at max)."""
        return self.max_value + 2.0 ** (int(np.floor(np.log2(self.max_value))) - self.precision)


FLOAT16 = FloatFormat(
    "float16", "fp16", np.dtype(np.float16), np.dtype(np.uint16), 11, -14, 65504.0
)
FLOAT32 = FloatFormat(
    "float32",
    "fp32",
    np.dtype(np.float32),
    np.dtype(np.uint32),
    24,
    -126,
    float(np.finfo(np.float32).max),
)
BFLOAT16 = FloatFormat(
    "bfloat16",
    "bf16",
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(np.uint16),
    8,
    -126,
    float(ml_dtypes.finfo(ml_dtypes.bfloat16).max),
)

FLOAT_FORMATS: dict[str, FloatFormat] = {f.name: f for f in (FLOAT16, FLOAT32, BFLOAT16)}


def float_format(name: str) -> FloatFormat:
    """The FloatFormat of a canonical compute dtype name (KeyError if not a compute dtype)."""
    return FLOAT_FORMATS[name]


def round_to(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Round float64/float32 values to `fmt` with round-to-nearest-even.

    float64 inputs go through float32 first (as the suites' generators do); for float16
    and bfloat16 this double rounding is what ml_dtypes and numpy users get by default.
    """
    arr = np.asarray(values)
    if arr.dtype != np.float32:
        arr = arr.astype(np.float32)
    return arr.astype(fmt.np_dtype)


def correctly_rounded(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """float64 values rounded once, correctly, to `fmt`; returned as float64.

    Unlike `round_to`, there is no float32 intermediate: this is the "best possible"
    output of an exact kernel, the point ULP distances are measured from.
    """
    x = np.asarray(values, dtype=np.float64)
    if fmt is FLOAT32:
        with np.errstate(over="ignore"):  # beyond the format's range: inf, as intended
            return x.astype(np.float32).astype(np.float64)
    if fmt is FLOAT16:
        with np.errstate(over="ignore"):
            return x.astype(np.float16).astype(np.float64)
    # bfloat16: ml_dtypes casts float64 through float32 (double rounding). Round to float32
    # with round-to-odd first (truncate, then set the last bit if inexact): float32 keeps
    # 16 more bits than bf16, so the final round-to-nearest-even is then exact.
    with np.errstate(over="ignore", invalid="ignore"):
        near = x.astype(np.float32)
        bits = near.view(np.uint32).copy()
        inexact = np.isfinite(x) & (near.astype(np.float64) != x)
        away = inexact & (np.abs(near.astype(np.float64)) > np.abs(x))
        bits[away] -= 1  # step toward zero: truncation (inf steps back to max)
        bits[inexact] |= 1
        return bits.view(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def ulp(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Spacing of `fmt` at |values| (float64): the ULP of the binade holding each value.

    Zero and subnormal magnitudes get the subnormal spacing; inf/NaN give NaN.
    """
    x = np.abs(np.asarray(values, dtype=np.float64))
    _, exp = np.frexp(x)  # x = m * 2**exp, m in [0.5, 1)
    e = np.maximum(exp.astype(np.int64) - fmt.precision, fmt.min_exp - fmt.precision + 1)
    out = np.ldexp(1.0, np.where(x == 0, fmt.min_exp - fmt.precision + 1, e))
    return np.where(np.isfinite(x), out, np.nan)


def to_bits(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Reinterpret an array of `fmt` as its unsigned integer bit patterns (no copy)."""
    arr = np.asarray(values)
    if arr.dtype != fmt.np_dtype:
        raise TypeError(f"expected {fmt.name} array, got {arr.dtype}")
    return arr.view(fmt.bits_dtype)


def ordered_bits(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Map each value's bits onto int64 so that adjacent floats differ by exactly 1.

    -0.0 and +0.0 map to the same integer. Used for ULP distances between two arrays of
    the same format.
    """
    bits = to_bits(values, fmt).astype(np.int64)
    sign_bit = np.int64(1) << (fmt.bits_dtype.itemsize * 8 - 1)
    magnitude = bits & (sign_bit - 1)
    return np.where(bits & sign_bit, -magnitude, magnitude)


def ulp_distance(a: np.ndarray, b: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Number of representable `fmt` values between a and b (both arrays of `fmt`).

    NaN on either side gives -1 (undefined), so callers can mask it.
    """
    a = np.asarray(a, dtype=fmt.np_dtype)
    b = np.asarray(b, dtype=fmt.np_dtype)
    dist = np.abs(ordered_bits(a, fmt) - ordered_bits(b, fmt))
    nan = np.isnan(a.astype(np.float32)) | np.isnan(b.astype(np.float32))
    return np.where(nan, -1, dist)


def to_storage(values: np.ndarray) -> np.ndarray:
    """Array as it is stored in HDF5: bfloat16 as uint16 bits, others unchanged."""
    arr = np.asarray(values)
    if arr.dtype == BFLOAT16.np_dtype:
        return arr.view(np.uint16)
    return arr


def from_storage(stored: np.ndarray, dtype_name: str) -> np.ndarray:
    """Inverse of `to_storage`: reinterpret stored bits as the named dtype."""
    arr = np.asarray(stored)
    if dtype_name == "bfloat16":
        if arr.dtype != np.uint16:
            raise TypeError(f"bfloat16 data must be stored as uint16, found {arr.dtype}")
        return arr.view(ml_dtypes.bfloat16)
    return arr
