"""The max-pooling operator through the adapters with no max-pool code in them: `--impl
aclnn` over ctypes against the stand-in's prototype (docs/contract-maxpool.md §9), and the
framework adapters against their known-difference lists on a small selection."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from tests.test_op_3d_adapters import clean_env, verify  # noqa: F401 - clean_env: autouse

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
SELECT = ("--op", "ampool2d-bwd", "--product", "atlas-a2", "--product", "atlas-training",
          "--dtype", "float16", "--dtype", "float32", "--family", "shared", "--family",
          "widesums", "--family", "layout", "--family", "badindex", "--family", "empty",
          "--family", "invalid", "--seed", "3")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mp") / "suite.h5"
    result = CliRunner().invoke(cli, ["generate", "-o", str(path), *SELECT])
    assert result.exit_code == 0, result.output
    return path


def test_the_standin_prototype_passes_every_a2_case(suite: Path, standin: Path) -> None:
    code, out, cases = verify(suite, "--impl", "aclnn", "--aclnn-lib-dir", str(standin),
                              env={"ACLCHECK_STANDIN_SOC": "Ascend910B1"})
    assert code == 0, out
    mine = [c for c in cases if c["product"] == "atlas-a2"]
    assert mine and all(c["verdict"] == "PASS" for c in mine)
    # invalid indices: made (in a worker), reported, never judged
    bad = [c for c in mine if c["family"] == "badindex"]
    assert bad and all(c["expected_status"] == -1 and c["actual_status"] == 0 for c in bad)
    # an empty call succeeds unwritten
    assert any(c["family"] == "empty" and c["actual_status"] == 0 for c in mine)


def test_the_standin_on_a_product_without_the_operator(suite: Path, standin: Path) -> None:
    code, out, cases = verify(suite, "--impl", "aclnn", "--aclnn-lib-dir", str(standin),
                              "--product", "atlas-training",
                              env={"ACLCHECK_STANDIN_SOC": "Ascend910A"})
    assert code == 0, out
    assert cases and all(c["actual_status"] == 161002 for c in cases
                         if c["verdict"] == "PASS" and c["expected_status"] == 161002)


@pytest.mark.parametrize(("bug", "family"), [("narrow_accumulate", "widesums"),
                                             ("ignore_strides", "layout")])
def test_the_standin_bugs_are_caught(suite: Path, standin: Path, bug: str,
                                     family: str) -> None:
    env = {"ACLCHECK_STANDIN_SOC": "Ascend910B1", "ACLCHECK_STANDIN_BUG": bug}
    code, out, cases = verify(suite, "--impl", "aclnn", "--aclnn-lib-dir", str(standin),
                              "--family", family, "--product", "atlas-a2", env=env)
    assert code == 1, out
    assert any(c["verdict"] == "FAIL" for c in cases)


@pytest.mark.parametrize("fw", ["torch", "mindspore", "paddle"])
def test_each_framework_passes_its_known_difference_list(suite: Path, fw: str) -> None:
    pytest.importorskip({"torch": "torch", "mindspore": "mindspore",
                         "paddle": "paddle"}[fw])
    # the valid and worker-only families: the invalid calls (Paddle hangs on some until
    # the timeout) are the CI gate's, on golden/ci-suite-maxpool.h5
    valid = [a for f in ("shared", "widesums", "layout", "badindex", "empty")
             for a in ("--family", f)]
    code, out, cases = verify(suite, "--impl", fw, "--timeout", "10", *valid, "--xfail",
                              str(GOLDEN / f"{fw}-cpu-maxpool.xfail.toml"))
    assert code == 0, out
    assert any(c["verdict"] == "PASS" for c in cases)


def test_a_board_round_trip_carries_the_indices_and_judges_invalid_ones(
        suite: Path, tmp_path: Path) -> None:
    """export -> a harness that reads only the manifest (indices.bin included) and
    scatters in FLOAT32 -> import -> verify --results: every case passes, and the
    invalid-index calls the board made are reported (not skipped: no call of aclcheck's)."""
    import ml_dtypes
    import numpy as np

    from aclcheck.dtypes import FLOAT_FORMATS, correctly_rounded
    from tests.test_exchange import read_tensor

    folder = tmp_path / "x"
    run = CliRunner().invoke(cli, ["export", str(suite), str(folder), "--product",
                                   "atlas-a2"])
    assert run.exit_code == 0, run.output
    manifest = json.loads((folder / "manifest.json").read_text())
    for case in manifest["cases"]:
        case_dir, t = folder / case["dir"], case["tensors"]
        if case["expected_status"] not in (0, -1):
            (case_dir / "status.txt").write_text(f"{case['expected_status']}\nrejected\n")
            continue
        out = t["out"]
        h, w = out["shape"][-2:]
        values = np.zeros(out["shape"])
        if math.prod(t["grad_output"]["shape"]) and math.prod(out["shape"]):
            g = read_tensor(case_dir, t["grad_output"]).astype(np.float64)
            idx = read_tensor(case_dir, t["indices"]).astype(np.int64)
            planes = values.reshape(-1, h * w)
            for p, (gp, ip) in enumerate(zip(g.reshape(len(planes), -1),
                                             idx.reshape(len(planes), -1), strict=True)):
                keep = (ip >= 0) & (ip < h * w)  # a vector kernel drops the others
                np.add.at(planes[p], ip[keep], gp[keep])
        values = correctly_rounded(values, FLOAT_FORMATS[out["dtype"]])
        dtype = ml_dtypes.bfloat16 if out["dtype"] == "bfloat16" else np.dtype(out["dtype"])
        (case_dir / "out.bin").write_bytes(values.astype(dtype).tobytes())
    board = tmp_path / "board.h5"
    run = CliRunner().invoke(cli, ["import", str(folder), "-o", str(board)])
    assert run.exit_code == 0, run.output
    code, out, cases = verify(suite, "--results", str(board), "--product", "atlas-a2")
    assert code == 0, out
    bad = [c for c in cases if c["family"] == "badindex"]
    assert bad and all(c["verdict"] == "PASS" and "unspecified" in c["message"] for c in bad)
    assert any(c["family"] == "shared" and c["verdict"] == "PASS" for c in cases)
