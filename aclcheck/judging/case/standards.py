"""The published tolerance standards (docs/contract.md section 7), with their numbers as
published, and every standard by name.

Each standard is a `Standard` (rule.py) registered in STANDARDS_BY_NAME (as torch's
testing/_comparison.py gives each input kind its own Pair class): its class attributes
hold the published numbers per dtype and the meaning of each parameter; an instance
judges one comparison without changing (`allowed` per piece, `count` into its tally,
`result` at the end). aclcheck's own standard lives in default_standard.py; TOML
overrides of the numbers in overrides.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from aclcheck.judging.case.default_standard import Aclcheck
from aclcheck.judging.case.pieces import Piece
from aclcheck.judging.case.rule import (
    FLOAT64_ROW,
    Standard,
    StandardResult,
    StandardTally,
    same_for_every_dtype,
)
from aclcheck.options import DEFAULT_STANDARD


class _Tol(Standard):
    """|a-g| <= atol + rtol*|g| per element (cann-mixed, assert-close)."""

    def allowed(self, ch: Piece) -> np.ndarray:
        res = np.multiply(ch.absg, float(self.params["rtol"]))
        res += float(self.params["atol"])
        return res


class CannMixed(_Tol):
    name = "cann-mixed"
    title = "CANN mixed tolerance (current)"
    source = "CANN accuracy standard, docs/contract.md section 7"
    rule = ("element ok if |a-g| <= atol + rtol*|g|; case ok if mismatches <= max_mismatch "
            "and max |a-g| <= cap")
    table = {
        "float16": {"rtol": 2.0**-9, "atol": 2.0**-9, "cap": 0.1, "max_mismatch": 0.01},
        "bfloat16": {"rtol": 2.0**-6, "atol": 2.0**-6, "cap": 1.0, "max_mismatch": 0.01},
        "float32": {"rtol": 2.0**-10, "atol": 2.0**-16, "cap": 0.01, "max_mismatch": 0.01},
    }
    help = {
        "rtol": "relative tolerance per element",
        "atol": "absolute tolerance per element",
        "cap": "largest |a-g| allowed anywhere",
        "max_mismatch": "fraction of elements allowed out of tolerance",
    }

    def result(self, tally: StandardTally, n: int, metrics: Mapping[str, float | int]
               ) -> StandardResult:
        max_err = math.inf if tally.bad else float(metrics["max_abs_err"])
        cap = float(self.params["cap"])
        limit = float(self.params["max_mismatch"])
        ok = tally.ratio(n) <= limit and max_err <= cap
        detail = (f"{tally.ratio(n):.3%} of elements out of tolerance (limit {limit:.0%}), "
                  f"max |a-g| {max_err:.3g} (cap {cap:g})")
        return StandardResult(self.name, ok, tally.ratio(n), detail)


@dataclass
class MereTally(StandardTally):
    rel_sum: float = 0.0
    rel_max: float = 0.0
    normal: int = 0
    small_fails: int = 0


class CannMere(Standard):
    name = "cann-mere"
    title = "CANN MERE/MARE with the small-value domain"
    source = "CANN accuracy standard, docs/contract.md section 7"
    rule = ("where |g| >= small_threshold: MERE = mean(|a-g|/(|g|+eps)) < T and MARE = max < "
            "mare_factor*T; where |g| < small_threshold: no |a-g| > small_error")
    table = {
        "float16": {"T": 2.0**-10, "mare_factor": 10.0, "eps": 1e-7,
                    "small_threshold": 2.0**-11, "small_error": 2.0**-16},
        "bfloat16": {"T": 2.0**-7, "mare_factor": 10.0, "eps": 1e-7,
                     "small_threshold": 2.0**-8, "small_error": 2.0**-16},
        "float32": {"T": 2.0**-13, "mare_factor": 10.0, "eps": 1e-7,
                    "small_threshold": 2.0**-14, "small_error": 2.0**-30},
    }
    help = {
        "T": "MERE threshold",
        "mare_factor": "MARE threshold as a multiple of T",
        "eps": "added to |g| in the relative error",
        "small_threshold": "|g| below this is the small-value domain",
        "small_error": "largest |a-g| allowed in the small-value domain",
    }

    def tally(self) -> MereTally:
        return MereTally()

    def allowed(self, ch: Piece) -> np.ndarray:
        p = self.params
        res = np.add(ch.absg, float(p["eps"]))
        res *= float(p["T"]) * float(p["mare_factor"])
        res[ch.absg < float(p["small_threshold"])] = float(p["small_error"])
        return res

    def count(self, ch: Piece, allowed: np.ndarray, tally: StandardTally) -> np.ndarray:
        assert isinstance(tally, MereTally)
        p = self.params
        small = ch.absg < float(p["small_threshold"])
        rel = np.divide(ch.err, ch.absg + float(p["eps"]))
        rel[small] = 0.0
        tally.rel_sum += float(rel.sum())
        tally.rel_max = max(tally.rel_max, float(rel.max()) if rel.size else 0.0)
        n_small = int(np.count_nonzero(small))
        tally.normal += ch.g.size - n_small  # zeroed specials sit in the small domain
        tally.small_fails += int(np.count_nonzero(ch.err[small] > float(p["small_error"])))
        return super().count(ch, allowed, tally)

    def result(self, tally: StandardTally, n: int, metrics: Mapping[str, float | int]
               ) -> StandardResult:
        assert isinstance(tally, MereTally)
        p = self.params
        t, factor = float(p["T"]), float(p["mare_factor"])
        mere = tally.rel_sum / tally.normal if tally.normal else 0.0
        mare = math.inf if tally.bad else tally.rel_max
        ok = mere < t and mare < factor * t and tally.small_fails == 0 and not tally.bad
        detail = (f"MERE {mere:.3g} (limit {t:.3g}), MARE {mare:.3g} (limit {factor * t:.3g}), "
                  f"{tally.small_fails} small-value errors")
        return StandardResult(self.name, ok, tally.ratio(n), detail)


@dataclass
class MsopstTally(StandardTally):
    big: int = 0  # elements at or over max_error


class Msopst(Standard):
    name = "msopst"
    title = "msOpST default error_threshold [0.01, 0.05]"
    source = "CANN msOpST, docs/contract.md section 7"
    rule = ("element error = |a-g| if below threshold, else |a-g|/max(|a|,|g|); case ok if "
            "at most max_mismatch of elements exceed threshold and none reaches max_error")
    table = same_for_every_dtype({"threshold": 0.01, "max_mismatch": 0.05, "max_error": 0.1})
    help = {
        "threshold": "element error limit (absolute below it, relative above)",
        "max_mismatch": "fraction of elements allowed over threshold",
        "max_error": "no element error may reach this",
    }

    def tally(self) -> MsopstTally:
        return MsopstTally()

    def allowed(self, ch: Piece) -> np.ndarray:
        res = np.maximum(ch.maxabs, 1.0)
        res *= float(self.params["threshold"])
        return res

    def count(self, ch: Piece, allowed: np.ndarray, tally: StandardTally) -> np.ndarray:
        assert isinstance(tally, MsopstTally)
        big = np.greater_equal(ch.err, float(self.params["max_error"]) * ch.maxabs)
        big &= ch.err >= float(self.params["threshold"])
        tally.big += int(np.count_nonzero(big))
        return super().count(ch, allowed, tally)

    def result(self, tally: StandardTally, n: int, metrics: Mapping[str, float | int]
               ) -> StandardResult:
        assert isinstance(tally, MsopstTally)
        limit = float(self.params["max_mismatch"])
        big = tally.big + tally.bad
        ok = tally.ratio(n) <= limit and big == 0
        detail = (f"{tally.ratio(n):.3%} of elements over {self.params['threshold']:g} "
                  f"(limit {limit:.0%}), {big} at or over {self.params['max_error']:g}")
        return StandardResult(self.name, ok, tally.ratio(n), detail)


class TorchNpu(Standard):
    name = "torch-npu"
    title = "torch_npu assertRtolEqual"
    source = "torch_npu testing, docs/contract.md section 7"
    rule = ("rtol-equal: element fails if |a-g| > prec and |a-g|/max(|a|,|g|) > prec, case "
            "fails if more than size*prec fail; allclose (bf16): every |a-g| <= prec + "
            "prec*|g|")
    table = {
        "float16": {"prec": 1e-3, "mode": "rtol-equal"},
        "bfloat16": {"prec": 1e-3, "mode": "allclose"},
        "float32": {"prec": 1e-4, "mode": "rtol-equal"},
    }
    help = {
        "prec": "precision (absolute and relative)",
        "mode": "rtol-equal or allclose",
    }

    def allowed(self, ch: Piece) -> np.ndarray:
        prec = float(self.params["prec"])
        if self.params["mode"] == "allclose":
            res = np.multiply(ch.absg, prec)
            res += prec
            return res
        res = np.maximum(ch.maxabs, 1.0)
        res *= prec
        return res

    def result(self, tally: StandardTally, n: int, metrics: Mapping[str, float | int]
               ) -> StandardResult:
        prec = float(self.params["prec"])
        if self.params["mode"] == "allclose":
            ok = tally.fails == 0
            detail = f"{tally.fails} of {n} elements out of allclose(rtol=atol={prec:g})"
        else:
            ok = tally.fails <= n * prec
            detail = (f"{tally.fails} of {n} elements over prec {prec:g} "
                      f"(limit {n * prec:.3g})")
        return StandardResult(self.name, ok, tally.ratio(n), detail)


@dataclass
class UlpTally(StandardTally):
    ulp_sum: float = 0.0


class MsprobeUlp(Standard):
    name = "msprobe-ulp"
    title = "msprobe ULP error"
    source = "MindStudio msprobe accuracy standard, docs/contract.md section 7"
    rule = ("ULP error = |a-g| / ulp(g); case ok if the fraction over ulp_limit < max_ratio, "
            "or (float32) the mean ULP error < mean_ulp")
    table = {
        "float16": {"ulp_limit": 1.0, "max_ratio": 0.001, "mean_ulp": 0.0},
        "bfloat16": {"ulp_limit": 1.0, "max_ratio": 0.001, "mean_ulp": 0.0},
        "float32": {"ulp_limit": 32.0, "max_ratio": 0.05, "mean_ulp": 64.0},
    }
    help = {
        "ulp_limit": "ULP error an element may have",
        "max_ratio": "fraction of elements allowed over ulp_limit (strictly less)",
        "mean_ulp": "alternative pass: mean ULP error below this (0 = off)",
    }

    def tally(self) -> UlpTally:
        return UlpTally()

    def allowed(self, ch: Piece) -> np.ndarray:
        return ch.ulp_g * float(self.params["ulp_limit"])

    def count(self, ch: Piece, allowed: np.ndarray, tally: StandardTally) -> np.ndarray:
        assert isinstance(tally, UlpTally)
        if float(self.params["mean_ulp"]) > 0:
            tally.ulp_sum += float(np.divide(ch.err, ch.ulp_g).sum())
        return super().count(ch, allowed, tally)

    def result(self, tally: StandardTally, n: int, metrics: Mapping[str, float | int]
               ) -> StandardResult:
        assert isinstance(tally, UlpTally)
        p = self.params
        frac_ok = tally.ratio(n) < float(p["max_ratio"])
        mean_limit = float(p["mean_ulp"])
        numeric = int(metrics["numeric_elements"])
        mean = math.inf if tally.bad else (tally.ulp_sum / numeric if numeric else 0.0)
        ok = frac_ok or (mean_limit > 0 and mean < mean_limit)
        detail = (f"{tally.ratio(n):.3%} of elements over {p['ulp_limit']:g} ULP "
                  f"(limit {float(p['max_ratio']):.1%})")
        if mean_limit > 0:
            detail += f", mean ULP error {mean:.3g} (limit {mean_limit:g})"
        return StandardResult(self.name, ok, tally.ratio(n), detail)


class AssertClose(_Tol):
    name = "assert-close"
    title = "torch.testing.assert_close defaults"
    source = "PyTorch torch/testing/_comparison.py, docs/contract.md section 7"
    rule = "every element |a-g| <= atol + rtol*|g|"
    table = {
        "float16": {"rtol": 1e-3, "atol": 1e-5},
        "bfloat16": {"rtol": 1.6e-2, "atol": 1e-5},
        "float32": {"rtol": 1.3e-6, "atol": 1e-5},
        FLOAT64_ROW: {"rtol": 1e-7, "atol": 1e-7},  # torch's _DTYPE_PRECISIONS, float64
    }
    help = {"rtol": "relative tolerance", "atol": "absolute tolerance"}

    def result(self, tally: StandardTally, n: int, metrics: Mapping[str, float | int]
               ) -> StandardResult:
        detail = f"{tally.fails} of {n} elements out of atol + rtol*|g|"
        return StandardResult(self.name, tally.fails == 0, tally.ratio(n), detail)


#: Every standard by name, in the order `aclcheck tolerances` lists them.
STANDARDS_BY_NAME: dict[str, type[Standard]] = {
    cls.name: cls
    for cls in (Aclcheck, CannMixed, CannMere, Msopst, TorchNpu, MsprobeUlp, AssertClose)
}
PUBLISHED: tuple[str, ...] = tuple(n for n in STANDARDS_BY_NAME if n != DEFAULT_STANDARD)


def judging(dtype: str) -> tuple[str, ...]:
    """The standards with numbers for outputs of `dtype`, in STANDARDS_BY_NAME order."""
    return tuple(name for name, cls in STANDARDS_BY_NAME.items() if cls.judges(dtype))


def refusal(name: str, dtype: str) -> str | None:
    """Why standard `name` cannot judge an output of `dtype` (None: it can), naming the
    standards that can."""
    if get_standard(name).judges(dtype):
        return None
    return (f"standard {name} has no {dtype} numbers (its source publishes none); "
            f"{dtype} outputs are judged by {', '.join(judging(dtype))} (--standard)")


def get_standard(name: str) -> type[Standard]:
    """The standard called `name` (ValueError listing the valid names otherwise)."""
    try:
        return STANDARDS_BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"unknown standard {name!r}; valid: {', '.join(STANDARDS_BY_NAME)}"
        ) from None
