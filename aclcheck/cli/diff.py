"""`aclcheck diff`: compare two verify reports, or two golden files."""

from __future__ import annotations

import sys

import click

from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.errors import (
    EXIT_CODES_HELP,
    EXIT_NONCONFORMANT,
    EXIT_OK,
    InputFileError,
    UsageError,
)
from aclcheck.judging.gate.gate import decide
from aclcheck.report import console as console_report
from aclcheck.report import json_report
from aclcheck.report.console import gate_lines
from aclcheck.report.diff import diff as baseline_diff
from aclcheck.report.diff import run_mismatch
from aclcheck.report.safe_text import printable
from aclcheck.store.diff import diff_golden
from aclcheck.store.dispatch import is_golden


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Compare reports of different golden files "
              "(otherwise refused).")
@handle_errors
def diff(old: str, new: str, force: bool) -> None:
    """Compare two verify JSON reports (new failures, fixed cases, metric regressions), or
    two golden files (data drift: index, records, byte-identical datasets).

    Exits 1 when NEW has failures OLD did not have, judged no case, or is the report of
    an interrupted run, or when the golden files differ; 3 when a file is neither a
    report nor a golden file. Only a failing case that now passes counts as fixed (one
    now listed as a known failure is "now known"). Reports of different golden files
    are refused unless --force (their case ids need not mean the same data); reports of
    different implementations are compared (that is what a baseline is for) with a warning.

    \b
    Examples:
      aclcheck diff reports/main.json reports/branch.json
      aclcheck diff golden/ci-suite.h5 regenerated.h5
      aclcheck diff --force reports/torch.json reports/aclnn.json
    """
    golden_old, golden_new = is_golden(old), is_golden(new)
    if golden_old or golden_new:
        if not (golden_old and golden_new):
            other, kind = (new, old) if golden_old else (old, new)
            raise InputFileError.at(other, f"not a golden file (to compare with golden file "
                                    f"{kind})")
        differences = diff_golden(old, new)
        console = stdout_console()
        for line in differences:
            console.print(line, soft_wrap=True, markup=False)
        console.print(f"{len(differences)} difference(s)" if differences
                      else f"{old} and {new} hold identical data", soft_wrap=True,
                      markup=False)
        sys.exit(EXIT_NONCONFORMANT if differences else EXIT_OK)
    report_old, before = json_report.read(old)
    report_new, after = json_report.read(new)
    other_golden = run_mismatch(report_old, report_new, "golden")
    if other_golden and not force:
        raise UsageError(f"{old} and {new} are reports of different golden files "
                         f"({other_golden}); use --force to compare anyway")
    for mismatch in filter(None, (other_golden,
                                  run_mismatch(report_old, report_new, "implementation"))):
        click.echo(f"aclcheck: warning: comparing reports of different runs "
                   f"({printable(mismatch)})", err=True)
    changes = baseline_diff(before, after)
    console_report.render_diff(stdout_console(), changes, old)
    gate = decide(after, failing=[now for _, now in changes.new_failures])
    if report_new.get("interrupted"):
        click.echo(f"aclcheck: gate failed: {printable(new)} is the report of an "
                   "interrupted run", err=True)
    for line in gate_lines(gate):
        click.echo(line, err=True)
    failed = gate.failed or bool(report_new.get("interrupted"))
    sys.exit(EXIT_NONCONFORMANT if failed else EXIT_OK)
