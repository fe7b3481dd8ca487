"""The 3D operator through the rest of the commands, with no 3D code in them: shrink and
hunt (over D, H, W; the repro line names the operator, since a case file does not),
export/import with a stand-in board harness, diff, shards and merge, xfail lists and the
pytest plugin. Broken 3D kernels (tests/kernels3d.py) are what they find."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.dtypes import FLOAT_FORMATS, correctly_rounded
from aclcheck.ops.adaptive_avg_pool3d_backward.reference import backward
from aclcheck.store.diff import diff_golden
from aclcheck.suite.casefile import load_case_file
from tests.test_exchange import RAW_TYPES, read_tensor

pytest_plugins = ["pytester"]

OP = "adaptive_avg_pool3d_backward"
SELECT = ("--op", "aapool3d-bwd", "--product", "atlas-a2", "--dtype", "float16",
          "--family", "nondivisible", "--family", "global", "--family", "invalid",
          "--count", "2", "--seed", "4")
NUMERIC = ("--family", "!invalid")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def suite3d(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("s3") / "suite.h5"
    code, out = run("generate", "-o", str(path), *SELECT)
    assert code == 0, out
    return path


def first_failure(tmp_path: Path, suite: Path, impl: str) -> str:
    report = tmp_path / "r.json"
    code, out = run("verify", str(suite), "--impl", impl, "--json", str(report), *NUMERIC)
    assert code == 1, out
    return next(c["id"] for c in json.loads(report.read_text())["cases"]
                if c["verdict"] == "FAIL")


def repro(out: str) -> list[str]:
    """The generate half of the printed repro line."""
    line = next(x for x in out.splitlines() if x.startswith("repro: "))
    return shlex.split(line.removeprefix("repro: ").split(" && ")[0])[1:]


def test_shrink_walks_d_and_its_repro_names_the_operator(tmp_path: Path,
                                                         suite3d: Path) -> None:
    case_id = first_failure(tmp_path, suite3d, "tests.kernels3d:forgets_kd")
    cases = tmp_path / "min.toml"
    code, out = run("shrink", str(suite3d), "--impl", "tests.kernels3d:forgets_kd",
                    "--id", case_id, "--append", str(cases))
    assert code == 1, out
    (minimal,) = load_case_file(cases, op=OP).cases
    assert minimal.OPERATOR == OP and len(minimal.self_shape) in (4, 5)
    # the bug needs a D window of more than one element, and nothing else
    assert minimal.self_shape[-3] > 1 and math.prod(minimal.self_shape[-2:]) == 1, minimal
    args = repro(out)
    assert args[args.index("--op") + 1] == OP
    code, out = run(*args)
    assert code == 0, out
    code, out = run("verify", str(tmp_path / "min.h5"), "--impl",
                    "tests.kernels3d:forgets_kd")
    assert code == 1 and "failed: 1" in out, out


def test_hunt_finds_shrinks_and_writes_3d_cases(tmp_path: Path) -> None:
    folder = tmp_path / "found"
    code, out = run("hunt", "--op", "aapool3d-bwd", "--impl", "tests.kernels3d:forgets_kd",
                    "--product", "atlas-a2", "--seed", "1", "--max-time", "60",
                    "--failures", "1", "-o", str(folder))
    assert code == 1, out
    (case,) = load_case_file(folder / "cases.toml", op=OP).cases
    assert case.OPERATOR == OP and case.self_shape[-3] > 1
    args = repro(out)
    assert args[args.index("--op") + 1] == OP


def harness(folder: Path) -> int:
    """A stand-in board: follows manifest.json only, writes the 3D backward rounded once
    (out.bin) or the expected rejection (status.txt)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    for case in manifest["cases"]:
        case_dir = folder / case["dir"]
        out, grad = case["tensors"]["out"], case["tensors"]["grad_output"]
        if case["expected_status"] not in (0, -1) or out["dtype"] not in FLOAT_FORMATS:
            status = case["expected_status"] if case["expected_status"] != -1 else 161002
            (case_dir / "status.txt").write_text(f"{status}\nrejected\n")
            continue
        values = backward(read_tensor(case_dir, grad).astype(np.float64),
                          tuple(out["shape"][-3:]))
        values = correctly_rounded(values, FLOAT_FORMATS[out["dtype"]])
        dtype = ml_dtypes.bfloat16 if out["dtype"] == "bfloat16" else RAW_TYPES[out["dtype"]]
        (case_dir / "out.bin").write_bytes(values.astype(dtype).tobytes())
    return len(manifest["cases"])


def test_export_import_round_trip_verifies(tmp_path: Path, suite3d: Path) -> None:
    folder = tmp_path / "xfer"
    code, out = run("export", str(suite3d), str(folder))
    assert code == 0, out
    assert harness(folder) > 0
    code, out = run("import", str(folder), "-o", str(tmp_path / "board.h5"))
    assert code == 0, out
    code, out = run("verify", str(suite3d), "--results", str(tmp_path / "board.h5"))
    assert code == 0, out


def test_shards_merge_into_the_whole_and_operators_do_not_mix(tmp_path: Path,
                                                               suite3d: Path) -> None:
    parts = [tmp_path / f"s{k}.h5" for k in (1, 2)]
    for k, part in enumerate(parts, 1):
        code, out = run("generate", "-o", str(part), *SELECT, "--shard", f"{k}/2")
        assert code == 0, out
    code, out = run("merge", "-o", str(tmp_path / "all.h5"), *map(str, parts))
    assert code == 0, out
    assert diff_golden(suite3d, tmp_path / "all.h5") == []
    code, out = run("generate", "-o", str(tmp_path / "2d.h5"), "--product", "atlas-a2",
                    "--dtype", "float16", "--family", "global")
    assert code == 0, out
    code, out = run("merge", "-o", str(tmp_path / "mixed.h5"), str(parts[0]),
                    str(tmp_path / "2d.h5"))
    assert code == 2 and "one operator" in out, out
    assert any("operator" in d for d in diff_golden(parts[0], tmp_path / "2d.h5"))


def test_an_xfail_list_explains_a_known_3d_failure(tmp_path: Path, suite3d: Path) -> None:
    known = tmp_path / "known.toml"
    known.write_text('[[xfail]]\nid = "a2-fp16-*-nondiv*"\nreason = "forgets kd"\n'
                     'verdicts = ["FAIL"]\nmay_pass = true\n')
    args = ("verify", str(suite3d), "--impl", "tests.kernels3d:forgets_kd",
            "--family", "nondivisible")
    assert run(*args)[0] == 1
    code, out = run(*args, "--xfail", str(known))
    assert code == 0 and "xfailed" in out, out


def test_the_pytest_plugin_runs_a_3d_golden(pytester: pytest.Pytester,
                                            suite3d: Path) -> None:
    opts = (f"--aclcheck-golden={suite3d}", "-p", "no:cacheprovider", "-p", "no:benchmark")
    result = pytester.runpytest(*opts, "--aclcheck-impl", "reference")
    assert result.ret == pytest.ExitCode.OK
    pytester.makepyfile(zeros_kernel="import numpy as np\n\n"
                        "def zeros(grad_output, self):\n"
                        "    return np.zeros(self.shape, dtype=self.dtype)\n")
    pytester.syspathinsert()
    result = pytester.runpytest(*opts, "--aclcheck-impl", "zeros_kernel:zeros", "-k",
                                "nondiv")
    outcomes = result.parseoutcomes()
    assert result.ret == pytest.ExitCode.TESTS_FAILED and outcomes.get("failed", 0) >= 1
