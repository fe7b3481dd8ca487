"""`aclcheck inspect`: listing and filters, one case, --check, --json, damaged files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.cli import inspect as inspect_cli
from aclcheck.store.dispatch import open_golden
from aclcheck.store.results import ResultRow, write_results
from aclcheck.suite.selection import Selection, build_suite

#: the `write_golden` fixture: (folder, selection, suite name) -> the golden file
WriteGolden = Callable[[Path, Selection, str], Path]

SELECTION = Selection(products=("atlas-a2", "atlas-training"), formats=("NCHW",),
                      families=("nondivisible", "special", "layout", "invalid"))


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory, write_golden: WriteGolden) -> Path:
    """The module's own kind (its tests compare listings with SELECTION's cases)."""
    return write_golden(tmp_path_factory.mktemp("inspect"), SELECTION, "inspect-test")


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, ["inspect", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.stdout, res.stderr


def listing(path: Path, *args: str) -> list[dict]:
    code, stdout, stderr = run(str(path), "--json", *args)
    assert code == 0, stderr
    return json.loads(stdout)["cases"]


def test_list_all(suite: Path) -> None:
    code, stdout, _ = run(str(suite))
    assert code == 0
    cases = build_suite(SELECTION)
    assert f"{len(cases)} of {len(cases)} cases" in " ".join(stdout.split())
    assert "inspect-test" in stdout


def test_json_lists_every_case_with_expected_status(suite: Path) -> None:
    rows = listing(suite)
    cases = build_suite(SELECTION)
    assert [r["id"] for r in rows] == [c.id for c in cases]
    for row, case in zip(rows, cases, strict=True):
        assert row["expected_status"] == case.expected_status
        assert row["product"] == case.product and row["dtype"] == case.dtype
        assert row["self_shape"] == list(case.self_shape)


def test_filters(suite: Path) -> None:
    bf16 = listing(suite, "--dtype", "bf16")
    assert bf16 and {r["dtype"] for r in bf16} == {"bfloat16"}
    special = listing(suite, "--family", "special", "--product", "atlas-training")
    assert special and all(r["family"] == "special" and r["product"] == "atlas-training"
                           for r in special)
    strided = listing(suite, "--id", "*-strided")
    assert strided and all(r["layout"] == "strided" for r in strided)
    assert listing(suite, "--format", "ND") == []
    both = listing(suite, "--family", "special", "--family", "layout")
    assert {r["family"] for r in both} == {"special", "layout"}


def test_long_listing_uses_plain_lines(suite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inspect_cli, "RICH_TABLE_MAX_ROWS", 3)
    code, stdout, _ = run(str(suite))
    assert code == 0
    ids = [r["id"] for r in listing(suite)]
    lines = stdout.splitlines()
    assert lines[1].split() == ["id", "family", "expected", "KB"]
    assert [ln.split()[0] for ln in lines[2:-1]] == ids


def test_case_detail(suite: Path) -> None:
    row = next(r for r in listing(suite) if r["dtype"] == "bfloat16" and r["has_golden"])
    code, stdout, _ = run(str(suite), "--case", row["id"])
    assert code == 0
    assert row["id"] in stdout and "golden" in stdout and "seed" in stdout
    code, stdout, _ = run(str(suite), "--case", row["id"], "--json")
    data = json.loads(stdout)
    assert data["record"]["id"] == row["id"]
    assert data["index"]["expected_status"] == 0
    assert data["tensors"]["grad_output"]["dtype"] == "bfloat16"
    assert data["tensors"]["golden"]["shape"] == row["self_shape"]


def test_case_detail_null_pointer(suite: Path) -> None:
    row = next(r for r in listing(suite) if r["null"] == ["grad_output"])
    code, stdout, _ = run(str(suite), "--case", row["id"], "--json")
    data = json.loads(stdout)
    assert data["tensors"]["grad_output"] == {"present": False, "dtype": "null pointer"}
    assert data["tensors"]["golden"]["present"] is False
    assert data["index"]["expected_status"] == 161001


def test_unknown_case_is_usage_error(suite: Path) -> None:
    some = listing(suite)[0]["id"]
    code, _, stderr = run(str(suite), "--case", some[:-1])
    assert code == 2 and "did you mean" in stderr and some in stderr


def test_check_ok(suite: Path) -> None:
    code, stdout, _ = run(str(suite), "--check")
    assert code == 0 and "OK" in stdout and "checksums verified" in stdout
    code, stdout, _ = run(str(suite), "--check", "--json")
    data = json.loads(stdout)
    assert code == 0 and data["ok"] and data["cases"] == len(build_suite(SELECTION))


def _flip(path: Path, dataset: str) -> None:
    with h5py.File(path, "r") as f:
        offset = f[dataset].id.get_chunk_info(0).byte_offset
    with open(path, "r+b") as fh:
        fh.seek(offset + 7)
        b = fh.read(1)[0]
        fh.seek(offset + 7)
        fh.write(bytes([b ^ 1]))


def _make_damage(kind: str, src: Path, dst: Path, victim: str) -> None:
    if kind == "not-hdf5":
        dst.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
        return
    if kind == "truncated":
        dst.write_bytes(src.read_bytes()[:4096])
        return
    if kind == "other-schema":
        with h5py.File(dst, "w") as f:
            f.attrs["format"] = "someone-elses"
        return
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        rows = f["index"][()]
        row = int(np.flatnonzero(rows["id"] == victim.encode())[0])
        if kind == "newer-schema":
            f.attrs["schema_version"] = np.int64(6)  # newer than any schema so far
        elif kind == "missing-data":  # self's slice moved past the end of its pool
            rows["self_start"][row] = 10**12
            del f["index"]
            f.create_dataset("index", data=rows, chunks=True, fletcher32=True)
        pool = f["data/float64"]
        at = int(rows["golden_start"][row])
        chunk, within = divmod(at, pool.chunks[0])
        offset = pool.id.get_chunk_info(chunk).byte_offset + within * 8
    if kind == "flipped-bit":  # a bit of the victim's golden
        with open(dst, "r+b") as fh:
            fh.seek(offset)
            b = fh.read(1)[0]
            fh.seek(offset)
            fh.write(bytes([b ^ 1]))


@pytest.mark.parametrize(("kind", "message", "opens"), [
    ("not-hdf5", "not an HDF5 file", False),
    ("truncated", "truncated HDF5 file", False),
    ("other-schema", "is a 'someone-elses' file, expected 'aclcheck-golden'", False),
    ("newer-schema", "schema version 6 is newer than this aclcheck understands", False),
    ("missing-data", "lie past the end of /data/", True),
    ("flipped-bit", "golden: checksum mismatch (fletcher32)", True),
])
def test_damaged_files_exit_3_with_one_line(tmp_path: Path, suite: Path, kind: str,
                                            message: str, opens: bool) -> None:
    victim = next(r["id"] for r in listing(suite) if r["has_golden"])
    bad = tmp_path / f"{kind}.h5"
    _make_damage(kind, suite, bad, victim)
    modes = [["--check"], ["--case", victim]] if opens else [[], ["--check"], ["--json"]]
    for extra in modes:
        code, stdout, stderr = run(str(bad), *extra)
        assert code == 3, (extra, stdout, stderr)
        assert "Traceback" not in stderr
        first = stderr.splitlines()[0]
        assert first.startswith(f"aclcheck: error: {bad}: ") and message in first, stderr
    if opens:  # listing needs only the index: still works
        assert run(str(bad))[0] == 0
    code, stdout, _ = run(str(bad), "--check", "--json")
    report = json.loads(stdout)
    assert code == 3 and not report["ok"] and message in report["problems"][0]


def test_results_file(tmp_path: Path) -> None:
    rows = [ResultRow("a", 0, np.ones((2, 2), np.float32), 0.5, ""),
            ResultRow("b", 161002, None, 0.0, "no")]
    path = tmp_path / "r.h5"
    write_results(path, "impl-x", rows)
    code, stdout, _ = run(str(path))
    assert code == 0 and "impl-x" in stdout and "161002" in stdout
    code, stdout, _ = run(str(path), "--json")
    assert [r["case_id"] for r in json.loads(stdout)["results"]] == ["a", "b"]
    code, stdout, _ = run(str(path), "--check")
    assert code == 0 and "aclcheck-results" in stdout


def test_check_and_case_are_exclusive(suite: Path) -> None:
    code, _, stderr = run(str(suite), "--check", "--case", "x")
    assert code == 2 and "exclusive" in stderr


def test_unknown_product_filter_is_usage_error(suite: Path) -> None:
    code, _, stderr = run(str(suite), "--product", "atlas-z9")
    assert code == 2 and "unknown product" in stderr


def test_select_normalizes_aliases(suite: Path) -> None:
    with open_golden(suite) as gf:
        rows = inspect_cli.select(gf.index, dtypes=["BF16"], formats=["nchw"])
        assert rows and all(r.dtype == "bfloat16" for r in rows)
