"""`aclcheck diff` and `aclcheck merge`: work on verify reports (and shard golden files)."""

from __future__ import annotations

import sys

import click

from aclcheck.baseline import diff as baseline_diff
from aclcheck.baseline import diff_golden
from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.errors import EXIT_CODES_HELP, EXIT_NONCONFORMANT, EXIT_OK, UsageError
from aclcheck.merge import merge_golden, merge_reports
from aclcheck.report import console as console_report
from aclcheck.report import json_report
from aclcheck.verdicts import summarize, summary_line


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@handle_errors
def diff(old: str, new: str) -> None:
    """Compare two verify JSON reports (new failures, fixed cases, metric regressions), or
    two golden files (data drift: index, records, byte-identical datasets).

    Exits 1 when NEW has failures OLD did not have, or when the golden files differ.

    \b
    Examples:
      aclcheck diff reports/main.json reports/branch.json
      aclcheck diff golden/ci-suite.h5 regenerated.h5
    """
    if not (old.lower().endswith(".json") and new.lower().endswith(".json")):
        differences = diff_golden(old, new)
        console = stdout_console()
        for line in differences:
            console.print(line, soft_wrap=True, markup=False)
        console.print(f"{len(differences)} difference(s)" if differences
                      else f"{old} and {new} hold identical data", soft_wrap=True)
        sys.exit(EXIT_NONCONFORMANT if differences else EXIT_OK)
    _, before = json_report.read(old)
    _, after = json_report.read(new)
    changes = baseline_diff(before, after)
    console_report.render_diff(stdout_console(), changes, old)
    sys.exit(EXIT_NONCONFORMANT if changes.worse else EXIT_OK)


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Merged file to write.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@handle_errors
def merge(inputs: tuple[str, ...], output: str, force: bool) -> None:
    """Join shard outputs into one: verify JSON reports, or golden files made with
    `generate --shard K/N` (the result equals an unsharded run, case for case).

    \b
    Examples:
      aclcheck merge -o report.json shard1.json shard2.json shard3.json shard4.json
      aclcheck merge -o suite.h5 suite-1of2.h5 suite-2of2.h5
    """
    from pathlib import Path

    if Path(output).exists() and not force:
        raise UsageError(f"{output} exists (use --force to overwrite)")
    if all(p.lower().endswith(".json") for p in inputs):
        loaded = [(p, *json_report.read(p)) for p in inputs]
        merged, verdicts = merge_reports(loaded)
        json_report.write(output, merged)
        stdout_console().print(f"{output}: {summary_line(summarize(verdicts))}",
                               soft_wrap=True)
        sys.exit(EXIT_NONCONFORMANT if any(v.failing for v in verdicts) else EXIT_OK)
    count = merge_golden(list(inputs), output, force=force)
    stdout_console().print(f"{output}: {count} cases from {len(inputs)} files")
