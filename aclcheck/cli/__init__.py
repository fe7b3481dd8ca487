"""Command-line interface: one module per command, all thin (parse, call, render, exit).

Exit codes: 0 success/conformant, 1 nonconformance, 2 usage, 3 bad input file, 4 internal.
"""

from __future__ import annotations

import os
import sys

import click

from aclcheck import __version__
from aclcheck.cli import exchange as _exchange
from aclcheck.cli import generate as _generate
from aclcheck.cli import hunt as _hunt
from aclcheck.cli import impls as _impls
from aclcheck.cli import inspect as _inspect
from aclcheck.cli import products as _products
from aclcheck.cli import report as _report
from aclcheck.cli import reports as _reports
from aclcheck.cli import shrink as _shrink
from aclcheck.cli import tolerances as _tolerances
from aclcheck.cli import verify as _verify
from aclcheck.errors import EXIT_CODES_HELP


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXIT_CODES_HELP,
)
@click.version_option(__version__, prog_name="aclcheck")
def cli() -> None:
    """Conformance and golden data for aclnnAdaptiveAvgPool2dBackward.

    \b
    Typical session:
      aclcheck products                      # what each product supports
      aclcheck generate -o suite.h5          # default suite with float64 goldens
      aclcheck inspect suite.h5 --check      # list cases, verify integrity
      aclcheck verify suite.h5 --impl torch  # judge an implementation
    """


cli.add_command(_products.products)
cli.add_command(_tolerances.tolerances)
cli.add_command(_generate.generate)
cli.add_command(_inspect.inspect)
cli.add_command(_verify.verify)
cli.add_command(_impls.impls)
cli.add_command(_exchange.export)
cli.add_command(_exchange.import_)
cli.add_command(_reports.diff)
cli.add_command(_reports.merge)
cli.add_command(_report.report)
cli.add_command(_shrink.shrink_cmd)
cli.add_command(_hunt.hunt)


def main() -> None:
    """Console-script entry point. When a kernel that ran in this process registered exit
    handlers (aclcheck.integrity), the process ends without running them: none of them
    can turn the verdicts' exit status into another."""
    try:
        cli(prog_name="aclcheck")
    except SystemExit as exc:
        from aclcheck import integrity

        if not integrity.compromised:
            raise
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)
