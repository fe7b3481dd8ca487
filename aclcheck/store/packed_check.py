"""The integrity check of a packed golden file (`inspect --check` on schema 3): every case
read (records, slots, views, checksums of every chunk a case touches), and the pools
accounted for: the cases' slices tile each pool, with no element unowned or shared."""

from __future__ import annotations

from pathlib import Path

from aclcheck.errors import InputFileError
from aclcheck.store.check_report import CheckReport
from aclcheck.store.codec import FORMAT_GOLDEN
from aclcheck.store.h5read import damage
from aclcheck.store.packed import POOL_GROUP
from aclcheck.store.packed_reader import PackedFile, open_packed


def check_packed(path: str | Path) -> CheckReport:
    """Read every case and validate the pools; problems are collected, one line each. A
    file that cannot even be opened raises InputFileError. Memory stays flat: rows are
    read block by block, and the tiling is checked as the cases go (the writer appends
    every case's arrays in row order, so each slice must start where the one before it
    in its pool ended)."""
    report = CheckReport(Path(path), FORMAT_GOLDEN)
    with open_packed(path) as pf:
        p = pf.path
        tiles = {name: _Tiling(name) for name in pf.pools()}
        for entry in pf.index:
            report.cases += 1
            try:
                with damage(p, f"case {entry.id}"):
                    _check_case(pf, entry.id, report, tiles)
            except InputFileError as exc:
                report.add(exc.detail(p))
        for name, length in pf.pools().items():
            problem = tiles[name].end_problem(length)
            if problem:
                report.add(f"/{POOL_GROUP}/{name}: {problem}")
    return report


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


def _check_case(pf: PackedFile, cid: str, report: CheckReport,
                tiles: dict[str, _Tiling]) -> None:
    slots = pf.slots(cid)
    for t in pf.inputs(cid):
        if t is not None:
            report.datasets += 1
            report.bytes_read += t.storage.nbytes
    golden = pf.golden(cid)
    if golden is not None:
        report.datasets += 1
        report.bytes_read += golden.nbytes
    for slot in slots.values():
        if slot.stored and slot.count and slot.dtype in tiles:
            problem = tiles[slot.dtype].add(cid, slot.start, slot.count)
            if problem:
                report.add(problem)
