"""Which cases of a golden file a command works on: filters over the /index rows."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Sequence

from aclcheck.cases.acl import PRODUCTS, normalize_format
from aclcheck.dtypes import normalize_dtype
from aclcheck.errors import SuiteError
from aclcheck.store.index import IndexEntry


def select(entries: Sequence[IndexEntry], *, products: Sequence[str] = (),
           dtypes: Sequence[str] = (), formats: Sequence[str] = (),
           families: Sequence[str] = (), id_pattern: str | Sequence[str] | None = None
           ) -> list[IndexEntry]:
    """Index rows matching every given filter (repeated values of one filter: any).

    A family written `!name` excludes that family (`--family '!invalid'`); only
    exclusions keep every other family. `id_pattern` is one glob or several (any).
    Unknown names (a family no row of `entries` has) are a SuiteError.
    """
    keep = row_filter(entries, products=products, dtypes=dtypes, formats=formats,
                      families=families, id_pattern=id_pattern)
    return [e for e in entries if keep(e)]


def row_filter(entries: Iterable[IndexEntry], *, products: Sequence[str] = (),
               dtypes: Sequence[str] = (), formats: Sequence[str] = (),
               families: Sequence[str] = (), id_pattern: str | Sequence[str] | None = None
               ) -> Callable[[IndexEntry], bool]:
    """`select`'s test of one row, after checking the filters' names against `entries`
    (read through once, nothing kept): for callers that stream the selected rows
    instead of holding them (verify: memory independent of the case count)."""
    for p in products:
        if p not in PRODUCTS:
            raise SuiteError(f"unknown product {p!r}; valid: {', '.join(PRODUCTS)}")
    dts = {normalize_dtype(d) for d in dtypes}
    fmts = {normalize_format(f) for f in formats}
    wanted = {f for f in families if not f.startswith("!")}
    excluded = {f[1:] for f in families if f.startswith("!")}
    if wanted or excluded:
        known = sorted({e.family for e in entries})
        for name in sorted(wanted | excluded):
            if name not in known:  # a typo must not read as "no case matches"
                raise SuiteError(f"unknown family {name!r} (known in this file: "
                                 f"{', '.join(known) or 'none'})")

    def keep(e: IndexEntry) -> bool:
        return ((not products or e.product in products)
                and (not dts or e.dtype in dts)
                and (not fmts or e.format in fmts)
                and (not wanted or e.family in wanted) and e.family not in excluded
                and id_matches(e.id, id_pattern))

    return keep


def id_matches(case_id: str, patterns: str | Sequence[str] | None) -> bool:
    """True when no pattern is given or the id matches one of the globs."""
    if patterns is None:
        return True
    if isinstance(patterns, str):
        patterns = (patterns,)
    return not patterns or any(fnmatch.fnmatchcase(case_id, p) for p in patterns)

