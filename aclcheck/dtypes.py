"""Every dtype fact in one place: the aclDataType names, aliases and enum values, the
numpy dtype and id tag of each, the bit-level facts of the floating-point formats
(rounding, ULP, quanta, the error of a rounded scale); how each is stored is the
store's (aclcheck.store.dtype_codec).

The reference, the store, the contract and the comparison never disagree about what
"one ULP", "bf16" or "fp16" means. Which dtypes an operator accepts on a product is
that operator's contract (aclcheck.ops), not a dtype fact.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import ml_dtypes
import numpy as np

from aclcheck.errors import SuiteError
from aclcheck.options import ACCUMULATE_CHOICES

# -- names ---------------------------------------------------------------------------------

#: Compute dtypes some product supports.
COMPUTE_DTYPES: tuple[str, ...] = ("float16", "float32", "bfloat16")
#: Other aclDataType names, usable only to make invalid calls.
OTHER_DTYPES: tuple[str, ...] = (
    "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
)
ALL_DTYPES: tuple[str, ...] = COMPUTE_DTYPES + OTHER_DTYPES
#: aclDataType names only vendor cases use (kept out of ALL_DTYPES: families rotate on it)
RARE_DTYPES: tuple[str, ...] = ("complex64", "complex128")

DTYPE_ALIASES: dict[str, str] = {
    "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32",
    "bf16": "bfloat16", "fp64": "float64", "double": "float64",
}

#: aclDataType enum values (docs/contract.md §2 and the CANN headers).
ACL_DTYPE_ENUM: dict[str, int] = {
    "float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int16": 6, "uint16": 7,
    "uint32": 8, "int64": 9, "uint64": 10, "float64": 11, "bool": 12, "complex64": 16,
    "complex128": 17, "bfloat16": 27,
}

NUMPY_DTYPES: dict[str, Any] = {
    "float16": np.float16,
    "float32": np.float32,
    "bfloat16": ml_dtypes.bfloat16,
    "float64": np.float64,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "bool": np.bool_, "complex64": np.complex64, "complex128": np.complex128,
}
DTYPE_TAGS: dict[str, str] = {"float16": "fp16", "float32": "fp32", "bfloat16": "bf16",
                              "float64": "fp64"}


def dtype_tag(name: str) -> str:
    return DTYPE_TAGS.get(name, name)


def normalize_dtype(name: str) -> str:
    """Canonical dtype name for a user-supplied one (case-insensitive, aliases allowed)."""
    key = str(name).strip().lower()
    key = DTYPE_ALIASES.get(key, key)
    if key not in (known := ALL_DTYPES + RARE_DTYPES):
        raise SuiteError(f"unknown dtype {name!r}; valid: {', '.join(known)}")
    return key


# -- floating-point formats -------------------------------------------------------------------


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
    def smallest_normal(self) -> float:
        return 2.0 ** self.min_exp

    @property
    def overflow_threshold(self) -> float:
        """Smallest magnitude that rounds to infinity (max + half an ULP at max)."""
        return self.max_value + 2.0 ** (int(np.floor(np.log2(self.max_value))) - self.precision)

    @property
    def first_inexact_integer(self) -> int:
        """2^p + 1: where a count or an index held in the format starts to round."""
        return 2 ** self.precision + 1


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

#: DOUBLE: not a compute dtype (value drawing, accumulation choices and FLOAT_FORMATS
#: leave it out, so invalid DOUBLE calls keep their draws), but an output judging may
#: meet where an operator's implementation accepts it (the 3D operator's 1x1x1 path).
FLOAT64 = FloatFormat(
    "float64", "fp64", np.dtype(np.float64), np.dtype(np.uint64), 53, -1022,
    float(np.finfo(np.float64).max),
)
#: Every format an output can be judged in: the compute formats and FLOAT64.
JUDGED_FORMATS: dict[str, FloatFormat] = {**FLOAT_FORMATS, FLOAT64.name: FLOAT64}


def float_format(name: str) -> FloatFormat:
    """The FloatFormat of a canonical compute dtype name (KeyError if not a compute dtype)."""
    return FLOAT_FORMATS[name]


def judged_format(name: str) -> FloatFormat:
    """The FloatFormat an output of dtype `name` is judged in: a compute dtype's or
    FLOAT64 (KeyError for a dtype no output is judged in)."""
    return JUDGED_FORMATS[name]


def accumulation_format(choice: str, dtype: str) -> FloatFormat:
    """The format an accumulation choice names for inputs of `dtype`: "input" (the input
    dtype) or a compute dtype name or alias (fp16, bf16, ...); ValueError otherwise."""
    key = str(choice).strip().lower()
    if key == "input":
        return judged_format(dtype)
    try:
        return float_format(normalize_dtype(key))
    except (ValueError, KeyError):
        raise ValueError(
            f"unknown accumulation {choice!r}; valid: {', '.join(ACCUMULATE_CHOICES)}"
        ) from None


def round_to(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Round float64/float32 values to `fmt` with round-to-nearest-even.

    float64 inputs go through float32 first (as the suites' generators do); for float16
    and bfloat16 this double rounding is what ml_dtypes and numpy users get by default.
    """
    arr = np.asarray(values)
    if arr.dtype != np.float32:
        return arr.astype(np.float32).astype(fmt.np_dtype, copy=False)
    return arr.astype(fmt.np_dtype)  # a copy: the caller's float32 array stays its own


