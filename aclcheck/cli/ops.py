"""`aclcheck ops`: the operators this aclcheck checks."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.table import Table

from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.ops import DEFAULT, OPERATORS
from aclcheck.ops.operator import Operator


def describe(op: Operator) -> dict[str, Any]:
    """What `aclcheck ops` shows of one operator (its --json entry)."""
    return {"name": op.name, "aliases": list(op.aliases), "api": op.api,
            "default": op.name == DEFAULT, "roles": [r.api for r in op.roles],
            "ranks": list(op.ranks), "formats": list(op.formats),
            "default_families": list(op.default_families)}


def ops_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="Operators (--op NAME of generate, products, tolerances, hunt)")
    for col in ("name", "aliases", "aclnn API", "tensors", "ranks", "formats",
                "default families"):
        table.add_column(col, no_wrap=col in ("name", "aclnn API"))
    for row in rows:
        name = row["name"] + (" (default)" if row["default"] else "")
        table.add_row(name, ", ".join(row["aliases"]), row["api"], ", ".join(row["roles"]),
                      "/".join(map(str, row["ranks"])), ", ".join(row["formats"]),
                      ", ".join(row["default_families"]))
    return table


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@handle_errors
def ops(as_json: bool) -> None:
    """List the operators aclcheck checks: name and aliases (for --op), aclnn API, tensors,
    ranks, formats and default case families.

    \b
    Examples:
      aclcheck ops
      aclcheck ops --json
    """
    rows = [describe(op) for op in OPERATORS.values()]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    stdout_console().print(ops_table(rows))
