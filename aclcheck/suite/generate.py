"""The generate pipeline: cases -> tensors (optionally in worker processes) -> golden file.

Workers only compute (make_tensors); the parent alone writes, in suite order, so the
file is the same whatever --jobs is. A bounded window of in-flight batches keeps memory
flat on large suites.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aclcheck import interrupts
from aclcheck.arrays import ResultBuffers
from aclcheck.cases import Case, CaseData
from aclcheck.cases.acl import normalize_format
from aclcheck.dtypes import normalize_dtype
from aclcheck.errors import SuiteError
from aclcheck.executors import ProcessPool
from aclcheck.ops import DEFAULT, operator, operator_of
from aclcheck.ops.materialize import make_tensors
from aclcheck.store import GoldenWriter, check_ids, check_output_path
from aclcheck.store.h5read import memory_bytes
from aclcheck.suite.casefile import load_case_file
from aclcheck.suite.selection import Selection, build_suite, check_unique
from aclcheck.suite.sharding import SELECTION_KEY, parse_shard, round_robin, shard_text

#: progress(done, total, case): called after each case is written.
ProgressFn = Callable[[int, int, Case], None]
#: A worker batch holds up to this many cases or this many elements, whichever first.
BATCH_CASES = 32
BATCH_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class Plan:
    """The cases to generate and what produced them (stored in the file's root)."""

    cases: list[Case]
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
) -> Plan:
    """Build the case list from CLI-style selections (empty = all applicable).

    With `cases_file`, the file's cases replace the family selection; products, dtypes
    and formats then filter them. Raises SuiteError for bad names or combinations, and
    for a case whose arrays need more than `max_case_bytes` (default: a quarter of the
    memory), before anything is allocated.
    """
    norm_dtypes = tuple(normalize_dtype(d) for d in dtypes)
    norm_formats = tuple(normalize_format(f) for f in formats)
    selection: dict[str, Any] = {
        "products": list(products), "dtypes": list(norm_dtypes), "formats": list(norm_formats),
    }
    if cases_file is not None:
        if families:
            raise SuiteError("--family does not apply with --cases-file (the file's cases "
                             "replace the families)")
        if count is not None:
            raise SuiteError("--count does not apply with --cases-file")
        cf = load_case_file(cases_file, seed, op)
        for p in products:
            operator(op).product(p)
        cases = [c for c in cf.cases
                 if (not products or c.product in products)
                 and (not norm_dtypes or c.dtype in norm_dtypes)
                 and (not norm_formats or c.format in norm_formats)]
        name = suite_name or cf.name or Path(cases_file).stem
        selection.update(cases_file=str(cases_file), seed=cf.seed)
    else:
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
        cases = build_suite(sel)
        custom = bool(products or dtypes or formats or families) or count is not None \
            or seed is not None
        name = suite_name or ("custom" if custom else "default")
        selection.update(families=list(sel.families), count=sel.count, seed=sel.seed)
    if shard_spec:
        k, n = parse_shard(shard_spec)
        cases = round_robin(cases, k, n)
        selection[SELECTION_KEY] = shard_text(k, n)
    check_unique(cases, name)
    check_ids(cases, SuiteError)
    if not cases:
        raise SuiteError("the selection matches no cases")
    check_case_sizes(cases, default_max_case_bytes() if max_case_bytes is None
                     else max_case_bytes)
    return Plan(cases, name, selection)


def default_max_case_bytes() -> int:
    """A quarter of the physical memory (at least 1 GiB): room for the arrays of a case
    and what the reference and the writer need beside them."""
    return max(1 << 30, memory_bytes() // 4)


def check_case_sizes(cases: Sequence[Case], limit: int) -> None:
    """SuiteError naming the first case whose arrays need more than `limit` bytes."""
    for case in cases:
        need = operator_of(case).case_bytes(case)
        if need > limit:
            raise SuiteError(f"case {case.id}: its arrays need {need / 1e6:.0f} MB, over the "
                             f"limit of {limit / 1e6:.0f} MB (--max-case-mb)")



# -- materialising ------------------------------------------------------------------------


def _batch_tensors(cases: list[Case]) -> list[CaseData]:
    """Worker entry point (top level, so it pickles)."""
    return [make_tensors(c) for c in cases]


def batches(cases: Sequence[Case]) -> Iterator[list[Case]]:
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


def iter_tensors(cases: Sequence[Case], jobs: int = 1) -> Iterator[tuple[Case, CaseData]]:
    """(case, tensors) in suite order; with jobs > 1 computed in a process pool, at most
    2 * jobs batches in flight."""
    if jobs <= 1:
        buffers = ResultBuffers()  # golden memory reused from case to case
        for case in cases:
            interrupts.check()  # a Ctrl-C swallowed on the way (a finalizer) stops here
            yield case, make_tensors(case, buffers=buffers)
        return
    with ProcessPool(jobs) as pool:
        pending: deque[tuple[list[Case], Future[list[CaseData]]]] = deque()
        try:
            for batch in batches(cases):
                pending.append((batch, pool.submit(_batch_tensors, batch)))
                if len(pending) >= 2 * jobs:
                    yield from _drain_one(pending)
            while pending:
                yield from _drain_one(pending)
        except BaseException:  # interrupted, failed, or closed early: nothing more to wait for
            pool.stop()
            raise


def _drain_one(
    pending: deque[tuple[list[Case], Future[list[CaseData]]]],
) -> Iterator[tuple[Case, CaseData]]:
    interrupts.check()  # before blocking: a Ctrl-C swallowed on the way stops here
    batch, fut = pending.popleft()
    yield from zip(batch, fut.result(), strict=True)


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

    @property
    def mb_per_s(self) -> float:
        return self.array_bytes / 1e6 / self.seconds if self.seconds > 0 else math.inf


def generate(
    path: str | Path,
    cases: Sequence[Case],
    meta: dict[str, Any],
    *,
    force: bool = False,
    compress: str = "none",
    jobs: int = 1,
    progress: ProgressFn | None = None,
) -> GenerateStats:
    """Materialise `cases` and write them to `path` atomically, in order."""
    check_output_path(path, force)
    start = time.perf_counter()
    stats = GenerateStats(Path(path))
    total = len(cases)
    source = iter_tensors(cases, jobs)
    writer: GoldenWriter | None = None
    try:
        for done, (case, tensors) in enumerate(source, 1):
            if writer is None:  # opened after the pool has forked its workers
                writer = GoldenWriter(path, meta, force=force, compress=compress)
            nbytes = writer.add(case, tensors)
            combo = stats.combos.setdefault((case.product, case.dtype, case.format),
                                            ComboStats())
            combo.cases += 1
            combo.valid += tensors.golden is not None
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
    stats.cases = total
    stats.array_bytes = writer.array_bytes
    stats.seconds = time.perf_counter() - start
    return stats
