"""The packed golden layout (schema 3): bit-exact round trips against the group-per-case
layout, flat memory, deterministic bytes, atomic writes, random access, checksums, and the
reader's refusals of hostile files (one InputFileError line each, nothing read that the
record does not account for)."""

from __future__ import annotations

import random
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cases import CaseData
from aclcheck.cases.layouts import LAYOUTS
from aclcheck.cli import cli
from aclcheck.errors import InputFileError, OutputFileError, UsageError
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case as Case3d
from aclcheck.ops.materialize import make_tensors
from aclcheck.store import golden_writer as pw
from aclcheck.store.codec import SCHEMA_VERSION, run_meta, text_attr
from aclcheck.store.diff import diff_golden
from aclcheck.store.dispatch import open_golden
from aclcheck.store.golden_check import _Tiling, check_packed
from aclcheck.store.golden_reader import BLOCK_ROWS, PackedFile
from aclcheck.store.golden_schema import (
    Slot,
    case_row,
    packed_schema,
    record_from_row,
    row_dict,
    row_values,
)
from aclcheck.store.golden_writer import write_golden
from aclcheck.store.index import index_columns, index_entry
from aclcheck.store.legacy.group_reader import GroupFile
from aclcheck.suite.selection import Selection, build_suite
from tests.legacy_writer import write_groups

SCHEMA = packed_schema(Case)
META = {**run_meta("test", "t"), "created": "2026-12-02T00:00:00+00:00"}
SELECTION = Selection(products=("atlas-a2", "atlas-training"), formats=("NCHW", "NCL"),
                      families=("nondivisible", "layout", "empty", "special", "invalid"),
                      seed=4)


def _case(cid: str, dtype: str, **kw: Any) -> Case:
    fields: dict[str, Any] = dict(
        family="t", product="atlas-a2", format="NCHW", self_shape=(2, 3, 9, 7),
        grad_shape=(2, 3, 4, 5), seed=1234, distribution="special")
    fields.update(kw)
    return Case(id=cid, dtype=dtype, **fields)


def _items(cases: list[Any]) -> list[tuple[Any, CaseData]]:
    return [(c, make_tensors(c)) for c in cases]


def open_packed(path: Path) -> PackedFile:
    pf = open_golden(path)
    assert isinstance(pf, PackedFile)
    return pf


def write_packed(path: Path, items: Any, meta: Any, **kw: Any) -> Any:
    return write_golden(path, items, meta, **kw)


def _same_tensors(got: CaseData, want: CaseData) -> None:
    assert set(got.inputs) == set(want.inputs)
    for name in want.inputs:
        g, w = got.inputs[name], want.inputs[name]
        assert (g is None) == (w is None)
        if w is not None:
            assert g is not None
            assert (g.dtype, g.shape, g.strides, g.offset) == (w.dtype, w.shape, w.strides,
                                                                w.offset)
            assert g.storage.tobytes() == w.storage.tobytes()
    assert (got.golden is None) == (want.golden is None)
    if want.golden is not None:
        assert got.golden is not None
        assert got.golden.shape == want.golden.shape
        assert got.golden.tobytes() == want.golden.tobytes()


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Case]]:
    cases = build_suite(SELECTION)
    path = tmp_path_factory.mktemp("packed") / "suite.h5"
    write_packed(path, _items(cases), META)
    return path, cases


@pytest.fixture
def damaged(suite: tuple[Path, list[Case]], tmp_path: Path) -> Path:
    return Path(shutil.copy(suite[0], tmp_path / "damaged.h5"))


# -- round trips ----------------------------------------------------------------------------


