"""Hostile files (issue "no data loss, no file disclosure, no silent pass"): each finding has
a small file made here with h5py, and the CLI must answer with one line and exit 3 (bad
input) or 2 (bad case file / usage), never a traceback, never a PASS, never a read or a
write outside what the user asked for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest

from aclcheck.store.codec import text_attr
from aclcheck.store.dispatch import open_golden
from aclcheck.store.results import ResultRow, write_results
from aclcheck.suite.selection import Selection
from tests.legacy_writer import write_groups

#: the `cli_run` fixture: run the CLI in-process -> (exit code, output)
CliRun = Callable[..., tuple[int, str]]
#: the `assert_bad_input` fixture
BadInput = Callable[..., str]

SELECTION = Selection(products=("atlas-a2",), dtypes=("float16",), formats=("NCHW",),
                      families=("divisible", "layout"), seed=3)


@pytest.fixture(scope="module")
def pristine(hostile_golden: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hostile file in the group-per-case layout (schema 2): these tests damage its
    groups, datasets and attributes, which the readers of older files must refuse. The
    packed layout's hostile files (schema 3, what aclcheck writes) are in
    tests/test_store_packed.py."""
    path = tmp_path_factory.mktemp("hostile-groups") / "suite.h5"
    with open_golden(hostile_golden) as gf:
        write_groups(path, [(gf.case(cid), gf.data(cid)) for cid in gf.ids()], gf.meta)
    return path


@pytest.fixture
def golden(pristine: Path, tmp_path: Path) -> Path:
    """A fresh copy for the test to damage."""
    return Path(shutil.copy(pristine, tmp_path / "suite.h5"))


def first_case(path: Path) -> str:
    with open_golden(path) as gf:
        return gf.ids()[0]


@pytest.fixture
def assert_bad_input(cli_run: CliRun) -> BadInput:
    """assert_bad_input(path, *args, fragment="", code=3): verify (or the given command)
    exits `code` with one error line naming the file."""
    def check(path: Path, *args: str, fragment: str = "", code: int = 3) -> str:
        argv = list(args) or ["verify", str(path), "--impl", "reference"]
        got, out = cli_run(*argv)
        assert got == code, out
        errors = [line for line in out.splitlines() if line.startswith("aclcheck: error:")]
        assert len(errors) == 1 and str(path) in errors[0], out
        assert fragment in errors[0], out
        assert "Traceback" not in out and "PASS" not in out
        return errors[0]
    return check


def edit(path: Path, fn: Callable[[h5py.File, str], None]) -> str:
    cid = first_case(path)
    with h5py.File(path, "r+") as f:
        fn(f, cid)
    return cid


def replace_dataset(group: h5py.Group, name: str, **create: object) -> h5py.Dataset:
    """Swap a dataset for another made by `create`, keeping its attributes."""
    attrs = dict(group[name].attrs)
    del group[name]
    ds = group.create_dataset(name, **create)
    for key, value in attrs.items():
        ds.attrs[key] = value
    return ds


def set_index(f: h5py.File, column: str, row: int, value: object) -> None:
    arr = f["index"][()]
    if arr.dtype[column].kind == "S":
        raw = str(value).encode()
        width = max(len(raw), arr.dtype[column].itemsize)
        new = np.dtype([(n, f"S{width}" if n == column else arr.dtype[n])
                        for n in arr.dtype.names])
        wider = np.zeros(arr.shape, new)
        for n in arr.dtype.names:
            wider[n] = arr[n]
        arr = wider
        value = raw
    arr[column][row] = value
    del f["index"]
    f.create_dataset("index", data=arr, chunks=True, fletcher32=True)


# -- (1) export never writes outside its folder ---------------------------------------------


