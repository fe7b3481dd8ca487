"""`aclcheck export` / `aclcheck import`: a golden suite as .bin files, a stand-in C++-style
harness that follows only the manifest, and the round trip back into `verify --results`."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from aclcheck.dtypes import FLOAT_FORMATS, correctly_rounded
from aclcheck.judging.case.overflow import OverflowMode, product_modes, saturate
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward
from aclcheck.store.dispatch import open_golden
from aclcheck.store.exchange import raw_bytes
from aclcheck.store.results import read_results

#: the `cli_run` fixture: run the CLI in-process -> (exit code, output)
CliRun = Callable[..., tuple[int, str]]

#: what a harness knows: raw little-endian element types by manifest dtype name
RAW_TYPES = {"float16": "<f2", "float32": "<f4", "float64": "<f8", "bfloat16": "<u2",
             "int8": "<i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "uint8": "<u1",
             "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "bool": "<u1"}


@pytest.fixture
def golden(two_products_golden: Path) -> Path:
    return two_products_golden


def export(cli_run: CliRun, golden: Path, folder: Path, *args: str) -> dict:
    code, out = cli_run("export", str(golden), str(folder), *args)
    assert code == 0, out
    return json.loads((folder / "manifest.json").read_text())


def read_tensor(case_dir: Path, spec: dict) -> np.ndarray:
    """What a C++ harness does: raw storage + shape/strides/offset -> the logical tensor."""
    raw = np.fromfile(case_dir / spec["file"], dtype=RAW_TYPES[spec["dtype"]])
    assert raw.size == spec["storage_size"] and raw.nbytes == spec["bytes"]
    if spec["dtype"] == "bfloat16":
        raw = raw.view(ml_dtypes.bfloat16)
    index = np.full(spec["shape"], spec["offset"], dtype=np.int64)
    for axis, stride in enumerate(spec["strides"]):
        shape = [1] * len(spec["shape"])
        shape[axis] = spec["shape"][axis]
        index = index + np.arange(spec["shape"][axis]).reshape(shape) * stride
    return raw[index] if raw.size else np.zeros(spec["shape"], dtype=raw.dtype)


def harness(folder: Path, wrong_status: str | None = None) -> dict[str, bytes]:
    """A stand-in board harness: follows manifest.json only, computes the backward rounded
    once, writes out.bin (and status.txt where the call must be rejected)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    written: dict[str, bytes] = {}
    for case in manifest["cases"]:
        case_dir = folder / case["dir"]
        status = case["expected_status"]
        if case["id"] == wrong_status:
            status = 0 if status else 161002
        if status not in (0, -1):
            (case_dir / "status.txt").write_text(f"{status}\nEZ1001 rejected by the harness\n")
            continue
        out = case["tensors"]["out"]
        values = np.full(out["shape"], np.nan)
        grad = case["tensors"]["grad_output"]
        if case["expected_status"] == 0 and math.prod(grad["shape"]):
            values = backward(read_tensor(case_dir, grad).astype(np.float64),
                              tuple(out["shape"][-2:]))
        if out["dtype"] in FLOAT_FORMATS:
            with np.errstate(over="ignore"):
                values = correctly_rounded(values, FLOAT_FORMATS[out["dtype"]])
        dtype = ml_dtypes.bfloat16 if out["dtype"] == "bfloat16" else RAW_TYPES[out["dtype"]]
        values = np.asarray(values).astype(dtype)
        if (out["dtype"] in FLOAT_FORMATS
                and product_modes(case["product"])[0] == OverflowMode.SATURATION):
            values = saturate(values, FLOAT_FORMATS[out["dtype"]])  # the board's mode
        data = values.tobytes()
        (case_dir / "out.bin").write_bytes(data)
        written[case["id"]] = data
    return written


def test_export_writes_storage_bits_goldens_and_a_complete_manifest(cli_run: CliRun, golden: Path,
                                                                     tmp_path: Path) -> None:
    manifest = export(cli_run, golden, tmp_path / "x")
    gf = open_golden(golden)
    assert manifest["format"] == "aclcheck-bin-exchange" and manifest["byte_order"] == "little"
    assert [c["id"] for c in manifest["cases"]] == gf.ids()
    layouts = set()
    for case in manifest["cases"]:
        case_dir = tmp_path / "x" / case["dir"]
        grad, self_ = gf.inputs(case["id"])
        for name, tensor in (("grad_output", grad), ("self", self_)):
            spec = case["tensors"][name]
            if tensor is None:
                assert spec is None and name in case["null"]
                assert not (case_dir / f"{name}.bin").exists()
                continue
            assert (case_dir / spec["file"]).read_bytes() == raw_bytes(tensor.storage)
            assert (spec["shape"], spec["strides"], spec["offset"]) == (
                list(tensor.shape), list(tensor.strides), tensor.offset)
            assert np.array_equal(read_tensor(case_dir, spec).view(np.uint8),
                                  np.ascontiguousarray(tensor.view()).view(np.uint8))
            layouts.add(case["layout"])
        golden_values = gf.golden(case["id"])
        if golden_values is None:
            assert case["golden"] is None and case["expected_status"] != 0
        else:
            stored = np.fromfile(case_dir / "golden.bin", dtype="<f8").reshape(
                case["golden"]["shape"])
            assert stored.tobytes() == golden_values.tobytes()
    assert layouts == {"contiguous", "channels_last", "strided", "transposed"}
    bf16 = next(c for c in manifest["cases"] if c["dtype"] == "bfloat16" and not c["null"])
    assert bf16["tensors"]["self"]["acl_dtype"] == 27
    assert bf16["tensors"]["self"]["element_size"] == 2


