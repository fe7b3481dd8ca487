"""Helpers shared by the commands: consoles and the error-to-exit-code wrapper (the one
place aclcheck's errors become exit codes and messages)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

from aclcheck import interrupts
from aclcheck.errors import EXIT_INTERNAL, AclcheckError, message_of
from aclcheck.report.safe_text import printable

F = TypeVar("F", bound=Callable[..., Any])


def stdout_console(width: int | None = None) -> Console:
    """The command's output console. Strings printed to it are never parsed as markup
    or emoji codes (data such as case ids may hold '[...]' or ':x:'); styled output uses
    Text objects. Outside a terminal (CI logs) it is wide, so tables do not wrap at 80."""
    return Console(highlight=False, soft_wrap=False, markup=False, emoji=False,
                   width=width or _log_width())


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False, markup=False, emoji=False)


#: console width when output is not a terminal and neither --width nor COLUMNS says
LOG_WIDTH = 160


def _log_width() -> int | None:
    """None on a terminal or when COLUMNS is set (rich decides), else LOG_WIDTH."""
    if os.environ.get("COLUMNS") or sys.stdout.isatty():
        return None
    return LOG_WIDTH


def handle_errors(fn: F) -> F:
    """Turn known errors into a one-line message and their exit code; never a traceback
    for the user's mistakes. Unexpected exceptions exit 4 with the message."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AclcheckError as exc:  # the one mapping of aclcheck's errors to exit codes
            if exc.show_usage:
                raise click.UsageError(message_of(exc)) from None
            click.echo(f"aclcheck: error: {printable(message_of(exc))}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo(interrupts.MESSAGE, err=True)
            sys.exit(interrupts.EXIT_INTERRUPTED)
        except (click.ClickException, click.exceptions.Exit, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - last-resort boundary of the CLI
            click.echo(f"aclcheck: internal error: {type(exc).__name__}: {printable(exc)}",
                       err=True)
            sys.exit(EXIT_INTERNAL)

    return wrapper  # type: ignore[return-value]
