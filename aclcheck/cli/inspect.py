"""`aclcheck inspect`: list a golden file's cases, show one case, or check integrity."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.table import Table

from aclcheck.cases import CaseData
from aclcheck.cases.acl import UNSPECIFIED
from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.cli.coverage_view import require_edges as require_edges_of
from aclcheck.cli.coverage_view import show_coverage
from aclcheck.cli.options import selection_options
from aclcheck.errors import EXIT_BAD_INPUT, EXIT_CODES_HELP, InputFileError, UsageError
from aclcheck.judging.case.exactness import count_exact_ties
from aclcheck.ops import operator_of
from aclcheck.store.check_report import CheckReport
from aclcheck.store.codec import FORMAT_RESULTS
from aclcheck.store.dispatch import GoldenFile, check_file, open_golden, peek_format
from aclcheck.store.index import IndexEntry
from aclcheck.store.results import read_results, results_meta
from aclcheck.suite.filters import id_matches, select


def value_stats(values: np.ndarray | None) -> dict[str, Any]:
    """Summary of a tensor's logical values (float64 view): range, mean, special counts."""
    if values is None:
        return {"present": False}
    x = np.asarray(values).astype(np.float64)
    finite = x[np.isfinite(x)]
    stats: dict[str, Any] = {
        "present": True, "shape": list(x.shape), "numel": int(x.size),
        "nan": int(np.isnan(x).sum()), "inf": int(np.isinf(x).sum()),
        "zero": int((x == 0).sum()),
    }
    if finite.size:
        stats.update(min=float(finite.min()), max=float(finite.max()),
                     mean=float(finite.mean()), abs_max=float(np.abs(finite).max()))
    return stats


#: Above this many rows the listing is printed as aligned plain text: a rich Table
#: measures every cell (seconds for 10 000 rows), plain columns take milliseconds.
RICH_TABLE_MAX_ROWS = 500


def _status_text(e: IndexEntry) -> str:
    if e.expected_status == UNSPECIFIED:
        return "either"
    return str(e.expected_status)


def _caption(gf: GoldenFile, shown: int) -> str:
    meta = gf.meta
    return (f"{shown} of {len(gf.index)} cases | schema {meta.get('schema_version')} | "
            f"aclcheck {meta.get('tool_version')} | created {meta.get('created')}")


def case_ties(gf: GoldenFile, case_id: str) -> int | None:
    """Exact rounding ties of a case's golden on its product's path (None: no golden)."""
    data = gf.data(case_id)
    if data.golden is None:
        return None
    return case_exact_ties(data)[1]


def case_exact_ties(data: CaseData) -> tuple[int, int]:
    """(elements proven exact, of which exact ties) of a case with a golden, on its
    product's own path."""
    assert data.golden is not None
    numbers = operator_of(data.case).model(data.case, None).numbers
    if numbers is None:
        return 0, 0
    return count_exact_ties(numbers, data.values(), data.golden)


def _ties_text(gf: GoldenFile, e: IndexEntry) -> str:
    ties = case_ties(gf, e.id)
    return "-" if ties is None else str(ties)


def list_table(gf: GoldenFile, rows: Sequence[IndexEntry], ties: bool = False) -> Table:
    """Rich table of index rows: id, family, expected status, stored size (and with
    `ties` the exact rounding ties of each case, read from its data)."""
    table = Table(title=f"{gf.path}: suite {gf.meta.get('suite') or '-'!s}")
    table.add_column("id", overflow="fold")
    table.add_column("family", no_wrap=True)
    table.add_column("expected", no_wrap=True)
    if ties:
        table.add_column("ties", justify="right", no_wrap=True)
    table.add_column("KB", justify="right", no_wrap=True)
    for e in rows:
        extra = (_ties_text(gf, e),) if ties else ()
        table.add_row(e.id, e.family, _status_text(e), *extra, f"{e.nbytes / 1e3:.1f}")
    table.caption = _caption(gf, len(rows))
    return table


