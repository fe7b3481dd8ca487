"""Named tolerance standards: their per-dtype tables, TOML overrides, and rendered tables.

A standard is data here (name, rule text, numbers per dtype); compare.py evaluates the
rule. aclcheck's own standard budgets every element (budget.py); the others are the
published standards of contract.md section 7, with their numbers as published.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from rich.table import Table

from aclcheck import contract
from aclcheck.budget import ACCUMULATE_CHOICES, product_path, resolve_accumulate
from aclcheck.configfile import ConfigError, read_document
from aclcheck.errors import UsageError

ParamValue = float | str
Params = Mapping[str, ParamValue]

DTYPES: tuple[str, ...] = contract.COMPUTE_DTYPES  # float16, float32, bfloat16

#: c of the default standard, chosen from measurement (docs/tolerances.md): the largest
#: error of correct FP32-accumulating kernels beyond the output's half ULP, in units of
#: k * u_acc * m, was 0.87 on the default suite plus upsampling and special cases; the
#: worst-case bound of the A2/A3 path is (k + 1) * u * m <= 2 * k * u * m.
DEFAULT_C = 2.0


@dataclass(frozen=True)
class Standard:
    """A named standard: what it checks (rule), where it comes from, and its numbers."""

    name: str
    title: str
    source: str
    rule: str
    table: Mapping[str, Params]  # dtype -> parameter -> value
    help: Mapping[str, str]  # parameter -> meaning

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self.help)

    def params_for(
        self, dtype: str, product: str | None = None, overrides: Overrides | None = None
    ) -> dict[str, ParamValue]:
        """Parameters for one dtype (and product), overrides applied (most specific wins)."""
        params = dict(self.table[dtype])
        if overrides is not None:
            params.update(overrides.lookup(self.name, dtype, product))
        return params


def _same(params: Params) -> dict[str, Params]:
    return {d: dict(params) for d in DTYPES}


def _freeze(table: Mapping[str, Params]) -> Mapping[str, Params]:
    return MappingProxyType({d: MappingProxyType(dict(p)) for d, p in table.items()})


_LIST: tuple[Standard, ...] = (
    Standard(
        "aclcheck",
        "aclcheck per-element error budget (default)",
        "aclcheck (docs/tolerances.md); product paths from contract.md section 6",
        "every element within ulp_out(|g|+E)/2 + E, E = ((c*k + r)*u_acc + eps_scale)*m "
        "+ c*k*eta_acc + atol; m = backward of |gradOutput|, k = terms per element; "
        "NaN/inf must match",
        _same({"c": DEFAULT_C, "atol": 0.0, "accumulate": ""}),
        {
            "c": "multiplier of k * u_acc * m (measured, see docs/tolerances.md)",
            "atol": "extra absolute allowance per element (default 0)",
            "accumulate": "accumulation: '' = the product's, float32, input, float16, bfloat16",
        },
    ),
    Standard(
        "cann-mixed",
        "CANN mixed tolerance (current)",
        "CANN accuracy standard, contract.md section 7",
        "element ok if |a-g| <= atol + rtol*|g|; case ok if mismatches <= max_mismatch "
        "and max |a-g| <= cap",
        {
            "float16": {"rtol": 2.0**-9, "atol": 2.0**-9, "cap": 0.1, "max_mismatch": 0.01},
            "bfloat16": {"rtol": 2.0**-6, "atol": 2.0**-6, "cap": 1.0, "max_mismatch": 0.01},
            "float32": {"rtol": 2.0**-10, "atol": 2.0**-16, "cap": 0.01, "max_mismatch": 0.01},
        },
        {
            "rtol": "relative tolerance per element",
            "atol": "absolute tolerance per element",
            "cap": "largest |a-g| allowed anywhere",
            "max_mismatch": "fraction of elements allowed out of tolerance",
        },
    ),
    Standard(
        "cann-mere",
        "CANN MERE/MARE with the small-value domain",
        "CANN accuracy standard, contract.md section 7",
        "where |g| >= small_threshold: MERE = mean(|a-g|/(|g|+eps)) < T and MARE = max < "
        "mare_factor*T; where |g| < small_threshold: no |a-g| > small_error",
        {
            "float16": {"T": 2.0**-10, "mare_factor": 10.0, "eps": 1e-7,
                        "small_threshold": 2.0**-11, "small_error": 2.0**-16},
            "bfloat16": {"T": 2.0**-7, "mare_factor": 10.0, "eps": 1e-7,
                         "small_threshold": 2.0**-8, "small_error": 2.0**-16},
            "float32": {"T": 2.0**-13, "mare_factor": 10.0, "eps": 1e-7,
                        "small_threshold": 2.0**-14, "small_error": 2.0**-30},
        },
        {
            "T": "MERE threshold",
            "mare_factor": "MARE threshold as a multiple of T",
            "eps": "added to |g| in the relative error",
            "small_threshold": "|g| below this is the small-value domain",
            "small_error": "largest |a-g| allowed in the small-value domain",
        },
    ),
    Standard(
        "msopst",
        "msOpST default error_threshold [0.01, 0.05]",
        "CANN msOpST, contract.md section 7",
        "element error = |a-g| if below threshold, else |a-g|/max(|a|,|g|); case ok if "
        "at most max_mismatch of elements exceed threshold and none reaches max_error",
        _same({"threshold": 0.01, "max_mismatch": 0.05, "max_error": 0.1}),
        {
            "threshold": "element error limit (absolute below it, relative above)",
            "max_mismatch": "fraction of elements allowed over threshold",
            "max_error": "no element error may reach this",
        },
    ),
    Standard(
        "torch-npu",
        "torch_npu assertRtolEqual",
        "torch_npu testing, contract.md section 7",
        "rtol-equal: element fails if |a-g| > prec and |a-g|/max(|a|,|g|) > prec, case fails "
        "if more than size*prec fail; allclose (bf16): every |a-g| <= prec + prec*|g|",
        {
            "float16": {"prec": 1e-3, "mode": "rtol-equal"},
            "bfloat16": {"prec": 1e-3, "mode": "allclose"},
            "float32": {"prec": 1e-4, "mode": "rtol-equal"},
        },
        {
            "prec": "precision (absolute and relative)",
            "mode": "rtol-equal or allclose",
        },
    ),
    Standard(
        "msprobe-ulp",
        "msprobe ULP error",
        "MindStudio msprobe accuracy standard, contract.md section 7",
        "ULP error = |a-g| / ulp(g); case ok if the fraction over ulp_limit < max_ratio, or "
        "(float32) the mean ULP error < mean_ulp",
        {
            "float16": {"ulp_limit": 1.0, "max_ratio": 0.001, "mean_ulp": 0.0},
            "bfloat16": {"ulp_limit": 1.0, "max_ratio": 0.001, "mean_ulp": 0.0},
            "float32": {"ulp_limit": 32.0, "max_ratio": 0.05, "mean_ulp": 64.0},
        },
        {
            "ulp_limit": "ULP error an element may have",
            "max_ratio": "fraction of elements allowed over ulp_limit (strictly less)",
            "mean_ulp": "alternative pass: mean ULP error below this (0 = off)",
        },
    ),
    Standard(
        "assert-close",
        "torch.testing.assert_close defaults",
        "PyTorch torch/testing/_comparison.py, contract.md section 7",
        "every element |a-g| <= atol + rtol*|g|",
        {
            "float16": {"rtol": 1e-3, "atol": 1e-5},
            "bfloat16": {"rtol": 1.6e-2, "atol": 1e-5},
            "float32": {"rtol": 1.3e-6, "atol": 1e-5},
        },
        {"rtol": "relative tolerance", "atol": "absolute tolerance"},
    ),
)

STANDARDS: dict[str, Standard] = {
    s.name: Standard(s.name, s.title, s.source, s.rule, _freeze(s.table),
                     MappingProxyType(dict(s.help)))
    for s in _LIST
}
DEFAULT_STANDARD = "aclcheck"
PUBLISHED: tuple[str, ...] = tuple(n for n in STANDARDS if n != DEFAULT_STANDARD)

_STRING_PARAMS: dict[str, tuple[str, ...]] = {
    "accumulate": ("",) + ACCUMULATE_CHOICES,
    "mode": ("rtol-equal", "allclose"),
}


def get_standard(name: str) -> Standard:
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
        return tuple(p for p in contract.PRODUCTS if p in found)


def _check_value(source: str, section: str, std: Standard, key: str,
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
        name = contract.normalize_dtype(text)
    except ValueError:
        return None
    return name if name in DTYPES else None


def _parse_level(source: str, section: str, std: Standard, table: Mapping[str, object],
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
        elif isinstance(value, dict) and product is None and key in contract.PRODUCTS:
            _parse_level(source, f"{section}.{key}", std, value, key, entries)
        elif isinstance(value, dict):
            valid = "a dtype (" + ", ".join(DTYPES) + ")"
            if product is None:
                valid += " or a product (" + ", ".join(contract.PRODUCTS) + ")"
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
    try:
        data = read_document(p, "tolerances file", syntax="toml")
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return parse_overrides(data, str(p))


# -- rendering ----------------------------------------------------------------------------


def _fmt_value(value: ParamValue) -> str:
    if isinstance(value, str):
        return value or "product's"
    if value == 0:
        return "0"
    exp = math.log2(value) if value > 0 else 0.0
    if value > 0 and exp == int(exp) and abs(exp) >= 4:
        return f"2^{int(exp)}"
    return f"{value:g}"


def _u_text(fmt_name: str, u: float) -> str:
    return f"{fmt_name} (u=2^{int(math.log2(u))})"


def _aclcheck_table(std: Standard, overrides: Overrides | None) -> Table:
    table = Table(title=f"{std.name}: {std.title}", caption_justify="left")
    for col in ("product", "dtype", "accumulates in", "c", "atol", "windows", "1x1 path"):
        table.add_column(col)
    for prod in contract.PRODUCTS.values():
        for dtype in prod.dtypes:
            params = std.params_for(dtype, prod.id, overrides)
            acc_choice = str(params["accumulate"]) or None
            acc = resolve_accumulate(prod.id, dtype, acc_choice)
            general = product_path(prod.id, dtype, (2, 2), (3, 3), acc_choice)
            global_ = product_path(prod.id, dtype, (1, 1), (3, 3), acc_choice)
            windows = (f"scale in {general.scale_format.name}, r={general.extra_roundings}")
            one = f"fill 1/(H*W) in {global_.scale_format.name}"
            table.add_row(prod.id, dtype, _u_text(acc.name, acc.unit_roundoff),
                          _fmt_value(params["c"]), _fmt_value(params["atol"]), windows, one)
    table.caption = (
        f"{std.rule}. r: roundings per term beyond the accumulation (fp32-atomic 1, "
        "matmul 2, 1x1 0). Finite golden beyond the dtype's overflow threshold: inf "
        "required (either near it); where the terms' magnitudes can overflow the "
        "accumulator, inf/NaN are accepted."
    )
    return table


def standard_table(name: str, overrides: Overrides | None = None) -> Table:
    """A rich Table of one standard: its numbers per dtype (and per product where the
    overrides make them differ), the rule as a caption."""
    std = get_standard(name)
    if std.name == "aclcheck":
        return _aclcheck_table(std, overrides)
    table = Table(title=f"{std.name}: {std.title}", caption_justify="left", min_width=72)
    table.add_column("dtype")
    for p in std.param_names:
        table.add_column(p, justify="right")
    rows: list[tuple[str, str | None]] = [(d, None) for d in DTYPES]
    if overrides is not None:
        rows += [(d, prod) for prod in overrides.products(std.name)
                 for d in contract.PRODUCTS[prod].dtypes]
    for dtype, prod in rows:
        params = std.params_for(dtype, prod, overrides)
        label = dtype if prod is None else f"{dtype} on {prod}"
        table.add_row(label, *(_fmt_value(params[p]) for p in std.param_names))
    table.caption = f"{std.rule}. Source: {std.source}."
    return table