def round_to_odd_f32(values: np.ndarray) -> np.ndarray:
    """float64 values rounded to float32 with round-to-odd (float32 array).

    Truncate toward zero, then set the last significand bit where the value was inexact.
    float32 keeps 16 more bits than bfloat16, so a round-to-nearest-even from this float32
    to bfloat16 equals the correct single rounding of the float64 value; a plain
    float64 -> float32 -> bfloat16 path rounds twice and can land on the wrong side of a
    bfloat16 tie. Beyond float32's range the result is float32's max (odd), so the final
    rounding still overflows to inf; inf and NaN pass through.
    """
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        near = x.astype(np.float32)
        back = near.astype(np.float64)
        bits = near.view(np.int32)
        bits -= np.abs(back) > np.abs(x)  # one step toward zero (sign-magnitude)
        bits |= back != x  # odd where inexact (NaN stays NaN: its bits are already odd)
    return near


def bfloat16_rounded(values: np.ndarray) -> np.ndarray:
    """float64 values correctly rounded (RNE, one rounding) to bfloat16, held in float32.

    Round-to-odd to float32 (round_to_odd_f32), then round-to-nearest-even on the bits.
    """
    near = round_to_odd_f32(values)
    bits = near.view(np.int32)
    lsb = np.right_shift(bits, 16)
    lsb &= 1
    bits += lsb
    bits += 0x7FFF
    bits &= np.int32(-65536)
    return near


def first_subnormal_reciprocal(fmt: FloatFormat) -> int:
    """The least n with RN_fmt(fl32(1/n)) subnormal (a fill 1/n made in double, narrowed
    to FLOAT32, then to fmt): not 1/smallest normal + 1, which rounds up to it."""
    lo = int(round(1.0 / fmt.smallest_normal))  # normal(lo), not normal(2 lo): bisect
    hi = 2 * lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        normal = correctly_rounded(np.float64(np.float32(1.0 / mid)), fmt) >= fmt.smallest_normal
        lo, hi = (mid, hi) if normal else (lo, mid)
    return hi


