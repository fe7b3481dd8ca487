"""With isolated calls (the default for the CPU frameworks) `verify` never imports the
kernel library in its own process: only the zygote and the workers do (docs/verify.md,
threat model). Each framework is checked in a fresh interpreter (a pytest process may
have imported it already), on a few cases of the shipped CI suite."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

CI_SUITE = Path(__file__).parent.parent / "golden" / "ci-suite.h5"

_SCRIPT = r"""
import json, sys
from aclcheck.cli import main
sys.argv = ["aclcheck", "verify", sys.argv[1], "--impl", sys.argv[2], "--id", "a2-fp32-*div0*",
            "--no-stale-check"]
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "loaded": [m for m in ("torch", "paddle", "mindspore")
                                          if m in sys.modules]}))
"""


@pytest.mark.parametrize("framework", [
    "torch", pytest.param("paddle", marks=pytest.mark.slow),
    pytest.param("mindspore", marks=pytest.mark.slow)])
def test_isolated_verify_never_imports_the_framework_here(framework: str) -> None:
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(CI_SUITE), framework],
                          capture_output=True, text=True, timeout=600)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] in (0, 1), proc.stderr[-2000:]
    assert result["loaded"] == [], f"{framework} imported in the parent: {result}"
