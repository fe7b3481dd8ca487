"""`aclcheck inspect FILE --coverage`: which edges the file's valid cases reach, as a
table (the uncovered ones marked) or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

import click
from rich.table import Table
from rich.text import Text

from aclcheck.cases import Case
from aclcheck.cases.coverage import Coverage
from aclcheck.cli.common import stdout_console
from aclcheck.errors import UsageError
from aclcheck.ops import operator_of


def coverage_of(cases: Sequence[Case]) -> Coverage:
    """The coverage of cases of one operator (UsageError where it has no report)."""
    if not cases:
        raise UsageError("no case matches the selection")
    op = operator_of(cases[0])
    if op.coverage is None:
        raise UsageError(f"{op.name} has no coverage report")
    return op.coverage(cases)


def coverage_table(title: str, cov: Coverage, doc: str = "docs/contract.md") -> Table:
    table = Table(title=title)
    for col in ("group", "edge", "§", "cases", "first case"):
        table.add_column(col, justify="right" if col == "cases" else "left",
                         no_wrap=col in ("group", "first case"))
    for e in cov.edges:
        count = (Text(str(e.cases)) if e.covered else
                 Text(f"none ({e.drawn_by})", style="yellow") if e.on_request else
                 Text("none", style="bold red"))
        table.add_row(e.group, e.label, e.section, count, e.example)
    missing = len(cov.missing())
    extremes = ", ".join(f"{name} {value}" for name, value in cov.extremes)
    table.caption = (f"{cov.valid_cases} valid cases; {missing} of {len(cov.edges)} edges "
                     f"not reached; {extremes}. §: {doc}")
    return table


def show_coverage(title: str, cases: Sequence[Case], as_json: bool) -> Coverage:
    cov = coverage_of(cases)
    if as_json:
        click.echo(json.dumps({"file": title, "coverage": cov.to_dict()}, indent=2))
    else:
        doc = operator_of(cases[0]).display.contract_doc
        stdout_console().print(coverage_table(f"{title}: coverage", cov, doc))
    return cov


def require_edges(title: str, cov: Coverage) -> None:
    """Exit 1 naming each hardware edge a default suite must reach and `title` does not
    (the CI gate: a suite that lost an edge)."""
    lost = cov.lost()
    if lost:
        names = "; ".join(f"{e.label} (§{e.section})" for e in lost)
        click.echo(f"aclcheck: {title}: {len(lost)} hardware edge(s) reached by no case: "
                   f"{names}", err=True)
        raise SystemExit(1)
