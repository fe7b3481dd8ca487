"""Which cases of a golden file a command works on: filters over the /index rows."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

import click

from aclcheck import contract
from aclcheck.store import IndexEntry


def select(entries: Sequence[IndexEntry], *, products: Sequence[str] = (),
           dtypes: Sequence[str] = (), formats: Sequence[str] = (),
           families: Sequence[str] = (), id_pattern: str | None = None) -> list[IndexEntry]:
    """Index rows matching every given filter (repeated values of one filter: any)."""
    for p in products:
        if p not in contract.PRODUCTS:
            raise click.UsageError(f"unknown product {p!r}; valid: {', '.join(contract.PRODUCTS)}")
    dts = {_normalized(contract.normalize_dtype, d) for d in dtypes}
    fmts = {_normalized(contract.normalize_format, f) for f in formats}
    return [e for e in entries
            if (not products or e.product in products)
            and (not dts or e.dtype in dts)
            and (not fmts or e.format in fmts)
            and (not families or e.family in families)
            and (id_pattern is None or fnmatch.fnmatchcase(e.id, id_pattern))]


def _normalized(fn: Any, value: str) -> str:
    try:
        return fn(value)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


