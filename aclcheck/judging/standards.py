"""Named tolerance standards: one class per standard with its numbers, help and rule.

Each standard is a subclass of `Standard` registered in STANDARDS (as torch's
testing/_comparison.py gives each input kind its own Pair class): its class attributes
hold the published numbers per dtype and the meaning of each parameter; an instance
judges one comparison: `allowed(piece)` is the error it allows per element, `update`
counts failures, `result` gives the case verdict. compare.py runs the chunked loop and
never names a standard. aclcheck's own standard budgets every element (budget.py) and
demands the RNE result where the path computes an element exactly (exactness.py); the
others are the published standards of docs/contract.md section 7, with their numbers as
published. TOML overrides of the numbers are read here too; tables are drawn by the CLI.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from aclcheck.cases.acl import PRODUCTS
from aclcheck.configfile import read_document
from aclcheck.dtypes import (
    COMPUTE_DTYPES,
    FloatFormat,
    half_ulp,
    normalize_dtype,
)
from aclcheck.errors import UsageError
from aclcheck.judging.budget import BudgetModel
from aclcheck.judging.exactness import ExactTally
from aclcheck.judging.findings import Hint
from aclcheck.judging.pieces import Piece
from aclcheck.options import ACCUMULATE_CHOICES, DEFAULT_STANDARD

ParamValue = float | str
Params = Mapping[str, ParamValue]

DTYPES: tuple[str, ...] = COMPUTE_DTYPES  # float16, float32, bfloat16

#: c of the default standard, chosen from measurement (docs/tolerances.md): the largest
#: error of correct FP32-accumulating kernels beyond the output's half ULP, in units of
#: k * u_acc * m, was 0.87 on the default suite plus upsampling and special cases; the
#: worst-case bound of the A2/A3 path is (k + 1) * u * m <= 2 * k * u * m.
DEFAULT_C = 2.0


@dataclass(frozen=True)
class StandardResult:
    """Verdict of one standard: pass/fail, the fraction of elements out of tolerance,
    a one-line detail with the numbers the case rule looked at, notes and hints."""

    name: str
    passed: bool
    mismatch_ratio: float
    detail: str
    notes: tuple[str, ...] = ()
    hints: tuple[Hint, ...] = ()


def _same(params: Params) -> dict[str, Params]:
    return {d: dict(params) for d in DTYPES}


class Standard:
    """A named standard. Class level: what it checks (rule), where it comes from, its
    numbers per dtype (table) and the meaning of each parameter (help). Instance level:
    the running tally of one comparison under `params` (see module docstring)."""

    name: ClassVar[str]
    title: ClassVar[str]
    source: ClassVar[str]
    rule: ClassVar[str]
    table: ClassVar[Mapping[str, Params]]  # dtype -> parameter -> value
    help: ClassVar[Mapping[str, str]]  # parameter -> meaning
    param_names: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "table" in cls.__dict__:  # freeze the published numbers
            cls.table = MappingProxyType(
                {d: MappingProxyType(dict(p)) for d, p in cls.table.items()})
        if "help" in cls.__dict__:
            cls.help = MappingProxyType(dict(cls.help))
            cls.param_names = tuple(cls.help)

    @classmethod
    def params_for(cls, dtype: str, product: str | None = None,
                   overrides: Overrides | None = None) -> dict[str, ParamValue]:
        """Parameters for one dtype (and product), overrides applied (most specific wins)."""
        params = dict(cls.table[dtype])
        if overrides is not None:
            params.update(overrides.lookup(cls.name, dtype, product))
        return params

    def __init__(self, params: Mapping[str, ParamValue], fmt: FloatFormat,
                 model: BudgetModel) -> None:
        self.params, self.fmt, self.model = dict(params), fmt, model
        self.fails = 0  # elements out of tolerance, special-value failures included
        self.bad = 0  # special-value failures
        #: failures the standard's own hints explain (location hints would mislead)
        self.explained = 0

    def allowed(self, ch: Piece) -> np.ndarray:
        """The error allowed at each element of the piece (float64, flat)."""
        raise NotImplementedError

    def update(self, ch: Piece, allowed: np.ndarray) -> np.ndarray:
        """Count this piece's failures; returns the fail mask (special failures included)."""
        fail = ch.with_bad(np.greater(ch.err, allowed))
        self.fails += int(np.count_nonzero(fail))
        if ch.bad is not None:
            self.bad += int(np.count_nonzero(ch.bad))
        return fail

    def result(self, n: int, metrics: Mapping[str, float | int]) -> StandardResult:
        """The case verdict after every piece of an n-element output."""
        raise NotImplementedError

    def ratio(self, n: int) -> float:
        return self.fails / n if n else 0.0


