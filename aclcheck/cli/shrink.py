"""`aclcheck shrink`: the smallest call that still fails like a failing case."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import click
import numpy as np
from rich.console import Console

from aclcheck.cases import Case
from aclcheck.cli.common import handle_errors, stderr_console, stdout_console
from aclcheck.cli.options import live_options
from aclcheck.dtypes import FLOAT_FORMATS, float_format
from aclcheck.errors import EXIT_CODES_HELP, EXIT_NONCONFORMANT, EXIT_OK, UsageError
from aclcheck.judging.case.pieces import float64_values
from aclcheck.judging.gate.gate import UNJUDGED
from aclcheck.ops import DEFAULT, operator_of
from aclcheck.report.casedump import AxisWindows, dump
from aclcheck.report.files import file_mode
from aclcheck.report.safe_text import printable
from aclcheck.running.config import VerifyConfig
from aclcheck.running.live import LiveJudge, live_setup
from aclcheck.store.dispatch import open_golden
from aclcheck.store.file_guard import Role, check_apart
from aclcheck.suite import casefile as casewriter
from aclcheck.triage.shrink import ShrinkResult, diagnosis_codes, shrink

F = TypeVar("F", bound=Callable[..., Any])


def repro_commands(case_file: str, golden: str, case_id: str, config: VerifyConfig,
                   op: str = DEFAULT) -> str:
    """Regenerate a case file's golden and verify one case of it (the verify repro). A case
    file names no operator: `generate` is told `op` where it is not the default."""
    op_args = [] if op == DEFAULT else ["--op", op]
    generate = shlex.join(["aclcheck", "generate", "--cases-file", case_file, *op_args,
                           "-o", golden, "--force"])
    return f"{generate} && {replace(config, golden=golden).repro(case_id)}"


def say(console: Console, text: str) -> None:
    """One line of output that holds data (case ids, a kernel's messages): escaped."""
    console.print(printable(text), markup=False, highlight=False, soft_wrap=True)


def progress_printer(console: Console, what: str) -> Callable[[int, int, Case], None]:
    """A transient status line on a terminal; nothing in logs."""
    if not console.is_terminal:
        return lambda tries, found, case: None

    def show(tries: int, found: int, case: Case) -> None:
        console.print(f"\r{what}: try {tries}, {found} so far, {shapes(case)}   ",
                      end="", markup=False, highlight=False)
    return show


def shapes(case: Case) -> str:
    """The call's shapes as the operator shows them ("[2, 3, 8, 6] <- [2, 3, 4, 3]")."""
    return operator_of(case).display.shapes_text(case)


def describe(result: ShrinkResult) -> str:
    o, m = result.original, result.minimal
    return (f"shrunk {shapes(o)} ({o.distribution}) to {shapes(m)} ({m.distribution}) in "
            f"{result.tries} tries, {result.seconds:.1f} s"
            + (" (time limit reached: maybe not minimal)" if result.timed_out else ""))


def minimal_lines(judge: LiveJudge, result: ShrinkResult) -> list[str]:
    """The minimal case whole: the diagnosis it kept, then its first input, golden,
    actual and error in ULP and its window tables (report.casedump; values only when
    small enough to read)."""
    case, verdict = result.minimal, result.verdict
    codes = diagnosis_codes(verdict)
    lines = [f"diagnosis kept: {', '.join(c.value for c in codes)}" if codes else
             "diagnosis: no model or finding names this failure"]
    if verdict.magnitude is not None:
        lines.append(f"size: {verdict.magnitude.text()}")
    op = operator_of(case)
    if op.diagnosis is None or case.dtype not in FLOAT_FORMATS:
        return lines
    data, outcome = judge.output(case)
    first = case.inputs()[0]
    grad = data.values()[first.name]
    if not isinstance(outcome.output, np.ndarray) or data.golden is None or grad is None:
        return [*lines, "(not printed: the call returned no array this time)"]
    tables = [AxisWindows(name, start, end) for name, start, end in op.diagnosis.windows(case)]
    return lines + dump(grad, data.golden, float64_values(outcome.output), float_format(case.dtype),
                        tables, op.display.axis_names(data.golden.ndim),
                        input_name=first.api)


def live_config(impl: str, standards: tuple[str, ...], tolerances: str | None,
                accumulate: str | None, isolate: bool | None, timeout: float,
                spin_rule: str) -> VerifyConfig:
    """The verify configuration a live command's verdicts and repro lines come from (the
    golden file is named later, per output)."""
    return VerifyConfig(golden="", impl=impl, standards=standards, tolerances=tolerances,
                        accumulate=accumulate, isolate=isolate, timeout=timeout,
                        spin_rule=spin_rule)


@click.command("shrink", epilog=EXIT_CODES_HELP)
@click.argument("golden", type=click.Path(dir_okay=False))
@click.option("--id", "case_id", required=True, metavar="CASE", help="The failing case's id.")
@live_options
@click.option("--results", type=click.Path(dir_okay=False), default=None, hidden=True)
@click.option("--append", "append_path", type=click.Path(dir_okay=False), default=None,
              metavar="FILE", help="Add the minimal case to this TOML case file (created if "
                                   "missing): a permanent regression case.")
@handle_errors
def shrink_cmd(golden: str, case_id: str, impl: str, standards: tuple[str, ...],
               tolerances: str | None, accumulate: str | None, isolate: bool | None, timeout: float,
               spin_rule: str, max_time: float, results: str | None, append_path: str | None
               ) -> None:
    """Find the smallest call that still fails like case CASE of GOLDEN: fewer N, C, H, W,
    Ho, Wo, then simpler values (ones, small exact integers), keeping product, dtype,
    format and layout, the verdict and the diagnosis code that names the bug.

    Without a code, the hints at the likely bug are kept. Prints the minimal case whole
    (its values, golden, output, error in ULP and window tables when small), as a
    case-file entry and the commands that rerun it. Exits 1 when the case fails, 0 when
    it passes (nothing to shrink).

    \b
    Examples:
      aclcheck shrink suite.h5 --impl mykernels:backward --id a2-fp32-NCHW-nondiv0-n2c3h17w9-o5x4
      aclcheck shrink suite.h5 --impl torch --id ID --append regressions.toml --max-time 30
    """
    if results:
        raise UsageError(f"--results {results}: stored outputs cannot run smaller calls; "
                         "shrink needs an implementation it can call (--impl)")
    config = live_config(impl, standards, tolerances, accumulate, isolate, timeout, spin_rule)
    if append_path:
        casewriter.check_appendable(append_path)
        check_apart([Role("GOLDEN", golden), *config.file_roles()[0]],
                    [Role("--append", append_path)])
        target, mode = os.path.abspath(append_path), file_mode()  # before any kernel code
    with open_golden(golden) as gf:
        ids = {e.id for e in gf.index}
        if case_id not in ids:
            raise UsageError(f"{golden}: no case with id {case_id!r} "
                             f"(`aclcheck inspect {golden}` lists them)")
        case = gf.case(case_id)
    opened, opts = live_setup(config)
    adapter = opened.impl
    out, err = stdout_console(), stderr_console()
    try:
        with LiveJudge(adapter, opts, opened.zygote) as judge:
            result = shrink(case, judge, max_time=max_time,
                            progress=progress_printer(err, "shrinking"))
            shown = minimal_lines(judge, result) if result.verdict.failing else []
    finally:
        opened.close()
    if err.is_terminal:
        err.print()
    first = result.first
    if first.verdict in UNJUDGED:
        raise UsageError(f"{case_id} is {first.verdict.value} under {adapter.name} "
                         f"({first.message}): not judged, nothing to shrink")
    if not result.failing:
        say(out, f"aclcheck: {case_id} is {first.verdict.value} under {adapter.name}: "
                 "nothing to shrink")
        raise SystemExit(EXIT_OK)
    say(out, f"aclcheck: {case_id}: {first.verdict.value} - {first.message}")
    say(out, describe(result))
    for line in shown:
        say(out, line)
    minimal = result.minimal
    comment = (f"shrunk from {case_id} ({first.verdict.value} under {adapter.name}): "
               f"{result.verdict.message}")
    out.print(casewriter.toml_entry(minimal, comment), markup=False, highlight=False,
              soft_wrap=True)
    case_file = append_path or "minimal.toml"
    if append_path:
        written = casewriter.append(target, minimal, comment, mode)
        say(out, f"appended to {append_path} as {written.id}")
        minimal = written
    if not append_path:
        out.print("(save the entry above as minimal.toml, or rerun with --append FILE)",
                  markup=False, highlight=False)
    out.print("repro: " + repro_commands(case_file, str(Path(case_file).with_suffix(".h5")),
                                         minimal.id, config, minimal.OPERATOR),
              markup=False, highlight=False, soft_wrap=True)
    raise SystemExit(EXIT_NONCONFORMANT)
