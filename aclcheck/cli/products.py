"""`aclcheck products`: the capability table (product x dtype x format)."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from aclcheck.cases.acl import PARAM_INVALID
from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.cli.options import click_option
from aclcheck.ops import operator
from aclcheck.ops.operator import Operator
from aclcheck.options import OP


def capability_table(op: Operator) -> Table:
    """Rich table: one row per product, a column per compute dtype, formats and ranks."""
    table = Table(title=f"{op.api}: products x dtypes x formats")
    # never truncate the ids: they are what --product takes (80-column pipes cut them)
    table.add_column("product", no_wrap=True, min_width=max(map(len, op.products)))
    for d in op.dtypes:
        table.add_column(d, justify="center")
    table.add_column("formats (rank)", max_width=10)  # wraps, leaves room at 80 columns
    table.add_column("accumulates in", min_width=len("input dtype"))
    any_rank = "/".join(str(r) for r in op.ranks)
    fmts = ", ".join(f"{f} ({op.format_rank[f] or any_rank})" for f in op.formats)
    for p in op.products.values():
        marks = [Text("yes", style="green") if d in p.dtypes
                 else Text.assemble(("no", "red"), f" ({PARAM_INVALID})")
                 for d in op.dtypes]
        acc = "FP32" if p.accumulate == "float32" else "input dtype"
        table.add_row(p.id, *marks, fmts, acc)
    table.caption = op.display.products_note
    return table


@click.command()
@click_option(OP)
@handle_errors
def products(op: str) -> None:
    """Print what each product supports (dtypes, formats, ranks, accumulation).

    \b
    Example:
      aclcheck products
      aclcheck products --op aapool2d-bwd
    """
    stdout_console().print(capability_table(operator(op)))
