"""`aclcheck tolerances`: the tolerance standards as tables (with overrides applied)."""

from __future__ import annotations

from pathlib import Path

import click

from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.errors import UsageError
from aclcheck.standards import DEFAULT_STANDARD, STANDARDS, load_overrides, standard_table


@click.command()
@click.option("--standard", "names", multiple=True, metavar="NAME",
              help=f"Show only this standard (repeatable). One of: {', '.join(STANDARDS)}.")
@click.option("--tolerances", "tolerances", type=click.Path(dir_okay=False, path_type=Path),
              help="TOML file of per-dtype / per-product overrides to apply.")
@handle_errors
def tolerances(names: tuple[str, ...], tolerances: Path | None) -> None:
    """Print the tolerance standards: the rule and the numbers per dtype.

    The default standard, aclcheck, budgets every element from the golden's own error
    bound (docs/tolerances.md); the others are the published standards.

    \b
    Examples:
      aclcheck tolerances
      aclcheck tolerances --standard cann-mixed
      aclcheck tolerances --tolerances my-tolerances.toml --standard aclcheck
    """
    for name in names:
        if name not in STANDARDS:
            raise UsageError(f"unknown standard {name!r}; valid: {', '.join(STANDARDS)}")
    overrides = load_overrides(tolerances) if tolerances is not None else None
    console = stdout_console()
    for name in names or tuple(STANDARDS):
        console.print(standard_table(name, overrides))
        console.print()
    if not names:
        console.print(f"Default standard: {DEFAULT_STANDARD}. Overrides: --tolerances FILE "
                      "with tables [standard], [standard.dtype], [standard.product], "
                      "[standard.product.dtype].")
