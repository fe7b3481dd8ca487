"""generate's workers: they plan a suite's cases from its places and send rows and flat
arrays, not tensors; the file is the same byte for byte; `--jobs auto` picks the
workers by the suite's size and the idle cores."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.cores import available_cores, idle_cores
from aclcheck.errors import SuiteError
from aclcheck.store.golden_writer import GoldenWriter
from aclcheck.suite import generate as gen
from aclcheck.suite.selection import Selection, build_suite, iter_slots

#: a few hundred cases over every family kind (the invalid calls' places hold many)
SUITE = {"products": ["atlas-a2"], "count": 2}


class InlineExecutor:
    """concurrent.futures' submit, run at once in this process; records what it ran."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        self.calls.append((fn.__name__, len(args[-1])))
        fut: Future[Any] = Future()
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, as a pool does
            fut.set_exception(exc)
        return fut


def _write(path: Path, executor: Any = None, jobs: int = 1, **plan: Any) -> bytes:
    suite = gen.plan_suite(**{**SUITE, **plan})
    gen.generate(path, suite.cases, {"created": "fixed"}, jobs=jobs, executor=executor)
    return path.read_bytes()


def test_workers_plan_the_places_and_the_bytes_do_not_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole suite crosses to the workers as places; a batch a worker cuts short (its
    cases passed the element budget) is sent again from where it stopped, ahead of the
    later ones, so the order and the bytes are those of a serial run."""
    serial = _write(tmp_path / "serial.h5")
    monkeypatch.setattr(gen, "BATCH_PLACES", 7)
    monkeypatch.setattr(gen, "BATCH_ELEMENTS", 4000)
    inline = InlineExecutor()
    assert _write(tmp_path / "inline.h5", executor=inline) == serial
    assert {name for name, _ in inline.calls} == {"_plan_batch"}
    places = sum(1 for _ in iter_slots(gen.plan_suite(**SUITE).cases.selection))
    first_tries = -(-places // 7)
    assert len(inline.calls) > first_tries  # some batches were cut short and sent again
    assert sum(n for _, n in inline.calls) > places


def test_batches_in_flight_stay_within_the_window_when_batches_are_cut_short(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch cut short is sent again, ahead of the others, and counts as one batch more
    in flight at most (counting it as a new one let the window grow by one at every cut,
    and a 67 000-case suite's parent held 63 MiB of results). Batches after a cut take as
    many places as the cut one did, and grow back; every place is made once, in order."""
    monkeypatch.setattr(gen, "BATCH_PLACES", 8)
    monkeypatch.setattr(gen, "BATCH_ELEMENTS", 4000)
    stream = gen.plan_suite(**SUITE).cases
    inline = InlineExecutor()
    window, yielded, ids = 3, 0, []
    for prepared in gen._fan_out_places(stream, inline, window):
        yielded += 1
        assert len(inline.calls) - yielded <= window + 1  # the window, and one rest
        ids += [c.id for c in prepared.cases]
    assert ids == [c.id for c in stream]
    sizes = [n for _, n in inline.calls]
    assert min(sizes) < 8 and max(sizes) == 8  # cut, smaller batches, then whole again


def test_a_shard_or_a_case_list_goes_out_as_case_records(tmp_path: Path) -> None:
    inline = InlineExecutor()
    suite = gen.plan_suite(**SUITE, shard_spec="2/3")
    gen.generate(tmp_path / "s.h5", suite.cases, {"created": "fixed"}, executor=inline)
    assert {name for name, _ in inline.calls} == {"_prepare_batch"}
    serial = tmp_path / "serial.h5"
    gen.generate(serial, suite.cases, {"created": "fixed"})
    assert (tmp_path / "s.h5").read_bytes() == serial.read_bytes()


def test_local_workers_write_the_serial_bytes(tmp_path: Path) -> None:
    assert _write(tmp_path / "a.h5", jobs=2) == _write(tmp_path / "b.h5")