@pytest.mark.slow  # heavy: runs in .ci/run's slow step (pytest -m slow)
def test_round_trip_is_bit_exact_for_every_dtype_and_verifies(cli_run: CliRun, golden: Path,
                                                             tmp_path: Path) -> None:
    folder = tmp_path / "x"
    export(cli_run, golden, folder)
    written = harness(folder)
    code, out = cli_run("import", str(folder), "-o", str(tmp_path / "board.h5"))
    assert code == 0, out
    rows = read_results(tmp_path / "board.h5")
    dtypes = set()
    for case_id, data in written.items():
        output = rows[case_id].output
        assert output is not None and rows[case_id].status == 0
        assert np.ascontiguousarray(output).tobytes() == data  # bit-exact
        dtypes.add(str(output.dtype))
    assert {"float16", "float32", "bfloat16"} <= dtypes
    rejected = [r for r in rows.values() if r.status != 0]
    assert rejected and all(r.output is None and "EZ1001" in r.message for r in rejected)
    code, out = cli_run("verify", str(golden), "--results", str(tmp_path / "board.h5"))
    assert code == 0, out


def test_wrong_statuses_and_missing_answers_reach_the_verdicts(cli_run: CliRun, golden: Path,
                                                             tmp_path: Path) -> None:
    folder = tmp_path / "x"
    manifest = export(cli_run, golden, folder, "--product", "atlas-a2")
    assert {c["product"] for c in manifest["cases"]} == {"atlas-a2"}
    null_case = next(c["id"] for c in manifest["cases"] if c["null"])
    harness(folder, wrong_status=null_case)
    missing = next(c["id"] for c in manifest["cases"] if c["family"] == "global")
    (folder / missing / "out.bin").unlink()
    code, out = cli_run("import", str(folder), "-o", str(tmp_path / "r.h5"))
    assert code == 0 and missing in out
    code, out = cli_run("verify", str(golden), "--results", str(tmp_path / "r.h5"),
                        "--product", "atlas-a2", "--json", str(tmp_path / "r.json"))
    assert code == 1
    verdicts = {v["id"]: v for v in json.loads((tmp_path / "r.json").read_text())["cases"]}
    assert verdicts[null_case]["verdict"] == "WRONG_STATUS"
    assert verdicts[missing]["verdict"] == "ERROR" and "no result" in verdicts[missing][
        "message"]
    assert sum(v["verdict"] not in ("PASS", "MISTRUSTED") for v in verdicts.values()) == 2


def test_bad_files_are_one_line_errors_naming_the_file(
        cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    folder = tmp_path / "x"
    manifest = export(cli_run, golden, folder, "--family", "global", "--product", "atlas-training")
    harness(folder)
    first = manifest["cases"][0]
    out_bin = folder / first["dir"] / "out.bin"
    out_bin.write_bytes(out_bin.read_bytes()[:-1])
    code, out = cli_run("import", str(folder), "-o", str(tmp_path / "r.h5"))
    assert code == 3 and str(out_bin) in out and "bytes, expected" in out
    assert len(out.strip().splitlines()) == 1
    out_bin.unlink()
    (folder / first["dir"] / "status.txt").write_text("ok\n")
    code, out = cli_run("import", str(folder), "-o", str(tmp_path / "r.h5"))
    assert code == 3 and "status.txt" in out and "integer" in out
    (folder / "manifest.json").write_text("{not json")
    code, out = cli_run("import", str(folder), "-o", str(tmp_path / "r.h5"))
    assert code == 3 and "manifest.json" in out and "Traceback" not in out
    (folder / "manifest.json").write_text(json.dumps(
        {"format": "aclcheck-bin-exchange", "schema_version": 1,
         "cases": [{"id": "../etc", "dir": "../etc", "tensors": {"out": None}}]}))
    code, out = cli_run("import", str(folder), "-o", str(tmp_path / "r.h5"))
    assert code == 3 and "plain name" in out
    code, out = cli_run("import", str(tmp_path / "nothing"), "-o", str(tmp_path / "r.h5"))
    assert code == 3
    assert not (tmp_path / "r.h5").exists()


def test_export_refuses_a_used_folder_unless_forced(
        cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    folder = tmp_path / "x"
    manifest = export(cli_run, golden, folder, "--family", "global", "--product", "atlas-a2")
    harness(folder)
    code, out = cli_run("export", str(golden), str(folder), "--family", "global")
    assert code == 2 and "--force" in out
    export(cli_run, golden, folder, "--family", "global", "--product", "atlas-a2", "--force")
    assert not any((folder / c["dir"] / "out.bin").exists() for c in manifest["cases"])
    code, out = cli_run("export", str(golden), str(tmp_path / "y"), "--id", "nothing*")
    assert code == 2 and "no case matches" in out
