"""The committed CI suite (golden/) must equal what the generator makes from its flags.

Any change of the reference, the families, the expected statuses or the store changes
the regenerated data and fails here; after an intended change, regenerate (golden/README.md).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.store.diff import diff_golden
from aclcheck.store.dispatch import check_file

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
#: The committed suites: the 2D, 3D and max-pooling operators', the vendor's unit tests.
SUITES = ("ci-suite", "ci-suite-3d", "ci-suite-maxpool", "vendor-ut-2d", "vendor-ut-3d")
MAX_BYTES = 5 * 1024 * 1024


def suite_args(name: str) -> list[str]:
    """The flags in golden/<name>.args ('#' comments, shell quoting)."""
    return shlex.split((GOLDEN / f"{name}.args").read_text(), comments=True)


@pytest.mark.parametrize("name", SUITES)
def test_args_file_is_a_definition_not_a_destination(name: str) -> None:
    args = suite_args(name)
    assert args, f"golden/{name}.args holds no flags"
    assert not {"-o", "--output", "--force"} & set(args)


@pytest.mark.parametrize("name", SUITES)
def test_committed_file_is_small_and_intact(name: str) -> None:
    suite = GOLDEN / f"{name}.h5"
    assert suite.stat().st_size < MAX_BYTES
    report = check_file(suite)
    assert report.ok, report.problems


@pytest.mark.slow  # heavy: runs in .ci/run's slow step (pytest -m slow)
@pytest.mark.parametrize("name", SUITES)
def test_regenerated_suite_matches_committed_file(tmp_path: Path, name: str) -> None:
    obtained = tmp_path / f"{name}.h5"
    res = CliRunner().invoke(cli, ["generate", "-o", str(obtained), *suite_args(name)])
    assert res.exit_code == 0, res.output
    diffs = diff_golden(GOLDEN / f"{name}.h5", obtained)
    if diffs:
        regenerate = (f"aclcheck generate -o golden/{name}.h5 --force "
                      f"$(grep -v '^#' golden/{name}.args)")
        pytest.fail(
            f"golden/{name}.h5 differs from a fresh generation ({obtained}):\n  "
            + "\n  ".join(diffs)
            + f"\nIf the change is intended, regenerate and commit: {regenerate}"
        )