def test_suite_round_trip_equals_the_group_layout(suite: tuple[Path, list[Case]],
                                                  tmp_path: Path) -> None:
    """Every case reads back exactly as the group-per-case layout reads it: record,
    /index entry, attributes, tensors (storage, view, layout) and golden."""
    path, cases = suite
    groups = tmp_path / "groups.h5"
    write_groups(groups, _items(cases), META)
    with open_packed(path) as pf, GroupFile(groups) as gf:
        assert pf.ids() == gf.ids() == [c.id for c in cases]
        assert list(pf.index) == gf.index
        assert pf.meta["schema_version"] == SCHEMA_VERSION
        for case in cases:
            assert pf.case(case.id) == case
            assert pf.entry(case.id) == gf.entry(case.id)
            assert pf.attrs(case.id) == gf.attrs(case.id)
            _same_tensors(pf.data(case.id), make_tensors(case))


@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16", "int32", "bool",
                                   "float64", "uint8"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_dtypes_and_layouts_bit_exact(tmp_path: Path, dtype: str, layout: str) -> None:
    cases = [_case(f"c-{dtype}-{layout}-{i}", dtype, layout=layout, seed=i,
                   distribution="special" if dtype in ("float16", "float32", "bfloat16")
                   else "normal") for i in range(3)]
    write_packed(tmp_path / "f.h5", _items(cases), META)
    with open_packed(tmp_path / "f.h5") as pf:
        for case in cases:
            _same_tensors(pf.data(case.id), make_tensors(case))


def test_optional_fields_keep_none_and_effective_columns(tmp_path: Path) -> None:
    """A record's None (take the main value) survives; the row's role columns say what
    the tensor is, so a plain reader needs no fallback rule."""
    unset = _case("unset", "float16", distribution="normal")
    given = _case("given", "float16", grad_dtype="float32", out_shape=(), self_format="ND",
                  distribution="normal")
    write_packed(tmp_path / "f.h5", _items([unset, given]), META)
    with open_packed(tmp_path / "f.h5") as pf:
        assert pf.case("unset") == unset and pf.case("given") == given
        rows = pf._index_ds[()]
    assert rows["grad_dtype"].tolist() == [b"float16", b"float32"]
    assert rows["out_shape"].tolist() == [b"2x3x9x7", b""]  # a given () is kept as given
    assert rows["unset"][1] == b"self_dtype,out_dtype,grad_format,out_format"


def test_row_codec_round_trip() -> None:
    case = _case("x", "bfloat16", null=("self",), out_dtype="float32", layout="strided")
    slots = {"grad_output": Slot("bfloat16", 0, 99), "self": Slot("bfloat16", -1, 0),
             "golden": Slot("float64", -1, 0)}
    arr = np.array([row_values(SCHEMA, case_row(case, slots))],
                   dtype=[(n, "S200" if k == "s" else k) for n, k in SCHEMA.columns])
    assert Case.from_record(record_from_row(SCHEMA, row_dict(SCHEMA, arr[0]))) == case


def test_empty_file_and_empty_tensors(tmp_path: Path) -> None:
    write_packed(tmp_path / "none.h5", [], META)
    with open_packed(tmp_path / "none.h5") as pf:
        assert pf.ids() == [] and len(pf.index) == 0
    empty = _case("e", "float32", self_shape=(0, 3, 4, 4), grad_shape=(0, 3, 2, 2),
                  layout="strided")
    write_packed(tmp_path / "e.h5", _items([empty]), META)
    with open_packed(tmp_path / "e.h5") as pf:
        _same_tensors(pf.data("e"), make_tensors(empty))
    assert check_packed(tmp_path / "e.h5").ok


def test_gzip_keeps_the_data(tmp_path: Path, suite: tuple[Path, list[Case]]) -> None:
    path, cases = suite
    write_packed(tmp_path / "z.h5", _items(cases), META, compress="gzip")
    with open_packed(tmp_path / "z.h5") as pf:
        assert pf.compression() == "gzip"
        for case in cases:
            _same_tensors(pf.data(case.id), make_tensors(case))
    with open_packed(path) as pf:
        assert pf.compression() == "none"


# -- deterministic bytes, random access, flat memory ------------------------------------------