def test_a_refusal_in_a_worker_reaches_the_user_and_nothing_is_written(
        tmp_path: Path) -> None:
    """A case over --max-case-mb, found by the worker that plans it, stops the run with
    the same one-line error as a serial run; the output never appears."""
    with pytest.raises(SuiteError, match="over the limit"):
        _write(tmp_path / "x.h5", executor=InlineExecutor(), max_case_bytes=100)
    out = tmp_path / "cli.h5"
    res = CliRunner().invoke(cli, ["generate", "-o", str(out), "--product", "atlas-a2",
                                   "--count", "2", "--jobs", "2", "--max-case-mb", "0.0001"])
    assert res.exit_code == 2, res.output
    assert "over the limit of 0 MB (--max-case-mb)" in res.stderr
    assert "Traceback" not in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_auto_jobs_by_size_and_idle_cores() -> None:
    default = gen.plan_suite().cases
    assert gen.auto_jobs(default, idle=1) == 1  # one core idle: this process alone
    assert gen.auto_jobs(default, idle=2) == 2
    assert gen.auto_jobs(default, idle=64) == gen.MAX_AUTO_JOBS
    small = gen.plan_suite(products=["atlas-a2"], families=["special"]).cases
    assert sum(1 for _ in iter_slots(small.selection)) < gen.PARALLEL_MIN_CASES
    assert gen.auto_jobs(small, idle=2) == 1
    # a shard counts its part of the suite
    big = gen.plan_suite(count=2).cases
    part = gen.plan_suite(count=2, shard_spec="1/8").cases
    assert gen.auto_jobs(big, idle=2) == 2 and gen.auto_jobs(part, idle=2) == 1
    cases = build_suite(Selection(products=("atlas-a2",), count=2))
    assert gen.auto_jobs(cases[:gen.PARALLEL_MIN_CASES], idle=4) == 4
    assert gen.auto_jobs(cases[:10], idle=4) == 1


def test_idle_cores_count_what_runs_elsewhere_now() -> None:
    """The fewest runnable tasks over the samples, less this process: a task that runs
    for a moment is not a busy core; no count from the OS: every core is idle."""
    def reads(*counts: int | None) -> Callable[[], int | None]:
        it = iter(counts)
        return lambda: next(it)

    assert idle_cores(cores=2, running=reads(1, 3, 1), samples=3, gap_s=0) == 2
    assert idle_cores(cores=2, running=reads(2, 3, 2), samples=3, gap_s=0) == 1
    assert idle_cores(cores=2, running=reads(5, 4, 6), samples=3, gap_s=0) == 0
    assert idle_cores(cores=4, running=reads(None), samples=3, gap_s=0) == 4
    assert 0 <= idle_cores() <= available_cores()


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_jobs_refuses_what_is_not_a_count_or_auto(tmp_path: Path, value: str) -> None:
    res = CliRunner().invoke(cli, ["generate", "-o", str(tmp_path / "x.h5"), "--jobs", value])
    assert res.exit_code == 2 and "neither a positive number of workers nor 'auto'" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_case_pickles_its_record_only() -> None:
    """What a case computes from its fields (role descriptions, the contract's answer)
    stays behind when it crosses to a worker: the record is all the worker needs."""
    case = build_suite(Selection(products=("atlas-a2",), families=("layout",)))[0]
    assert case.positive and case.tensor_desc("out").shape == case.self_shape
    state = case.__getstate__()
    assert set(state) == {f for f in vars(case) if not f.startswith("_")} - {"expectation"}
    back = pickle.loads(pickle.dumps(case))
    assert back == case and "_descs" not in vars(back)
    assert back.tensor_desc("out") == case.tensor_desc("out")


