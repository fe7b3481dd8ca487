"""The compiled parts must be there where the build was expected to make them.

tests/test_reference_native.py skips when the operator's compiled _spread is missing (a
machine without a C compiler still runs the numpy path). CI has a compiler, so there a
missing extension is a broken build, not a reason to skip: .ci/run sets
ACLCHECK_REQUIRE_NATIVE=1 and this test then fails instead of letting the native tests
skip silently.
"""

from __future__ import annotations

import importlib
import os

import pytest

REQUIRED = os.environ.get("ACLCHECK_REQUIRE_NATIVE", "") == "1"


@pytest.mark.parametrize("module", ["aclcheck.ops.adaptive_avg_pool2d_backward._spread"])
def test_compiled_module_built(module: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as exc:
        if REQUIRED:
            pytest.fail(f"{module} expected (ACLCHECK_REQUIRE_NATIVE=1) but not built: {exc}")
        pytest.skip(f"{module} is not built (no C compiler at install time?): {exc}")
