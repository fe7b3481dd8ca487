"""Fixtures shared by the test modules.

Golden files: every module that needs one asks `make_golden(selection, suite)` (from its
own module-scoped fixture, which says what it needs); the file is generated once per
session and worker. Plain helpers that are not fixtures live in tests/tests_support.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aclcheck.suite import Selection
from tests.tests_support import write_golden

GoldenMaker = Callable[[Selection, str], Path]


@pytest.fixture(scope="session")
def make_golden(tmp_path_factory: pytest.TempPathFactory) -> GoldenMaker:
    """make_golden(selection, suite) -> path of a golden file of the selection's cases,
    generated on first use and shared by every test of the session that asks the same.
    Tests that damage a golden file copy it first (see tests/test_hostile_files.py)."""
    made: dict[tuple[str, str], Path] = {}

    def make(selection: Selection, suite: str) -> Path:
        key = (repr(selection), suite)
        if key not in made:
            made[key] = write_golden(tmp_path_factory.mktemp(suite), selection, suite)
        return made[key]

    return make