@pytest.mark.parametrize("chunk_bytes", [None, 96])
def test_a_batch_appends_as_its_cases_one_by_one(tmp_path: Path, chunk_bytes: int | None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """prepare() of many cases and of one case at a time land the same bytes (with
    chunks of 96 bytes, a batch completes the buffered chunk, writes whole ones and
    leaves a tail for most dtypes)."""
    from aclcheck.ops.materialize import make_tensors
    from aclcheck.store import golden_writer
    from aclcheck.store.golden_writer import prepare

    if chunk_bytes is not None:
        monkeypatch.setattr(golden_writer, "POOL_CHUNK_BYTES", chunk_bytes)

    cases = build_suite(Selection(products=("atlas-a2",), families=("layout", "invalid")))
    made = [(c, make_tensors(c)) for c in cases]
    one, many = tmp_path / "one.h5", tmp_path / "many.h5"
    with GoldenWriter(one, {"created": "fixed"}) as w:
        for case, data in made:
            w.add(case, data)
    with GoldenWriter(many, {"created": "fixed"}) as w:
        sizes = w.add_prepared(prepare(made[:5])) + w.add_prepared(prepare(made[5:]))
    assert one.read_bytes() == many.read_bytes()
    assert len(sizes) == len(cases) and sum(sizes) == w.array_bytes


def test_a_batch_whose_rows_and_arrays_disagree_is_refused(tmp_path: Path) -> None:
    """A batch (from a worker, or anything with `submit`) whose rows place an array
    elsewhere than its concatenated arrays hold it is refused, not written askew."""
    import dataclasses

    from aclcheck.errors import UsageError
    from aclcheck.ops.materialize import make_tensors
    from aclcheck.store.golden_writer import prepare

    cases = build_suite(Selection(products=("atlas-a2",), families=("layout",)))[:3]
    batch = prepare([(c, make_tensors(c)) for c in cases])
    column, dtype, count = batch.moves[1][0]
    rows = list(batch.rows)
    rows[1] = tuple(v + 1 if i == column else v for i, v in enumerate(rows[1]))
    moves = list(batch.moves)
    moves[1] = ((column, "int8" if dtype != "int8" else "uint8", count), *moves[1][1:])
    for askew in (dataclasses.replace(batch, rows=rows),  # a start elsewhere
                  dataclasses.replace(batch, moves=moves)):  # a dtype it has no array of
        with pytest.raises(UsageError, match="disagree"), \
                GoldenWriter(tmp_path / "askew.h5", {"created": "fixed"}) as writer:
            writer.add_prepared(askew)
        assert list(tmp_path.iterdir()) == []


def test_with_workers_the_parent_gives_large_blocks_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With workers, generate's parent has the allocator give large freed blocks back
    (glibc's rising threshold made its peak grow with the case count); one process
    alone leaves the allocator as it is."""
    import sys

    from aclcheck.cli import generate as cli_generate

    calls: list[bool] = []
    monkeypatch.setattr(cli_generate, "return_large_blocks", lambda: calls.append(True))
    args = ["generate", "--product", "atlas-a2", "--family", "special"]
    assert CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "a.h5"), "--jobs", "1"]
                              ).exit_code == 0
    assert calls == []
    assert CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "b.h5"), "--jobs", "2"]
                              ).exit_code == 0
    assert calls == [True]
    import platform

    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        import subprocess
        out = subprocess.run(
            [sys.executable, "-c",
             "from aclcheck.arrays import return_large_blocks; print(return_large_blocks())"],
            capture_output=True, text=True, check=True).stdout.strip()
        assert out == "True"


class SlottedExecutor(InlineExecutor):
    """An executor that says how many tasks it runs at once (as a Dask cluster's does)
    and, like aclcheck's DaskExecutor, has no private attributes to probe."""

    slots = 8

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


def test_the_window_is_sized_by_the_executors_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    """generate keeps twice the executor's slots of batches in flight (it kept 2 whatever
    a Dask cluster's size: it probed private attributes a Dask executor does not have)."""
    monkeypatch.setattr(gen, "BATCH_PLACES", 2)
    fake = SlottedExecutor()
    in_flight = yielded = 0
    for _ in gen.iter_prepared(gen.plan_suite(**SUITE).cases, jobs=1, executor=fake):
        yielded += 1
        in_flight = max(in_flight, len(fake.calls) - yielded + 1)
    assert 2 * 8 <= in_flight <= 2 * 8 + 1


def test_verify_sizes_its_window_by_the_executors_slots(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from contextlib import contextmanager

    from aclcheck.running import session

    seen: dict[str, int] = {}

    @contextmanager
    def fake_pool(jobs: int, url: str | None = None):  # type: ignore[no-untyped-def]
        yield SlottedExecutor()

    def capture(*args: Any, window: int, **kwargs: Any) -> Any:
        seen["window"] = window
        return iter(())

    monkeypatch.setattr(session, "open_executor", fake_pool)
    monkeypatch.setattr(session, "iter_verdicts_parallel", capture)
    golden = tmp_path / "g.h5"
    assert CliRunner().invoke(cli, ["generate", "-o", str(golden), "--product", "atlas-a2",
                                    "--family", "divisible"]).exit_code == 0
    CliRunner().invoke(cli, ["verify", str(golden), "--impl", "reference", "--jobs", "2"])
    assert seen == {"window": 16}