@pytest.mark.parametrize("kind", ["relative", "absolute"])
def test_export_of_an_unsafe_id_exits_3_and_touches_nothing(
        assert_bad_input: BadInput, golden: Path, tmp_path: Path,
                                                             kind: str) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    bad_id = "../victim" if kind == "relative" else str(victim)
    target = tmp_path / "out"

    def rename(f: h5py.File, cid: str) -> None:
        set_index(f, "id", 0, bad_id)
        f["cases"][cid].attrs["id"] = text_attr(bad_id)

    edit(golden, rename)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert_bad_input(golden, "export", str(golden), str(target), "--force",
                     fragment="not a plain name")
    assert (victim / "keep.txt").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no target folder either


def test_writer_refuses_unsafe_ids(tmp_path: Path) -> None:
    rows = [ResultRow("../x", 0, None, 0.0)]
    with pytest.raises(Exception, match="not a valid group name"):
        write_results(tmp_path / "r.h5", "x", rows)
    assert list(tmp_path.iterdir()) == []


# -- (2) no file disclosure: external storage, FIFOs ----------------------------------------


def external_golden(f: h5py.File, cid: str, target: Path) -> None:
    group = f["cases"][cid]
    shape, dtype = group["golden"].shape, group["golden"].dtype
    size = int(np.prod(shape)) * dtype.itemsize
    replace_dataset(group, "golden", shape=shape, dtype=dtype,
                    external=[(str(target), 0, size)])


def test_external_storage_is_refused_unread(
        assert_bad_input: BadInput, golden: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"S" * (1 << 16))
    edit(golden, lambda f, cid: external_golden(f, cid, secret))
    assert_bad_input(golden, fragment="external storage")
    out_dir = tmp_path / "xfer"
    assert_bad_input(golden, "export", str(golden), str(out_dir), fragment="external storage")
    assert not any(b"SSSS" in p.read_bytes() for p in out_dir.rglob("*") if p.is_file())
    assert_bad_input(golden, "inspect", str(golden), "--check", fragment="external storage")