def correctly_rounded(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """float64 values rounded once, correctly (RNE), to `fmt`; returned as float64.

    Unlike `round_to`, there is no plain float32 intermediate: this is the "best possible"
    output of an exact kernel, the point ULP distances are measured from.
    """
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # beyond the range: inf, as meant
        if fmt is BFLOAT16:
            return bfloat16_rounded(x).astype(np.float64)
        return x.astype(fmt.np_dtype).astype(np.float64)


_EXP_MASK = np.int64(0x7FF0000000000000)


def half_ulp(x: np.ndarray, fmt: FloatFormat, out: np.ndarray | None = None) -> np.ndarray:
    """Half the spacing of `fmt` at the non-negative finite float64 magnitudes `x`.

    Bit arithmetic (2**floor(log2 x) from the exponent field) rather than frexp: this is
    on the comparison's hot path. Subnormal and zero magnitudes get half the subnormal
    spacing.
    """
    x = np.asarray(x, dtype=np.float64)
    if out is None:
        out = np.empty(x.shape, dtype=np.float64)
    bits = out.view(np.int64)
    np.bitwise_and(x.view(np.int64), _EXP_MASK, out=bits)
    out *= 2.0 ** -fmt.precision
    np.maximum(out, fmt.smallest_subnormal / 2.0, out=out)
    return out


def ulp(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Spacing of `fmt` at |values| (float64): the ULP of the binade holding each value.

    Zero and subnormal magnitudes get the subnormal spacing; inf/NaN give NaN.
    """
    x = np.abs(np.asarray(values, dtype=np.float64))
    finite = np.isfinite(x)
    out = half_ulp(np.where(finite, x, 0.0), fmt)
    out *= 2.0
    return np.where(finite, out, np.nan)


def quantum(values: np.ndarray) -> np.ndarray:
    """The largest power of two dividing each finite nonzero float64 value (its lowest
    set significand bit); 0 and non-finite values give inf (no constraint)."""
    x = np.abs(np.asarray(values, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        mant, exp = np.frexp(np.where(np.isfinite(x), x, 0.0))
        whole = np.ldexp(mant, 53).astype(np.int64)  # the significand as an integer
        low = (whole & -whole).astype(np.float64)
        res = np.ldexp(low, exp - 53)
    return np.where(res > 0, res, np.inf)


def quantum_exponent(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """log2 of quantum() for an array of a 16-bit format, from its bits (int32; zeros
    and non-finite values give a large sentinel). Integer work on the 2-byte values: the
    comparison's exactness analysis calls it on every input block."""
    mant_bits = fmt.precision - 1
    exp_bits = 15 - mant_bits
    bias = (1 << (exp_bits - 1)) - 1
    bits = to_bits(values, fmt).astype(np.int32)
    field = (bits >> mant_bits) & ((1 << exp_bits) - 1)
    sig = bits & ((1 << mant_bits) - 1)
    normal = field > 0
    sig |= normal.astype(np.int32) << mant_bits
    low = sig & -sig  # a power of two, or 0 for a zero
    res = _CTZ[low] + np.maximum(field, 1) - (bias + mant_bits)
    bad = (low == 0) | (field == (1 << exp_bits) - 1)
    return np.where(bad, _QUANTUM_NONE, res)


def plane_quanta(values: np.ndarray, planes: int, fmt: FloatFormat) -> np.ndarray:
    """Per plane of `values` (any shape whose leading dims hold `planes` planes): the
    smallest quantum() of its values (inf for an all-zero plane; 0 for every plane when
    there are no values). Values of a 16-bit `fmt` are read from their bits."""
    values = np.asarray(values)
    if planes == 0 or values.size == 0:
        return np.zeros(planes)
    if values.dtype == fmt.np_dtype and fmt.bits_dtype.itemsize == 2:
        e = quantum_exponent(values, fmt).reshape(planes, -1).min(axis=1)
        return np.where(e < 1 << 19, np.ldexp(1.0, np.minimum(e, 1100)), np.inf)
    return quantum(values.astype(np.float64)).reshape(planes, -1).min(axis=1)


#: Trailing zeros of the powers of two up to 2**16 (index: the power), for quantum bits.
_CTZ = np.zeros((1 << 16) + 1, dtype=np.int32)
_CTZ[1 << np.arange(17)] = np.arange(17)
_QUANTUM_NONE = np.int32(1 << 20)


def to_bits(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Reinterpret an array of `fmt` as its unsigned integer bit patterns (no copy)."""
    arr = np.asarray(values)
    if arr.dtype != fmt.np_dtype:
        raise TypeError(f"expected {fmt.name} array, got {arr.dtype}")
    return arr.view(fmt.bits_dtype)


def held(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """float64 values of `fmt` as fmt's own numpy dtype, for bit reads: through float32
    for the narrower formats (as they always were), directly for FLOAT64."""
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if fmt.np_dtype == np.float64:
            return x.copy()
        return x.astype(np.float32).astype(fmt.np_dtype)


def ordered_bits(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Map each value's bits onto signed integers of the format's width so that adjacent
    floats differ by exactly 1 (-0.0 and +0.0 map to the same integer).

    Subtract two of them in int64 (`np.subtract(..., dtype=np.int64)`) for a ULP distance.
    """
    signed = signed_bits_dtype(fmt)
    width = signed.itemsize * 8
    bits = to_bits(values, fmt).view(signed)
    sign = np.right_shift(bits, width - 1)  # 0 or -1
    res = np.bitwise_and(sign, signed.type((1 << (width - 1)) - 1))
    np.bitwise_xor(res, bits, out=res)
    np.subtract(res, sign, out=res)
    return res


def signed_bits_dtype(fmt: FloatFormat) -> np.dtype:
    """The signed integer dtype of the format's width (what ordered_bits returns)."""
    return np.dtype({2: np.int16, 4: np.int32, 8: np.int64}[fmt.bits_dtype.itemsize])


def ordered_distance(oa: np.ndarray, ob: np.ndarray) -> np.ndarray:
    """|oa - ob| of two ordered_bits arrays, exact, as uint64: 64-bit ones of opposite
    signs would overflow int64 (their distance is the sum of the magnitudes)."""
    oa = np.asarray(oa).astype(np.int64, copy=False)
    ob = np.asarray(ob).astype(np.int64, copy=False)
    same = (oa < 0) == (ob < 0)
    with np.errstate(over="ignore"):
        near = np.abs(np.where(same, oa - ob, 0)).astype(np.uint64)
        far = np.abs(oa).astype(np.uint64) + np.abs(ob).astype(np.uint64)
    return np.where(same, near, far)


def ulp_distance(a: np.ndarray, b: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Number of representable `fmt` values between a and b (both arrays of `fmt`).

    NaN on either side gives -1 (undefined), so callers can mask it.
    """
    a = np.asarray(a, dtype=fmt.np_dtype)
    b = np.asarray(b, dtype=fmt.np_dtype)
    oa, ob = ordered_bits(a, fmt), ordered_bits(b, fmt)
    if fmt.bits_dtype.itemsize == 8:
        dist = ordered_distance(oa, ob)
        dist = np.minimum(dist, np.uint64(np.iinfo(np.int64).max)).astype(np.int64)
    else:
        dist = np.abs(np.subtract(oa, ob, dtype=np.int64))
    nan = np.isnan(a.astype(np.float64)) | np.isnan(b.astype(np.float64))
    return np.where(nan, -1, dist)


def max_ulp_distance(exact: np.ndarray, golden: np.ndarray, fmt: FloatFormat) -> int:
    """Largest ULP distance between `exact` (values of `fmt`, as float64) and the finite
    float64 `golden` correctly rounded to `fmt` (0 for empty arrays)."""
    if exact.size == 0:
        return 0
    if fmt is BFLOAT16:  # bf16 bits are the high half of the float32 holder's
        oa = np.right_shift(ordered_bits(exact.astype(np.float32), FLOAT32), 16)
        og = np.right_shift(ordered_bits(bfloat16_rounded(golden), FLOAT32), 16)
    else:
        oa = ordered_bits(exact.astype(fmt.np_dtype), fmt)
        with np.errstate(over="ignore"):
            og = ordered_bits(golden.astype(fmt.np_dtype), fmt)
    if fmt.bits_dtype.itemsize == 8:
        return int(ordered_distance(oa, og).max())
    diff = np.subtract(oa, og, dtype=np.int64)
    return max(int(diff.max()), -int(diff.min()))


def scale_error(products: Iterable[int], fmt: FloatFormat) -> float:
    """Largest relative error of 1/p rounded to `fmt` over the window sizes p.

    Both a direct rounding of the float64 reciprocal and one through float32 (what a fill
    from a float scalar does) are considered; the larger error counts.
    """
    p = np.unique(np.asarray(list(products), dtype=np.float64))
    p = p[p > 0]
    if p.size == 0:
        return 0.0
    exact = 1.0 / p
    with np.errstate(over="ignore", under="ignore"):
        direct = correctly_rounded(exact, fmt)
        via32 = round_to(exact, fmt).astype(np.float64)
    err = np.maximum(np.abs(direct * p - 1.0), np.abs(via32 * p - 1.0))
    return float(err.max())


@lru_cache(maxsize=1024)
def scale_error_of(sizes: tuple[int, ...], fmt: FloatFormat) -> float:
    """scale_error of a set of window sizes given as a tuple (cached: a suite's cases
    share few such sets, and each case's numeric model asks)."""
    return scale_error(sizes, fmt)