class Aclcheck(Standard):
    name = DEFAULT_STANDARD
    title = "aclcheck per-element error budget (default)"
    source = "aclcheck (docs/tolerances.md); product paths from docs/contract.md section 6"
    rule = ("every element within ulp_out(|g|+E)/2 + E, E = ((c*k + r)*u_acc + eps_scale)*m "
            "+ c*k*eta_acc + atol; m = backward of |gradOutput|, k = terms per element; "
            "where the product's path computes an element exactly, the RNE result "
            "(ties to even) bit for bit; NaN/inf must match")
    table = _same({"c": DEFAULT_C, "atol": 0.0, "accumulate": ""})
    help = {
        "c": "multiplier of k * u_acc * m (measured, see docs/tolerances.md)",
        "atol": "extra absolute allowance per element (default 0)",
        "accumulate": "accumulation: '' = the product's, float32, input, float16, bfloat16",
    }

    def __init__(self, params: Mapping[str, ParamValue], fmt: FloatFormat,
                 model: BudgetModel) -> None:
        super().__init__(params, fmt, model)
        self.path_saved = 0  # elements within budget only thanks to the scale term
        self.widened = (float(self.params["c"]) > DEFAULT_C
                        or float(self.params["atol"]) > 0.0)
        self.exact = ExactTally()

    def allowed(self, ch: Piece) -> np.ndarray:
        budget = ch.budget
        if ch.extra0 is not None:
            budget0 = np.add(ch.absg, ch.extra0)
            half_ulp(budget0, self.fmt, out=budget0)
            budget0 += ch.extra0
            saved = np.greater(ch.err, budget0)
            saved &= ch.err <= budget
            self.path_saved += int(np.count_nonzero(saved))
        return budget

    def update(self, ch: Piece, allowed: np.ndarray) -> np.ndarray:
        fail = super().update(ch, allowed)
        if ch.exact is not None:
            self.exact.possible = True
            if not self.widened:
                new = self.exact.update(ch.exact, ch.raw_g, ch.raw_a, ch.off_nearest,
                                        self.fmt, fail)
                self.fails += new
                self.explained += new
        return fail

    def result(self, n: int, metrics: Mapping[str, float | int]) -> StandardResult:
        ratio = metrics.get("max_budget_ratio", 0.0)
        detail = (f"{self.fails - self.explained} of {n} elements over budget; max "
                  f"error/budget {ratio:.3g} "
                  f"(c={self.model.c:g}, accumulate {self.model.path.accumulate.name}, "
                  f"{self.model.path.name} path)")
        notes: list[str] = []
        hints: list[Hint] = []
        if self.path_saved and self.model.path.scale_note:
            notes.append(f"{self.path_saved} element(s) {self.model.path.scale_note}")
        if self.widened and self.exact.possible:
            notes.append("exact-rounding check off: the tolerance override widens the "
                         f"budget (c={self.model.c:g}, atol={self.model.atol:g})")
        elif self.exact.failed:
            detail = f"{self.exact.message()}; {detail}"
            hints.append(self.exact.hint())
        return StandardResult(self.name, self.fails == 0, self.ratio(n), detail,
                              tuple(notes), tuple(hints))


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

    def result(self, n: int, metrics: Mapping[str, float | int]) -> StandardResult:
        max_err = math.inf if self.bad else float(metrics["max_abs_err"])
        cap = float(self.params["cap"])
        limit = float(self.params["max_mismatch"])
        ok = self.ratio(n) <= limit and max_err <= cap
        detail = (f"{self.ratio(n):.3%} of elements out of tolerance (limit {limit:.0%}), "
                  f"max |a-g| {max_err:.3g} (cap {cap:g})")
        return StandardResult(self.name, ok, self.ratio(n), detail)


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

    def __init__(self, params: Mapping[str, ParamValue], fmt: FloatFormat,
                 model: BudgetModel) -> None:
        super().__init__(params, fmt, model)
        self.rel_sum = 0.0
        self.rel_max = 0.0
        self.normal = 0
        self.small_fails = 0

    def allowed(self, ch: Piece) -> np.ndarray:
        p = self.params
        small = ch.absg < float(p["small_threshold"])
        res = np.add(ch.absg, float(p["eps"]))
        res *= float(p["T"]) * float(p["mare_factor"])
        res[small] = float(p["small_error"])
        rel = np.divide(ch.err, ch.absg + float(p["eps"]))
        rel[small] = 0.0
        self.rel_sum += float(rel.sum())
        self.rel_max = max(self.rel_max, float(rel.max()) if rel.size else 0.0)
        n_small = int(np.count_nonzero(small))
        self.normal += ch.g.size - n_small  # zeroed specials sit in the small domain
        self.small_fails += int(np.count_nonzero(ch.err[small] > float(p["small_error"])))
        return res

    def result(self, n: int, metrics: Mapping[str, float | int]) -> StandardResult:
        p = self.params
        t, factor = float(p["T"]), float(p["mare_factor"])
        mere = self.rel_sum / self.normal if self.normal else 0.0
        mare = math.inf if self.bad else self.rel_max
        ok = mere < t and mare < factor * t and self.small_fails == 0 and not self.bad
        detail = (f"MERE {mere:.3g} (limit {t:.3g}), MARE {mare:.3g} (limit {factor * t:.3g}), "
                  f"{self.small_fails} small-value errors")
        return StandardResult(self.name, ok, self.ratio(n), detail)


