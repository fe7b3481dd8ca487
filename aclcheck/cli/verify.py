"""`aclcheck verify`: judge an implementation on a golden file; the CI gate."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from aclcheck.cli.common import handle_errors, stderr_console
from aclcheck.cli.inspect import select
from aclcheck.errors import EXIT_CODES_HELP, EXIT_NONCONFORMANT, EXIT_OK, UsageError
from aclcheck.impls import ImplementationUnavailable, UnknownImplementation, create
from aclcheck.impls.base import Implementation
from aclcheck.judge import JudgeOptions
from aclcheck.report import console as console_report
from aclcheck.report import json_report, junit
from aclcheck.runner import LoadedCase, RunOptions, iter_verdicts
from aclcheck.standards import DEFAULT_STANDARD, STANDARDS, load_overrides
from aclcheck.store import GoldenFile, open_golden
from aclcheck.verdicts import CaseVerdict, gate_failed


class GoldenSource:
    """Loads cases from an open golden file (only the parent process reads HDF5)."""

    def __init__(self, gf: GoldenFile) -> None:
        self.gf = gf

    def load(self, case: Any) -> LoadedCase:
        grad, self_ = self.gf.inputs(case.id)
        return LoadedCase(case, grad, self_, self.gf.golden(case.id))


def build_impl(impl: str, results: str | None) -> Implementation:
    """The adapter for --impl / --results, or a usage error listing what exists."""
    if results is not None:
        from aclcheck.impls.results_impl import ResultsImpl

        return ResultsImpl(results)
    try:
        return create(impl)
    except UnknownImplementation as exc:
        raise click.UsageError(str(exc)) from None
    except ImplementationUnavailable as exc:
        raise UsageError(f"--impl {impl}: not available here: {exc}") from None


def repro_prefix(golden: str, impl: Implementation, params: dict[str, Any]) -> str:
    parts = ["aclcheck", "verify", golden]
    if params["results"]:
        parts += ["--results", params["results"]]
    else:
        parts += ["--impl", params["impl"]]
    for s in params["standard"]:
        parts += ["--standard", s]
    for key in ("tolerances", "accumulate"):
        if params[key]:
            parts += [f"--{key}", str(params[key])]
    if params["deterministic"]:
        parts.append("--deterministic")
    if params["repeat"] > 1:
        parts += ["--repeat", str(params["repeat"])]
    return shlex.join(parts)


@contextmanager
def progress_bar(console: Console, total: int) -> Iterator[Any]:
    """A rich progress bar on a terminal; nothing in CI logs."""
    if not console.is_terminal:
        yield lambda verdict: None
        return
    columns = (TextColumn("verifying"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.description}"))
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("", total=total)
        yield lambda verdict: bar.update(task, advance=1, description=verdict.case_id)


def _standards(names: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(names) or (DEFAULT_STANDARD,)
    for name in chosen:
        if name not in STANDARDS:
            raise click.UsageError(f"unknown standard {name!r}; valid: {', '.join(STANDARDS)}")
    return tuple(dict.fromkeys(chosen))


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("golden", type=click.Path(dir_okay=False))
@click.option("--impl", "impl", default="reference", show_default=True, metavar="NAME",
              help="Implementation: reference, torch, torch:cpu|cuda|npu, module:function, "
                   "or a plugin name (see `aclcheck impls`).")
@click.option("--results", type=click.Path(dir_okay=False), default=None,
              help="Judge stored outputs (results layout) instead of running --impl.")
@click.option("--product", multiple=True, help="Only these products (repeatable).")
@click.option("--dtype", multiple=True, help="Only these dtypes (repeatable).")
@click.option("--format", "format_", multiple=True, help="Only these formats (repeatable).")
@click.option("--family", multiple=True, help="Only these families (repeatable).")
@click.option("--id", "id_pattern", default=None, metavar="PATTERN",
              help="Only case ids matching this glob pattern.")
@click.option("--standard", multiple=True, metavar="NAME",
              help="Tolerance standard (repeatable: the first gates, the others are shown "
                   f"beside it). Default: {DEFAULT_STANDARD}. See `aclcheck tolerances`.")
@click.option("--tolerances", type=click.Path(dir_okay=False), default=None,
              help="TOML file overriding standard parameters per dtype / product.")
@click.option("--accumulate", default=None, metavar="DTYPE",
              help="Override the accumulation dtype the budget assumes (float32, float16, "
                   "bfloat16, or 'input').")
@click.option("--isolate", is_flag=True,
              help="Run the implementation in a worker process: crashes and hangs become "
                   "ERROR and the run goes on.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds per call in the worker (--isolate, and invalid calls).")
@click.option("--memory-limit", type=click.IntRange(min=64), default=None, metavar="MB",
              help="Address-space cap of the isolated worker: a runaway allocation becomes "
                   "ERROR instead of exhausting the machine.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run each case N times and compare the outputs bitwise.")
@click.option("--deterministic", is_flag=True,
              help="Ask the implementation for deterministic mode; with --repeat, any "
                   "difference is NONDETERMINISTIC.")
@click.option("-v", "--verbose", is_flag=True, help="Show every case, not only failures.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the JSON report here.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), default=None,
              help="Write JUnit XML here.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write the console report as HTML here.")
@handle_errors
def verify(golden: str, impl: str, results: str | None, product: tuple[str, ...],
           dtype: tuple[str, ...], format_: tuple[str, ...], family: tuple[str, ...],
           id_pattern: str | None, standard: tuple[str, ...], tolerances: str | None,
           accumulate: str | None, isolate: bool, timeout: float,
           memory_limit: int | None, repeat: int,
           deterministic: bool, verbose: bool, json_path: str | None, junit_path: str | None,
           html_path: str | None) -> None:
    """Run an implementation on every case of GOLDEN and judge it against the contract.

    Exits 1 on any nonconformance (FAIL, WRONG_STATUS, UNIMPLEMENTED, NONDETERMINISTIC,
    ERROR), so it can gate CI. Every failing case prints a repro command.

    \b
    Examples:
      aclcheck verify suite.h5                              # the reference (self-test)
      aclcheck verify suite.h5 --impl torch --dtype float32
      aclcheck verify suite.h5 --impl mykernels:backward --isolate --timeout 10
      aclcheck verify suite.h5 --results board_run.h5 --json report.json --junit junit.xml
      aclcheck verify suite.h5 --impl torch --standard aclcheck --standard cann-mixed
    """
    params = {"impl": impl, "results": results, "standard": standard,
              "tolerances": tolerances, "accumulate": accumulate,
              "deterministic": deterministic, "repeat": repeat}
    standards = _standards(standard)
    overrides = load_overrides(tolerances) if tolerances else None
    adapter = build_impl(impl, results)
    err = stderr_console()
    out = Console(record=html_path is not None, highlight=False)
    try:
        with open_golden(golden) as gf:
            rows = select(gf.index, products=product, dtypes=dtype, formats=format_,
                          families=family, id_pattern=id_pattern)
            if not rows:
                raise UsageError(f"{golden}: no case matches the selection")
            cases = [gf.case(r.id) for r in rows]
            opts = RunOptions(
                judge=JudgeOptions(standards=standards, overrides=overrides,
                                   accumulate=accumulate),
                isolate=isolate, timeout=timeout, repeat=repeat, deterministic=deterministic,
                memory_limit=memory_limit * 2**20 if memory_limit else None,
                repro_prefix=repro_prefix(golden, adapter, params),
            )
            with progress_bar(err, len(cases)) as progress:
                verdicts: list[CaseVerdict] = list(
                    iter_verdicts(adapter, cases, GoldenSource(gf), opts, progress))
    finally:
        adapter.close()
    console_report.render(out, verdicts, implementation=adapter.name, verbose=verbose)
    if json_path:
        report = json_report.build(verdicts, implementation=adapter.name, standards=standards,
                                   golden=str(golden),
                                   extra={"command": shlex.join(["aclcheck", *sys.argv[1:]])})
        json_report.write(json_path, report)
    if junit_path:
        junit.write(junit_path, verdicts, suite_name=f"aclcheck {adapter.name} {Path(golden).name}")
    if html_path:
        out.save_html(html_path)
    sys.exit(EXIT_NONCONFORMANT if gate_failed(verdicts) else EXIT_OK)
