"""`aclcheck generate`: default suite, selections, determinism (--jobs, --shard), errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import h5py
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.errors import UsageError
from aclcheck.store.diff import diff_golden
from aclcheck.store.dispatch import check_file, open_golden
from aclcheck.suite import generate as gen
from aclcheck.suite.merge import merge_golden
from aclcheck.suite.selection import Selection, build_suite

SMALL = ["--product", "atlas-a2", "--format", "NCHW", "--family", "nondivisible",
         "--family", "layout", "--family", "special", "--count", "2"]


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, ["generate", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.stdout, res.stderr


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_default_suite(tmp_path: Path) -> None:
    out = tmp_path / "suite.h5"
    code, stdout, stderr = run("-o", str(out))
    assert code == 0, stderr
    cases = build_suite(Selection())
    assert f"{len(cases)} cases" in stdout  # summary table caption
    assert "atlas-a2" in stdout and "bfloat16" in stdout
    assert len(stderr.splitlines()) <= 3  # not a terminal: no progress bar
    report = check_file(out)
    assert report.ok, report.problems
    with open_golden(out) as gf:
        assert gf.ids() == [c.id for c in cases]
        assert gf.meta["suite"] == "default"
        assert gf.meta["command_line"] == f"aclcheck generate -o {out}"
        assert json.loads(gf.meta["selection"])["seed"] == 0
        products = {e.product for e in gf.index}
        dtypes = {e.dtype for e in gf.index if e.has_golden}
        formats = {e.format for e in gf.index if e.has_golden}
    assert products == {"atlas-training", "atlas-inference", "atlas-a2", "atlas-a3"}
    assert dtypes == {"float16", "float32", "bfloat16"}
    assert formats == {"ND", "NCHW", "NCL"}
    assert files_in(tmp_path) == ["suite.h5"]


def test_regenerate_is_identical_and_jobs_do_not_change_data(tmp_path: Path) -> None:
    a, b, c = (tmp_path / n for n in ("a.h5", "b.h5", "c.h5"))
    assert run("-o", str(a), *SMALL, "--seed", "7")[0] == 0
    assert run("-o", str(b), *SMALL, "--seed", "7")[0] == 0
    assert run("-o", str(c), *SMALL, "--seed", "7", "--jobs", "2")[0] == 0
    assert diff_golden(a, b) == []
    assert diff_golden(a, c) == []
    assert run("-o", str(b), *SMALL, "--seed", "8", "--force")[0] == 0
    assert diff_golden(a, b) != []


def _in(folder: Path, *args: str) -> bytes:
    """generate -o suite.h5 ARGS run in `folder` (the same command line wherever)."""
    folder.mkdir()
    cwd = Path.cwd()
    os.chdir(folder)
    try:
        code, _, stderr = run("-o", "suite.h5", *args)
    finally:
        os.chdir(cwd)
    assert code == 0, stderr
    return (folder / "suite.h5").read_bytes()


def test_workers_and_executors_write_the_same_bytes(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The same command writes the same bytes ($SOURCE_DATE_EPOCH fixing the one field
    that names the time), whether this process, local workers (--jobs) or a Dask
    cluster (--executor) make the tensors: workers send tensors, the parent writes."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764633600")
    serial = _in(tmp_path / "serial", *SMALL)
    assert _in(tmp_path / "again", *SMALL) == serial
    assert _in(tmp_path / "jobs", *SMALL, "--jobs", "2") == serial
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp", dashboard_address=None) as cluster:
        url = "dask://" + cluster.scheduler_address.removeprefix("tcp://")
        assert _in(tmp_path / "dask", *SMALL, "--executor", url) == serial


def test_shards_partition_the_suite_with_identical_data(tmp_path: Path) -> None:
    full = tmp_path / "full.h5"
    assert run("-o", str(full), *SMALL)[0] == 0
    seen: list[str] = []
    with open_golden(full) as whole:
        for k in (1, 2, 3):
            part = tmp_path / f"s{k}.h5"
            assert run("-o", str(part), *SMALL, "--shard", f"{k}/3")[0] == 0
            with open_golden(part) as gf:
                assert json.loads(gf.meta["selection"])["shard"] == f"{k}/3"
                for cid in gf.ids():
                    seen.append(cid)
                    x, y = gf.data(cid), whole.data(cid)
                    for name in ("grad_output", "self"):
                        a, b = x.inputs[name], y.inputs[name]
                        assert (a is None) == (b is None)
                        if a is not None and b is not None:
                            assert a.storage.tobytes() == b.storage.tobytes()
                    assert (x.golden is None) == (y.golden is None)
                    if x.golden is not None and y.golden is not None:
                        assert x.golden.tobytes() == y.golden.tobytes()
                    assert gf.attrs(cid) == whole.attrs(cid)
        assert sorted(seen) == sorted(whole.ids())


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_cases_file(tmp_path: Path, suffix: str) -> None:
    entries = [
        {"id": "mine-bf16", "product": "atlas-a2", "dtype": "bf16", "format": "NCHW",
         "self_shape": [1, 2, 7, 5], "grad_shape": [1, 2, 3, 2], "layout": "strided"},
        {"product": "atlas-training", "dtype": "float16", "format": "NCL",
         "self_shape": [2, 6, 6], "grad_shape": [2, 4, 4], "distribution": "special"},
    ]
    cf = tmp_path / f"cases{suffix}"
    if suffix == ".json":
        cf.write_text(json.dumps({"suite": "mine", "cases": entries}))
    else:
        cf.write_text('suite = "mine"\n' + "".join(
            "[[cases]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in e.items())
            for e in entries))
    out = tmp_path / "m.h5"
    code, _, stderr = run("-o", str(out), "--cases-file", str(cf))
    assert code == 0, stderr
    with open_golden(out) as gf:
        assert gf.meta["suite"] == "mine"
        assert len(gf.ids()) == 2 and gf.ids()[0] == "mine-bf16"
        grad, _ = gf.inputs("mine-bf16")
        assert grad is not None and not grad.contiguous
    code, _, stderr = run("-o", str(tmp_path / "n.h5"), "--cases-file", str(cf),
                          "--product", "atlas-a2")
    assert code == 0
    with open_golden(tmp_path / "n.h5") as gf:
        assert gf.ids() == ["mine-bf16"]


def test_gzip_compress_same_data(tmp_path: Path) -> None:
    a, z = tmp_path / "a.h5", tmp_path / "z.h5"
    assert run("-o", str(a), *SMALL)[0] == 0
    assert run("-o", str(z), *SMALL, "--compress", "gzip")[0] == 0
    assert diff_golden(a, z) == []
    with h5py.File(z) as f:
        assert {ds.compression for ds in f["data"].values()} == {"gzip"}


@pytest.mark.parametrize(("args", "message"), [
    (["--product", "atlas-z9"], "unknown product"),
    (["--dtype", "fp8"], "unknown dtype"),
    (["--format", "NZ"], "unknown format"),
    (["--family", "weird"], "unknown family"),
    (["--shard", "4/3"], "shard"),
    (["--count", "0"], "count"),
    (["--cases-file", "x.toml", "--family", "special"], "--family does not apply"),
    (["--compress", "lzf"], "lzf"),
])
def test_usage_errors_exit_2_and_write_nothing(tmp_path: Path, args: list[str],
                                                message: str) -> None:
    code, stdout, stderr = run("-o", str(tmp_path / "x.h5"), *args)
    assert code == 2
    assert message in stderr and "Traceback" not in stderr
    assert files_in(tmp_path) == []


def test_output_path_errors(tmp_path: Path) -> None:
    code, _, stderr = run("-o", str(tmp_path / "missing" / "x.h5"), *SMALL)
    assert code == 2 and "does not exist" in stderr
    existing = tmp_path / "x.h5"
    existing.write_bytes(b"precious")
    code, _, stderr = run("-o", str(existing), *SMALL)
    assert code == 2 and "use --force" in stderr
    assert existing.read_bytes() == b"precious"
    assert files_in(tmp_path) == ["x.h5"]


def test_read_only_folder(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        target = Path("/proc/aclcheck-test.h5")  # root ignores mode bits; /proc refuses files
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        target = ro / "x.h5"
    try:
        code, _, stderr = run("-o", str(target), *SMALL)
    finally:
        if os.geteuid() != 0:
            target.parent.chmod(0o755)
    assert code == 2
    assert str(target) in stderr and "Traceback" not in stderr
    assert not target.exists()


def test_error_mid_run_leaves_previous_file_and_no_temp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "g.h5"
    assert run("-o", str(out), *SMALL)[0] == 0
    before = out.read_bytes()
    calls = {"n": 0}
    real = gen.make_tensors

    def flaky(case, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise MemoryError("simulated")
        return real(case, **kwargs)

    monkeypatch.setattr(gen, "make_tensors", flaky)
    code, _, stderr = run("-o", str(out), *SMALL, "--force")
    assert code == 4 and "MemoryError" in stderr
    assert out.read_bytes() == before
    assert files_in(tmp_path) == ["g.h5"]


def test_plan_suite_names_and_filters() -> None:
    plan = gen.plan_suite()
    assert plan.suite == "default" and list(plan.cases) == build_suite(Selection())
    assert list(plan.cases) == list(plan.cases)  # streamed: each pass is the whole suite
    shard = gen.plan_suite(shard_spec="2/3")
    assert list(shard.cases) == build_suite(Selection())[1::3]
    plan = gen.plan_suite(dtypes=["bf16"], families=["special"], suite_name="x")
    assert plan.suite == "x"
    assert {c.dtype for c in plan.cases} == {"bfloat16"}
    assert plan.selection["dtypes"] == ["bfloat16"]


def test_batches_bound_size() -> None:
    cases = build_suite(Selection(products=("atlas-a2",)))
    groups = list(gen.batches(cases))
    assert [c for g in groups for c in g] == cases
    assert all(len(g) <= gen.BATCH_CASES for g in groups)


def test_merged_shards_equal_the_unsharded_run(tmp_path: Path) -> None:
    full = tmp_path / "full.h5"
    assert run("-o", str(full), *SMALL, "--compress", "gzip")[0] == 0
    parts = []
    for k in (2, 1, 3):  # any order
        part = tmp_path / f"s{k}.h5"
        assert run("-o", str(part), *SMALL, "--shard", f"{k}/3", "--compress", "gzip")[0] == 0
        parts.append(part)
    merged = tmp_path / "merged.h5"
    assert merge_golden(parts, merged) == len(list(gen.plan_suite(
        products=["atlas-a2"], formats=["NCHW"], families=["nondivisible", "layout",
                                                           "special"], count=2).cases))
    assert diff_golden(full, merged) == []
    assert check_file(merged).ok
    with pytest.raises(UsageError, match="3/3 missing"):
        merge_golden(parts[:2], tmp_path / "m2.h5")
    with pytest.raises(UsageError, match="given twice"):
        merge_golden([parts[0], parts[0], parts[1]], tmp_path / "m3.h5")
    with pytest.raises(UsageError, match="is in both"):
        merge_golden([full, full], tmp_path / "m4.h5")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("m")) == [
        "merged.h5"]


def test_a_streamed_suite_refuses_an_oversized_case_and_writes_nothing(tmp_path: Path) -> None:
    """A suite is planned as it is written: a case over --max-case-mb stops the run before
    its arrays are allocated, and the output never appears."""
    out = tmp_path / "s.h5"
    code, _, stderr = run("-o", str(out), *SMALL, "--max-case-mb", "0.0001")
    assert code == 2 and "over the limit of 0 MB (--max-case-mb)" in stderr
    assert files_in(tmp_path) == []
