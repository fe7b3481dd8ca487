"""The HDF5 store: bit-exact round trips, layouts, results, atomicity, damage detection."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import ml_dtypes
import numpy as np
import pytest

from aclcheck.cases.layouts import LAYOUTS
from aclcheck.errors import InputFileError, OutputFileError, UsageError
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.ops.materialize import make_tensors
from aclcheck.store import golden_writer
from aclcheck.store.atomic import check_output_path
from aclcheck.store.codec import CHUNK_BYTES, FORMAT_GOLDEN, SCHEMA_VERSION, chunk_shape, run_meta
from aclcheck.store.diff import diff_golden
from aclcheck.store.dispatch import GoldenFile, check_file, check_golden, open_golden
from aclcheck.store.golden_writer import write_golden
from aclcheck.store.results import ResultRow, read_results, results_meta, write_results
from aclcheck.suite.selection import Selection, build_suite
from tests.legacy_writer import write_groups

# -- helpers ------------------------------------------------------------------------------


def _case(cid: str, dtype: str, **kw: object) -> Case:
    fields: dict[str, object] = dict(
        family="t", product="atlas-a2", format="NCHW", self_shape=(2, 3, 9, 7),
        grad_shape=(2, 3, 4, 5), seed=1234, distribution="special")
    fields.update(kw)
    return Case(id=cid, dtype=dtype, **fields)  # type: ignore[arg-type]


def _write(path: Path, cases: list[Case], **kw: object) -> None:
    write_golden(path, ((c, make_tensors(c)) for c in cases),
                 run_meta("test", "t"), **kw)  # type: ignore[arg-type]


def _write_groups(path: Path, cases: list[Case], **kw: object) -> None:
    """A schema-2 file (a group per case): for the tests of that layout, which the readers
    still accept (the packed layout's own tests are tests/test_store_packed.py)."""
    write_groups(path, ((c, make_tensors(c)) for c in cases),
                 run_meta("test", "t"), **kw)  # type: ignore[arg-type]


def _assert_same_tensors(gf: GoldenFile, case: Case) -> None:
    want = make_tensors(case)
    got_grad, got_self = gf.inputs(case.id)
    for got, exp in ((got_grad, want.grad_output), (got_self, want.self)):
        if exp is None:
            assert got is None
            continue
        assert got is not None
        assert got.dtype == exp.dtype
        assert (got.shape, got.strides, got.offset) == (exp.shape, exp.strides, exp.offset)
        assert got.storage.tobytes() == exp.storage.tobytes()
        assert got.view().tobytes() == exp.view().tobytes()
    golden = gf.golden(case.id)
    if want.golden is None:
        assert golden is None
    else:
        assert golden is not None and golden.dtype == np.float64
        assert golden.tobytes() == want.golden.tobytes()


def _flip_bit(path: Path, dataset: str, byte: int = 5) -> None:
    with h5py.File(path, "r") as f:
        ds = f[dataset]
        offset = ds.id.get_chunk_info(0).byte_offset if ds.chunks else ds.id.get_offset()
    with open(path, "r+b") as fh:
        fh.seek(offset + byte)
        b = fh.read(1)[0]
        fh.seek(offset + byte)
        fh.write(bytes([b ^ 0x10]))


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Case]]:
    cases = build_suite(Selection(products=("atlas-a2",), formats=("NCHW", "NCL"),
                                  families=("nondivisible", "layout", "empty", "special",
                                            "invalid")))
    path = tmp_path_factory.mktemp("store") / "small.h5"
    _write_groups(path, cases)
    return path, cases