def test_same_cases_same_bytes(tmp_path: Path, suite: tuple[Path, list[Case]]) -> None:
    """Written twice, or copied case by case from a reader (what merge does): identical
    files, byte for byte."""
    path, cases = suite
    write_packed(tmp_path / "again.h5", _items(cases), META)
    with open_packed(path) as pf:
        write_packed(tmp_path / "copy.h5", ((pf.case(c), pf.data(c)) for c in pf.ids()),
                     META)
    assert (tmp_path / "again.h5").read_bytes() == path.read_bytes()
    assert (tmp_path / "copy.h5").read_bytes() == path.read_bytes()


def test_random_access_by_id(suite: tuple[Path, list[Case]]) -> None:
    path, cases = suite
    shuffled = cases[:]
    random.Random(3).shuffle(shuffled)
    with open_packed(path) as pf:
        for case in shuffled:
            assert case.id in pf
            assert pf.case(case.id) == case
            _same_tensors(pf.data(case.id), make_tensors(case))
        assert "no-such-case" not in pf
        with pytest.raises(UsageError, match="no case 'no-such-case'"):
            pf.case("no-such-case")


def test_index_is_read_block_by_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("aclcheck.store.golden_reader.BLOCK_ROWS", 4)
    cases = [_case(f"c{i:02d}", "float16", seed=i) for i in range(11)]
    write_packed(tmp_path / "f.h5", _items(cases), META)
    with open_packed(tmp_path / "f.h5") as pf:
        assert [e.id for e in pf.index] == [c.id for c in cases]
        assert pf.index[-1].id == "c10" and [e.id for e in pf.index[3:6]] == ["c03", "c04",
                                                                               "c05"]
        assert pf.case("c09") == cases[9] and pf.case("c01") == cases[1]
    assert BLOCK_ROWS > 4


def _append(pool: Any, flat: np.ndarray) -> int:
    """One array appended on its own (a batch of one): its start in the pool."""
    base, writes = pool.length, []
    start = pool.reserve(flat.size, writes)
    for _, first, count in writes:
        pool.write(first, count, flat, base)
    pool.keep_tail(flat, base)
    return start


