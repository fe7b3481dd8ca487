"""`aclcheck merge`: join shard outputs (verify reports or golden files) into one."""

from __future__ import annotations

import sys

import click

from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.errors import (
    EXIT_CODES_HELP,
    EXIT_NONCONFORMANT,
    EXIT_OK,
    UsageError,
)
from aclcheck.judging.case.verdicts import summarize, summary_text
from aclcheck.judging.gate.gate import decide
from aclcheck.report import json_report
from aclcheck.report.console import gate_lines
from aclcheck.report.files import check_writable
from aclcheck.report.safe_text import printable
from aclcheck.store.dispatch import is_golden
from aclcheck.store.file_guard import Role, check_apart
from aclcheck.suite.merge import merge_golden, merge_reports


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Merged file to write.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@handle_errors
def merge(inputs: tuple[str, ...], output: str, force: bool) -> None:
    """Join shard outputs into one: verify JSON reports, or golden files made with
    `generate --shard K/N` (the result equals an unsharded run, case for case).

    Reports must make a whole run: every shard K/N present once, none of an interrupted
    run (exit 2 otherwise). Exits 1 when the merged run has a nonconforming case or
    judged none. Golden files of any schema are read; the merged file is written in the
    current one (schema 3), so merging a single old file converts it.

    \b
    Examples:
      aclcheck merge -o report.json shard1.json shard2.json shard3.json shard4.json
      aclcheck merge -o suite.h5 suite-1of2.h5 suite-2of2.h5
      aclcheck merge -o suite-v3.h5 suite-v2.h5    # convert an older golden file
    """
    from pathlib import Path

    if Path(output).exists() and not force:
        raise UsageError(f"{output} exists (use --force to overwrite)")
    check_writable({"-o": output})
    check_apart([Role(p, p) for p in inputs], [Role("-o", output)])
    if not all(is_golden(p) for p in inputs):
        loaded = [(p, *json_report.read(p)) for p in inputs]
        merged, verdicts = merge_reports(loaded)
        json_report.write(output, merged)
        stdout_console().print(f"{printable(output)}: {summary_text(summarize(verdicts))}",
                               soft_wrap=True, markup=False)
        gate = decide(verdicts)
        for line in gate_lines(gate):
            click.echo(line, err=True)
        sys.exit(EXIT_NONCONFORMANT if gate.failed else EXIT_OK)
    count = merge_golden(list(inputs), output, force=force)
    stdout_console().print(f"{output}: {count} cases from {len(inputs)} files", markup=False)