class Msopst(Standard):
    name = "msopst"
    title = "msOpST default error_threshold [0.01, 0.05]"
    source = "CANN msOpST, docs/contract.md section 7"
    rule = ("element error = |a-g| if below threshold, else |a-g|/max(|a|,|g|); case ok if "
            "at most max_mismatch of elements exceed threshold and none reaches max_error")
    table = _same({"threshold": 0.01, "max_mismatch": 0.05, "max_error": 0.1})
    help = {
        "threshold": "element error limit (absolute below it, relative above)",
        "max_mismatch": "fraction of elements allowed over threshold",
        "max_error": "no element error may reach this",
    }

    def __init__(self, params: Mapping[str, ParamValue], fmt: FloatFormat,
                 model: BudgetModel) -> None:
        super().__init__(params, fmt, model)
        self.big = 0

    def allowed(self, ch: Piece) -> np.ndarray:
        thr = float(self.params["threshold"])
        res = np.maximum(ch.maxabs, 1.0)
        res *= thr
        big = np.greater_equal(ch.err, float(self.params["max_error"]) * ch.maxabs)
        big &= ch.err >= thr
        self.big += int(np.count_nonzero(big))
        return res

    def result(self, n: int, metrics: Mapping[str, float | int]) -> StandardResult:
        limit = float(self.params["max_mismatch"])
        big = self.big + self.bad
        ok = self.ratio(n) <= limit and big == 0
        detail = (f"{self.ratio(n):.3%} of elements over {self.params['threshold']:g} "
                  f"(limit {limit:.0%}), {big} at or over {self.params['max_error']:g}")
        return StandardResult(self.name, ok, self.ratio(n), detail)


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

    def result(self, n: int, metrics: Mapping[str, float | int]) -> StandardResult:
        prec = float(self.params["prec"])
        if self.params["mode"] == "allclose":
            ok = self.fails == 0
            detail = f"{self.fails} of {n} elements out of allclose(rtol=atol={prec:g})"
        else:
            ok = self.fails <= n * prec
            detail = f"{self.fails} of {n} elements over prec {prec:g} (limit {n * prec:.3g})"
        return StandardResult(self.name, ok, self.ratio(n), detail)


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

    def __init__(self, params: Mapping[str, ParamValue], fmt: FloatFormat,
                 model: BudgetModel) -> None:
        super().__init__(params, fmt, model)
        self.ulp_sum = 0.0

    def allowed(self, ch: Piece) -> np.ndarray:
        if float(self.params["mean_ulp"]) > 0:
            self.ulp_sum += float(np.divide(ch.err, ch.ulp_g).sum())
        return ch.ulp_g * float(self.params["ulp_limit"])

    def result(self, n: int, metrics: Mapping[str, float | int]) -> StandardResult:
        p = self.params
        frac_ok = self.ratio(n) < float(p["max_ratio"])
        mean_limit = float(p["mean_ulp"])
        numeric = int(metrics["numeric_elements"])
        mean = math.inf if self.bad else (self.ulp_sum / numeric if numeric else 0.0)
        ok = frac_ok or (mean_limit > 0 and mean < mean_limit)
        detail = (f"{self.ratio(n):.3%} of elements over {p['ulp_limit']:g} ULP "
                  f"(limit {float(p['max_ratio']):.1%})")
        if mean_limit > 0:
            detail += f", mean ULP error {mean:.3g} (limit {mean_limit:g})"
        return StandardResult(self.name, ok, self.ratio(n), detail)


