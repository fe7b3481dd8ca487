"""Suite definitions -> list of Cases: from a selection (CLI flags) or a case file.

Building a suite makes only records (no arrays), so the whole suite is always built and
then filtered or sharded: ids and seeds never depend on the selection's slice.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aclcheck import contract
from aclcheck.cases import (
    DISTRIBUTIONS,
    Case,
    derive_seed,
    make_id,
)
from aclcheck.families import ALL_FAMILIES, DEFAULT_FAMILIES, invalid_cases, shape_case
from aclcheck.layouts import LAYOUTS
from aclcheck.sharding import parse_shard  # noqa: F401 - re-exported (cli/verify)
from aclcheck.sharding import round_robin as shard  # noqa: F401 - re-exported


class SuiteError(ValueError):
    """A suite definition that cannot be built (bad names, bad case file)."""


@dataclass(frozen=True)
class Selection:
    """What to generate: products x dtypes x formats x families, `count` each."""

    products: tuple[str, ...] = tuple(contract.PRODUCTS)
    dtypes: tuple[str, ...] | None = None  # None: each product's own dtypes
    formats: tuple[str, ...] = contract.FORMATS
    families: tuple[str, ...] = DEFAULT_FAMILIES
    count: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        for p in self.products:
            if p not in contract.PRODUCTS:
                raise SuiteError(f"unknown product {p!r}; valid: {', '.join(contract.PRODUCTS)}")
        for d in self.dtypes or ():
            if d not in contract.ALL_DTYPES:
                raise SuiteError(f"unknown dtype {d!r}; valid: {', '.join(contract.ALL_DTYPES)}")
        for f in self.formats:
            if f not in contract.FORMATS:
                raise SuiteError(f"unknown format {f!r}; valid: {', '.join(contract.FORMATS)}")
        for fam in self.families:
            if fam not in ALL_FAMILIES:
                raise SuiteError(f"unknown family {fam!r}; valid: {', '.join(ALL_FAMILIES)}")
        if self.count < 1:
            raise SuiteError(f"count must be >= 1, got {self.count}")
        if self.seed < 0:
            raise SuiteError(f"seed must be >= 0, got {self.seed}")


def build_suite(sel: Selection) -> list[Case]:
    """All cases of a selection, in a fixed order."""
    cases: list[Case] = []
    for prod_id in sel.products:
        prod = contract.PRODUCTS[prod_id]
        wanted = sel.dtypes if sel.dtypes is not None else prod.dtypes
        positive = [d for d in wanted if d in prod.dtypes]
        for family in sel.families:
            if family == "invalid":
                for index in range(sel.count):
                    # unrestricted: the product's own dtypes plus the compute dtypes it lacks
                    rules_dtypes = sel.dtypes if sel.dtypes is not None else tuple(
                        dict.fromkeys(prod.dtypes + contract.COMPUTE_DTYPES))
                    cases.extend(invalid_cases(prod_id, tuple(rules_dtypes), sel.formats,
                                               index, sel.seed))
                continue
            for dtype in positive:
                for fmt in sel.formats:
                    for index in range(sel.count):
                        case = shape_case(family, prod_id, dtype, fmt, index, sel.seed)
                        if case is not None:
                            cases.append(case)
    check_unique(cases, "suite")
    return cases


def check_unique(cases: Iterable[Case], where: str) -> None:
    seen: set[str] = set()
    for c in cases:
        if c.id in seen:
            raise SuiteError(f"{where}: duplicate case id {c.id!r}")
        seen.add(c.id)


# -- case files ---------------------------------------------------------------------------

_TUPLE_KEYS = ("self_shape", "grad_shape", "out_shape")
_DTYPE_KEYS = ("dtype", "grad_dtype", "self_dtype", "out_dtype")
_FORMAT_KEYS = ("format", "grad_format", "self_format", "out_format")
CASE_FILE_KEYS = frozenset(
    {"id", "family", "product", "distribution", "seed", "layout", "null"}
    | set(_TUPLE_KEYS) | set(_DTYPE_KEYS) | set(_FORMAT_KEYS)
)
REQUIRED_KEYS = ("product", "dtype", "format", "self_shape", "grad_shape")


@dataclass
class _EntryError(Exception):
    field: str
    message: str


def _shape(value: Any, key: str) -> tuple[int, ...]:
    if not isinstance(value, list | tuple):
        raise _EntryError(key, f"must be a list of integers, got {type(value).__name__}")
    if not 1 <= len(value) <= contract.MAX_RANK:
        raise _EntryError(key, f"rank must be 1..{contract.MAX_RANK}, got {len(value)}")
    dims = []
    for d in value:
        if isinstance(d, bool) or not isinstance(d, int):
            raise _EntryError(key, f"dims must be integers, got {d!r}")
        if d < 0:
            raise _EntryError(key, f"negative dim {d}")
        dims.append(d)
    return tuple(dims)


def _string(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise _EntryError(key, f"must be a string, got {type(value).__name__}")
    return value


def _entry_to_case(entry: Any, index: int, suite_seed: int) -> Case:
    if not isinstance(entry, dict):
        raise _EntryError("-", f"entry must be a table/object, got {type(entry).__name__}")
    # JSON null = key absent, so Case.to_record() dumps load back as case files
    entry = {key: value for key, value in entry.items() if value is not None}
    unknown = sorted(set(entry) - CASE_FILE_KEYS)
    if unknown:
        raise _EntryError(unknown[0], f"unknown key (valid: {', '.join(sorted(CASE_FILE_KEYS))})")
    for key in REQUIRED_KEYS:
        if key not in entry:
            raise _EntryError(key, "missing required key")
    kw: dict[str, Any] = {}
    prod = _string(entry["product"], "product")
    if prod not in contract.PRODUCTS:
        raise _EntryError("product", f"unknown product {prod!r}; valid: "
                          f"{', '.join(contract.PRODUCTS)}")
    kw["product"] = prod
    for keys, normalize in ((_DTYPE_KEYS, contract.normalize_dtype),
                            (_FORMAT_KEYS, contract.normalize_format)):
        for key in keys:
            if key in entry:
                try:
                    kw[key] = normalize(_string(entry[key], key))
                except ValueError as exc:
                    raise _EntryError(key, str(exc)) from None
    for key in _TUPLE_KEYS:
        if key in entry:
            kw[key] = _shape(entry[key], key)
    dist = _string(entry.get("distribution", "normal"), "distribution")
    if dist not in DISTRIBUTIONS:
        raise _EntryError("distribution", f"unknown distribution {dist!r}; valid: "
                          f"{', '.join(DISTRIBUTIONS)}")
    layout = _string(entry.get("layout", "contiguous"), "layout")
    if layout not in LAYOUTS:
        raise _EntryError("layout", f"unknown layout {layout!r}; valid: {', '.join(LAYOUTS)}")
    null = entry.get("null", [])
    if isinstance(null, str):
        null = [null]
    if not isinstance(null, list) or any(n not in contract.TENSOR_NAMES for n in null):
        raise _EntryError("null", f"must be a list of {', '.join(contract.TENSOR_NAMES)}")
    seed = entry.get("seed")
    if seed is None:
        seed = derive_seed(suite_seed, "file", index)
    elif isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise _EntryError("seed", "must be an integer in [0, 2**63)")
    family = _string(entry.get("family", "file"), "family")
    cid = entry.get("id")
    if cid is None:
        cid = make_id(prod, kw["dtype"], kw["format"], f"case{index}", kw["self_shape"],
                      kw["grad_shape"], dist, layout)
    else:
        cid = _string(cid, "id")
        if not cid or any(ch in cid for ch in "/\\ \t\n"):
            raise _EntryError("id", f"id must be non-empty without '/', '\\' or spaces: {cid!r}")
    return Case(id=cid, family=family, seed=int(seed), distribution=dist, layout=layout,
                null=tuple(null), **kw)


def parse_case_entries(entries: Any, source: str, suite_seed: int = 0) -> list[Case]:
    """Cases from decoded case-file content (a list, or a mapping with a `cases` list)."""
    if isinstance(entries, dict):
        extra = sorted(set(entries) - {"cases", "suite", "seed"})
        if extra:
            raise SuiteError(f"{source}: unknown top-level key {extra[0]!r} "
                             "(valid: cases, suite, seed)")
        entries = entries.get("cases")
    if not isinstance(entries, list):
        raise SuiteError(f"{source}: expected a list of cases (or a 'cases' list)")
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        try:
            case = _entry_to_case(entry, i, suite_seed)
        except _EntryError as err:
            raise SuiteError(
                f"{source}: entry {i + 1}, field {err.field!r}: {err.message}"
            ) from None
        if case.id in seen:
            raise SuiteError(f"{source}: entry {i + 1}, field 'id': duplicate id {case.id!r} "
                             f"(first in entry {seen[case.id] + 1})")
        seen[case.id] = i
        cases.append(case)
    return cases


@dataclass(frozen=True)
class CaseFile:
    """A decoded case file: its cases and optional suite name / seed."""

    cases: list[Case]
    name: str | None = None
    seed: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


def load_case_file(path: str | Path, suite_seed: int | None = None) -> CaseFile:
    """Read a TOML (`[[cases]]` tables) or JSON (list, or object with `cases`) case file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise SuiteError(f"{p}: cannot read case file: {exc.strerror or exc}") from None
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(raw.decode("utf-8"))
        else:
            data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{p}: not valid {'JSON' if p.suffix.lower() == '.json' else 'TOML'}: "
                         f"{exc}") from None
    name = data.get("suite") if isinstance(data, dict) else None
    file_seed = data.get("seed", 0) if isinstance(data, dict) else 0
    if isinstance(file_seed, bool) or not isinstance(file_seed, int) or file_seed < 0:
        raise SuiteError(f"{p}: top-level 'seed' must be a non-negative integer")
    seed = file_seed if suite_seed is None else suite_seed
    if seed < 0:
        raise SuiteError(f"seed must be >= 0, got {seed}")
    if name is not None and not isinstance(name, str):
        raise SuiteError(f"{p}: top-level 'suite' must be a string")
    return CaseFile(parse_case_entries(data, str(p), seed), name, seed)
