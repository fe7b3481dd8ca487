"""`aclcheck generate`: write a golden suite (inputs + float64 goldens) to an HDF5 file."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aclcheck.arrays import return_large_blocks
from aclcheck.cases.acl import ALL_FORMATS
from aclcheck.cases.record import CONTRACTS
from aclcheck.cli.common import handle_errors, stderr_console, stdout_console
from aclcheck.cli.options import click_option
from aclcheck.errors import EXIT_CODES_HELP
from aclcheck.options import DEFAULT_OPERATOR, EXECUTOR, OP
from aclcheck.store.atomic import check_output_path
from aclcheck.store.codec import COMPRESSIONS, run_meta
from aclcheck.store.file_guard import Role, check_apart
from aclcheck.suite.generate import GenerateStats, ProgressFn, auto_jobs, plan_suite
from aclcheck.suite.generate import generate as run_generate

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def command_line(params: dict[str, Any]) -> str:
    """The canonical command that reproduces this file (stored in its root attributes;
    the same whatever computes the tensors, so the bytes are too)."""
    parts = ["aclcheck", "generate", "-o", str(params["output"])]
    if params.get("op", DEFAULT_OPERATOR) != DEFAULT_OPERATOR:
        parts += ["--op", params["op"]]
    for opt in ("product", "dtype", "format", "family"):
        for value in params[opt]:
            parts += [f"--{opt}", value]
    for opt in ("count", "seed", "cases_file", "shard", "suite_name", "max_case_mb"):
        if params[opt] is not None:
            parts += [f"--{opt.replace('_', '-')}", str(params[opt])]
    if params["compress"] != "none":
        parts += ["--compress", params["compress"]]
    if params.get("contract", "doc") != "doc":
        parts += ["--contract", params["contract"]]
    # not --jobs or --executor: they change who computes, not what is written
    return shlex.join(parts)


def summary_table(stats: GenerateStats) -> Table:
    """Cases per product/dtype (a column per format), goldens and bytes, totals below."""
    from rich.table import Table

    formats = sorted({fmt for _, _, fmt in stats.combos},
                     key=lambda f: (ALL_FORMATS + (f,)).index(f))
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for (prod, dtype, fmt), combo in stats.combos.items():
        row = rows.setdefault((prod, dtype), {"golden": 0, "bytes": 0})
        row[fmt] = row.get(fmt, 0) + combo.cases
        row["golden"] += combo.valid
        row["bytes"] += combo.array_bytes
    table = Table(title=str(stats.path))
    table.add_column("product", no_wrap=True)
    table.add_column("dtype", no_wrap=True)
    for fmt in formats:
        table.add_column(fmt, justify="right")
    table.add_column("golden", justify="right")
    table.add_column("MB", justify="right")
    for (prod, dtype), row in sorted(rows.items()):
        table.add_row(prod, dtype, *(str(row.get(f, "")) for f in formats),
                      str(row["golden"]), f"{row['bytes'] / 1e6:.2f}")
    table.caption = (
        f"{stats.cases} cases, {stats.array_bytes / 1e6:.1f} MB of arrays, file "
        f"{stats.file_bytes / 1e6:.1f} MB, {stats.seconds:.1f} s"
    )
    return table


class JobsType(click.ParamType):
    """--jobs: a positive number of workers, or auto."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int | str:
        if isinstance(value, int) or str(value).strip().isdigit():
            if int(value) >= 1:
                return int(value)
        elif str(value).strip().lower() == "auto":
            return "auto"
        self.fail(f"{value!r} is neither a positive number of workers nor 'auto'", param, ctx)


