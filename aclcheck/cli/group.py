"""The `aclcheck` command group: subcommands load lazily (click's lazy-group pattern).

`aclcheck --version` and `aclcheck --help` import click and this module only; a command's
module (and numpy, h5py, ml_dtypes, ... behind it) is imported when that command runs or
shows its own help. The listing in `--help` comes from COMMANDS, so it needs no import;
a test checks each entry against the command's own docstring.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import click

from aclcheck import __version__, interrupts
from aclcheck.errors import EXIT_CODES_HELP


class Lazy(NamedTuple):
    """Where a subcommand lives ("module:attribute") and its one-line help."""

    target: str
    short_help: str


COMMANDS: dict[str, Lazy] = {
    "ops": Lazy("aclcheck.cli.ops:ops", "List the operators aclcheck checks: name and "
                "aliases (for --op), aclnn API, tensors, ranks, formats and default case "
                "families."),
    "products": Lazy("aclcheck.cli.products:products", "Print what each product supports "
                     "(dtypes, formats, ranks, accumulation)."),
    "families": Lazy("aclcheck.cli.families:families", "List every case family with the "
                     "fact it aims at and its cases by default."),
    "tolerances": Lazy("aclcheck.cli.tolerances:tolerances", "Print the tolerance "
                       "standards: the rule and the numbers per dtype."),
    "generate": Lazy("aclcheck.cli.generate:generate", "Generate a golden suite: inputs and "
                     "float64 goldens, in one HDF5 file."),
    "inspect": Lazy("aclcheck.cli.inspect:inspect", "List the cases of a golden file, show "
                    "one case, or check the file's integrity."),
    "verify": Lazy("aclcheck.cli.verify:verify", "Run an implementation on every case of "
                   "GOLDEN and judge it against the contract."),
    "impls": Lazy("aclcheck.cli.impls:impls", "List implementation adapters: available here "
                  "or not (and why), what each supports."),
    "export": Lazy("aclcheck.cli.exchange:export", "Write GOLDEN's cases into FOLDER as raw "
                   ".bin files and a manifest.json that a C/C++ harness can follow without "
                   "HDF5 (see docs/bin-exchange.md)."),
    "import": Lazy("aclcheck.cli.exchange:import_", "Read FOLDER/<case_id>/out.bin and "
                   "status.txt (written by a harness into an `aclcheck export` folder) into "
                   "a results file."),
    "diff": Lazy("aclcheck.cli.diff:diff", "Compare two verify JSON reports (new failures, "
                 "fixed cases, metric regressions), or two golden files (data drift: index, "
                 "records, byte-identical datasets)."),
    "merge": Lazy("aclcheck.cli.merge:merge", "Join shard outputs into one: verify JSON "
                  "reports, or golden files made with `generate --shard K/N` (the result "
                  "equals an unsharded run, case for case)."),
    "report": Lazy("aclcheck.cli.report:report", "Render REPORT.json (from `aclcheck verify "
                   "--json`) as an HTML page: summary, product x dtype x format matrix, a "
                   "sortable case table, and every non-passing case with its pictures."),
    "shrink": Lazy("aclcheck.cli.shrink:shrink_cmd", "Find the smallest call that still fails "
                   "like case CASE of GOLDEN: fewer N, C, H, W, Ho, Wo, then simpler values "
                   "(ones, small exact integers), keeping product, dtype, format and layout, "
                   "the verdict and the diagnosis code that names the bug."),
    "import-cases": Lazy("aclcheck.cli.import_cases:import_cases", "Write a vendor's own "
                         "test cases (ATK case JSON, ops-nn op_api unit tests) as an aclcheck "
                         "case file, with provenance and the vendor's expected statuses."),
    "hunt": Lazy("aclcheck.cli.hunt:hunt", "Judge random valid calls (shapes with divisible, "
                 "non-divisible and upsampling windows, every layout and value distribution, "
                 "special values) against the float64 reference, with no golden file, until "
                 "a call fails or --max-time passes."),
}


@contextmanager
def _interrupt_is_an_exit() -> Iterator[None]:
    """Ctrl-C outside a command's own handling (while its module imports, while options
    parse): the one line and exit 130, instead of click's blank line and 'Aborted!'."""
    try:
        yield
    except KeyboardInterrupt:
        click.echo(interrupts.MESSAGE, err=True)
        raise click.exceptions.Exit(interrupts.EXIT_INTERRUPTED) from None


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use (see COMMANDS)."""

    def __init__(self, *args: Any, lazy: dict[str, Lazy], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = self.lazy[cmd_name].target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[cmd_name].target} is not a click command")
        self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing from the one-line helps in COMMANDS: no subcommand is imported."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.lazy:
                stand_in = click.Command(name, help=self.lazy[name].short_help)
                rows.append((name, stand_in.get_short_help_str(limit)))
            else:
                command = self.commands[name]
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _interrupt_is_an_exit():
            return super().make_context(*args, **kwargs)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        resolved = super().resolve_command(ctx, args)
        interrupts.command_starts()  # imports done: Ctrl-C now unwinds the command
        return resolved

    def invoke(self, ctx: click.Context) -> Any:
        with _interrupt_is_an_exit():
            return super().invoke(ctx)


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXIT_CODES_HELP,
)
@click.version_option(__version__, prog_name="aclcheck")
def cli() -> None:
    """Conformance and golden data for aclnnAdaptiveAvgPool2dBackward.

    \b
    Typical session:
      aclcheck products                      # what each product supports
      aclcheck generate -o suite.h5          # default suite with float64 goldens
      aclcheck inspect suite.h5 --check      # list cases, verify integrity
      aclcheck verify suite.h5 --impl torch  # judge an implementation
    """