def test_pools_write_whole_chunks_and_keep_one_chunk(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool holds at most one chunk in memory, writes only whole chunks (no chunk is
    written twice) but its last, and appends at any alignment."""
    monkeypatch.setattr(pw, "POOL_CHUNK_BYTES", 64)  # 16 float32 elements per chunk
    writes: list[int] = []
    real = pw.PoolWriter._write

    def spy(self: Any, data: np.ndarray, *, last: bool = False) -> None:
        writes.append(-data.size if last else data.size)
        real(self, data, last=last)

    monkeypatch.setattr(pw.PoolWriter, "_write", spy)
    sizes = [5, 11, 40, 1, 16, 3]
    with h5py.File(tmp_path / "p.h5", "w") as f:
        pool = pw.PoolWriter(f, "float32", "none")
        parts = [np.arange(n, dtype=np.float32) + 100 * i for i, n in enumerate(sizes)]
        starts = [_append(pool, p) for p in parts]
        assert pool.buffer.size == 16
        pool.close()
        data = f["float32"][()]
    assert starts == list(np.cumsum([0] + sizes[:-1]))
    assert data.tobytes() == np.concatenate(parts).tobytes()
    assert all(n % 16 == 0 for n in writes[:-1]) and writes[-1] < 0


def test_small_pool_is_one_exact_chunk(suite: tuple[Path, list[Case]]) -> None:
    with h5py.File(suite[0], "r") as f:
        for ds in f["data"].values():
            assert ds.chunks is not None and ds.fletcher32
            if ds.shape[0] * ds.dtype.itemsize < pw.POOL_CHUNK_BYTES:
                assert ds.chunks == ds.shape  # no padding in a small file


# -- atomic writes ------------------------------------------------------------------------------


def test_error_mid_write_keeps_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "g.h5"
    good = [_case("one", "float16")]
    write_packed(path, _items(good), META)
    before = path.read_bytes()

    def items():
        yield good[0], make_tensors(good[0])
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_packed(path, items(), META, force=True)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.h5"]


def test_duplicate_and_unsafe_ids_are_refused(tmp_path: Path) -> None:
    one = _case("dup", "float16")
    with pytest.raises(UsageError, match="duplicate case id 'dup'"):
        write_packed(tmp_path / "d.h5", _items([one, one]), META)
    with pytest.raises(UsageError, match="not a valid group name"):
        write_packed(tmp_path / "u.h5", _items([_case("../x", "float16")]), META)
    with pytest.raises(OutputFileError, match="use --force"):
        (tmp_path / "e.h5").write_bytes(b"keep")
        pw.GoldenWriter(tmp_path / "e.h5", META)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.h5"]


def test_disk_full_is_one_line_and_leaves_nothing(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: Any, **kw: Any) -> None:
        raise OSError("Can't write data (file write failed: errno = 28, error message = "
                      "'No space left on device')")

    monkeypatch.setattr(pw, "write_root_attrs", full)
    with pytest.raises(OutputFileError, match="cannot write: No space left on device"):
        write_packed(tmp_path / "g.h5", _items([_case("one", "float16")]), META)
    assert list(tmp_path.iterdir()) == []


# -- checksums and the integrity check ----------------------------------------------------------


def test_check_reads_everything(suite: tuple[Path, list[Case]]) -> None:
    path, cases = suite
    report = check_packed(path)
    assert report.ok, report.problems
    want = [make_tensors(c) for c in cases]
    assert report.cases == len(cases)
    assert report.bytes_read == sum(
        sum(x.nbytes for x in (*(i.storage for i in t.inputs.values() if i is not None),
                               t.golden) if x is not None)
        for t in want)


@pytest.mark.parametrize(("slices", "length", "problem"), [
    ([(0, 5), (5, 4), (9, 1)], 10, None),
    ([(0, 5), (5, 4)], 10, "elements 9..9 belong to no case"),
    ([(0, 5), (6, 4)], 10, "elements 5..5 belong to no case"),
    ([(1, 9)], 10, "elements 0..0 belong to no case"),
    ([(0, 5), (4, 6)], 10, "elements 4..4 belong to two cases"),
    ([(5, 5), (0, 5)], 10, "belong to"),
    ([], 3, "elements 0..2 belong to no case"),
])
def test_tiling(slices: list[tuple[int, int]], length: int, problem: str | None) -> None:
    """The check's tiling rule: in row order, each slice starts where the one before it in
    its pool ended, and the last one ends at the pool's end."""
    tiles = _Tiling("float64")
    found = [tiles.add(f"c{i}", start, count) for i, (start, count) in enumerate(slices)]
    found.append(tiles.end_problem(length))
    problems = [p for p in found if p is not None]
    if problem is None:
        assert problems == []
    else:
        assert problems and problem in problems[0]


def _chunk_offset(path: Path, dataset: str, chunk: int = 0) -> int:
    with h5py.File(path, "r") as f:
        return f[dataset].id.get_chunk_info(chunk).byte_offset


def _flip(path: Path, offset: int, bit: int = 4) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([b ^ (1 << bit)]))


def test_flipped_bit_in_a_pool_is_a_checksum_error(damaged: Path,
                                                   suite: tuple[Path, list[Case]]) -> None:
    _flip(damaged, _chunk_offset(damaged, "data/float64") + 1001)
    report = check_packed(damaged)
    assert not report.ok and "checksum mismatch (fletcher32)" in report.problems[0]
    victim = report.problems[0].split(":")[0].removeprefix("case ")
    with open_packed(damaged) as pf, pytest.raises(InputFileError, match="checksum"):
        pf.golden(victim)


def test_flipped_bit_in_the_index_is_refused(damaged: Path) -> None:
    _flip(damaged, _chunk_offset(damaged, "index") + 77)
    with pytest.raises(InputFileError, match=r"/index.*checksum mismatch"):
        with open_packed(damaged) as pf:
            for cid in pf.ids():
                pf.case(cid)


