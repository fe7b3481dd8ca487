"""Suite definitions -> list of Cases: from a selection (CLI flags) or a case file.

Building a suite makes only records (no arrays), so the whole suite is always built and
then filtered or sharded: ids and seeds never depend on the selection's slice.
"""

from __future__ import annotations

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
from aclcheck.configfile import Entry, read_document, top_level
from aclcheck.dtypes import ALL_DTYPES, COMPUTE_DTYPES, normalize_dtype
from aclcheck.errors import SuiteError
from aclcheck.families import ALL_FAMILIES, DEFAULT_FAMILIES, invalid_cases, shape_case
from aclcheck.layouts import LAYOUTS
from aclcheck.store.schema import MAX_DIM, is_safe_id


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
            if d not in ALL_DTYPES:
                raise SuiteError(f"unknown dtype {d!r}; valid: {', '.join(ALL_DTYPES)}")
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
                        dict.fromkeys(prod.dtypes + COMPUTE_DTYPES))
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


def _entry_to_case(value: Any, number: int, suite_seed: int, source: str) -> Case:
    # JSON null = key absent, so Case.to_record() dumps load back as case files
    if isinstance(value, dict):
        value = {key: v for key, v in value.items() if v is not None}
    entry = Entry.of(value, source, number, CASE_FILE_KEYS, REQUIRED_KEYS, SuiteError)
    kw: dict[str, Any] = {"product": entry.text("product", choices=tuple(contract.PRODUCTS))}
    for keys, normalize in ((_DTYPE_KEYS, normalize_dtype),
                            (_FORMAT_KEYS, contract.normalize_format)):
        for key in keys:
            if key in entry:
                text = entry.text(key)
                try:
                    kw[key] = normalize(text)
                except ValueError as exc:
                    raise entry.error(key, str(exc)) from None
    for key in _TUPLE_KEYS:
        if key in entry:
            kw[key] = entry.dims(key, contract.MAX_RANK, MAX_DIM)
    dist = entry.text("distribution", "normal", choices=DISTRIBUTIONS)
    layout = entry.text("layout", "contiguous", choices=LAYOUTS)
    null = entry.text_list("null", [], choices=contract.TENSOR_NAMES, single_ok=True)
    seed = entry.integer("seed", None, lo=0, hi=2**63 - 1) if "seed" in entry \
        else derive_seed(suite_seed, "file", number - 1)
    family = entry.text("family", "file")
    if "id" in entry:
        cid = entry.text("id")
        if not is_safe_id(cid):
            raise entry.error("id", "id must be a non-empty plain name without '/', '\\' or "
                              f"spaces (letters, digits, '_', '.', '-'): {cid!r}")
    else:
        cid = make_id(kw["product"], kw["dtype"], kw["format"], f"case{number - 1}",
                      kw["self_shape"], kw["grad_shape"], dist, layout)
    return Case(id=cid, family=family, seed=int(seed), distribution=dist, layout=layout,
                null=null, **kw)


def parse_case_entries(entries: Any, source: str, suite_seed: int = 0) -> list[Case]:
    """Cases from decoded case-file content (a list, or a mapping with a `cases` list)."""
    if isinstance(entries, dict):
        entries = top_level(entries, source, ("cases", "suite", "seed"),
                            "valid: cases, suite, seed", SuiteError).get("cases")
    if not isinstance(entries, list):
        raise SuiteError.at(source, "expected a list of cases (or a 'cases' list)")
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for number, value in enumerate(entries, 1):
        case = _entry_to_case(value, number, suite_seed, source)
        if case.id in seen:
            raise SuiteError.at(source, f"duplicate id {case.id!r} (first in entry "
                                f"{seen[case.id]})", number, "id")
        seen[case.id] = number
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
    data = read_document(p, "case file", error=SuiteError)
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
