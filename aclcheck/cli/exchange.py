"""`aclcheck export` / `aclcheck import`: the .bin folder exchange with C/C++ harnesses."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from aclcheck.cli.common import handle_errors, stderr_console, stdout_console
from aclcheck.cli.options import selection_options
from aclcheck.errors import EXIT_CODES_HELP, UsageError
from aclcheck.store.atomic import check_output_path
from aclcheck.store.codec import run_meta
from aclcheck.store.dispatch import open_golden
from aclcheck.store.exchange import export_cases, import_folder, import_inputs
from aclcheck.store.file_guard import Role, check_apart
from aclcheck.store.results import write_results
from aclcheck.suite.filters import select


@click.command("export", epilog=EXIT_CODES_HELP)
@click.argument("golden", type=click.Path(dir_okay=False))
@click.argument("folder", type=click.Path(file_okay=False))
@selection_options
@click.option("--force", is_flag=True, help="Write into a non-empty folder (each exported "
              "case's folder is replaced, stale out.bin files included).")
@handle_errors
def export(golden: str, folder: str, product: tuple[str, ...], dtype: tuple[str, ...],
           format_: tuple[str, ...], family: tuple[str, ...], id_pattern: tuple[str, ...] | None,
           force: bool) -> None:
    """Write GOLDEN's cases into FOLDER as raw .bin files and a manifest.json that a C/C++
    harness can follow without HDF5 (see docs/bin-exchange.md).

    \b
    Per case: FOLDER/<case_id>/<tensor>.bin for each input tensor, named by its role
    (storage buffers, little-endian, bf16 as its 16-bit pattern), golden.bin (float64).
    The harness writes out.bin and, for a non-zero status, status.txt next to them;
    `aclcheck import` reads them back.

    \b
    Examples:
      aclcheck export suite.h5 xfer/ --product atlas-a2
      aclcheck import xfer/ -o board.h5 && aclcheck verify suite.h5 --results board.h5
    """
    with open_golden(golden) as gf:
        rows = select(gf.index, products=product, dtypes=dtype, formats=format_,
                      families=family, id_pattern=id_pattern)
        if not rows:
            raise UsageError(f"{golden}: no case matches the selection")
        stats = export_cases(gf, [r.id for r in rows], Path(folder), force=force)
    stdout_console().print(f"exported {stats.cases} cases to {folder} ({stats.files} files, "
                           f"{stats.bytes / 1e6:.2f} MB); manifest: "
                           f"{Path(folder) / 'manifest.json'}")


@click.command("import", epilog=EXIT_CODES_HELP)
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Results file to write (judge it with `verify --results`).")
@click.option("--implementation", default=None, metavar="NAME",
              help="What produced the outputs (stored in the results file). Default: "
                   "bin:<folder name>.")
@click.option("--force", is_flag=True, help="Overwrite an existing results file.")
@handle_errors
def import_(folder: str, output: str, implementation: str | None, force: bool) -> None:
    """Read FOLDER/<case_id>/out.bin and status.txt (written by a harness into an
    `aclcheck export` folder) into a results file.

    \b
    status.txt: first line the integer status, the rest a message; absent = 0 when out.bin
    exists. A case with neither file is left out (verify then reports ERROR "no result").
    out.bin must have exactly the size the manifest declares, and no file is read past
    its cap (out.bin: the read limit, $ACLCHECK_MAX_READ_MB; exit 3 naming the file).

    \b
    Example:
      aclcheck import xfer/ -o board.h5 --implementation "aclnn on Atlas A2"
    """
    check_output_path(output, force)
    check_apart(import_inputs(folder), [Role("-o", output)])
    result = import_folder(folder)
    name = implementation or f"bin:{Path(folder).resolve().name}"
    meta = run_meta(shlex.join(["aclcheck", *sys.argv[1:]]), result.meta.get("suite", ""),
                    golden=result.meta.get("golden", ""), source_folder=str(folder))
    write_results(output, name, result.rows, meta, force=force)  # reads as it writes
    stdout_console().print(f"imported {result.count} cases ({result.with_output} with "
                           f"out.bin) into {output}")
    if result.missing:
        shown = ", ".join(result.missing[:5]) + (" ..." if len(result.missing) > 5 else "")
        stderr_console().print(f"{len(result.missing)} cases have neither out.bin nor "
                               f"status.txt (verify reports them as ERROR): {shown}")