def test_random_bit_flips_never_alter_data_silently(suite: tuple[Path, list[Case]],
                                                    tmp_path: Path) -> None:
    """Whatever bytes are flipped, each case either reads back exactly as written or is
    refused with an InputFileError (never a KeyError/OSError from h5py, never altered
    data or records)."""
    path, cases = suite
    clean = path.read_bytes()
    want = {c.id: (c, make_tensors(c)) for c in cases}
    rng = random.Random(20261202)
    bad = tmp_path / "flipped.h5"
    refused = 0
    for _ in range(30):
        data = bytearray(clean)
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(data))
            data[pos] ^= 1 << rng.randrange(8)
        bad.write_bytes(bytes(data))
        try:
            with open_packed(bad) as pf:
                for cid in pf.ids():
                    try:
                        case, tensors = pf.case(cid), pf.data(cid)
                    except InputFileError:
                        refused += 1
                        continue
                    assert cid in want and case == want[cid][0]
                    _same_tensors(tensors, want[cid][1])
        except InputFileError:
            refused += 1
    assert refused > 10


def _flip_every_byte(path: Path, tmp_path: Path, step: int) -> tuple[int, int]:
    """Flip one bit of every `step`-th byte of `path` (bit i % 8 of byte i), one flip
    per copy; each copy must read back exactly as written, case by case, or be refused
    with an InputFileError (never another exception, never a changed value). Returns
    (flips refused somewhere, flips)."""
    clean = path.read_bytes()
    with open_packed(path) as pf:
        want = {cid: (pf.case(cid), pf.data(cid)) for cid in pf.ids()}
    bad = tmp_path / "flipped.h5"
    refused = flips = 0
    for pos in range(0, len(clean), step):
        data = bytearray(clean)
        data[pos] ^= 1 << (pos % 8)
        bad.write_bytes(bytes(data))
        flips += 1
        hit = False
        try:
            with open_golden(bad) as gf:
                assert gf.ids() == list(want)
                for cid in gf.ids():
                    try:
                        case, got = gf.case(cid), gf.data(cid)
                    except InputFileError:
                        hit = True
                        continue
                    assert case == want[cid][0], pos
                    _same_tensors(got, want[cid][1])
        except InputFileError:
            hit = True
        refused += hit
    return refused, flips


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """Three small cases (two dtypes, a strided view, a rejected call): a file of a few
    KB whose every byte a test can flip."""
    cases = [_case("a", "float16", self_shape=(1, 2, 3, 3), grad_shape=(1, 2, 2, 2)),
             _case("b", "bfloat16", self_shape=(1, 1, 4, 3), grad_shape=(1, 1, 2, 3),
                   layout="strided"),
             _case("c", "float16", self_shape=(1, 2, 3, 3), grad_shape=(1, 2, 2, 2),
                   null=("self",))]
    path = tmp_path / "tiny.h5"
    write_packed(path, _items(cases), META)
    return path


def test_flipped_bits_all_over_a_small_file_never_pass_altered(tiny: Path,
                                                               tmp_path: Path) -> None:
    """A sample (every 23rd byte of the file, metadata included): each flip is
    refused or harmless (free space, padding), never a changed record or value."""
    refused, flips = _flip_every_byte(tiny, tmp_path, 23)
    assert refused > flips // 3


@pytest.mark.slow  # every byte: .ci/run's slow step
def test_flipped_bit_in_every_byte_never_passes_altered(tiny: Path, tmp_path: Path) -> None:
    refused, flips = _flip_every_byte(tiny, tmp_path, 1)
    assert flips == tiny.stat().st_size and refused > flips // 3


# -- hostile files ------------------------------------------------------------------------------


def _rewrite_index(f: h5py.File, change: Callable[[np.ndarray], np.ndarray]) -> None:
    arr = change(f["index"][()])
    del f["index"]
    f.create_dataset("index", data=arr, chunks=True, fletcher32=True)


