"""The committed CI suite (golden/) must equal what the generator makes from its flags.

Any change of the reference, the families, the expected statuses or the store changes
the regenerated data and fails here; after an intended change, regenerate (golden/README.md).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck import store
from aclcheck.cli import cli
from aclcheck.store.diff import diff_golden

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
ARGS_FILE = GOLDEN / "ci-suite.args"
SUITE_FILE = GOLDEN / "ci-suite.h5"
MAX_BYTES = 5 * 1024 * 1024
REGENERATE = ("aclcheck generate -o golden/ci-suite.h5 --force "
              "$(grep -v '^#' golden/ci-suite.args)")


def suite_args() -> list[str]:
    """The flags in golden/ci-suite.args ('#' comments, shell quoting)."""
    return shlex.split(ARGS_FILE.read_text(), comments=True)


def test_args_file_is_a_definition_not_a_destination() -> None:
    args = suite_args()
    assert args, "golden/ci-suite.args holds no flags"
    assert not {"-o", "--output", "--force"} & set(args)


def test_committed_file_is_small_and_intact() -> None:
    assert SUITE_FILE.stat().st_size < MAX_BYTES
    report = store.check_file(SUITE_FILE)
    assert report.ok, report.problems


def test_regenerated_suite_matches_committed_file(tmp_path: Path) -> None:
    obtained = tmp_path / "ci-suite.h5"
    res = CliRunner().invoke(cli, ["generate", "-o", str(obtained), *suite_args()])
    assert res.exit_code == 0, res.output
    diffs = diff_golden(SUITE_FILE, obtained)
    if diffs:
        pytest.fail(
            f"golden/ci-suite.h5 differs from a fresh generation ({obtained}):\n  "
            + "\n  ".join(diffs)
            + f"\nIf the change is intended, regenerate and commit: {REGENERATE}"
        )