@contextmanager
def progress_reporter(console: Console, total: int | None, path: Path) -> Iterator[ProgressFn]:
    """A rich progress bar on a terminal; otherwise one line at start (CI logs). A suite
    is streamed: its size is known at its end (total None)."""
    if not console.is_terminal:
        what = "cases" if total is None else f"{total} cases"
        console.print(f"aclcheck: generating {what} -> {path}")
        yield lambda done, total_, case: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (TextColumn("generating"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.description}"))
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("", total=total)

        def update(done: int, total_: int | None, case: Any) -> None:
            bar.update(task, completed=done, description=case.id)

        yield update


@click.command(epilog=EXIT_CODES_HELP)
@click.option("-o", "--output", required=True,
              type=click.Path(dir_okay=False, path_type=Path), help="Golden file to write.")
@click_option(OP)
@click.option("--product", multiple=True, metavar="NAME",
              help="Product (repeatable; default: all).")
@click.option("--dtype", multiple=True, metavar="NAME",
              help="Dtype, e.g. bf16 (repeatable; default: each product's own).")
@click.option("--format", "format", multiple=True, metavar="NAME",
              help="Format: ND, NCHW, NCL (repeatable; default: all).")
@click.option("--family", multiple=True, metavar="NAME",
              help="Case family (repeatable; default: all but 'stress').")
@click.option("--count", type=int, default=None, help="Cases per combination [default: 1].")
@click.option("--seed", type=int, default=None, help="Suite seed [default: 0].")
@click.option("--cases-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="TOML/JSON case file (replaces the family selection).")
@click.option("--shard", default=None, metavar="K/N", help="Write only the K-th of N slices.")
@click.option("--jobs", type=JobsType(), default="auto", show_default=True,
              help="Worker processes making the cases (only this process writes): a "
              "number, or auto (one per idle core for a suite of 256 cases or more; this "
              "process alone with fewer than two cores idle).")
@click_option(EXECUTOR)
@click.option("--compress", type=click.Choice(COMPRESSIONS), default="none", show_default=True,
              help="gzip for archives (slower to write and read).")
@click.option("--suite-name", default=None, help="Name stored in the file [default: derived].")
@click.option("--max-case-mb", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="MB", help="Refuse, before allocating, any case whose arrays need more "
              "than this [default: a quarter of the memory].")
@click.option("--contract", type=click.Choice(CONTRACTS), default="doc", show_default=True,
              help="What the expected statuses follow where the vendor's documentation "
              "page and its code part: doc (such calls are unspecified) or code (the "
              "status the code returns). Set on every case that does not set its own "
              "`contract` (a case file's entry wins).")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@handle_errors
def generate(**params: Any) -> None:
    """Generate a golden suite: inputs and float64 goldens, in one HDF5 file.

    With no selection, writes the default suite: every product, dtype and format and all
    main families, one case each. The file appears only when complete. Worker processes
    (--jobs: by default one per idle core for a suite of 256 cases or more; or
    --executor)
    build the cases and their tensors from the seeds and this process writes: the file
    is the same byte for byte whoever made it.

    \b
    Examples:
      aclcheck generate -o suite.h5
      aclcheck generate -o a2-bf16.h5 --product atlas-a2 --dtype bf16 --count 5
      aclcheck generate -o mine.h5 --cases-file cases.toml --jobs 4
      aclcheck generate -o one-core.h5 --count 10 --jobs 1
      aclcheck generate -o big.h5 --cases-file big.toml --max-case-mb 8000
      aclcheck generate -o huge.h5 --count 200 --executor dask://scheduler:8786
      aclcheck generate -o code.h5 --contract code --cases-file vendor-ut.toml
    """
    suite = plan_suite(
        products=params["product"], dtypes=params["dtype"], formats=params["format"],
        families=params["family"], count=params["count"], seed=params["seed"],
        cases_file=params["cases_file"], shard_spec=params["shard"],
        suite_name=params["suite_name"], op=params["op"], contract=params["contract"],
        max_case_bytes=None if params["max_case_mb"] is None
        else int(params["max_case_mb"] * 1e6),
    )
    check_output_path(params["output"], params["force"])  # before any work or output
    if params["cases_file"] is not None:
        check_apart([Role("--cases-file", params["cases_file"])], [Role("-o", params["output"])])
    meta = run_meta(command_line(params), suite.suite, selection=suite.selection)
    err = stderr_console()
    total = len(suite.cases) if isinstance(suite.cases, list) else None
    jobs = auto_jobs(suite.cases) if params["jobs"] == "auto" else params["jobs"]
    if jobs > 1 or params["executor"]:
        return_large_blocks()  # the workers' batches arrive here: memory flat at any size
    # --jobs alone: generate's own pool, forked before the output file is opened
    remote: Any = nullcontext(None)
    if params["executor"]:
        from aclcheck.executors import open_executor

        remote = open_executor(jobs, params["executor"])
    with remote as executor, progress_reporter(err, total, params["output"]) as progress:
        stats = run_generate(params["output"], suite.cases, meta, force=params["force"],
                             compress=params["compress"], jobs=jobs,
                             executor=executor, progress=progress)
    stdout_console().print(summary_table(stats))