# -- round trips --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16"])
@pytest.mark.parametrize("dist", ["special", "normal", "subnormal", "nan-fill"])
def test_roundtrip_compute_dtypes_bit_exact(tmp_path: Path, dtype: str, dist: str) -> None:
    case = _case(f"c-{dtype}-{dist}", dtype, distribution=dist)
    _write_groups(tmp_path / "f.h5", [case])
    with open_golden(tmp_path / "f.h5") as gf:
        assert gf.case(case.id) == case
        _assert_same_tensors(gf, case)
        grad, _ = gf.inputs(case.id)
        assert grad is not None
        if dtype == "bfloat16":
            assert grad.dtype == np.dtype(ml_dtypes.bfloat16)
        ds = gf._f[f"cases/{case.id}/grad_output"]
        assert ds.attrs["dtype"] == dtype.encode()
        assert ds.dtype == (np.uint16 if dtype == "bfloat16" else np.dtype(dtype))
        assert ds.fletcher32


@pytest.mark.parametrize("dtype", ["float64", "int32", "int8", "uint16", "uint64", "bool"])
def test_roundtrip_invalid_call_dtypes_stored_natively(tmp_path: Path, dtype: str) -> None:
    case = _case(f"c-{dtype}", dtype, distribution="uniform")
    assert not case.positive
    _write_groups(tmp_path / "f.h5", [case])
    with open_golden(tmp_path / "f.h5") as gf:
        _assert_same_tensors(gf, case)
        assert "golden" not in gf._f[f"cases/{case.id}"]
        assert gf.index[0].expected_status == case.expected_status
        assert not gf.index[0].has_golden


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_roundtrip_layouts(tmp_path: Path, layout: str, dtype: str) -> None:
    case = _case(f"c-{layout}", dtype, layout=layout, distribution="normal")
    _write_groups(tmp_path / "f.h5", [case])
    with open_golden(tmp_path / "f.h5") as gf:
        _assert_same_tensors(gf, case)
        ds = gf._f[f"cases/{case.id}/self"]
        want = make_tensors(case).self
        assert want is not None
        if layout == "contiguous":
            assert ds.shape == case.self_shape  # readable as the tensor itself
        else:
            assert ds.shape == (want.storage.size,)
            assert list(ds.attrs["strides"]) == list(want.strides)
            assert int(ds.attrs["offset"]) == want.offset


@pytest.mark.parametrize("layout", ["contiguous", "strided", "channels_last"])
@pytest.mark.parametrize(("self_shape", "grad_shape"), [
    ((0, 3, 5, 4), (0, 3, 2, 2)), ((2, 3, 5, 4), (2, 3, 0, 2)), ((2, 0, 5, 4), (2, 0, 3, 3)),
])
def test_roundtrip_empty_tensors(tmp_path: Path, layout: str, self_shape: tuple[int, ...],
                                 grad_shape: tuple[int, ...]) -> None:
    case = _case("empty", "float16", self_shape=self_shape, grad_shape=grad_shape,
                 layout=layout, distribution="normal")
    _write_groups(tmp_path / "f.h5", [case])
    with open_golden(tmp_path / "f.h5") as gf:
        _assert_same_tensors(gf, case)
        assert gf._f["cases/empty/grad_output"].chunks is None  # contiguous, no filter
    assert check_golden(tmp_path / "f.h5").ok


def test_suite_roundtrip_records_index_and_nulls(small_suite: tuple[Path, list[Case]]) -> None:
    path, cases = small_suite
    with open_golden(path) as gf:
        assert gf.ids() == [c.id for c in cases]
        assert gf.meta["format"] == FORMAT_GOLDEN
        assert gf.meta["schema_version"] == 2
        assert gf.meta["case_count"] == len(cases)
        for case, entry in zip(cases, gf.index, strict=True):
            assert gf.case(case.id) == case
            assert (entry.product, entry.dtype, entry.format, entry.family) == (
                case.product, case.dtype, case.format, case.family)
            assert entry.self_shape == case.self_shape
            assert entry.expected_status == case.expected_status
            assert entry.null == case.null
            _assert_same_tensors(gf, case)
        nulls = [c for c in cases if c.null]
        assert nulls, "the invalid family should pass null pointers"
        for case in nulls:
            group = gf._f[f"cases/{case.id}"]
            for name in case.null:
                assert name not in group
            assert "out_shape" not in group.attrs or case.out_shape is not None


