"""Command-line interface: one module per command, all thin (parse, call, render, exit).

Exit codes: 0 success/conformant, 1 nonconformance, 2 usage, 3 bad input file, 4 internal,
130 interrupted. The entry point imports nothing but the standard library before it
installs the start-up Ctrl-C handler (aclcheck.interrupts); the group (`cli`, in
aclcheck.cli.group) loads its commands lazily. `from aclcheck.cli import cli` works as
before (the name resolves on first access).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def shadowing() -> str | None:
    """What is wrong when `aclcheck` was imported from a plain folder of that name (a
    namespace package: a clone folder named aclcheck whose parent is on PYTHONPATH, ahead
    of an install that cannot win); None when it is this package."""
    import aclcheck

    if getattr(aclcheck, "__file__", None) is not None:
        return None
    real = Path(__file__).resolve().parent.parent
    folders = ", ".join(str(p) for p in getattr(aclcheck, "__path__", []))
    return (f"aclcheck: error: the folder {folders} is imported as the package 'aclcheck' "
            f"instead of {real} (a folder named aclcheck on PYTHONPATH or in the current "
            f"folder); take its parent off PYTHONPATH or reinstall: pip install -e "
            f"{real.parent}")


def main() -> None:
    """Console-script entry point (`aclcheck`, `python -m aclcheck`). When a kernel that
    ran in this process registered exit handlers (aclcheck.running.integrity), the process ends
    without running them: none of them can turn the verdicts' exit status into another."""
    from aclcheck import interrupts

    interrupts.exit_at_once()  # a Ctrl-C from here until the command runs: one line, 130
    problem = shadowing()
    if problem is not None:
        print(problem, file=sys.stderr)
        sys.exit(2)
    from aclcheck.cli.group import cli

    try:
        cli.main(prog_name="aclcheck")
    except SystemExit as exc:
        # never imported: no kernel ran in this process (generate, inspect, ...)
        integrity = sys.modules.get("aclcheck.running.integrity")
        if integrity is None or not integrity.compromised:
            raise
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)


def __getattr__(name: str) -> Any:
    if name == "cli":
        from aclcheck.cli.group import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
