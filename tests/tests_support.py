"""Helpers shared by test modules (not fixtures: plain functions over real files)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.impls.base import CallInputs
from aclcheck.impls.reference import ReferenceImpl
from aclcheck.store import GoldenFile, ResultRow, run_meta
from aclcheck.suite.generate import generate
from aclcheck.suite.selection import Selection, build_suite


def write_golden(folder: Path, selection: Selection, suite: str) -> Path:
    """A golden file `folder`/suite.h5 of the selection's cases (module fixtures use it)."""
    path = folder / "suite.h5"
    generate(path, build_suite(selection), run_meta("test", suite))
    return path


def reference_rows(gf: GoldenFile, product: str) -> list[ResultRow]:
    """What a perfect implementation would store for every case of one product."""
    impl = ReferenceImpl()
    rows = []
    for entry in gf.index:
        if entry.product != product:
            continue
        case = gf.case(entry.id)
        outcome = impl.run(CallInputs(case, gf.data(entry.id).inputs))
        status = outcome.status if outcome.status is not None else 0
        rows.append(ResultRow(entry.id, status, outcome.output, outcome.time_s))
    return rows


def cli_run(*args: str) -> tuple[int, str]:
    """Run the aclcheck CLI in-process: (exit code, output); exceptions propagate."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output