def test_check_reads_every_dataset(small_suite: tuple[Path, list[Case]]) -> None:
    path, cases = small_suite
    report = check_file(path)
    assert report.ok, report.problems
    assert report.cases == len(cases)
    n = sum(len({"grad_output", "self"} - set(c.null)) for c in cases)
    n += sum(1 for c in cases if make_tensors(c).golden is not None)
    assert report.datasets == n


def test_gzip_option_same_data(tmp_path: Path, small_suite: tuple[Path, list[Case]]) -> None:
    path, cases = small_suite
    _write_groups(tmp_path / "z.h5", cases, compress="gzip")
    with h5py.File(tmp_path / "z.h5") as f:
        ds = f[f"cases/{cases[0].id}/golden"]
        assert ds.compression == "gzip" and ds.fletcher32
    assert diff_golden(path, tmp_path / "z.h5") == []


def test_chunk_shape() -> None:
    assert chunk_shape((2, 3, 4), 4) == (2, 3, 4)
    assert chunk_shape((0, 3), 4) is None
    big = chunk_shape((8, 64, 256, 256), 4)
    assert big is not None
    assert np.prod(big) * 4 <= CHUNK_BYTES
    assert np.prod(big) * 4 >= CHUNK_BYTES // 2
    assert chunk_shape((1, 1, 3, 10**7), 8) == (1, 1, 1, CHUNK_BYTES // 8)


def test_diff_golden_detects_a_changed_value(tmp_path: Path,
                                             small_suite: tuple[Path, list[Case]]) -> None:
    path, cases = small_suite
    copy = tmp_path / "copy.h5"
    shutil.copy(path, copy)
    assert diff_golden(path, copy) == []
    with h5py.File(copy, "r+") as f:
        f.attrs["created"] = "another time"  # volatile: ignored
        ds = f[f"cases/{cases[0].id}/golden"]
        data = ds[()]
        data.flat[0] += 1.0
        ds[...] = data
    diffs = diff_golden(path, copy)
    assert diffs == [f"case {cases[0].id}: golden: data differs"]


def test_bad_case_id_and_duplicates(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a valid group name"):
        _write(tmp_path / "f.h5", [_case("a/b", "float16")])
    with pytest.raises(UsageError, match="duplicate"):
        _write(tmp_path / "f.h5", [_case("a", "float16"), _case("a", "float32")])
    assert list(tmp_path.iterdir()) == []  # no temp file left, nothing written


# -- results ------------------------------------------------------------------------------


def test_results_roundtrip(tmp_path: Path) -> None:
    bf = np.array([[1.5, -np.inf], [np.nan, 3e-40]], dtype=ml_dtypes.bfloat16)
    rows = [
        ResultRow("a", 0, bf, 0.001, ""),
        ResultRow("b", 0, np.arange(6, dtype=np.float16).reshape(2, 3), 2.5),
        ResultRow("c", 161002, None, 0.0, "rejected: dtype"),
    ]
    size = write_results(tmp_path / "r.h5", "test-impl", rows)
    assert size == (tmp_path / "r.h5").stat().st_size
    got = read_results(tmp_path / "r.h5")
    assert list(got) == ["a", "b", "c"]
    assert got["a"].output is not None and got["a"].output.dtype == bf.dtype
    assert got["a"].output.tobytes() == bf.tobytes()
    assert got["b"].output is not None and got["b"].output.tobytes() == rows[1].output.tobytes()
    assert got["c"] == rows[2]
    assert results_meta(tmp_path / "r.h5")["implementation"] == "test-impl"
    assert check_file(tmp_path / "r.h5").ok
    _flip_bit(tmp_path / "r.h5", "results/b/output", 2)
    report = check_file(tmp_path / "r.h5")
    assert not report.ok and "checksum mismatch" in report.problems[0]
    with pytest.raises(InputFileError, match="result b"):
        read_results(tmp_path / "r.h5")
    with pytest.raises(InputFileError, match="expected 'aclcheck-golden'"):
        open_golden(tmp_path / "r.h5")


# -- atomic writing -----------------------------------------------------------------------


def test_error_mid_write_keeps_previous_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "g.h5"
    good = [_case("one", "float16")]
    _write(path, good)
    before = path.read_bytes()

    def items():
        yield good[0], make_tensors(good[0])
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_golden(path, items(), force=True)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.h5"]


def test_output_path_errors(tmp_path: Path) -> None:
    with pytest.raises(OutputFileError, match="does not exist"):
        check_output_path(tmp_path / "missing" / "x.h5", force=False)
    (tmp_path / "x.h5").write_bytes(b"keep")
    with pytest.raises(OutputFileError, match="use --force"):
        check_output_path(tmp_path / "x.h5", force=False)
    with pytest.raises(OutputFileError, match="is a folder"):
        check_output_path(tmp_path, force=True)
    assert (tmp_path / "x.h5").read_bytes() == b"keep"


_KILL_CHILD = textwrap.dedent("""
    import sys, time
    from aclcheck.store.codec import run_meta
    from aclcheck.suite import generate
    from aclcheck.suite.selection import Selection, build_suite
    cases = build_suite(Selection(products=("atlas-a2",), families=("nondivisible",)))
    def progress(done, total, case):
        if done == 3:
            print("READY", flush=True)
            time.sleep(120)
    generate.generate(sys.argv[1], cases, run_meta(), force=True, progress=progress)
""")


@pytest.mark.parametrize("previous", [True, False])
def test_sigkill_during_write(tmp_path: Path, previous: bool) -> None:
    path = tmp_path / "g.h5"
    if previous:
        _write(path, [_case("old", "float32")])
    before = path.read_bytes() if previous else None
    child = subprocess.Popen([sys.executable, "-c", _KILL_CHILD, str(path)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "READY"
        temps = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp.h5")]
        assert len(temps) == 1 and temps[0].stat().st_size > 0  # mid-write, in the folder
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    if previous:
        assert path.read_bytes() == before
        with open_golden(path) as gf:
            assert gf.ids() == ["old"]
    else:
        assert not path.exists()


# -- damaged files ------------------------------------------------------------------------


def _damaged(kind: str, src: Path, dst: Path, case_id: str) -> None:
    if kind == "not-hdf5":
        dst.write_text("id,value\n1,2\n")
        return
    if kind == "truncated":
        dst.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
        return
    shutil.copy(src, dst)
    if kind == "other-schema":
        dst.unlink()
        with h5py.File(dst, "w") as f:
            f["data"] = np.arange(3)
    elif kind == "newer-schema":
        with h5py.File(dst, "r+") as f:
            f.attrs["schema_version"] = np.int64(SCHEMA_VERSION + 1)
    elif kind == "missing-dataset":
        with h5py.File(dst, "r+") as f:
            del f[f"cases/{case_id}/golden"]
    elif kind == "flipped-bit":
        _flip_bit(dst, f"cases/{case_id}/golden")
    elif kind == "flipped-index":
        _flip_bit(dst, "index", 3)
    elif kind == "missing-group":
        with h5py.File(dst, "r+") as f:
            del f[f"cases/{case_id}"]
    elif kind == "extra-group":
        with h5py.File(dst, "r+") as f:
            f.create_group("cases/stray")


DAMAGE = {
    "not-hdf5": "not an HDF5 file",
    "truncated": "truncated HDF5 file",
    "other-schema": "not an aclcheck file",
    "newer-schema": "is newer than this aclcheck",
    "flipped-index": "/index: checksum mismatch",
    "extra-group": "/cases/stray: group not listed in /index",
}
CASE_DAMAGE = {
    "missing-dataset": "dataset 'golden' is missing",
    "flipped-bit": "dataset golden: checksum mismatch (fletcher32)",
    "missing-group": "is missing",
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damaged_file_fails_open(tmp_path: Path, small_suite: tuple[Path, list[Case]],
                                 kind: str) -> None:
    path, cases = small_suite
    bad = tmp_path / "bad.h5"
    _damaged(kind, path, bad, cases[0].id)
    with pytest.raises(InputFileError) as err:
        open_golden(bad)
    msg = str(err.value)
    assert msg.startswith(f"{bad}: ") and DAMAGE[kind] in msg and "\n" not in msg


@pytest.mark.parametrize("kind", sorted(CASE_DAMAGE))
def test_damaged_case_found_by_check(tmp_path: Path, small_suite: tuple[Path, list[Case]],
                                     kind: str) -> None:
    path, cases = small_suite
    victim = next(c for c in cases if make_tensors(c).golden is not None)
    bad = tmp_path / "bad.h5"
    _damaged(kind, path, bad, victim.id)
    report = check_file(bad)
    assert not report.ok
    assert any(CASE_DAMAGE[kind] in p for p in report.problems), report.problems
    if kind in ("missing-dataset", "flipped-bit"):
        with open_golden(bad) as gf, pytest.raises(InputFileError) as err:
            gf.golden(victim.id)
        assert str(err.value).startswith(f"{bad}: case {victim.id}: ")


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no such file"):
        open_golden(tmp_path / "nope.h5")
    with pytest.raises(InputFileError, match="is a folder"):
        open_golden(tmp_path)


@pytest.mark.skipif(shutil.which("h5dump") is None, reason="h5dump not installed")
def test_plain_h5dump_reads_everything(small_suite: tuple[Path, list[Case]]) -> None:
    path, _ = small_suite
    out = subprocess.run(["h5dump", "-A", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert '"aclcheck-golden"' in out.stdout
    out = subprocess.run(["h5dump", "-d", "/index", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_flipped_bit_in_large_dataset_detected(tmp_path: Path) -> None:
    case = _case("big", "float32", self_shape=(1, 4, 256, 300), grad_shape=(1, 4, 100, 90),
                 distribution="normal")
    path = tmp_path / "big.h5"
    _write_groups(path, [case])
    with open_golden(path) as gf:
        _assert_same_tensors(gf, case)
        assert gf._f["cases/big/golden"].id.get_num_chunks() > 1
    _flip_bit(path, "cases/big/golden", 1000)
    report = check_file(path)
    assert not report.ok and "checksum mismatch" in report.problems[0]


def test_failure_while_committing_removes_temp(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(golden_writer, "write_root_attrs", broken)
    with pytest.raises(OutputFileError, match="g.h5: cannot write: disk full"):
        _write(tmp_path / "g.h5", [_case("one", "float16")])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # heavy: runs in .ci/run's slow step (pytest -m slow)
def test_random_bit_flips_never_escape_as_other_errors(
        tmp_path: Path, small_suite: tuple[Path, list[Case]]) -> None:
    """Damage anywhere (metadata included) is reported as InputFileError or not at all
    (free space): never a KeyError/RuntimeError traceback from h5py."""
    path, _ = small_suite
    src = path.read_bytes()
    rng = np.random.default_rng(7)
    bad = tmp_path / "bad.h5"
    outcomes = set()
    for pos in rng.choice(len(src), size=25, replace=False):
        data = bytearray(src)
        data[int(pos)] ^= 1 << int(rng.integers(0, 8))
        bad.write_bytes(bytes(data))
        try:
            outcomes.add("ok" if check_file(bad).ok else "problems")
        except InputFileError:
            outcomes.add("error")
    assert outcomes & {"problems", "error"}
