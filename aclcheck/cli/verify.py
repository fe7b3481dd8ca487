"""`aclcheck verify`: judge an implementation on a golden file; the CI gate."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from aclcheck.cases import CaseData
from aclcheck.cli.common import handle_errors, selection_options, stderr_console, stdout_console
from aclcheck.dtypes import ACCUMULATE_CHOICES
from aclcheck.errors import (
    EXIT_CODES_HELP,
    EXIT_INTERNAL,
    EXIT_NONCONFORMANT,
    EXIT_OK,
    UsageError,
)
from aclcheck.executors import open_executor
from aclcheck.impls.aclnn_impl import configure_environment
from aclcheck.impls.base import Implementation
from aclcheck.impls.callable_impl import source_file
from aclcheck.judging import xfail
from aclcheck.judging.gate import Finding, Kind, catch_all, decide
from aclcheck.judging.standards import DEFAULT_STANDARD, STANDARDS
from aclcheck.judging.verdicts import CaseVerdict
from aclcheck.report import console as console_report
from aclcheck.report import json_report, junit
from aclcheck.report.console import gate_lines
from aclcheck.report.diff import diff as baseline_diff
from aclcheck.report.diff import run_mismatch
from aclcheck.report.files import check_writable, file_mode, write_all
from aclcheck.report.safe_text import data_text, printable
from aclcheck.running.config import VerifyConfig
from aclcheck.running.parallel import iter_verdicts_parallel
from aclcheck.running.remote import OpenedImpl, open_impl
from aclcheck.running.runner import RunOptions, iter_verdicts
from aclcheck.running.zygote import Zygote
from aclcheck.store import GoldenFile, open_golden
from aclcheck.store.file_guard import Role, Snapshot, check_apart
from aclcheck.suite import sharding
from aclcheck.suite.filters import select

F = TypeVar("F", bound=Callable[..., Any])


class GoldenSource:
    """Loads cases from an open golden file (only the parent process reads HDF5)."""

    def __init__(self, gf: GoldenFile) -> None:
        self.gf = gf

    def load(self, case: Any) -> CaseData:
        return self.gf.data(case.id)


def open_adapter(impl: str, results: str | None, isolate: bool | None) -> OpenedImpl:
    """The adapter for --impl / --results (where it lives: impls.remote.open_impl)."""
    if results is not None:
        from aclcheck.impls.results_impl import ResultsImpl

        return OpenedImpl(ResultsImpl(results), None, isolated=False)
    return open_impl(impl, isolate)


@dataclass
class RunState:
    """What a run has done so far (kept when it is interrupted): verdicts in order, the
    size of the selection (before --shard) and the cases this run was to judge."""

    verdicts: list[CaseVerdict] = field(default_factory=list)
    selected: int = 0
    planned: int = 0


@contextmanager
def progress_bar(console: Console, total: int) -> Iterator[Any]:
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


def run_selection(config: VerifyConfig, adapter: Implementation, opts: RunOptions,
                  state: RunState, zygote: Zygote | None = None) -> None:
    """Select cases from the golden file, run them (serially or fanned out), in order,
    appending each verdict (with its repro line) to `state` as it comes, so an
    interruption keeps them. The runner owns `zygote` from here."""
    shard = sharding.parse_shard(config.shard) if config.shard else None
    done = state.verdicts
    with open_golden(config.golden) as gf:
        positions = {e.id: i for i, e in enumerate(gf.index)}
        rows = select(gf.index, **config.selection())
        state.selected = len(rows)
        if shard is not None:
            keep = sharding.select([(r.id, r.nbytes) for r in rows], *shard)
            rows = [r for r in rows if r.id in keep]
        if not rows:
            raise UsageError(f"{config.golden}: no case matches the selection"
                             + (f" (shard {config.shard} is empty)" if state.selected else ""))
        state.planned = len(rows)
        cases = [gf.case(r.id) for r in rows]
        source = GoldenSource(gf)
        err = stderr_console()
        beat = None if err.is_terminal else lambda line: print(printable(line),
                                                               file=sys.stderr, flush=True)
        with progress_bar(err, len(cases)) as progress, \
                open_executor(config.jobs, config.executor) as pool:
            if pool is None:
                stream = iter_verdicts(adapter, cases, source, opts, progress, heartbeat=beat,
                                       zygote=zygote)
            else:
                if not adapter.spec:
                    raise UsageError(f"{adapter.name} cannot run in worker processes; "
                                     "drop --jobs / --executor")
                stream = iter_verdicts_parallel(adapter, cases, source, opts, pool,
                                                window=max(2 * config.jobs, 8),
                                                progress=progress)
            for v in stream:
                done.append(replace(v, index=positions[v.case_id],
                                    repro=config.repro(v.case_id)))


# -- options, in groups; each option's destination is a VerifyConfig field ------------------

#: click parameter name -> VerifyConfig field, where the shared selection options differ
_RENAMED = {"product": "products", "dtype": "dtypes", "format_": "formats",
            "family": "families", "id_pattern": "ids"}


def _group(*options: Callable[[F], F]) -> Callable[[F], F]:
    def apply(fn: F) -> F:
        for option in reversed(options):
            fn = option(fn)
        return fn
    return apply


implementation_options = _group(
    click.option("--impl", "impl", default="reference", show_default=True, metavar="NAME",
                 help="Implementation: reference, torch[:cpu|cuda|npu], "
                      "mindspore[:cpu|gpu|ascend], paddle[:cpu|gpu|npu|DEVICE], "
                      "module:function, or a plugin name (see `aclcheck impls`)."),
    click.option("--results", type=click.Path(dir_okay=False), default=None,
                 help="Judge stored outputs (results layout) instead of running --impl."),
    click.option("--aclnn-lib-dir", "aclnn_lib_dirs", multiple=True, metavar="DIR",
                 type=click.Path(file_okay=False),
                 help="--impl aclnn: folder with libascendcl.so, libnnopbase.so, libopapi.so "
                      "(repeatable; replaces the ASCEND_HOME_PATH / LD_LIBRARY_PATH search). "
                      "A single --product names the device's product."),
    click.option("--aclnn-device", type=click.IntRange(min=0), default=None, metavar="N",
                 help="--impl aclnn: device id (default 0)."),
)

judging_options = _group(
    click.option("--standard", "standards", multiple=True, metavar="NAME",
                 help="Tolerance standard (repeatable: the first gates, the others are shown "
                      f"beside it). Default: {DEFAULT_STANDARD}. See `aclcheck tolerances`."),
    click.option("--tolerances", type=click.Path(dir_okay=False), default=None,
                 help="TOML file overriding standard parameters per dtype / product."),
    click.option("--accumulate", default=None, type=click.Choice(ACCUMULATE_CHOICES),
                 help="Override the accumulation the error budget assumes ('input' = the "
                      "input dtype, as the Atlas training/inference path)."),
    click.option("--xfail", "xfail", type=click.Path(dir_okay=False), default=None,
                 help="Known-failure list (TOML): listed failures are XFAIL and do not fail "
                      "the gate."),
    click.option("--strict-xfail", is_flag=True,
                 help="A listed case that now passes (XPASS) fails the gate."),
)

running_options = _group(
    click.option("--isolate/--no-isolate", default=None,
                 help="Run the implementation in a worker process: crashes, hangs and exits "
                      "become ERROR and the run goes on. Default: on for fork-safe adapters "
                      "(reference, torch:cpu, CPU frameworks, module:function), off for "
                      "device adapters. --no-isolate runs it in this process (debuggers)."),
    click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
                 help="Hard cap in seconds per call in a worker; a call is declared hung much "
                      "sooner when it runs 50x longer than comparable calls (at least 5 s)."),
    click.option("--memory-limit", type=click.IntRange(min=64), default=None, metavar="MB",
                 help="Address-space cap of the isolated worker: a runaway allocation "
                      "becomes ERROR instead of exhausting the machine (needs isolation)."),
    click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
                 help="Run each case N times and compare the outputs bitwise."),
    click.option("--deterministic", is_flag=True,
                 help="Ask the implementation for deterministic mode; with --repeat, any "
                      "difference is NONDETERMINISTIC."),
    click.option("--shard", default=None, metavar="K/N",
                 help="Only the K-th of N size-balanced slices of the selection (CI "
                      "matrices; join the JSON reports with `aclcheck merge`)."),
    click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
                 help="Run cases on N local worker processes."),
    click.option("--executor", "executor", default=None, metavar="URL",
                 help="Fan cases out over a Dask cluster: dask://HOST:PORT."),
)

report_options = _group(
    click.option("--baseline", type=click.Path(dir_okay=False), default=None,
                 help="Previous JSON report: show new failures, fixed cases and metric "
                      "regressions; the gate then fails only on new failures."),
    click.option("-v", "--verbose", is_flag=True,
                 help="Show every case, and the details of every nonconforming one "
                      "(without -v: the first 20)."),
    click.option("--width", type=click.IntRange(min=40), default=None, metavar="COLUMNS",
                 help="Console width (default: the terminal's; 160 in logs and pipes)."),
    click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
                 help="Write the JSON report here."),
    click.option("--junit", "junit_path", type=click.Path(dir_okay=False), default=None,
                 help="Write JUnit XML here."),
    click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
                 help="Write the HTML report here: summary, case table, and every non-passing "
                      "case with pictures of where its errors sit (docs/report.md)."),
)


def config_from_params(golden: str, params: dict[str, Any]) -> VerifyConfig:
    """The VerifyConfig of verify's parsed options."""
    values = {_RENAMED.get(name, name): value for name, value in params.items()}
    values["ids"] = tuple(values["ids"] or ())
    return VerifyConfig(golden=golden, **values)


