"""The integrity check of a golden file (`inspect --check` on schema 3, packed): every case
read (records, slots, views, checksums of every chunk a case touches), and the pools
accounted for: the cases' slices tile each pool, with no element unowned or shared."""

from __future__ import annotations

from pathlib import Path

from aclcheck.errors import InputFileError
from aclcheck.store.check_report import CheckReport
from aclcheck.store.codec import FORMAT_GOLDEN
from aclcheck.store.golden_reader import PackedFile
from aclcheck.store.golden_schema import POOL_GROUP
from aclcheck.store.h5read import CORRUPT, H5_ERRORS, damage

#: Elements of a pool read (and checksummed) at a time, in whole chunks.
VERIFY_BYTES = 16 << 20


def check_packed(path: str | Path) -> CheckReport:
    """Read every array and validate every row; problems are collected, one line each. A
    file that cannot even be opened raises InputFileError.

    Memory stays flat and the work is in blocks: each pool is read once, front to back,
    a few chunks at a time (HDF5 verifies every chunk's fletcher32); the rows are read
    and checked block by block (each case's record, its row, its slots inside their pool
    and clear of any chunk that failed), and the tiling is checked as the cases go (the
    writer appends every case's arrays in row order, so each slice must start where the
    one before it in its pool ended)."""
    report = CheckReport(Path(path), FORMAT_GOLDEN)
    with PackedFile(path) as pf:
        p = pf.path
        lengths = pf.pools()
        corrupt = {name: _verify_pool(pf, name, report) for name in lengths}
        tiles = {name: _Tiling(name) for name in lengths}
        for i, cid in enumerate(pf.row_ids()):
            report.cases += 1
            try:
                with damage(p, f"case {cid}"):
                    _check_case(pf, i, cid, report, tiles, corrupt)
            except InputFileError as exc:
                report.add(exc.detail(p))
        for name, length in lengths.items():
            problem = tiles[name].end_problem(length)
            if problem:
                report.add(f"/{POOL_GROUP}/{name}: {problem}")
    return report


def _verify_pool(pf: PackedFile, name: str, report: CheckReport) -> list[tuple[int, int]]:
    """Read pool `name` whole, a block of chunks at a time; the element ranges of the
    chunks whose checksum (or read) failed."""
    pool = pf.pool(name)
    step = max(1, VERIFY_BYTES // (pool.chunk * pool.storage.itemsize)) * pool.chunk
    bad: list[tuple[int, int]] = []
    for lo in range(0, pool.length, step):
        hi = min(pool.length, lo + step)
        try:
            pool.read_range(lo, hi - lo)
        except H5_ERRORS:
            for c in range(lo, hi, pool.chunk):  # which chunks
                end = min(hi, c + pool.chunk)
                try:
                    pool.read_range(c, end - c)
                except H5_ERRORS:
                    bad.append((c, end))
                    continue
                report.bytes_read += (end - c) * pool.storage.itemsize
            continue
        report.bytes_read += (hi - lo) * pool.storage.itemsize
    return bad


def _check_case(pf: PackedFile, i: int, cid: str, report: CheckReport,
                tiles: dict[str, _Tiling], corrupt: dict[str, list[tuple[int, int]]]) -> None:
    _, _, slots = pf.checked_row(i, cid)
    for name, slot in slots.items():
        if not slot.stored:
            continue
        report.datasets += 1
        if not slot.count:
            continue
        pf.check_bounds(slot, f"case {cid}: {name}")
        end = slot.start + slot.count
        if any(lo < end and slot.start < hi for lo, hi in corrupt[slot.dtype]):
            report.add(f"case {cid}: {name}: {CORRUPT}")
        problem = tiles[slot.dtype].add(cid, slot.start, slot.count)
        if problem:
            report.add(problem)


class _Tiling:
    """Whether one pool's slices, in row order, cover it back to back exactly once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.next = 0

    def add(self, cid: str, start: int, count: int) -> str | None:
        """Account one non-empty slice; the problem with it, or None."""
        problem = None
        if start > self.next:
            problem = f"elements {self.next}..{start - 1} belong to no case"
        elif start < self.next:
            problem = f"elements {start}..{min(self.next, start + count) - 1} belong to two cases"
        self.next = max(self.next, start + count)
        return None if problem is None else f"case {cid}: /{POOL_GROUP}/{self.name}: {problem}"

    def end_problem(self, length: int) -> str | None:
        if self.next < length:
            return f"elements {self.next}..{length - 1} belong to no case"
        return None
