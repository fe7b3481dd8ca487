"""`aclcheck verify`: judge an implementation on a golden file; the CI gate."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from aclcheck import sharding, xfail
from aclcheck.baseline import diff as baseline_diff
from aclcheck.budget import ACCUMULATE_CHOICES
from aclcheck.cli.common import handle_errors, selection_options, stderr_console
from aclcheck.errors import EXIT_CODES_HELP, EXIT_NONCONFORMANT, EXIT_OK, UsageError
from aclcheck.executors import open_executor
from aclcheck.impls import ImplementationUnavailable, UnknownImplementation, create
from aclcheck.impls.aclnn_impl import configure_environment
from aclcheck.impls.base import Implementation
from aclcheck.judge import JudgeOptions
from aclcheck.report import console as console_report
from aclcheck.report import json_report, junit
from aclcheck.runner import (
    LoadedCase,
    RunOptions,
    iter_verdicts,
    iter_verdicts_parallel,
    prestart_zygote,
)
from aclcheck.selection import select
from aclcheck.standards import DEFAULT_STANDARD, STANDARDS, load_overrides
from aclcheck.store import GoldenFile, open_golden
from aclcheck.suite import parse_shard
from aclcheck.verdicts import CaseVerdict
from aclcheck.zygote import Zygote


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
    for d in params.get("aclnn_lib_dir") or ():
        parts += ["--aclnn-lib-dir", d]
    if params.get("aclnn_device") is not None:
        parts += ["--aclnn-device", str(params["aclnn_device"])]
    if params.get("aclnn_product"):
        parts += ["--product", params["aclnn_product"]]
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


def run_selection(golden: str, adapter: Implementation, opts: RunOptions,
                  selection: dict[str, Any], shard: tuple[int, int] | None, jobs: int,
                  executor_url: str | None, done: list[CaseVerdict],
                  zygote: Zygote | None = None) -> None:
    """Select cases from the golden file, run them (serially or fanned out), in order,
    appending each verdict to `done` as it comes (so an interruption keeps them)."""
    with open_golden(golden) as gf:
        positions = {e.id: i for i, e in enumerate(gf.index)}
        rows = select(gf.index, **selection)
        if shard is not None:
            keep = sharding.select([(r.id, r.nbytes) for r in rows], *shard)
            rows = [r for r in rows if r.id in keep]
        if not rows:
            raise UsageError(f"{golden}: no case matches the selection")
        cases = [gf.case(r.id) for r in rows]
        source = GoldenSource(gf)
        err = stderr_console()
        beat = None if err.is_terminal else lambda line: print(line, file=sys.stderr, flush=True)
        with progress_bar(err, len(cases)) as progress, \
                open_executor(jobs, executor_url) as pool:
            if pool is None:
                stream = iter_verdicts(adapter, cases, source, opts, progress, heartbeat=beat,
                                       zygote=zygote)
            else:
                if not adapter.spec:
                    raise UsageError(f"{adapter.name} cannot run in worker processes; "
                                     "drop --jobs / --executor")
                stream = iter_verdicts_parallel(adapter, cases, source, opts, pool,
                                                window=max(2 * jobs, 8), progress=progress)
            for v in stream:
                done.append(replace(v, index=positions[v.case_id]))


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("golden", type=click.Path(dir_okay=False))
@click.option("--impl", "impl", default="reference", show_default=True, metavar="NAME",
              help="Implementation: reference, torch, torch:cpu|cuda|npu, module:function, "
                   "or a plugin name (see `aclcheck impls`).")
@click.option("--results", type=click.Path(dir_okay=False), default=None,
              help="Judge stored outputs (results layout) instead of running --impl.")
@selection_options
@click.option("--standard", multiple=True, metavar="NAME",
              help="Tolerance standard (repeatable: the first gates, the others are shown "
                   f"beside it). Default: {DEFAULT_STANDARD}. See `aclcheck tolerances`.")
@click.option("--tolerances", type=click.Path(dir_okay=False), default=None,
              help="TOML file overriding standard parameters per dtype / product.")
@click.option("--accumulate", default=None, type=click.Choice(ACCUMULATE_CHOICES),
              help="Override the accumulation the error budget assumes ('input' = the "
                   "input dtype, as the Atlas training/inference path).")
@click.option("--isolate/--no-isolate", default=None,
              help="Run the implementation in a worker process: crashes, hangs and exits "
                   "become ERROR and the run goes on. Default: on for fork-safe adapters "
                   "(reference, torch:cpu, module:function), off for device adapters. "
                   "--no-isolate runs it in this process (debuggers).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Hard cap in seconds per call in a worker; a call is declared hung much "
                   "sooner when it runs 50x longer than comparable calls (at least 5 s).")
@click.option("--memory-limit", type=click.IntRange(min=64), default=None, metavar="MB",
              help="Address-space cap of the isolated worker: a runaway allocation becomes "
                   "ERROR instead of exhausting the machine (needs isolation).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run each case N times and compare the outputs bitwise.")
@click.option("--deterministic", is_flag=True,
              help="Ask the implementation for deterministic mode; with --repeat, any "
                   "difference is NONDETERMINISTIC.")
@click.option("--aclnn-lib-dir", "aclnn_lib_dir", multiple=True, metavar="DIR",
              type=click.Path(file_okay=False),
              help="--impl aclnn: folder with libascendcl.so, libnnopbase.so, libopapi.so "
                   "(repeatable; replaces the ASCEND_HOME_PATH / LD_LIBRARY_PATH search). "
                   "A single --product names the device's product.")
@click.option("--aclnn-device", type=click.IntRange(min=0), default=None, metavar="N",
              help="--impl aclnn: device id (default 0).")
@click.option("--shard", default=None, metavar="K/N",
              help="Only the K-th of N size-balanced slices of the selection (CI matrices; "
                   "join the JSON reports with `aclcheck merge`).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run cases on N local worker processes.")
@click.option("--executor", "executor_url", default=None, metavar="URL",
              help="Fan cases out over a Dask cluster: dask://HOST:PORT.")
@click.option("--xfail", "xfail_path", type=click.Path(dir_okay=False), default=None,
              help="Known-failure list (TOML): listed failures are XFAIL and do not fail "
                   "the gate.")
@click.option("--strict-xfail", is_flag=True,
              help="A listed case that now passes (XPASS) fails the gate.")
@click.option("--baseline", type=click.Path(dir_okay=False), default=None,
              help="Previous JSON report: show new failures, fixed cases and metric "
                   "regressions; the gate then fails only on new failures.")
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
           accumulate: str | None, isolate: bool | None, timeout: float,
           memory_limit: int | None, repeat: int,
           deterministic: bool, aclnn_lib_dir: tuple[str, ...], aclnn_device: int | None,
           shard: str | None, jobs: int, executor_url: str | None,
           xfail_path: str | None, strict_xfail: bool, baseline: str | None, verbose: bool,
           json_path: str | None, junit_path: str | None, html_path: str | None) -> None:
    """Run an implementation on every case of GOLDEN and judge it against the contract.

    Exits 1 on any nonconformance (FAIL, WRONG_STATUS, UNIMPLEMENTED, NONDETERMINISTIC,
    ERROR), so it can gate CI. Every failing case prints a repro command.

    \b
    Examples:
      aclcheck verify suite.h5                              # the reference (self-test)
      aclcheck verify suite.h5 --impl torch --dtype float32
      aclcheck verify suite.h5 --impl mykernels:backward --timeout 10
      aclcheck verify suite.h5 --impl mykernels:backward --no-isolate   # for a debugger
      aclcheck verify suite.h5 --results board_run.h5 --json report.json --junit junit.xml
      aclcheck verify suite.h5 --impl torch --standard aclcheck --standard cann-mixed
    """
    params = {"impl": impl, "results": results, "standard": standard,
              "tolerances": tolerances, "accumulate": accumulate,
              "deterministic": deterministic, "repeat": repeat,
              "aclnn_lib_dir": aclnn_lib_dir, "aclnn_device": aclnn_device,
              "aclnn_product": product[0] if impl == "aclnn" and len(product) == 1 else None}
    standards = _standards(standard)
    overrides = load_overrides(tolerances) if tolerances else None
    xfails = xfail.load(xfail_path) if xfail_path else None
    old = json_report.read(baseline)[1] if baseline else None
    shard_kn = parse_shard(shard) if shard else None
    click.get_current_context().call_on_close(configure_environment(  # inherited by workers
        aclnn_lib_dir, aclnn_device, product if impl == "aclnn" else ()))
    zygote = prestart_zygote(impl, isolate) if results is None else None  # imports beside ours
    if zygote is not None:
        click.get_current_context().call_on_close(zygote.close)
    adapter = build_impl(impl, results)
    out = Console(record=html_path is not None, highlight=False)
    opts = RunOptions(
        judge=JudgeOptions(standards=standards, overrides=overrides, accumulate=accumulate),
        isolate=isolate, timeout=timeout, repeat=repeat, deterministic=deterministic,
        memory_limit=memory_limit * 2**20 if memory_limit else None,
        repro_prefix=repro_prefix(golden, adapter, params),
    )
    selection = {"products": product, "dtypes": dtype, "formats": format_,
                 "families": family, "id_pattern": id_pattern}
    verdicts: list[CaseVerdict] = []
    interrupted = False
    try:
        run_selection(golden, adapter, opts, selection, shard_kn, jobs, executor_url,
                      verdicts, zygote)
    except KeyboardInterrupt:
        # keep what was judged: report it (marked) and exit 130 below
        interrupted = True
        stderr_console().print(f"aclcheck: interrupted after {len(verdicts)} cases; "
                               "reporting those")
    finally:
        adapter.close()
    if xfails is not None:
        verdicts = xfail.apply(verdicts, xfails, adapter.name)
    console_report.render(out, verdicts, implementation=adapter.name, verbose=verbose)
    failed = xfail.gate_failed(verdicts, strict_xfail)
    if old is not None:
        changes = baseline_diff(old, verdicts)
        console_report.render_diff(out, changes, baseline)
        # against a baseline only what got worse gates (XPASS only when strict)
        failed = any(now.failing or strict_xfail for _, now in changes.new_failures)
    extra: dict[str, Any] = {"command": shlex.join(["aclcheck", *sys.argv[1:]]),
                             "interrupted": interrupted}
    if shard:
        extra["shard"] = shard
    if json_path:
        report = json_report.build(verdicts, implementation=adapter.name, standards=standards,
                                   golden=str(golden), extra=extra)
        json_report.write(json_path, report)
    if junit_path:
        junit.write(junit_path, verdicts, suite_name=f"aclcheck {adapter.name} {Path(golden).name}")
    if html_path:
        out.save_html(html_path)
    if interrupted:
        sys.exit(130)
    sys.exit(EXIT_NONCONFORMANT if failed else EXIT_OK)