def _set_cell(column: str, value: Any, row: int = 0) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        def change(arr: np.ndarray) -> np.ndarray:
            if arr.dtype[column].kind == "S":
                raw = str(value).encode()
                dt = np.dtype([(n, f"S{max(len(raw), arr.dtype[n].itemsize)}"
                                if n == column else arr.dtype[n]) for n in arr.dtype.names])
                wide = np.zeros(arr.shape, dt)
                for n in arr.dtype.names:
                    wide[n] = arr[n]
                wide[column][row] = raw
                return wide
            arr[column][row] = value
            return arr
        _rewrite_index(f, change)
    return edit


def _first_with(path: Path, cond: Callable[[Case], bool]) -> int:
    with open_packed(path) as pf:
        return next(i for i, cid in enumerate(pf.ids()) if cond(pf.case(cid)))


def _external_pool(secret: Path) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        ds = f["data/float64"]
        shape, dtype = ds.shape, ds.dtype
        del f["data/float64"]
        ext = f["data"].create_dataset("float64", shape=shape, dtype=dtype,
                                       external=[(str(secret), 0, shape[0] * 8)])
        ext.attrs["dtype"] = text_attr("float64")
    return edit


def _soft_pool(f: h5py.File) -> None:
    del f["data/float64"]
    f["data"]["float64"] = h5py.SoftLink("/index")


def _stray_pool(f: h5py.File) -> None:
    f["data"].create_dataset("notes", data=np.arange(4.0), chunks=True, fletcher32=True)


def _retyped_pool(f: h5py.File) -> None:
    data = f["data/float64"][()]
    del f["data/float64"]
    ds = f["data"].create_dataset("float64", data=np.zeros(data.shape, np.float32), chunks=True,
                                  fletcher32=True)
    ds.attrs["dtype"] = text_attr("float64")


def _no_checksum_pool(f: h5py.File) -> None:
    data = f["data/float64"][()]
    del f["data/float64"]
    f["data"].create_dataset("float64", data=data).attrs["dtype"] = text_attr("float64")


def _bomb_pool(f: h5py.File) -> None:
    data = f["data/float64"][()]
    del f["data/float64"]
    ds = f["data"].create_dataset("float64", data=np.resize(data, 3 << 21),
                                  chunks=(3 << 21,), compression="gzip", fletcher32=True)
    ds.attrs["dtype"] = text_attr("float64")


def _duplicate_row(f: h5py.File) -> None:
    def change(arr: np.ndarray) -> np.ndarray:
        arr[1] = arr[0]
        return arr
    _rewrite_index(f, change)


def _operator(f: h5py.File) -> None:
    f.attrs["operator"] = text_attr("max_pool9d")


def _version(f: h5py.File) -> None:
    f.attrs["schema_version"] = np.int64(4)


def _count(f: h5py.File) -> None:
    f.attrs["case_count"] = np.int64(3)


def _no_column(f: h5py.File) -> None:
    _rewrite_index(f, lambda arr: arr[[n for n in arr.dtype.names if n != "golden_start"]])


@pytest.mark.parametrize(("edit", "fragment"), [
    (_soft_pool, "a soft link; not followed"),
    (_stray_pool, "/data/notes: not a dtype this layout stores"),
    (_retyped_pool, "expected 1-D float64 'float64'"),
    (_no_checksum_pool, "without a fletcher32 checksum"),
    (_bomb_pool, "over 16777216 bytes; not read"),
    (_duplicate_row, "is listed twice"),
    (_operator, "written for operator 'max_pool9d', which this aclcheck does not know"),
    (_version, "schema version 4 is newer than this aclcheck understands (3)"),
    (_count, "case_count says 3"),
    (_no_column, "lacks column 'golden_start'"),
    (_set_cell("id", "../etc"), "not a plain name"),
])
def test_hostile_files_are_refused_at_open(damaged: Path, edit: Callable[[h5py.File], None],
                                           fragment: str) -> None:
    with h5py.File(damaged, "r+") as f:
        edit(f)
    with pytest.raises(InputFileError, match=None) as err:
        open_packed(damaged).close()
    assert str(err.value).startswith(f"{damaged}: ") and fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_external_storage_is_refused_unread(damaged: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"S" * (1 << 20))
    with h5py.File(damaged, "r+") as f:
        _external_pool(secret)(f)
    with pytest.raises(InputFileError, match="external storage"):
        open_packed(damaged)