@pytest.mark.parametrize("kind", ["external", "soft"])
def test_links_are_not_followed(
        assert_bad_input: BadInput, golden: Path, tmp_path: Path, kind: str) -> None:
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["secret"] = np.arange(10.0)

    def relink(f: h5py.File, cid: str) -> None:
        del f["cases"][cid]["golden"]
        f["cases"][cid]["golden"] = (h5py.ExternalLink(str(other), "/secret")
                                     if kind == "external" else h5py.SoftLink("/index"))

    edit(golden, relink)
    assert_bad_input(golden, fragment="not followed")
    assert_bad_input(golden, "diff", str(golden), str(golden), fragment="not followed")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_external_storage_on_a_fifo_does_not_hang(golden: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    edit(golden, lambda f, cid: external_golden(f, cid, fifo))
    proc = subprocess.run([sys.executable, "-m", "aclcheck", "verify", str(golden), "--impl",
                           "reference", "--isolate"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "external storage" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_place_of_a_file_is_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "suite.h5"
    os.mkfifo(fifo)
    for args in (["verify", str(fifo)], ["inspect", str(fifo)],
                 ["diff", str(fifo), str(fifo)]):
        proc = subprocess.run([sys.executable, "-m", "aclcheck", *args], capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 3 and "regular file" in proc.stderr, (args, proc.stderr)


# -- (3) silent passes ----------------------------------------------------------------------


def drop_golden(f: h5py.File, cid: str) -> None:
    del f["cases"][cid]["golden"]
    f["cases"][cid].attrs["has_golden"] = np.uint8(0)
    set_index(f, "has_golden", 0, 0)
    set_index(f, "nbytes", 0, 0)


def empty_golden(f: h5py.File, cid: str) -> None:
    replace_dataset(f["cases"][cid], "golden", shape=(0,), dtype=np.float64)


def reshape_golden(f: h5py.File, cid: str) -> None:
    data = f["cases"][cid]["golden"][()]
    replace_dataset(f["cases"][cid], "golden", data=data.reshape(-1), chunks=True,
                    fletcher32=True)


def retype_record(f: h5py.File, cid: str) -> None:
    f["cases"][cid].attrs["dtype"] = text_attr("float32")
    set_index(f, "dtype", 0, "float32")


def duplicate_index_row(f: h5py.File, cid: str) -> None:
    arr = f["index"][()]
    arr[1] = arr[0]
    del f["index"]
    f.create_dataset("index", data=arr, chunks=True, fletcher32=True)


def hide_case(f: h5py.File, cid: str) -> None:
    arr = f["index"][()]
    del f["index"]
    f.create_dataset("index", data=arr[1:], chunks=True, fletcher32=True)
    f.attrs["case_count"] = np.int64(len(arr) - 1)


@pytest.mark.parametrize(("damage", "fragment"), [
    (hide_case, "group not listed in /index"),
    (drop_golden, "'golden' is missing"),
    (empty_golden, "shape (0,) != self shape"),
    (reshape_golden, "!= self shape"),
    (retype_record, "dtype attribute 'float16' != record 'float32'"),
    (duplicate_index_row, "listed twice"),
])
def test_verify_detects_what_inspect_check_does(
        assert_bad_input: BadInput, cli_run: CliRun, golden: Path, damage: Callable[..., None],
                                                fragment: str) -> None:
    cid = edit(golden, damage)
    line = assert_bad_input(golden, fragment=fragment)
    assert cid in line
    assert cli_run("inspect", str(golden), "--check")[0] == 3


# -- (5) memory set by the file -------------------------------------------------------------


def huge_golden(f: h5py.File, cid: str) -> None:
    replace_dataset(f["cases"][cid], "golden", shape=(10**12,), dtype=np.float64,
                    chunks=(1 << 17,), fletcher32=True)


def gzip_bomb(f: h5py.File, cid: str) -> None:
    replace_dataset(f["cases"][cid], "golden", data=np.zeros((4096, 4096)), chunks=(256, 4096),
                    compression="gzip", fletcher32=True)


def huge_index(f: h5py.File, cid: str) -> None:
    del f["index"]
    f.create_dataset("index", shape=(10**12,), dtype=[("id", "S8")], chunks=(1024,),
                     fletcher32=True)
    f.attrs["case_count"] = np.int64(10**12)


@pytest.mark.parametrize(("damage", "fragment"), [
    (huge_golden, "read limit"),
    (gzip_bomb, "!= self shape"),
    (huge_index, "read limit"),
])
def test_declared_sizes_are_checked_before_reading(
        assert_bad_input: BadInput, golden: Path, damage: Callable[..., None],
                                                    fragment: str) -> None:
    edit(golden, damage)
    assert_bad_input(golden, fragment=fragment)


def test_read_limit_applies_to_valid_files(
        assert_bad_input: BadInput, golden: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACLCHECK_MAX_READ_MB", "0.0001")
    assert_bad_input(golden, fragment="over the read limit")


def test_generate_refuses_oversized_cases_before_allocating(
        cli_run: CliRun, tmp_path: Path) -> None:
    cases = tmp_path / "big.json"
    cases.write_text(json.dumps([{"product": "atlas-a2", "dtype": "fp32", "format": "NCHW",
                                  "self_shape": [1, 4, 4096, 4096],
                                  "grad_shape": [1, 4, 2, 2]}]))
    out = tmp_path / "big.h5"
    code, text = cli_run("generate", "-o", str(out), "--cases-file", str(cases),
                         "--max-case-mb", "100")
    assert code == 2 and "over the limit of 100 MB" in text and not out.exists()


# -- (7) exit codes: corrupt files 3, pathological case files 2, disk full one line ----------


def string_seed(f: h5py.File, cid: str) -> None:
    f["cases"][cid].attrs["seed"] = text_attr("abc")


def negative_dims(f: h5py.File, cid: str) -> None:
    f["cases"][cid].attrs["self_shape"] = np.array([-1, 2, 3, 4])


def golden_group(f: h5py.File, cid: str) -> None:
    del f["cases"][cid]["golden"]
    f["cases"][cid].create_group("golden")


def scalar_index(f: h5py.File, cid: str) -> None:
    row = f["index"][0]
    del f["index"]
    f.create_dataset("index", data=row)


def unknown_product(f: h5py.File, cid: str) -> None:
    f["cases"][cid].attrs["product"] = text_attr("atlas-z9")
    set_index(f, "product", 0, "atlas-z9")


def text_case_count(f: h5py.File, cid: str) -> None:
    f.attrs["case_count"] = text_attr("many")


@pytest.mark.parametrize("damage", [string_seed, negative_dims, golden_group, scalar_index,
                                    unknown_product, text_case_count, huge_golden])
def test_corrupt_files_exit_3_not_4(
        assert_bad_input: BadInput, cli_run: CliRun, golden: Path,
        damage: Callable[..., None]) -> None:
    edit(golden, damage)
    assert_bad_input(golden)
    code, out = cli_run("inspect", str(golden), "--check")
    assert code == 3 and "internal error" not in out


@pytest.mark.parametrize(("name", "text", "fragment"), [
    ("deep.json", "[" * 50_000 + "]" * 50_000, "nested"),
    ("deep.toml", "a = " + "[" * 5000 + "]" * 5000, "nested"),
    ("dims.json", json.dumps([{"product": "atlas-a2", "dtype": "fp32", "format": "NCHW",
                               "self_shape": [1, 1, 10**30, 1], "grad_shape": [1, 1, 1, 1]}]),
     "over the limit"),
])
def test_pathological_case_files_exit_2(cli_run: CliRun, tmp_path: Path, name: str, text: str,
                                        fragment: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, out = cli_run("generate", "-o", str(tmp_path / "x.h5"), "--cases-file", str(path))
    assert code == 2 and fragment in out and "Traceback" not in out


def test_disk_full_is_one_line(
        cli_run: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aclcheck.store import golden_writer

    def full(*args: object, **kw: object) -> None:
        raise OSError("Can't synchronously write data (file write failed: time = Mon,\n"
                      " filename = 'x', errno = 28, error message = 'No space left on "
                      "device')")

    monkeypatch.setattr(golden_writer.PoolWriter, "_write", full)  # the arrays' pools
    out = tmp_path / "s.h5"
    code, text = cli_run("generate", "-o", str(out), "--family", "divisible",
                         "--product", "atlas-a2", "--dtype", "fp16")
    errors = [line for line in text.splitlines() if "error" in line]
    assert code == 2 and len(errors) == 1 and "No space left on device" in errors[0], text
    assert list(tmp_path.iterdir()) == []  # the temporary file is gone too


# -- results files, reports, manifests: the same rules --------------------------------------


def test_results_file_with_external_output_is_refused(
        assert_bad_input: BadInput, golden: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"S" * 64)
    cid = first_case(golden)
    results = tmp_path / "r.h5"
    write_results(results, "x", [ResultRow(cid, 0, np.ones((2, 2), np.float16), 0.0)])
    with h5py.File(results, "r+") as f:
        replace_dataset(f["results"][cid], "output", shape=(2, 2), dtype=np.float16,
                        external=[(str(secret), 0, 8)])
    assert_bad_input(results, "verify", str(golden), "--results", str(results),
                     fragment="external storage")


def test_results_index_with_a_duplicate_id_is_refused(
        assert_bad_input: BadInput, golden: Path, tmp_path: Path) -> None:
    results = tmp_path / "r.h5"
    write_results(results, "x", [ResultRow("a", 1, None, 0.0), ResultRow("b", 1, None, 0.0)])
    with h5py.File(results, "r+") as f:
        arr = f["index"][()]
        arr[1] = arr[0]
        del f["index"]
        f.create_dataset("index", data=arr, chunks=True, fletcher32=True)
    assert_bad_input(results, "verify", str(golden), "--results", str(results),
                     fragment="listed twice")


def test_deeply_nested_report_exits_3(assert_bad_input: BadInput, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text("[" * 50_000 + "]" * 50_000)
    assert_bad_input(report, "diff", str(report), str(report), fragment="nested")


def test_manifest_and_harness_files_are_checked(
        assert_bad_input: BadInput, cli_run: CliRun, golden: Path, tmp_path: Path) -> None:
    xfer = tmp_path / "xfer"
    assert cli_run("export", str(golden), str(xfer))[0] == 0
    manifest = xfer / "manifest.json"
    data = json.loads(manifest.read_text())
    cid = data["cases"][0]["id"]
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\0" * 10_000)
    (xfer / cid / "out.bin").symlink_to(secret)
    assert_bad_input(xfer / cid / "out.bin", "import", str(xfer), "-o", str(tmp_path / "r.h5"),
                     fragment="not a regular file")
    (xfer / cid / "out.bin").unlink()
    data["cases"][0]["dir"] = "../escape"
    manifest.write_text(json.dumps(data))
    assert_bad_input(manifest, "import", str(xfer), "-o", str(tmp_path / "r.h5"),
                     fragment="plain name")
    manifest.write_text("[" * 50_000 + "]" * 50_000)
    assert_bad_input(manifest, "import", str(xfer), "-o", str(tmp_path / "r.h5"),
                     fragment="nested")


# -- diff: only reports or golden files, of the same golden file ----------------------------


def test_diff_refuses_a_file_that_is_neither_report_nor_golden(
        assert_bad_input: BadInput, golden: Path,
                                                               tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    assert_bad_input(other, "diff", str(other), str(other))
    assert_bad_input(other, "diff", str(golden), str(other), fragment="not a golden file")


def test_diff_of_reports_of_other_golden_files_needs_force(cli_run: CliRun, golden: Path,
                                                           tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert cli_run("verify", str(golden), "--impl", "reference", "--json", str(a))[0] == 0
    data = json.loads(a.read_text())
    data["golden"] = "elsewhere/other-suite.h5"
    b.write_text(json.dumps(data))
    code, out = cli_run("diff", str(a), str(b))
    assert code == 2 and "different golden files" in out and "--force" in out
    code, out = cli_run("diff", str(a), str(b), "--force")
    assert code == 0 and "warning" in out
    data["golden"] = str(tmp_path / "moved" / golden.name)  # same file, other folder
    data["implementation"] = "another"
    b.write_text(json.dumps(data))
    code, out = cli_run("diff", str(a), str(b))
    assert code == 0 and "implementation" in out


def test_export_onto_a_link_replaces_the_link_not_its_target(cli_run: CliRun, golden: Path,
                                                              tmp_path: Path) -> None:
    xfer, elsewhere = tmp_path / "xfer", tmp_path / "elsewhere"
    assert cli_run("export", str(golden), str(xfer))[0] == 0
    cid = first_case(golden)
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("precious")
    shutil.rmtree(xfer / cid)
    (xfer / cid).symlink_to(elsewhere, target_is_directory=True)
    assert cli_run("export", str(golden), str(xfer), "--force")[0] == 0
    assert (elsewhere / "keep.txt").read_text() == "precious"
    assert (xfer / cid).is_dir() and not (xfer / cid).is_symlink()


def test_export_disk_full_is_one_line(cli_run: CliRun, golden: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def full(self: Path, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    code, out = cli_run("export", str(golden), str(tmp_path / "xfer"))
    assert code == 2 and out.count("error") == 1 and "No space left on device" in out


@pytest.mark.parametrize("selection", ['{"shard": "9/x"}', "[" * 5000 + "]" * 5000])
def test_merge_of_a_file_with_a_bad_stored_selection(cli_run: CliRun, golden: Path, tmp_path: Path,
                                                     selection: str) -> None:
    with h5py.File(golden, "r+") as f:
        f.attrs["selection"] = text_attr(selection)
    code, out = cli_run("merge", "-o", str(tmp_path / "m.h5"), str(golden))
    if selection.startswith("{"):
        assert code == 3 and "root attribute 'selection'" in out, out
    else:  # unreadable JSON: no shard, plain concatenation
        assert code == 0, out