class AssertClose(_Tol):
    name = "assert-close"
    title = "torch.testing.assert_close defaults"
    source = "PyTorch torch/testing/_comparison.py, docs/contract.md section 7"
    rule = "every element |a-g| <= atol + rtol*|g|"
    table = {
        "float16": {"rtol": 1e-3, "atol": 1e-5},
        "bfloat16": {"rtol": 1.6e-2, "atol": 1e-5},
        "float32": {"rtol": 1.3e-6, "atol": 1e-5},
    }
    help = {"rtol": "relative tolerance", "atol": "absolute tolerance"}

    def result(self, n: int, metrics: Mapping[str, float | int]) -> StandardResult:
        detail = f"{self.fails} of {n} elements out of atol + rtol*|g|"
        return StandardResult(self.name, self.fails == 0, self.ratio(n), detail)


#: Every standard by name, in the order `aclcheck tolerances` lists them.
STANDARDS: dict[str, type[Standard]] = {
    cls.name: cls
    for cls in (Aclcheck, CannMixed, CannMere, Msopst, TorchNpu, MsprobeUlp, AssertClose)
}
PUBLISHED: tuple[str, ...] = tuple(n for n in STANDARDS if n != DEFAULT_STANDARD)

_STRING_PARAMS: dict[str, tuple[str, ...]] = {
    "accumulate": ("",) + ACCUMULATE_CHOICES,
    "mode": ("rtol-equal", "allclose"),
}


def accumulation(product: str, dtype: str, cli_accumulate: str | None,
                 overrides: Overrides | None) -> str | None:
    """The accumulation the error budget of a case assumes: --accumulate, else the
    aclcheck standard's `accumulate` parameter (overrides applied), else None (the
    product's own)."""
    if cli_accumulate or dtype not in Aclcheck.table:  # no budget for other dtypes
        return cli_accumulate
    params = Aclcheck.params_for(dtype, product, overrides)
    return str(params["accumulate"]) or None


def get_standard(name: str) -> type[Standard]:
    """The standard called `name` (ValueError listing the valid names otherwise)."""
    try:
        return STANDARDS[name]
    except KeyError:
        raise ValueError(
            f"unknown standard {name!r}; valid: {', '.join(STANDARDS)}"
        ) from None


# -- overrides ----------------------------------------------------------------------------

Key = tuple[str, str | None, str | None]  # (standard, product or None, dtype or None)