def file_roles(config: VerifyConfig) -> tuple[list[Role], list[Role]]:
    """What a verify run reads and writes (aclcheck.store.file_guard)."""
    inputs = [Role("GOLDEN", config.golden)]
    for flag, path in (("--results", config.results), ("--tolerances", config.tolerances),
                       ("--xfail", config.xfail), ("--baseline", config.baseline)):
        if path:
            inputs.append(Role(flag, path))
    inputs += [Role("--aclnn-lib-dir", d, tree=True) for d in config.aclnn_lib_dirs]
    if config.results is None and ":" in config.impl:
        source = source_file(config.impl)
        if source is not None:
            inputs.append(Role("--impl", source))
    return inputs, [Role(flag, path) for flag, path in config.outputs.items()]


def check_config(config: VerifyConfig) -> None:
    """Usage errors found before anything is loaded or run: unknown standards, a bad
    shard, unwritable report paths, a report that would replace an input."""
    for name in config.standard_names:
        if name not in STANDARDS:
            raise click.UsageError(f"unknown standard {name!r}; valid: {', '.join(STANDARDS)}")
    if config.shard:
        sharding.parse_shard(config.shard)
    check_writable(config.outputs)
    check_apart(*file_roles(config))


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("golden", type=click.Path(dir_okay=False))
@implementation_options
@selection_options
@judging_options
@running_options
@report_options
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
    check_config(config)
    sys.exit(run_verify(config))


