"""Fixtures shared by the test modules.

Golden files: one session-scoped fixture per shared kind, each generated once per session (and
per xdist worker) under tmp_path_factory; a module names the kind it needs (often through
a one-line `golden` alias). Tests that damage a golden file copy it first. Test modules
never import this file; they reach the helpers through fixtures too (`cli_run`,
`reference_rows`, `write_golden`).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.impls.base import CallInputs
from aclcheck.impls.reference import ReferenceImpl
from aclcheck.store.codec import run_meta
from aclcheck.store.dispatch import GoldenFile
from aclcheck.store.results import ResultRow
from aclcheck.suite.generate import generate
from aclcheck.suite.selection import Selection, build_suite


def write_golden(folder: Path, selection: Selection, suite: str) -> Path:
    """A golden file `folder`/suite.h5 of the selection's cases."""
    path = folder / "suite.h5"
    generate(path, build_suite(selection), run_meta("test", suite))
    return path


def _reference_rows(gf: GoldenFile, product: str) -> list[ResultRow]:
    """What a perfect implementation would store for every case of one product."""
    impl = ReferenceImpl()
    rows = []
    for entry in gf.index:
        if entry.product != product:
            continue
        case = gf.case(entry.id)
        outcome = impl.run(CallInputs(case, gf.data(entry.id).inputs))
        status = outcome.status if outcome.status is not None else 0
        rows.append(ResultRow(entry.id, status, outcome.output, outcome.time_s))
    return rows


def _cli_run(*args: str) -> tuple[int, str]:
    """Run the aclcheck CLI in-process: (exit code, output); exceptions propagate."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _make(factory: pytest.TempPathFactory, suite: str, selection: Selection) -> Path:
    return write_golden(factory.mktemp(suite), selection, suite)


# -- golden files, one fixture per kind ------------------------------------------------------


@pytest.fixture(scope="session")
def everything_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every product, dtype, format and default family once (valid and invalid calls)."""
    return _make(tmp_path_factory, "everything", Selection(seed=11))


@pytest.fixture(scope="session")
def two_products_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A2 (FP32 accumulation) and training (input-dtype accumulation), every default
    family, every dtype and format."""
    return _make(tmp_path_factory, "two-products",
                 Selection(products=("atlas-a2", "atlas-training"), seed=7))


@pytest.fixture(scope="session")
def two_products_small_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A2 and training, every dtype and format: divisible, nondivisible, invalid calls."""
    return _make(tmp_path_factory, "two-products-small",
                 Selection(products=("atlas-a2", "atlas-training"),
                           families=("divisible", "nondivisible", "invalid"), seed=5))


@pytest.fixture(scope="session")
def a2_fp32_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """25 atlas-a2 float32 cases: 3 divisible, 3 nondivisible, 19 invalid calls."""
    return _make(tmp_path_factory, "a2-fp32",
                 Selection(products=("atlas-a2",), dtypes=("float32",),
                           families=("divisible", "nondivisible", "invalid")))


@pytest.fixture(scope="session")
def a2_fp32_fp16_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """atlas-a2 float32 and float16: divisible, nondivisible and invalid calls."""
    return _make(tmp_path_factory, "a2-fp32-fp16",
                 Selection(products=("atlas-a2",), dtypes=("float32", "float16"),
                           families=("nondivisible", "divisible", "invalid"), seed=3))


@pytest.fixture(scope="session")
def isolation_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A2 float32: 4-D and 3-D valid cases plus invalid calls (some 3-D): kernels in
    tests/impl_fixtures.py misbehave on 3-D inputs only."""
    return _make(tmp_path_factory, "isolation",
                 Selection(products=("atlas-a2",), dtypes=("float32",),
                           families=("divisible", "rank3", "invalid"), seed=3))


@pytest.fixture(scope="session")
def valid_3d_4d_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A2 float32, valid calls only: 4-D divisible and 3-D (rank3) cases (the red-team
    kernels of tests/hostile_modules.py misbehave on one rank and must pass the other)."""
    return _make(tmp_path_factory, "valid-3d-4d",
                 Selection(products=("atlas-a2",), dtypes=("float32",),
                           families=("divisible", "rank3"), seed=5))


@pytest.fixture(scope="session")
def gate_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """atlas-a2, every dtype, the families the CI gate's tests filter on."""
    families = ("divisible", "nondivisible", "upsampling", "global", "layout", "invalid")
    return _make(tmp_path_factory, "gate",
                 Selection(products=("atlas-a2",), families=families, seed=11))


@pytest.fixture(scope="session")
def fuzz_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small float16 file for the fuzz tests: strided layouts and empty tensors."""
    return _make(tmp_path_factory, "fuzz",
                 Selection(products=("atlas-a2",), dtypes=("float16",), formats=("NCHW",),
                           families=("divisible", "layout", "empty"), seed=11))


@pytest.fixture(scope="session")
def hostile_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small float16 file the hostile-file tests copy and damage."""
    return _make(tmp_path_factory, "hostile",
                 Selection(products=("atlas-a2",), dtypes=("float16",), formats=("NCHW",),
                           families=("divisible", "layout"), seed=3))


@pytest.fixture(scope="session")
def rounding_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A2 float16 NCHW: exact rounding ties, index boundaries, plain divisible cases."""
    return _make(tmp_path_factory, "rounding",
                 Selection(products=("atlas-a2",), dtypes=("float16",), formats=("NCHW",),
                           families=("rounding", "index", "divisible")))


# -- helpers, as fixtures ------------------------------------------------------------------


@pytest.fixture(scope="session")
def cli_run() -> Callable[..., tuple[int, str]]:
    """Run the aclcheck CLI in-process: cli_run(*args) -> (exit code, output)."""
    return _cli_run


@pytest.fixture(scope="session")
def reference_rows() -> Callable[[GoldenFile, str], list[ResultRow]]:
    """What a perfect implementation would store for every case of one product."""
    return _reference_rows


@pytest.fixture(name="write_golden", scope="session")
def write_golden_fixture() -> Callable[[Path, Selection, str], Path]:
    """write_golden(folder, selection, suite) -> folder/suite.h5 of the selection's cases."""
    return write_golden


STANDIN_SOURCE = Path(__file__).parent / "aclnn_standin" / "aclnn_standin.c"
STANDIN_PARTS = {"ACL": "libascendcl.so", "NNOPBASE": "libnnopbase.so",
                 "OPAPI": "libopapi.so"}


@pytest.fixture(scope="session")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """libascendcl.so, libnnopbase.so and libopapi.so built from the one stand-in C file,
    once per session for every module (two builds loaded RTLD_GLOBAL in one process would
    bind one build's operator library to the other's error-message store)."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler ('cc' is not on PATH): the aclnn stand-in cannot be built")
    out = tmp_path_factory.mktemp("standin")
    for part, lib in STANDIN_PARTS.items():
        cmd = [cc, "-shared", "-fPIC", "-O2", "-Wall", "-Wl,-z,now", f"-DSTANDIN_{part}",
               "-o", str(out / lib), str(STANDIN_SOURCE), "-lm"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"
    return out
