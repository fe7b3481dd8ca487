"""`aclcheck import-cases`: a vendor's own test cases (ATK case JSON, the ops-nn op_api unit
tests) as an aclcheck case file, one case per vendor case, with provenance."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from aclcheck.cli.common import handle_errors, stdout_console
from aclcheck.cli.options import click_option
from aclcheck.errors import EXIT_CODES_HELP, UsageError
from aclcheck.options import OP
from aclcheck.report.files import check_writable
from aclcheck.report.safe_text import data_text
from aclcheck.suite.casefile import parse_case_entries, toml_file, write_case_file

#: --from: the vendor formats read, and what each one is
SOURCES: dict[str, str] = {
    "atk": "an ATK case file (JSON: a list of cases with id, inputs, range_values)",
    "ops-nn-ut": "an ops-nn op_api unit-test source (C++: TEST_F blocks of TensorDesc "
                 "calls and EXPECT_EQ on the first phase's status)",
}


@click.command("import-cases", epilog=EXIT_CODES_HELP)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--from", "kind", required=True, type=click.Choice(tuple(SOURCES)),
              help="The vendor format of FILE.")
@click_option(OP)
@click.option("--product", default=None, metavar="NAME",
              help="The product the cases run on [default: atlas-a2, the unit tests' "
                   "Ascend910B].")
@click.option("--format", "fmt", default=None, metavar="NAME",
              help="ATK only: the format to give every tensor [default: NCHW, what the "
                   "vendor's ATK executor passes for every case].")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Case file to write (TOML).")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@handle_errors
def import_cases(file: Path, kind: str, op: str, product: str | None, fmt: str | None,
                 output: str, force: bool) -> None:
    """Write a vendor's own test cases (ATK case JSON, ops-nn op_api unit tests) as an
    aclcheck case file, with provenance and the vendor's expected statuses.

    One case per vendor case in FILE, each with `source` (file and case id, or file, line
    and test name) and, for unit tests, the status the test expects (`vendor_status`).
    Unit tests that assert nothing
    are listed as skipped, with the reason. A field or construct aclcheck does not know is
    an error naming its line: nothing is dropped silently. Then `generate --cases-file`
    makes the golden file and `verify` judges it, showing the vendor's expected status
    beside aclcheck's and the implementation's (docs/vendor-cases.md).

    \b
    Examples:
      aclcheck import-cases --from ops-nn-ut test_aclnn_AdaptiveAvgPool2dBackward.cpp -o ut2d.toml
      aclcheck import-cases --from atk --op aapool3d-bwd atk_3d.json -o atk3d.toml
      aclcheck generate --cases-file ut2d.toml -o ut2d.h5
      aclcheck verify ut2d.h5 --impl torch
    """
    from aclcheck.ops import operator

    target = Path(output)
    if target.suffix.lower() != ".toml":
        raise UsageError(f"{output}: import-cases writes a TOML case file (*.toml)")
    if target.exists() and not force:
        raise UsageError(f"{output} exists (use --force to overwrite)")
    check_writable({"-o": output})
    operator_ = operator(op)
    if operator_.vendor_cases is None:
        raise UsageError(f"{operator_.name}: no vendor case formats are known for it")
    if fmt is not None and kind != "atk":
        raise UsageError("--format applies to --from atk only (unit tests name formats)")
    imported = operator_.vendor_cases(kind, file, operator_.api, product or "atlas-a2", fmt)
    cases = parse_case_entries(list(imported.entries), str(file), 0, operator_.name)
    header = [f"imported by `aclcheck import-cases --from {kind}` from {file.name}"]
    header += [f"skipped: {s.source}: {s.reason}" for s in imported.skipped]
    text = "".join(f"# {line}\n" for line in header) + toml_file(cases, file.stem)
    write_case_file(target, text, op=operator_.name)
    console = stdout_console()
    if imported.skipped:
        table = Table(title=f"{len(imported.skipped)} vendor tests skipped")
        table.add_column("test", overflow="fold")
        table.add_column("why", overflow="fold")
        for s in imported.skipped:
            table.add_row(data_text(s.source), data_text(s.reason))
        console.print(table)
    stated = sum(1 for c in cases if getattr(c, "vendor_status", None) is not None)
    console.print(data_text(
        f"{output}: {len(cases)} cases of {operator_.api} from {file.name} "
        f"({stated} with the vendor's expected status, {len(imported.skipped)} skipped)"),
        soft_wrap=True)
