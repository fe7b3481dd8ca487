"""Command-line interface: one module per command, all thin (parse, call, render, exit).

Exit codes: 0 success/conformant, 1 nonconformance, 2 usage, 3 bad input file, 4 internal,
130 interrupted. The entry point imports nothing but the standard library before it
installs the start-up Ctrl-C handler (aclcheck.interrupts); the group (`cli`, in
aclcheck.cli.group) loads its commands lazily. `from aclcheck.cli import cli` works as
before (the name resolves on first access).
"""

from __future__ import annotations

from typing import Any


def main() -> None:
    """Console-script entry point (`aclcheck`, `python -m aclcheck`)."""
    from aclcheck import interrupts

    interrupts.exit_at_once()  # a Ctrl-C from here until the command runs: one line, 130
    from aclcheck.cli.group import cli

    cli.main(prog_name="aclcheck")


def __getattr__(name: str) -> Any:
    if name == "cli":
        from aclcheck.cli.group import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