def run_verify(config: VerifyConfig) -> int:
    """Run, report and gate; returns the exit code."""
    restore = configure_environment(  # the aclnn options, inherited by workers
        config.aclnn_lib_dirs, config.aclnn_device,
        config.products if config.impl == "aclnn" else ())
    try:
        return _run_verify(config)
    finally:
        restore()


@dataclass(frozen=True)
class ReportTargets:
    """Where the reports go and with which mode, fixed before the first call: an
    in-process kernel that changes the working directory or the umask moves or locks
    nothing."""

    paths: dict[str, str]
    mode: int

    @classmethod
    def now(cls, config: VerifyConfig) -> ReportTargets:
        return cls({flag: os.path.abspath(p) for flag, p in config.outputs.items()},
                   file_mode())


def isolation_mode(config: VerifyConfig, opened: OpenedImpl) -> str:
    """How the calls ran, as the reports record it."""
    if config.results is not None:
        return "stored results"
    return "workers" if opened.isolated else "in-process"


def headline(config: VerifyConfig, opened: OpenedImpl) -> str | None:
    """The line that opens the console report of a run whose calls were not isolated."""
    if isolation_mode(config, opened) != "in-process":
        return None
    why = ("--no-isolate" if config.isolate is False else
           "the adapter is not fork-safe; --isolate runs it in worker processes")
    return (f"aclcheck: {opened.impl.name} ran in this process ({why}): for debugging; a "
            "crash ends the run and the implementation can change aclcheck itself, so a "
            "gate needs isolated calls")


