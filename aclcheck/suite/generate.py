"""The generate pipeline: places -> cases -> tensors -> rows and flat arrays -> golden file.

Workers (a local pool, by default one per idle core on a large suite, or Dask) plan
a suite's cases from batches of its places (a case file's or a shard's cases go out as
records), make their tensors and the packed rows, and send those back; the parent alone
writes, a case at a time in suite order, so the file is the same byte for byte whoever
made it. A bounded window of in-flight batches, each cut short past BATCH_ELEMENTS,
keeps memory flat on large suites.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from aclcheck import interrupts
from aclcheck.arrays import ResultBuffers
from aclcheck.cases import Case, CaseData
from aclcheck.cases.acl import normalize_format
from aclcheck.cores import idle_cores
from aclcheck.dtypes import normalize_dtype
from aclcheck.errors import SuiteError, WorkerLost, first_sentence
from aclcheck.fanout import Done, Executor, FanOut, slots
from aclcheck.ops import DEFAULT, operator, operator_of
from aclcheck.ops.materialize import make_tensors
from aclcheck.store.atomic import check_output_path
from aclcheck.store.codec import check_id, check_ids
from aclcheck.store.golden_writer import GoldenWriter, Prepared, prepare
from aclcheck.store.h5read import memory_bytes
from aclcheck.suite.selection import (
    Selection,
    SuiteSlot,
    check_unique,
    iter_slots,
    iter_suite,
    slot_cases,
)
from aclcheck.suite.sharding import SELECTION_KEY, parse_shard, round_robin, shard_text

#: progress(done, total, case): called after each case is written (total None: a
#: streamed suite, whose size is known at its end).
ProgressFn = Callable[[int, int | None, Case], None]
#: A worker batch holds up to this many cases or this many elements, whichever first.
#: The element bound keeps a worker's peak memory flat: a batch's working set (values,
#: golden, packed copies, the pickled answer) grows with it, and at 2 Mi elements the
#: fullest batch of a 100 000-case suite was far fuller than any of a 10 000-case suite
#: (a worker's peak 59-69 MiB against 92-94 MiB). At 256 Ki most batches of the default
#: suite reach the bound, so the peak is reached early (benchmarks/README.md, "After:
#: generate's memory").
BATCH_CASES = 32
BATCH_ELEMENTS = 1 << 18
#: `--jobs auto`: a suite of fewer places (or cases) than this is made in this process;
#: a larger one by up to this many workers, one per idle core.
PARALLEL_MIN_CASES = 256
MAX_AUTO_JOBS = 8
#: A worker batch of a whole suite: this many places (a place is one case, or one
#: product's invalid calls), cut short past BATCH_ELEMENTS.
BATCH_PLACES = 128


class CaseStream:
    """The planned cases of a suite, in order: every iteration a fresh pass over the
    selection (or the shard of it), each case built as it is needed, so a suite of any
    size plans in constant memory. Each case is checked as it passes (a safe id, arrays
    within the size limit) before anything is allocated for it."""

    def __init__(self, selection: Selection, shard: tuple[int, int] | None,
                 max_case_bytes: int, contract: str = "doc") -> None:
        self.selection = selection
        self.shard = shard
        self.max_case_bytes = max_case_bytes
        #: the contract every case follows (Case.contract; "doc" leaves it unset)
        self.contract = contract

    def __iter__(self) -> Iterator[Case]:
        k, n = self.shard or (1, 1)
        for i, case in enumerate(iter_suite(self.selection)):
            if i % n == k - 1:
                case = case.following(self.contract)
                self.check(case)
                yield case

    @property
    def parts(self) -> int:
        """N of a K/N shard (1: the whole suite)."""
        return self.shard[1] if self.shard else 1

    def check(self, case: Case) -> None:
        """SuiteError for an unsafe id or arrays over the size limit."""
        check_id(case.id, SuiteError)
        check_case_sizes((case,), self.max_case_bytes)


@dataclass(frozen=True)
class Plan:
    """The cases to generate and what produced them (stored in the file's root):
    a list (a case file's), or a CaseStream (a suite: built as it is written)."""

    cases: list[Case] | CaseStream
    suite: str
    selection: dict[str, Any]


def plan_suite(
    *,
    products: Sequence[str] = (),
    dtypes: Sequence[str] = (),
    formats: Sequence[str] = (),
    families: Sequence[str] = (),
    count: int | None = None,
    seed: int | None = None,
    cases_file: str | Path | None = None,
    shard_spec: str | None = None,
    suite_name: str | None = None,
    max_case_bytes: int | None = None,
    op: str = DEFAULT,
    contract: str = "doc",
) -> Plan:
    """The cases from CLI-style selections (empty = all applicable).

    With `cases_file`, the file's cases replace the family selection; products, dtypes
    and formats then filter them. Raises SuiteError for bad names or combinations, for
    a selection of no cases, and for a case whose arrays need more than
    `max_case_bytes` (default: a quarter of the memory) before anything is allocated for
    it: up front for a case file, as each case is planned for a suite (which is streamed).
    `contract`: what every case that names none follows (Case.following).
    """
    norm_dtypes = tuple(normalize_dtype(d) for d in dtypes)
    norm_formats = tuple(normalize_format(f) for f in formats)
    selection: dict[str, Any] = {
        "products": list(products), "dtypes": list(norm_dtypes), "formats": list(norm_formats),
    }
    limit = default_max_case_bytes() if max_case_bytes is None else max_case_bytes
    shard = parse_shard(shard_spec) if shard_spec else None
    if shard is not None:
        selection[SELECTION_KEY] = shard_text(*shard)
    if contract != "doc":  # only then: a default file's stored selection is unchanged
        selection["contract"] = contract
    if cases_file is None:
        sel_kwargs: dict[str, Any] = {"count": 1 if count is None else count,
                                      "seed": 0 if seed is None else seed, "op": op}
        if products:
            sel_kwargs["products"] = tuple(products)
        if norm_dtypes:
            sel_kwargs["dtypes"] = norm_dtypes
        if norm_formats:
            sel_kwargs["formats"] = norm_formats
        if families:
            sel_kwargs["families"] = tuple(families)
        sel = Selection(**sel_kwargs)
        custom = bool(products or dtypes or formats or families) or count is not None \
            or seed is not None
        selection.update(families=list(sel.families), count=sel.count, seed=sel.seed)
        stream = CaseStream(sel, shard, limit, contract)
        if next(iter(stream), None) is None:
            raise SuiteError("the selection matches no cases")
        return Plan(stream, suite_name or ("custom" if custom else "default"), selection)
    if families:
        raise SuiteError("--family does not apply with --cases-file (the file's cases "
                         "replace the families)")
    if count is not None:
        raise SuiteError("--count does not apply with --cases-file")

    from aclcheck.suite.casefile import load_case_file  # only --cases-file reads one

    cf = load_case_file(cases_file, seed, op)
    for p in products:
        operator(op).product(p)
    cases = [c.following(contract) for c in cf.cases
             if (not products or c.product in products)
             and (not norm_dtypes or c.dtype in norm_dtypes)
             and (not norm_formats or c.format in norm_formats)]
    name = suite_name or cf.name or Path(cases_file).stem
    selection.update(cases_file=str(cases_file), seed=cf.seed)
    if shard is not None:
        cases = round_robin(cases, *shard)
    check_unique(cases, name)
    check_ids(cases, SuiteError)
    if not cases:
        raise SuiteError("the selection matches no cases")
    check_case_sizes(cases, limit)
    return Plan(cases, name, selection)


def default_max_case_bytes() -> int:
    """A quarter of the physical memory (at least 1 GiB): room for the arrays of a case
    and what the reference and the writer need beside them."""
    return max(1 << 30, memory_bytes() // 4)


def auto_jobs(cases: Iterable[Case], idle: int | None = None) -> int:
    """How many worker processes `--jobs auto` starts: one per idle core (`idle`:
    aclcheck.cores.idle_cores(); at most MAX_AUTO_JOBS) for a suite of
    PARALLEL_MIN_CASES places or more; none (this process alone) for a smaller suite or
    with fewer than two cores idle. Workers that must share a busy core with the parent
    cost more in hand-offs than they save, and so does starting them for a few cases."""
    if isinstance(cases, CaseStream):
        places = islice(iter_slots(cases.selection), PARALLEL_MIN_CASES * cases.parts)
        size = sum(1 for _ in places) // cases.parts
    else:
        size = len(cases) if isinstance(cases, Sized) else PARALLEL_MIN_CASES
    if size < PARALLEL_MIN_CASES:
        return 1
    workers = min(MAX_AUTO_JOBS, idle_cores() if idle is None else idle)
    return workers if workers >= 2 else 1


def check_case_sizes(cases: Sequence[Case], limit: int) -> None:
    """SuiteError naming the first case whose arrays need more than `limit` bytes."""
    for case in cases:
        need = operator_of(case).case_bytes(case)
        if need > limit:
            raise SuiteError(f"case {case.id}: its arrays need {need / 1e6:.0f} MB, over the "
                             f"limit of {limit / 1e6:.0f} MB (--max-case-mb)")



# -- materialising ------------------------------------------------------------------------


def _prepare_batch(cases: list[Case]) -> Prepared:
    """Worker entry point (top level, so it pickles): the cases' tensors, made ready
    for the writer (the worker sends rows and one flat array per dtype, not tensors)."""
    return prepare((c, make_tensors(c)) for c in cases)


def _plan_batch(stream: CaseStream, slots: list[SuiteSlot]) -> tuple[int, Prepared]:
    """Worker entry point: the cases of consecutive suite places, built, checked (as
    CaseStream does) and made ready for the writer. Stops after the place where the
    batch passed BATCH_ELEMENTS and says how many places it took: the caller sends the
    rest again, so a batch of large cases never holds more than about that much."""
    made: list[tuple[Case, CaseData]] = []
    elements = 0
    for taken, slot in enumerate(slots):
        if made and elements >= BATCH_ELEMENTS:
            return taken, prepare(made)
        for case in slot_cases(stream.selection, slot):
            case = case.following(stream.contract)
            stream.check(case)
            made.append((case, make_tensors(case)))
            elements += max(1, case.numel)
    return len(slots), prepare(made)


def batches(cases: Iterable[Case]) -> Iterator[list[Case]]:
    """Consecutive groups of cases, small enough to bound memory and IPC per task."""
    batch: list[Case] = []
    elements = 0
    for case in cases:
        n = max(1, case.numel)
        if batch and (len(batch) >= BATCH_CASES or elements + n > BATCH_ELEMENTS):
            yield batch
            batch, elements = [], 0
        batch.append(case)
        elements += n
    if batch:
        yield batch


def iter_prepared(cases: Iterable[Case], jobs: int = 1, executor: Any | None = None
                  ) -> Iterator[Prepared]:
    """The cases made ready for the writer, in suite order. With an executor (anything
    with concurrent.futures' submit: a Dask client's, aclcheck.executors.open_executor's)
    or jobs > 1 (a local process pool), the workers make them: from consecutive places
    of a suite (they plan the cases too: only the places cross the wire), or from
    batches of case records (a case file, a shard); at most twice the workers' batches
    are in flight."""
    if executor is not None:
        yield from _fan_out(cases, executor, 2 * max(1, jobs, slots(executor)))
        return
    if jobs <= 1:
        buffers = ResultBuffers()  # golden memory reused: the writer copies it at once
        for case in cases:
            interrupts.check()  # a Ctrl-C swallowed on the way (a finalizer) stops here
            yield prepare([(case, make_tensors(case, buffers=buffers))])
        return
    from aclcheck.executors import RenewingPool

    with RenewingPool(jobs) as pool:
        try:
            yield from _fan_out(cases, pool, 2 * jobs)
        except BaseException:  # interrupted, failed, or closed early: nothing more to wait for
            pool.stop()
            raise


def _fan_out(cases: Iterable[Case], executor: Executor, window: int) -> Iterator[Prepared]:
    if isinstance(cases, CaseStream) and cases.shard is None:
        yield from _fan_out_places(cases, executor, window)
        return
    fan: FanOut[list[Case]] = FanOut(executor, _prepare_batch)
    try:
        for batch in batches(cases):
            fan.send(batch, batch)
            if len(fan) >= window:
                yield _made(fan.next(), "cases")[1]
        while fan:
            yield _made(fan.next(), "cases")[1]
    finally:
        fan.stop()


def _made(done: Done[list[Any]], what: str) -> tuple[list[Any], Any]:
    """A batch as it came back; one lost twice (or that the executor refused to take
    again) stops the run: nothing is written."""
    lost = done.lost
    if lost is None:
        return done.key, done.result
    if lost.refused is not None:
        raise lost.refused
    assert lost.error is not None  # generate's fan-out has no allowance: a worker died
    raise WorkerLost(f"the executor lost the worker making a batch of {len(done.key)} {what} "
                     f"twice (killed, or out of memory? {first_sentence(lost.error)}): nothing "
                     "was written; rerun, with fewer --jobs or a smaller selection if memory "
                     "is short") from None


def _fan_out_places(stream: CaseStream, executor: Executor, window: int) -> Iterator[Prepared]:
    """_fan_out for a whole suite: batches of places; a batch a worker cut short (its
    cases were large) is sent again from where it stopped, ahead of the later ones. That
    rest is waited for next, so it does not count against the window (one more batch in
    flight at most: only the first pending batch can be a rest), and the workers keep
    the window's batches to make meanwhile. The batches after a cut take as many places
    as the cut one did, doubling again up to BATCH_PLACES as they come back whole."""
    fan: FanOut[list[SuiteSlot]] = FanOut(executor, _plan_batch)
    size = BATCH_PLACES
    resent = False  # the next batch back is the rest of a batch cut short

    def drain_one() -> Prepared:
        nonlocal size, resent
        slots, (taken, batch) = _made(fan.next(), "places")
        resent = taken < len(slots)
        if resent:
            rest = slots[taken:]
            fan.send(rest, stream, rest, ahead=True)
            size = max(1, taken)
        elif len(slots) >= size:
            size = min(BATCH_PLACES, 2 * size)
        return batch  # type: ignore[no-any-return]

    try:
        places = iter_slots(stream.selection)
        while batch := list(islice(places, size)):
            fan.send(batch, stream, batch)
            while len(fan) - resent >= window:
                yield drain_one()
        while fan:
            yield drain_one()
    finally:
        fan.stop()


# -- the whole run ------------------------------------------------------------------------


@dataclass
class ComboStats:
    cases: int = 0
    valid: int = 0  # cases with a golden
    array_bytes: int = 0


@dataclass
class GenerateStats:
    """What a run wrote: totals and a per (product, dtype, format) breakdown."""

    path: Path
    cases: int = 0
    array_bytes: int = 0
    file_bytes: int = 0
    seconds: float = 0.0
    combos: dict[tuple[str, str, str], ComboStats] = field(default_factory=dict)


def generate(
    path: str | Path,
    cases: Iterable[Case],
    meta: dict[str, Any],
    *,
    force: bool = False,
    compress: str = "none",
    jobs: int = 1,
    executor: Any | None = None,
    progress: ProgressFn | None = None,
) -> GenerateStats:
    """Materialise `cases` and write them to `path` atomically, in order (the same bytes
    whatever computes the tensors: this process, `jobs` local workers or `executor`)."""
    check_output_path(path, force)
    start = time.perf_counter()
    stats = GenerateStats(Path(path))
    total = len(cases) if isinstance(cases, Sized) else None
    source = iter_prepared(cases, jobs, executor)
    done = 0
    writer: GoldenWriter | None = None
    try:
        for batch in source:
            if writer is None:  # opened after the pool has forked its workers
                writer = GoldenWriter(path, meta, force=force, compress=compress)
            sizes = writer.add_prepared(batch)
            for case, nbytes, valid in zip(batch.cases, sizes, batch.has_golden,
                                           strict=True):
                done += 1
                combo = stats.combos.setdefault((case.product, case.dtype, case.format),
                                                ComboStats())
                combo.cases += 1
                combo.valid += valid
                combo.array_bytes += nbytes
                if progress is not None:
                    progress(done, total, case)
        if writer is None:
            writer = GoldenWriter(path, meta, force=force, compress=compress)
        stats.file_bytes = writer.commit()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    finally:
        source.close()
    stats.cases = done
    stats.array_bytes = writer.array_bytes
    stats.seconds = time.perf_counter() - start
    return stats
