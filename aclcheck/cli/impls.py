"""`aclcheck impls`: the implementations this installation can run, and their scope."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.impls import available
from aclcheck.report.safe_text import data_text
from aclcheck.running.workers.adapter import describe


@click.command()
@handle_errors
def impls() -> None:
    """List implementation adapters: available here or not (and why), what each supports.

    \b
    Example:
      aclcheck impls
    """
    table = Table(title="implementations (--impl NAME)")
    table.add_column("name", no_wrap=True)
    table.add_column("here", no_wrap=True)
    table.add_column("what", overflow="fold")
    table.add_column("scope / why not", overflow="fold")
    for info in available(describe):
        here = Text("yes", style="green") if info.available else Text("no", style="red")
        note = info.note if info.available else f"not available: {info.note}"
        table.add_row(data_text(info.name), here, data_text(info.description),
                      data_text(note))
    table.caption = ("Third-party adapters register in the entry-point group "
                     "'aclcheck.implementations'.")
    stdout_console().print(table)