def _run_verify(config: VerifyConfig) -> int:
    inputs, _ = file_roles(config)
    read_during_run = Snapshot([r for r in inputs if r.flag == "GOLDEN"])
    targets = ReportTargets.now(config)
    opts = config.run_options()  # every input but the golden file is read now,
    xfails = xfail.load(config.xfail) if config.xfail else None  # before any kernel code
    baseline = json_report.read(config.baseline) if config.baseline else None
    here = {"golden": str(config.golden)}
    if baseline is not None and (mismatch := run_mismatch(baseline[0], here, "golden")):
        raise UsageError(f"--baseline {config.baseline} is a report of another golden file "
                         f"({mismatch}); compare such runs with `aclcheck diff --force`")
    opened = open_adapter(config.impl, config.results, config.isolate)
    adapter = opened.impl
    if baseline is not None and (mismatch := run_mismatch(
            baseline[0], {"implementation": adapter.name}, "implementation")):
        click.echo(f"aclcheck: warning: --baseline is a report of another run "
                   f"({printable(mismatch)})", err=True)
    state = RunState()
    interrupted = False
    try:
        run_selection(config, adapter, opts, state, opened.zygote)
    except KeyboardInterrupt:
        # keep what was judged: report it (marked) and exit 130 below
        interrupted = True
        stderr_console().print(f"aclcheck: interrupted after {len(state.verdicts)} cases; "
                               "reporting those")
    finally:
        opened.close()
    verdicts = state.verdicts
    if xfails is not None:
        verdicts = xfail.apply(verdicts, xfails, adapter.name)
    problems = [Finding(Kind.INPUT_CHANGED, detail=f"{r.flag} {r.path}")
                for r in read_during_run.changed()]
    changes = baseline_diff(baseline[1], verdicts) if baseline is not None else None
    failing = None
    if changes is not None:  # against a baseline only what got worse gates
        failing = [now for _, now in changes.new_failures
                   if now.failing or config.strict_xfail]
    gate = decide(verdicts, strict_xfail=config.strict_xfail, failing=failing,
                  catch_all_entries=catch_all(xfails.entries, verdicts, adapter.name)
                  if xfails is not None else (), problems=problems)
    mode = isolation_mode(config, opened)
    lost = write_reports(config, targets, adapter.name, state, verdicts, interrupted, mode)
    out = stdout_console(config.width)
    line = headline(config, opened)
    if line:
        out.print(data_text(line, "bold yellow"), soft_wrap=True)
    console_report.render(out, verdicts, implementation=adapter.name,
                          verbose=config.verbose,
                          json_report=None if "--json" in lost else config.json_path)
    if changes is not None:
        console_report.render_diff(out, changes, config.baseline or "")
    for text in gate_lines(gate):
        click.echo(text, err=True)
    for flag, reason in lost.items():
        click.echo(f"aclcheck: error: {flag} {printable(config.outputs[flag])}: not written: "
                   f"{reason}", err=True)
    if interrupted:
        return 130
    if lost:
        return EXIT_INTERNAL
    return EXIT_NONCONFORMANT if gate.failed else EXIT_OK


def write_reports(config: VerifyConfig, targets: ReportTargets, implementation: str,
                  state: RunState, verdicts: list[CaseVerdict], interrupted: bool,
                  isolation: str) -> dict[str, str]:
    """Write the JSON, JUnit and HTML reports, each on its own; why any was lost, by flag."""
    extra: dict[str, Any] = {"command": shlex.join(["aclcheck", *sys.argv[1:]]),
                             "interrupted": interrupted, "isolation": isolation,
                             "selection": {k: list(v) if isinstance(v, tuple) else v
                                           for k, v in config.selection().items()},
                             "selected": state.selected, "planned": state.planned}
    if config.shard:
        extra["shard"] = config.shard
    writers: dict[str, Callable[[], None]] = {}
    paths = targets.paths
    report = json_report.build(verdicts, implementation=implementation,
                               standards=config.standard_names, golden=str(config.golden),
                               extra=extra) if config.json_path or config.html_path else {}
    if config.json_path:
        writers["--json"] = partial(json_report.write, paths["--json"], report,
                                    mode=targets.mode)
    if config.junit_path:
        name = f"aclcheck {implementation} {Path(config.golden).name}"
        writers["--junit"] = partial(junit.write, paths["--junit"], verdicts,
                                     suite_name=name, properties={"isolation": isolation},
                                     mode=targets.mode)
    if config.html_path:
        from aclcheck.report import html as html_report  # matplotlib: only when asked

        writers["--html"] = partial(html_report.write, paths["--html"], report, verdicts,
                                    mode=targets.mode)
    return write_all(writers)
