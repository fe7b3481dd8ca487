"""The command group: subcommands load lazily, so `--version` and `--help` import nothing
heavy (the start-up time itself is measured in benchmarks/bench_startup.py, not here)."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.cli.group import COMMANDS

HEAVY = ("numpy", "h5py", "ml_dtypes", "matplotlib", "jinja2", "torch", "rich.progress")

#: runs the console-script entry point in a fresh interpreter, then says on stderr which
#: heavy modules and which command modules were imported
PROBE = """
import sys
sys.argv = ["aclcheck", *sys.argv[1:]]
from aclcheck.cli import main
try:
    main()
except SystemExit:
    pass
loaded = [m for m in {heavy!r} if m in sys.modules]
loaded += sorted(m for m in sys.modules if m.startswith("aclcheck.cli.")
                 and m != "aclcheck.cli.group")
sys.stderr.write(repr(loaded))
"""


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-h"]])
def test_version_and_help_import_nothing_heavy(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *args],
                          capture_output=True, text=True, timeout=600)
    assert proc.stderr == "[]", proc.stderr
    assert "aclcheck" in proc.stdout


def test_every_lazy_command_loads_and_its_listed_help_is_its_own() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    for name, lazy in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
        assert command.get_short_help_str(limit=10**6) == lazy.short_help, name


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = result.output.split("Commands:")[1]
    for name in COMMANDS:
        assert f"\n  {name} " in listed


def test_a_command_runs_and_an_unknown_one_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["products"])
    assert result.exit_code == 0 and "atlas-a2" in result.output
    result = CliRunner().invoke(cli, ["nosuch"])
    assert result.exit_code == 2 and "No such command" in result.output
