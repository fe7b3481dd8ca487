"""TOML overrides of the standards' numbers: per standard, dtype and product, most
specific wins (docs/tolerances.md). Errors name the file and the key."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from aclcheck.cases.acl import PRODUCTS
from aclcheck.configfile import read_document
from aclcheck.dtypes import JUDGED_FORMATS, normalize_dtype
from aclcheck.errors import UsageError
from aclcheck.judging.case.rule import Params, ParamValue, Standard
from aclcheck.judging.case.standards import STANDARDS_BY_NAME
from aclcheck.options import ACCUMULATE_CHOICES

_STRING_PARAMS: dict[str, tuple[str, ...]] = {
    "accumulate": ("",) + ACCUMULATE_CHOICES,
    "mode": ("rtol-equal", "allclose"),
}

OverrideKey = tuple[str, str | None, str | None]  # (standard, product or None, dtype or None)


@dataclass(frozen=True)
class Overrides:
    """Parameter overrides read from a TOML file, keyed by (standard, product, dtype)."""

    entries: Mapping[OverrideKey, Params] = field(default_factory=dict)
    source: str = ""

    def lookup(self, standard: str, dtype: str, product: str | None = None) -> dict:
        """Overrides for one standard/dtype/product, least specific first:
        [std] < [std.dtype] < [std.product] < [std.product.dtype]."""
        merged: dict[str, ParamValue] = {}
        keys: list[OverrideKey] = [(standard, None, None), (standard, None, dtype)]
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
    """The dtype a table key names, if it names one an output is judged in."""
    try:
        name = normalize_dtype(text)
    except ValueError:
        return None
    return name if name in JUDGED_FORMATS else None


def _parse_level(source: str, section: str, std: type[Standard], table: Mapping[str, object],
                 product: str | None, entries: dict[OverrideKey, dict[str, ParamValue]]) -> None:
    """One table of a standard: parameters, dtype sub-tables, product sub-tables."""
    for key, value in table.items():
        dtype = _dtype_key(key)
        if isinstance(value, dict) and dtype is not None and std.judges(dtype):
            sub = f"{section}.{key}"
            for pkey, pval in value.items():
                if isinstance(pval, dict):
                    raise UsageError(f"{source}: [{sub}.{pkey}] unexpected table (a dtype "
                                     "table holds parameters only)")
                entries.setdefault((std.name, product, dtype), {})[pkey] = _check_value(
                    source, sub, std, pkey, pval)
        elif isinstance(value, dict) and product is None and key in PRODUCTS:
            _parse_level(source, f"{section}.{key}", std, value, key, entries)
        elif isinstance(value, dict) and dtype is not None:  # float64 of a published one
            raise UsageError(f"{source}: [{section}.{key}] {std.name} has no {dtype} "
                             "numbers to override (its source publishes none)")
        elif isinstance(value, dict):
            valid = "a dtype (" + ", ".join(std.dtypes()) + ")"
            if product is None:
                valid += " or a product (" + ", ".join(PRODUCTS) + ")"
            raise UsageError(f"{source}: [{section}.{key}] unknown table; expected {valid}")
        else:
            entries.setdefault((std.name, product, None), {})[key] = _check_value(
                source, section, std, key, value)


def parse_overrides(data: Mapping[str, object], source: str = "<overrides>") -> Overrides:
    """Overrides from an already parsed TOML document (see load_overrides)."""
    entries: dict[OverrideKey, dict[str, ParamValue]] = {}
    for name, table in data.items():
        if name not in STANDARDS_BY_NAME:
            raise UsageError(f"{source}: unknown standard [{name}] (valid: "
                             f"{', '.join(STANDARDS_BY_NAME)})")
        if not isinstance(table, dict):
            raise UsageError(f"{source}: {name} must be a table [{name}] of parameters")
        _parse_level(source, name, STANDARDS_BY_NAME[name], table, None, entries)
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