def _positive(c: Case) -> bool:
    return c.positive and c.self_shape[-1] > 1


def _strided(c: Case) -> bool:
    return c.layout == "strided" and c.positive


@pytest.mark.parametrize(("which", "column", "value", "fragment"), [
    (_positive, "golden_count", 3, "golden: slot"),
    (_positive, "golden_start", 10**9, "lie past the end of /data/float64"),
    (_positive, "golden_start", -1, "golden: slot (-1"),
    (_positive, "has_golden", 0, "succeeds, but it has no golden"),
    (_positive, "grad_dtype", "float32", "grad_dtype 'float32' != record"),
    (_positive, "unset", "self_shape", "unset names 'self_shape'"),
    (_positive, "self_shape", "1x1", "!= record"),
    (_strided, "self_strides", "1x1x1x1", "self: strides"),
    (_positive, "layout", "diagonal", "unknown layout 'diagonal'"),
    (_positive, "seed", 2**63 + 5, None),
    (_positive, "nbytes", 1, "nbytes 1 != stored"),
    (lambda c: bool(c.null), "null", "", "bad case record"),
])
def test_hostile_rows_are_refused_per_case(damaged: Path, which: Callable[[Case], bool],
                                           column: str, value: Any,
                                           fragment: str | None) -> None:
    row = _first_with(damaged, which)
    with h5py.File(damaged, "r+") as f:
        _set_cell(column, value, row)(f)
    with open_packed(damaged) as pf:
        cid = pf.ids()[row]
        if fragment is None:  # a seed is not how the arrays are read: still readable
            assert pf.case(cid).seed == 2**63 + 5
            return
        with pytest.raises(InputFileError) as err:
            pf.data(cid)
    assert str(err.value).startswith(f"{damaged}: case {cid}: ") and fragment in str(err.value)
    assert not check_packed(damaged).ok


def test_read_limit_applies_per_array(suite: tuple[Path, list[Case]]) -> None:
    path, cases = suite
    big = max((c for c in cases if c.positive), key=lambda c: c.numel)
    with open_packed(path) as pf:
        pf.read_limit = big.numel * 8 // 4  # the index fits; the golden does not
        with pytest.raises(InputFileError, match="over the read limit"):
            pf.golden(big.id)


def test_group_layout_reader_refuses_packed_files(suite: tuple[Path, list[Case]]) -> None:
    with pytest.raises(InputFileError, match=r"schema version 3 is not a group-per-case"):
        GroupFile(suite[0])


def test_index_columns_of_the_group_layout_are_kept(suite: tuple[Path, list[Case]]) -> None:
    """Listing reads the same columns in both layouts (the packed ones are a superset)."""
    names = {n for n, _ in SCHEMA.columns}
    assert {n for n, _ in index_columns(Case)} <= names
    path, cases = suite
    with open_packed(path) as pf:
        for case, entry in zip(cases, pf.index, strict=True):
            assert entry == index_entry(case, entry.has_golden, entry.nbytes)


def test_older_schemas_read_and_convert(suite: tuple[Path, list[Case]],
                                        tmp_path: Path) -> None:
    """A schema-2 file reads through open_golden like its packed twin; `diff` compares
    what they hold, not how it is laid out."""
    path, cases = suite
    old = tmp_path / "old.h5"
    write_groups(old, _items(cases), META)
    with open_golden(old) as gf:
        assert isinstance(gf, GroupFile) and gf.meta["schema_version"] == 2
        for case in cases[:20]:
            _same_tensors(gf.data(case.id), make_tensors(case))
    assert diff_golden(old, path) == []


