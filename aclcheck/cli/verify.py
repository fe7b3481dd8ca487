"""`aclcheck verify`: judge an implementation on a golden file; the CI gate. The run is
aclcheck.running.session's; this module parses, renders and exits."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from aclcheck.cli.common import handle_errors, stderr_console, stdout_console
from aclcheck.cli.options import click_options
from aclcheck.errors import EXIT_CODES_HELP, EXIT_INTERNAL, EXIT_NONCONFORMANT, EXIT_OK
from aclcheck.interrupts import EXIT_INTERRUPTED
from aclcheck.judging.gate.spool import VerdictSpool
from aclcheck.report import console as console_report
from aclcheck.report.console import gate_lines
from aclcheck.report.safe_text import data_text, printable
from aclcheck.running.config import VERIFY, VerifyConfig
from aclcheck.running.session import VerifyRun, run_verify

#: click parameter name -> VerifyConfig field, where the two differ
_RENAMED = {opt.name: opt.field for opt in VERIFY if opt.field and opt.name != opt.field}


@contextmanager
def progress_bar(console: Console, total: int) -> Iterator[Callable[[Any], None]]:
    """A rich progress bar on a terminal; nothing in CI logs."""
    if not console.is_terminal:
        yield lambda verdict: None
        return
    columns = (TextColumn("verifying"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.description}", markup=False))
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("", total=total)
        yield lambda verdict: bar.update(task, advance=1,
                                         description=printable(verdict.case_id))


def config_from_params(golden: str, params: dict[str, Any]) -> VerifyConfig:
    """The VerifyConfig of verify's parsed options."""
    values = {_RENAMED.get(name, name): value for name, value in params.items()}
    values["ids"] = tuple(values["ids"] or ())
    return VerifyConfig(golden=golden, **values)


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("golden", type=click.Path(dir_okay=False))
@click_options(VERIFY)
@handle_errors
def verify(golden: str, **params: Any) -> None:
    """Run an implementation on every case of GOLDEN and judge it against the contract.

    Exits 1 on any nonconformance (FAIL, WRONG_STATUS, UNIMPLEMENTED, NONDETERMINISTIC,
    ERROR), and when no case was judged (every case SKIP), so it can gate CI. Every
    failing case prints a repro command that reruns it with every option that can
    change its verdict. Report paths are checked before any case runs (a report never
    replaces an input: exit 2); a report that cannot be written at the end is named and
    the run exits 4. With isolated calls (the default for fork-safe adapters) the
    implementation is imported only in worker processes (docs/verify.md, threat model).

    \b
    Examples:
      aclcheck verify suite.h5                              # the reference (self-test)
      aclcheck verify suite.h5 --impl torch --dtype float32 --family '!invalid'
      aclcheck verify suite.h5 --impl paddle --xfail golden/paddle-cpu.xfail.toml
      aclcheck verify suite.h5 --impl mykernels:backward --timeout 10
      aclcheck verify suite.h5 --impl mykernels:backward --no-isolate   # for a debugger
      aclcheck verify suite.h5 --results board_run.h5 --json report.json --junit junit.xml
      aclcheck verify suite.h5 --impl torch --standard aclcheck --standard cann-mixed
      aclcheck verify suite.h5 --impl torch --id 'a2-fp16-*' --id 'a3-fp16-*' -v
    """
    config = config_from_params(golden, params)
    config.check()
    err = stderr_console()
    heartbeat = None if err.is_terminal else lambda line: print(printable(line),
                                                                file=sys.stderr, flush=True)
    with VerdictSpool() as spool:  # on disk: memory independent of the case count
        run = run_verify(config, partial(progress_bar, err),
                         lambda text: click.echo(printable(text), err=True), heartbeat,
                         verdicts=spool)
        code = render(run)
    sys.exit(code)


def headline(run: VerifyRun) -> str | None:
    """The line that opens the console report of a self-test (the default --impl) or
    of a run whose calls were not isolated."""
    if run.config.impl == "reference" and run.config.results is None:
        return ("aclcheck: judging aclcheck's own reference (--impl reference, the "
                "default): a self-test of the tool; name a kernel with --impl")
    if run.isolation != "in-process":
        return None
    config = run.config
    why = ("--no-isolate" if config.isolate is False else
           "the adapter is not fork-safe; --isolate runs it in worker processes")
    return (f"aclcheck: {run.implementation} ran in this process ({why}): for debugging; a "
            "crash ends the run and the implementation can change aclcheck itself, so a "
            "gate needs isolated calls")


def render(run: VerifyRun) -> int:
    """The console report, the gate's lines and lost reports; the exit code."""
    config = run.config
    out = stdout_console(config.width)
    line = headline(run)
    if line:
        out.print(data_text(line, "bold yellow"), soft_wrap=True)
    console_report.render(out, run.verdicts, implementation=run.implementation,
                          verbose=config.verbose, diagnosis=run.diagnosis,
                          json_report=None if "--json" in run.lost else config.json_path)
    if run.changes is not None:
        console_report.render_diff(out, run.changes, config.baseline or "")
    for text in gate_lines(run.gate):
        click.echo(text, err=True)
    for flag, reason in run.lost.items():
        click.echo(f"aclcheck: error: {flag} {printable(config.outputs[flag])}: not written: "
                   f"{reason}", err=True)
    if run.interrupted:
        return EXIT_INTERRUPTED
    if run.lost:
        return EXIT_INTERNAL
    return EXIT_NONCONFORMANT if run.gate.failed else EXIT_OK
