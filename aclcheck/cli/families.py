"""`aclcheck families`: every case family, what it aims at, and its cases by default."""

from __future__ import annotations

from collections import Counter

import click
from rich.table import Table

from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.cli.options import click_option
from aclcheck.ops import operator
from aclcheck.ops.operator import Operator
from aclcheck.options import OP
from aclcheck.suite.selection import Selection, build_suite


def families_table(op: Operator, counts: Counter[str]) -> Table:
    """One row per family: in the default suite or on request, its cases there, the
    products its fact belongs to, the docs/contract.md section, and what it aims at."""
    table = Table(title=f"{op.api}: case families")
    table.add_column("family", no_wrap=True)
    table.add_column("default", justify="center")
    table.add_column("cases", justify="right")
    table.add_column("products", no_wrap=True)
    table.add_column("§", no_wrap=True)
    table.add_column("aims at")
    for name in op.families:
        note = op.family_notes.get(name)
        default = name in op.default_families
        table.add_row(name, "yes" if default else "on request",
                      str(counts[name]) if default else "", note.products if note else "",
                      note.section if note else "", note.aims if note else "")
    table.caption = ("cases: in the default suite (`aclcheck generate`, --count 1); "
                     f"§: the section of {op.display.contract_doc} with the fact and its source")
    return table


@click.command()
@click_option(OP)
@handle_errors
def families(op: str) -> None:
    """List every case family with the fact it aims at and its cases by default.

    \b
    Examples:
      aclcheck families
      aclcheck families --op aapool3d-bwd
      aclcheck generate -o hw.h5 --family cores --family ubpass   # just those
    """
    chosen = operator(op)
    counts = Counter(c.family for c in build_suite(Selection(op=chosen.name)))
    stdout_console().print(families_table(chosen, counts))
