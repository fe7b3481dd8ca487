"""The import trap: a clone folder named `aclcheck` whose parent is on PYTHONPATH (the
common ~/src/aclcheck with PYTHONPATH=~/src) must not shadow the installed package, for
the commands and for pytest (whose plugin entry point loads before anything else); where
it still does (an install that cannot win), the command says so in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from aclcheck import cli as cli_package

REPO = Path(__file__).parent.parent


def run_with_a_folder_named_aclcheck(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "src" / "aclcheck").mkdir(parents=True)  # the clone's folder, as it looks
    (tmp_path / "src" / "aclcheck" / "README.md").write_text("a clone\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "src"))
    return subprocess.run([sys.executable, *args], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("args", [["--version"], ["products"]])
def test_commands_work_with_a_folder_named_aclcheck_on_the_path(tmp_path: Path,
                                                               args: list[str]) -> None:
    proc = run_with_a_folder_named_aclcheck(tmp_path, "-m", "aclcheck", *args)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def test_pytest_starts_with_a_folder_named_aclcheck_on_the_path(tmp_path: Path) -> None:
    proc = run_with_a_folder_named_aclcheck(
        tmp_path, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
        "--rootdir", str(REPO), str(REPO / "tests" / "test_products_cli.py"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "INTERNALERROR" not in proc.stdout + proc.stderr


def test_shadowing_is_one_line_naming_both_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli_package.shadowing() is None  # this package, imported from its own folder
    namespace = types.ModuleType("aclcheck")
    namespace.__path__ = ["/home/me/src/aclcheck"]  # what a plain folder imports as
    monkeypatch.setitem(sys.modules, "aclcheck", namespace)
    message = cli_package.shadowing()
    assert message is not None and "\n" not in message
    real = Path(cli_package.__file__).resolve().parent.parent
    assert "/home/me/src/aclcheck" in message and str(real) in message
    assert "PYTHONPATH" in message and "pip install -e" in message