def test_a_3d_operator_packs_by_its_own_roles(tmp_path: Path) -> None:
    """The columns come from the operator's record and roles: a 3D case round-trips."""
    cases = [c for c in build_suite(Selection(op="adaptive_avg_pool3d_backward", seed=2,
                                              products=("atlas-a2",)))][:40]
    assert all(isinstance(c, Case3d) for c in cases)
    write_packed(tmp_path / "3d.h5", _items(cases), META)
    with open_packed(tmp_path / "3d.h5") as pf:
        assert pf.meta["operator"] == "adaptive_avg_pool3d_backward"
        for case in cases:
            assert pf.case(case.id) == case
            _same_tensors(pf.data(case.id), make_tensors(case))
    assert check_packed(tmp_path / "3d.h5").ok


@pytest.mark.skipif(shutil.which("h5dump") is None, reason="h5dump not installed")
def test_plain_h5dump_reads_everything(suite: tuple[Path, list[Case]]) -> None:
    path, _ = suite
    for args in (["-A"], ["-d", "/index"], ["-d", "/data/float64"]):
        out = subprocess.run(["h5dump", *args, str(path)], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr


def test_plain_h5py_reader_of_the_docs(suite: tuple[Path, list[Case]]) -> None:
    """The recipe of docs/store.md ("Reading case i with h5py alone"), generalised to
    every input role and checked against make_tensors for every case."""
    path, cases = suite
    with h5py.File(path, "r") as f:
        rows = f["index"][()]
        for case, row in zip(cases, rows, strict=True):
            want = make_tensors(case)
            for name, t in (("grad_output", want.grad_output), ("self", want.self)):
                start, count = int(row[f"{name}_start"]), int(row[f"{name}_count"])
                if start < 0:
                    assert t is None
                    continue
                key = "grad" if name == "grad_output" else "self"
                pool = f["data"][row[f"{key}_dtype"].decode()]
                storage = pool[start:start + count]
                strides = [int(s) for s in row[f"{name}_strides"].decode().split("x") if s]
                shape = [int(s) for s in row[f"{key}_shape"].decode().split("x") if s]
                assert t is not None and storage.tobytes() == t.storage.tobytes()
                offset = int(row[f"{name}_offset"])
                assert (tuple(shape), tuple(strides), offset) == (t.shape, t.strides, t.offset)
                if all(shape) and storage.size:
                    view = np.lib.stride_tricks.as_strided(
                        storage[offset:], shape, [d * storage.itemsize for d in strides])
                    assert view.tobytes() == t.view().view(storage.dtype).tobytes()
            if row["golden_start"] >= 0:
                start, count = int(row["golden_start"]), int(row["golden_count"])
                golden = f["data/float64"][start:start + count]
                assert want.golden is not None
                assert golden.tobytes() == want.golden.tobytes()


@pytest.mark.parametrize(("column", "value", "fragment"), [
    ("golden_start", 10**12, "lie past the end of /data/float64"),
    ("golden_count", 2**40, "golden: slot"),
    ("self_start", -5, "self: slot (-5"),
])
def test_verify_and_inspect_refuse_a_hostile_row_in_one_line(
        damaged: Path, column: str, value: int, fragment: str) -> None:
    """Through the CLI: exit 3, one line naming the file and the case, no traceback, no
    PASS for the case, and nothing allocated for the absurd size."""
    row = _first_with(damaged, _positive)
    with h5py.File(damaged, "r+") as f:
        _set_cell(column, value, row)(f)
    with open_packed(damaged) as pf:
        cid = pf.ids()[row]
    for args in (["verify", str(damaged), "--impl", "reference", "--no-isolate",
                  "--id", cid], ["inspect", str(damaged), "--check"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 3, result.output
        errors = [line for line in result.output.splitlines() if "error" in line]
        assert errors and f"case {cid}:" in errors[0] and fragment in errors[0], result.output
        assert "Traceback" not in result.output and "PASS" not in result.output
