"""`aclcheck products`: the capability table (product x dtype x format)."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from aclcheck import contract
from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.dtypes import COMPUTE_DTYPES


def capability_table() -> Table:
    """Rich table: one row per product, a column per compute dtype, formats and ranks."""
    table = Table(title="aclnnAdaptiveAvgPool2dBackward: products x dtypes x formats")
    # never truncate the ids: they are what --product takes (80-column pipes cut them)
    table.add_column("product", no_wrap=True, min_width=max(map(len, contract.PRODUCTS)))
    for d in COMPUTE_DTYPES:
        table.add_column(d, justify="center")
    table.add_column("formats (rank)", max_width=10)  # wraps, leaves room at 80 columns
    table.add_column("accumulates in", min_width=len("input dtype"))
    fmts = ", ".join(
        f"{f} ({contract.FORMAT_RANK[f] or '3/4'})" for f in contract.FORMATS
    )
    for p in contract.PRODUCTS.values():
        marks = [Text("yes", style="green") if d in p.dtypes
                 else Text.assemble(("no", "red"), " (161002)")
                 for d in COMPUTE_DTYPES]
        acc = "FP32" if p.accumulate == "float32" else "input dtype"
        table.add_row(p.id, *marks, fmts, acc)
    table.caption = (
        "All three tensors share dtype and format. Null pointer: 161001; other invalid "
        "calls: 161002 (order: null, rank, N/C, dtype, format). NHWC, another out dtype "
        "or out H/W: undocumented (reported, not judged)."
    )
    return table


@click.command()
@handle_errors
def products() -> None:
    """Print what each product supports (dtypes, formats, ranks, accumulation).

    \b
    Example:
      aclcheck products
    """
    stdout_console().print(capability_table())