@dataclass(frozen=True)
class Overrides:
    """Parameter overrides read from a TOML file, keyed by (standard, product, dtype)."""

    entries: Mapping[Key, Params] = field(default_factory=dict)
    source: str = ""

    def lookup(self, standard: str, dtype: str, product: str | None = None) -> dict:
        """Overrides for one standard/dtype/product, least specific first:
        [std] < [std.dtype] < [std.product] < [std.product.dtype]."""
        merged: dict[str, ParamValue] = {}
        keys: list[Key] = [(standard, None, None), (standard, None, dtype)]
        if product is not None:
            keys += [(standard, product, None), (standard, product, dtype)]
        for key in keys:
            merged.update(self.entries.get(key, {}))
        return merged

    def products(self, standard: str) -> tuple[str, ...]:
        """Products with their own overrides for `standard`."""
        found = {p for (s, p, _d) in self.entries if s == standard and p is not None}
        return tuple(p for p in PRODUCTS if p in found)


def _check_value(source: str, section: str, std: type[Standard], key: str,
                 value: object) -> ParamValue:
    where = f"{source}: [{section}] {key}"
    if key not in std.help:
        raise UsageError(f"{source}: [{section}] unknown parameter {key!r} for standard "
                         f"{std.name!r} (valid: {', '.join(std.param_names)})")
    if key in _STRING_PARAMS:
        valid = _STRING_PARAMS[key]
        if not isinstance(value, str) or value.strip().lower() not in valid:
            raise UsageError(f"{where}: must be one of {', '.join(repr(v) for v in valid)}, "
                             f"got {value!r}")
        return value.strip().lower()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{where}: must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise UsageError(f"{where}: must be a finite number >= 0, got {value!r}")
    return number


def _dtype_key(text: str) -> str | None:
    try:
        name = normalize_dtype(text)
    except ValueError:
        return None
    return name if name in DTYPES else None


def _parse_level(source: str, section: str, std: type[Standard], table: Mapping[str, object],
                 product: str | None, entries: dict[Key, dict[str, ParamValue]]) -> None:
    """One table of a standard: parameters, dtype sub-tables, product sub-tables."""
    for key, value in table.items():
        dtype = _dtype_key(key)
        if isinstance(value, dict) and dtype is not None:
            sub = f"{section}.{key}"
            for pkey, pval in value.items():
                if isinstance(pval, dict):
                    raise UsageError(f"{source}: [{sub}.{pkey}] unexpected table (a dtype "
                                     "table holds parameters only)")
                entries.setdefault((std.name, product, dtype), {})[pkey] = _check_value(
                    source, sub, std, pkey, pval)
        elif isinstance(value, dict) and product is None and key in PRODUCTS:
            _parse_level(source, f"{section}.{key}", std, value, key, entries)
        elif isinstance(value, dict):
            valid = "a dtype (" + ", ".join(DTYPES) + ")"
            if product is None:
                valid += " or a product (" + ", ".join(PRODUCTS) + ")"
            raise UsageError(f"{source}: [{section}.{key}] unknown table; expected {valid}")
        else:
            entries.setdefault((std.name, product, None), {})[key] = _check_value(
                source, section, std, key, value)


def parse_overrides(data: Mapping[str, object], source: str = "<overrides>") -> Overrides:
    """Overrides from an already parsed TOML document (see load_overrides)."""
    entries: dict[Key, dict[str, ParamValue]] = {}
    for name, table in data.items():
        if name not in STANDARDS:
            raise UsageError(f"{source}: unknown standard [{name}] (valid: "
                             f"{', '.join(STANDARDS)})")
        if not isinstance(table, dict):
            raise UsageError(f"{source}: {name} must be a table [{name}] of parameters")
        _parse_level(source, name, STANDARDS[name], table, None, entries)
    clean = {k: MappingProxyType(dict(v)) for k, v in entries.items()}
    return Overrides(MappingProxyType(clean), source)


def load_overrides(path: str | Path) -> Overrides:
    """Read per-dtype / per-product overrides of the standards from a TOML file.

    Layout (most specific wins): `[cann-mixed]` for every dtype and product,
    `[cann-mixed.float16]`, `[cann-mixed.atlas-a2]`, `[cann-mixed.atlas-a2.float16]`;
    keys inside are the standard's parameters (`aclcheck tolerances` lists them).
    Errors raise UsageError naming the file and the key.
    """
    p = Path(path)
    return parse_overrides(read_document(p, "tolerances file", syntax="toml"), str(p))
