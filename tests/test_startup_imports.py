"""generate imports only what it runs (issue 25's start-up): the other operator, the 2D
operator's numerics, diagnosis and coverage, judging, the store's readers and checks,
executors and the frameworks stay out of `sys.modules`. No timing here (that is in
benchmarks/README.md, "generate's start-up"); the operators' lazy hooks are checked to
resolve."""

from __future__ import annotations

import dataclasses
import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from aclcheck import ops
from aclcheck.errors import SuiteError
from aclcheck.ops.operator import Hook

#: modules generate (2D, one process) neither needs at import nor while it runs
HEAVY = (
    "aclcheck.ops.adaptive_avg_pool3d_backward",
    "aclcheck.ops.adaptive_avg_pool2d_backward.diagnose",
    "aclcheck.ops.adaptive_avg_pool2d_backward.bugs",
    "aclcheck.ops.adaptive_avg_pool2d_backward.coverage",
    "aclcheck.ops.adaptive_avg_pool2d_backward.numerics",
    "aclcheck.judging",
    "aclcheck.store.legacy.group_reader",
    "aclcheck.store.dispatch",
    "aclcheck.store.golden_reader",
    "aclcheck.store.results",
    "aclcheck.executors",
    "aclcheck.running",
    "aclcheck.impls",
    "torch",
    "dask",
    "distributed",
    "multiprocessing",
    "concurrent.futures",
)

#: runs its code in a fresh interpreter, then prints which HEAVY modules are loaded
PROBE = """
import sys
{code}
print(repr([m for m in {heavy!r} if m in sys.modules]))
"""

#: the console-script entry point, as `aclcheck ARGS...` runs it
GENERATE = """
sys.argv = ["aclcheck", *sys.argv[1:]]
from aclcheck.cli import main
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
"""


def loaded(code: str, *args: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(code=code, heavy=heavy), *args],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return eval(proc.stdout.strip().splitlines()[-1])  # noqa: S307 - our own repr of a list


def test_importing_generate_imports_nothing_heavy() -> None:
    # nor the case-file reader: only --cases-file needs it
    heavy = (*HEAVY, "aclcheck.suite.casefile", "tomllib")
    assert loaded("import aclcheck.cli.generate", heavy=heavy) == []


def test_generate_help_imports_nothing_heavy() -> None:
    assert loaded(GENERATE, "generate", "--help") == []


def test_generate_of_the_default_operator_imports_nothing_heavy(tmp_path: Path) -> None:
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([{"product": "atlas-a2", "dtype": "float32", "format": "NCHW",
                                  "self_shape": [2, 3, 9, 7], "grad_shape": [2, 3, 4, 3]}]))
    out = tmp_path / "g.h5"
    heavy = (*HEAVY, "tomllib")  # a JSON case file
    assert loaded(GENERATE, "generate", "-o", str(out), "--cases-file", str(cases),
                  heavy=heavy) == []
    assert out.is_file()


def test_operator_names_are_known_without_loading_their_folders() -> None:
    code = """
from aclcheck import ops
from aclcheck.errors import SuiteError
assert list(ops.OPERATORS) == list(ops.NAMES) and len(ops.OPERATORS) == 3
assert "adaptive_avg_pool3d_backward" in ops.OPERATORS and "nosuch" not in ops.OPERATORS
assert "adaptive_max_pool2d_backward" in ops.OPERATORS
ops.operator("adaptive_avg_pool2d_backward")
"""
    assert loaded(code, heavy=("aclcheck.ops.adaptive_avg_pool3d_backward",
                               "aclcheck.ops.adaptive_max_pool2d_backward")) == []


def test_a_named_operator_loads_and_an_alias_finds_its_operator() -> None:
    op3 = ops.operator("aapool3d-bwd")
    assert op3 is ops.OPERATORS["adaptive_avg_pool3d_backward"]
    assert ops.operator("aapool2d-bwd") is ops.default_operator()
    assert list(ops.OPERATORS.values())[1] is op3
    with pytest.raises(KeyError):
        ops.OPERATORS["nosuch"]
    with pytest.raises(SuiteError, match="unknown operator 'nosuch'; known: "
                       "adaptive_avg_pool2d_backward, adaptive_avg_pool3d_backward, "
                       "adaptive_max_pool2d_backward "):
        ops.operator("nosuch")


def hooks(value: object) -> list[Hook]:
    """Every Hook in an operator record (its fields, and the records in them)."""
    if isinstance(value, Hook):
        return [value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [h for f in dataclasses.fields(value) for h in hooks(getattr(value, f.name))]
    return []


@pytest.mark.parametrize("name", ops.NAMES)
def test_every_lazy_hook_resolves_to_a_function_and_pickles(name: str) -> None:
    assert ops.OPERATORS[name].name == name  # the folder is named as its operator
    found = hooks(ops.OPERATORS[name])
    assert found, name  # numerics at least is lazy
    for hook in found:
        assert hook.module.startswith(f"aclcheck.ops.{name}."), hook
        assert callable(hook.target()), hook
        assert pickle.loads(pickle.dumps(hook)) == hook


def test_a_hook_calls_its_function() -> None:
    op = ops.default_operator()
    assert op.display.axis_names(4) == ("n", "c", "h", "w")


def test_importing_the_store_package_imports_none_of_its_modules() -> None:
    """Each name is imported from the module that owns it; the package itself is only
    its docstring, so a writer does not load the readers and checks through it."""
    code = "import aclcheck.store"
    heavy = ("aclcheck.store.codec", "aclcheck.store.golden_writer", *HEAVY)
    assert loaded(code, heavy=heavy) == []


def test_the_zygote_loads_every_operator_before_it_forks() -> None:
    """Operators load on first look-up; a verify worker is forked from the zygote, so the
    zygote's preload loads them all once (else every forked worker imported its case's
    operator folder again: verify --impl torch of the default suite was 5 % slower)."""
    code = """
import sys
from aclcheck.running.workers.child import preload
preload("reference")
print(",".join(m for m in ("aclcheck.ops.adaptive_avg_pool2d_backward",
                           "aclcheck.ops.adaptive_avg_pool3d_backward") if m in sys.modules))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.strip().split(",") == ["aclcheck.ops.adaptive_avg_pool2d_backward",
                                              "aclcheck.ops.adaptive_avg_pool3d_backward"]
