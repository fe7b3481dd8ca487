"""Helpers shared by the commands: consoles and the error-to-exit-code wrapper."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

from aclcheck.errors import EXIT_INTERNAL, AclcheckError
from aclcheck.suite import SuiteError

F = TypeVar("F", bound=Callable[..., Any])


def stdout_console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def handle_errors(fn: F) -> F:
    """Turn known errors into a one-line message and their exit code; never a traceback
    for the user's mistakes. Unexpected exceptions exit 4 with the message."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AclcheckError as exc:
            click.echo(f"aclcheck: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except SuiteError as exc:
            raise click.UsageError(str(exc)) from None
        except KeyboardInterrupt:
            click.echo("aclcheck: interrupted", err=True)
            sys.exit(130)
        except (click.ClickException, click.exceptions.Exit, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - last-resort boundary of the CLI
            click.echo(f"aclcheck: internal error: {type(exc).__name__}: {exc}", err=True)
            sys.exit(EXIT_INTERNAL)

    return wrapper  # type: ignore[return-value]


def selection_options(fn: F) -> F:
    """The case filters every command over a golden file shares (see selection.select)."""
    options = (
        click.option("--product", multiple=True, metavar="NAME",
                     help="Only this product (repeatable)."),
        click.option("--dtype", multiple=True, metavar="NAME",
                     help="Only this dtype (repeatable)."),
        click.option("--format", "format_", multiple=True, metavar="NAME",
                     help="Only this format (repeatable)."),
        click.option("--family", multiple=True, metavar="NAME",
                     help="Only this family (repeatable)."),
        click.option("--id", "id_pattern", default=None, metavar="GLOB",
                     help="Only case ids matching this glob pattern."),
    )
    for option in reversed(options):
        fn = option(fn)
    return fn