def list_lines(gf: GoldenFile, rows: Sequence[IndexEntry], ties: bool = False) -> list[str]:
    """The same listing as aligned plain-text lines (for long listings)."""
    cells = [(e.id, e.family, _status_text(e), *((_ties_text(gf, e),) if ties else ()),
              f"{e.nbytes / 1e3:.1f}") for e in rows]
    head = ("id", "family", "expected", *(("ties",) if ties else ()), "KB")
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:{'>' if i >= 3 else '<'}{wd}}}" for i, wd in enumerate(widths))
    lines = [f"{gf.path}: suite {gf.meta.get('suite') or '-'}", fmt.format(*head)]
    lines.extend(fmt.format(*c) for c in cells)
    lines.append(_caption(gf, len(rows)))
    return lines


def case_tables(gf: GoldenFile, case_id: str) -> tuple[Table, Table, dict[str, Any]]:
    """The record table, the value-statistics table, and the same as JSON-able data."""
    attrs = gf.attrs(case_id)
    case = gf.case(case_id)
    rec = Table(title=f"case {case_id}", show_header=False)
    rec.add_column("field", style="bold")
    rec.add_column("value")
    for key, value in sorted(attrs.items()):
        rec.add_row(key, str(value))
    case_data = gf.data(case_id)
    golden = case_data.golden
    tensors = case_data.inputs
    data: dict[str, Any] = {"record": case.to_record(), "attributes": attrs}
    if golden is not None:
        proven, ties = case_exact_ties(case_data)
        data["exact"] = {"proven_exact": proven, "ties": ties}
        rec.add_row("exact ties", f"{ties} (of {proven} elements the product's path "
                    "computes exactly)")
    columns: dict[str, dict[str, Any]] = {}
    for name, t in (*tensors.items(), ("golden", None)):
        if name == "golden":
            st = value_stats(golden)
            st["dtype"] = "float64" if golden is not None else "absent"
        else:
            st = value_stats(None if t is None else t.view())
            st["dtype"] = case.tensor_desc(name).dtype if t is not None else "null pointer"
            if t is not None:
                st.update(strides=list(t.strides), offset=t.offset,
                          storage=int(t.storage.size))
        columns[name] = st
    data["tensors"] = columns
    stats = Table(title="values")
    stats.add_column("")
    for name in columns:
        stats.add_column(name, justify="right")
    for key in ("dtype", "shape", "strides", "offset", "storage", "min", "max", "mean",
                "nan", "inf", "zero"):
        stats.add_row(key, *(_cell(col.get(key)) for col in columns.values()))
    return rec, stats, data


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, list):
        return "x".join(map(str, v)) if v else "()"
    if isinstance(v, float):
        return _num(v)
    return str(v)


def _num(v: float | None) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.6g}"


