"""A selection (CLI flags) -> the list of its Cases, in a fixed order.

Building a suite makes only records (no arrays), so the whole suite is always built and
then filtered or sharded: ids and seeds never depend on the selection's slice. Case
files are the other source of cases (aclcheck.suite.casefile).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from aclcheck.cases import Case
from aclcheck.dtypes import ALL_DTYPES
from aclcheck.errors import SuiteError
from aclcheck.ops import DEFAULT, operator


@dataclass(frozen=True)
class Selection:
    """What to generate: products x dtypes x formats x families, `count` each, of one
    operator. Products, formats and families left None are all of the operator's
    (its default families)."""

    products: tuple[str, ...] | None = None
    dtypes: tuple[str, ...] | None = None  # None: each product's own dtypes
    formats: tuple[str, ...] | None = None
    families: tuple[str, ...] | None = None
    count: int = 1
    seed: int = 0
    op: str = DEFAULT

    def __post_init__(self) -> None:
        op = operator(self.op)
        for name, default in (("products", tuple(op.products)), ("formats", op.formats),
                              ("families", op.default_families)):
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        for p in self.products:
            if p not in op.products:
                raise SuiteError(f"unknown product {p!r}; valid: {', '.join(op.products)}")
        for d in self.dtypes or ():
            if d not in ALL_DTYPES:
                raise SuiteError(f"unknown dtype {d!r}; valid: {', '.join(ALL_DTYPES)}")
        for f in self.formats:
            if f not in op.formats:
                raise SuiteError(f"unknown format {f!r}; valid: {', '.join(op.formats)}")
        for fam in self.families:
            if fam not in op.families:
                raise SuiteError(f"unknown family {fam!r}; valid: {', '.join(op.families)}")
        if self.count < 1:
            raise SuiteError(f"count must be >= 1, got {self.count}")
        if self.seed < 0:
            raise SuiteError(f"seed must be >= 0, got {self.seed}")


def build_suite(sel: Selection) -> list[Case]:
    """All cases of a selection, in a fixed order (the family of invalid calls is built
    from the contract's rules, the others from their shape recipes)."""
    cases = list(iter_suite(sel))
    check_unique(cases, "suite")
    return cases


#: One place in a suite's order: (product, family, dtype, format, index); dtype and
#: format are None for the invalid-call family, whose place is one index of a product.
SuiteSlot = tuple[str, str, str | None, str | None, int]


def iter_suite(sel: Selection) -> Iterator[Case]:
    """build_suite's cases one at a time, in the same order (a suite of any size in
    constant memory; ids are unique by construction, build_suite checks it)."""
    for slot in iter_slots(sel):
        yield from slot_cases(sel, slot)


def iter_slots(sel: Selection) -> Iterator[SuiteSlot]:
    """The places of a selection's suite, in order: cheap to list (no case is built),
    so workers can build the cases of consecutive places and keep the suite's order."""
    op = operator(sel.op)
    for prod_id in sel.products:
        prod = op.products[prod_id]
        wanted = sel.dtypes if sel.dtypes is not None else prod.dtypes
        positive = [d for d in wanted if d in prod.dtypes]
        for family in sel.families:
            if family == "invalid":
                for index in range(sel.count):
                    yield prod_id, family, None, None, index
                continue
            for dtype in positive:
                for fmt in sel.formats:
                    for index in range(sel.count):
                        yield prod_id, family, dtype, fmt, index


def slot_cases(sel: Selection, slot: SuiteSlot) -> list[Case]:
    """The cases of one place of the suite (none where a family does not apply; the
    invalid-call family's are built from the contract's rules, one per rule)."""
    op = operator(sel.op)
    prod_id, family, dtype, fmt, index = slot
    if dtype is None or fmt is None:
        # unrestricted: the product's own dtypes plus the compute dtypes it lacks
        rules_dtypes = sel.dtypes if sel.dtypes is not None else tuple(
            dict.fromkeys(op.products[prod_id].dtypes + op.dtypes))
        return list(op.invalid_cases(prod_id, tuple(rules_dtypes), sel.formats, index,
                                     sel.seed))
    case = op.shape_case(family, prod_id, dtype, fmt, index, sel.seed)
    return [] if case is None else [case]


def check_unique(cases: Iterable[Case], where: str) -> None:
    seen: set[str] = set()
    for c in cases:
        if c.id in seen:
            raise SuiteError(f"{where}: duplicate case id {c.id!r}")
        seen.add(c.id)