def _emit_check(report: CheckReport, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    if report.ok:
        if not as_json:
            click.echo(
                f"{report.path}: OK ({report.kind}): {report.cases} cases, "
                f"{report.datasets} datasets, {report.bytes_read / 1e6:.1f} MB read, "
                "checksums verified")
        return
    for problem in report.problems:
        click.echo(f"aclcheck: error: {report.path}: {problem}", err=True)
    if report.truncated:
        click.echo(f"aclcheck: error: {report.path}: ... and {report.truncated} more problems",
                   err=True)
    raise SystemExit(EXIT_BAD_INPUT)


def _results_listing(path: Path, as_json: bool, id_pattern: tuple[str, ...] | None) -> None:
    meta = results_meta(path)
    rows = [r for r in read_results(path).values() if id_matches(r.case_id, id_pattern)]
    if as_json:
        click.echo(json.dumps({"file": str(path), "meta": meta, "results": [
            {"case_id": r.case_id, "status": r.status, "time_s": r.time_s,
             "message": r.message,
             "output_shape": None if r.output is None else list(r.output.shape)}
            for r in rows]}, indent=2))
        return
    table = Table(title=f"{path}: results of {meta.get('implementation', '?')}")
    for col in ("case id", "status", "time ms", "output"):
        table.add_column(col, no_wrap=col == "case id")
    for r in rows:
        out = "-" if r.output is None else f"{r.output.dtype} {r.output.shape}"
        table.add_row(r.case_id, str(r.status), f"{r.time_s * 1e3:.3f}", out)
    table.caption = f"{len(rows)} results"
    stdout_console().print(table)


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("file", type=click.Path(path_type=Path))
@selection_options
@click.option("--case", "case_id", metavar="ID", help="Show one case: record and value stats.")
@click.option("--check", is_flag=True,
              help="Read every dataset (fletcher32), validate schema and index; exit 3 on damage.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@click.option("--coverage", is_flag=True,
              help="Which hardware edges, shape classes, layouts, value classes and dtypes "
                   "the listed valid cases reach, edge by edge (none: what a trimmed suite "
                   "no longer covers); reads the index and case records only.")
@click.option("--require-edges", is_flag=True,
              help="With --coverage: exit 1 naming every hardware edge no listed case "
                   "reaches (edges only the on-request stress family reaches aside): the "
                   "gate that a default suite lost no edge.")
@click.option("--ties", is_flag=True,
              help="Count each listed case's exact rounding ties (elements whose exact "
                   "result is halfway between two values of the dtype, on the product's "
                   "path): reads the cases' data.")
@handle_errors
def inspect(file: Path, product: tuple[str, ...], dtype: tuple[str, ...],
            format_: tuple[str, ...], family: tuple[str, ...], id_pattern: tuple[str, ...] | None,
            case_id: str | None, check: bool, as_json: bool, coverage: bool,
            require_edges: bool, ties: bool) -> None:
    """List the cases of a golden file, show one case, or check the file's integrity.

    Listing reads only the file's index, so it stays fast on large suites (--ties
    reads the listed cases' data too). One case (--case) shows its exact ties.

    \b
    Examples:
      aclcheck inspect suite.h5 --dtype bf16 --family special
      aclcheck inspect suite.h5 --family rounding --ties
      aclcheck inspect suite.h5 --id 'a2-*-strided'
      aclcheck inspect suite.h5 --case a2-bf16-NCHW-nondiv0-n2c3h17w9-o5x4-normal
      aclcheck inspect suite.h5 --check
      aclcheck inspect suite.h5 --coverage --product atlas-a2
      aclcheck inspect golden/ci-suite.h5 --coverage --require-edges
    """
    if sum((check, case_id is not None, coverage)) > 1:
        raise click.UsageError("--check, --case and --coverage are exclusive")
    if require_edges and not coverage:
        raise click.UsageError("--require-edges goes with --coverage")
    if check:
        try:
            report = check_file(file)
        except InputFileError as exc:
            if not as_json:
                raise
            report = CheckReport(file, problems=[exc.detail(file)])
        _emit_check(report, as_json)
        return
    if _is_results(file):
        _results_listing(file, as_json, id_pattern)
        return
    with open_golden(file) as gf:
        if case_id is not None:
            if case_id not in gf:
                close = difflib.get_close_matches(case_id, gf.ids(), n=3)
                hint = f" (did you mean: {', '.join(close)})" if close else ""
                raise UsageError(f"{file}: no case {case_id!r}{hint}")
            rec, stats, data = case_tables(gf, case_id)
            if as_json:
                entry = gf.entry(case_id).to_dict()
                click.echo(json.dumps({"file": str(file), "index": entry, **data}, indent=2))
                return
            out = stdout_console()
            out.print(rec)
            out.print(stats)
            return
        rows = select(gf.index, products=product, dtypes=dtype, formats=format_,
                      families=family, id_pattern=id_pattern)
        if coverage:
            cov = show_coverage(str(file), [gf.case(e.id) for e in rows], as_json)
            if require_edges:
                require_edges_of(str(file), cov)
            return
        if as_json:
            click.echo(json.dumps({"file": str(file), "meta": _json_meta(gf.meta),
                                   "total": len(gf.index),
                                   "cases": [_entry_json(gf, e, ties) for e in rows]},
                                  indent=2))
            return
        if len(rows) <= RICH_TABLE_MAX_ROWS:
            stdout_console().print(list_table(gf, rows, ties))
        else:
            click.echo("\n".join(list_lines(gf, rows, ties)))


def _entry_json(gf: GoldenFile, e: IndexEntry, ties: bool) -> dict[str, Any]:
    entry = e.to_dict()
    if ties:
        entry["ties"] = case_ties(gf, e.id)
    return entry


def _json_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Root attributes for JSON output, with the stored selection decoded."""
    out = dict(meta)
    if isinstance(out.get("selection"), str):
        try:
            out["selection"] = json.loads(out["selection"])
        except (ValueError, RecursionError):
            pass
    return out


def _is_results(path: Path) -> bool:
    return peek_format(path) == FORMAT_RESULTS
