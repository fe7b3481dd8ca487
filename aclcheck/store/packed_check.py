"""The integrity check of a packed golden file (`inspect --check` on schema 3): every case
read (records, slots, views, checksums of every chunk a case touches), and the pools
accounted for: the cases' slices tile each pool, with no element unowned or shared."""

from __future__ import annotations

from array import array
from pathlib import Path

import numpy as np

from aclcheck.errors import InputFileError
from aclcheck.store.check import CheckReport
from aclcheck.store.h5read import damage
from aclcheck.store.packed import INPUTS, POOL_GROUP
from aclcheck.store.packed_reader import PackedFile, open_packed
from aclcheck.store.schema import FORMAT_GOLDEN


def check_packed(path: str | Path) -> CheckReport:
    """Read every case and validate the pools; problems are collected, one line each. A
    file that cannot even be opened raises InputFileError."""
    report = CheckReport(Path(path), FORMAT_GOLDEN)
    with open_packed(path) as pf:
        p = pf.path
        starts = {name: array("q") for name in pf.pools()}  # compact: 8 bytes a slice
        counts = {name: array("q") for name in pf.pools()}
        for entry in pf.index:
            report.cases += 1
            try:
                with damage(p, f"case {entry.id}"):
                    _check_case(pf, entry.id, report, starts, counts)
            except InputFileError as exc:
                report.add(str(exc).removeprefix(f"{p}: "))
        for name, length in pf.pools().items():
            problem = tiling_problem(np.frombuffer(starts[name], np.int64),
                                     np.frombuffer(counts[name], np.int64), length)
            if problem:
                report.add(f"/{POOL_GROUP}/{name}: {problem}")
    return report


def _check_case(pf: PackedFile, cid: str, report: CheckReport,
                starts: dict[str, array[int]], counts: dict[str, array[int]]) -> None:
    slots = pf.slots(cid)
    for name in INPUTS:
        t = pf.tensor(cid, name)
        if t is not None:
            report.datasets += 1
            report.bytes_read += t.storage.nbytes
    golden = pf.golden(cid)
    if golden is not None:
        report.datasets += 1
        report.bytes_read += golden.nbytes
    for slot in slots.values():
        if slot.stored and slot.count and slot.dtype in starts:
            starts[slot.dtype].append(slot.start)
            counts[slot.dtype].append(slot.count)


def tiling_problem(starts: np.ndarray, counts: np.ndarray, length: int) -> str | None:
    """Why slices (start, count) do not cover [0, length) exactly once, or None."""
    order = np.argsort(starts, kind="stable")
    s, c = starts[order], counts[order]
    ends = s + c
    if s.size == 0:
        return f"{length} elements that no case owns" if length else None
    if s[0] != 0:
        return f"elements 0..{s[0] - 1} belong to no case"
    overlap = np.flatnonzero(s[1:] < ends[:-1])
    if overlap.size:
        i = overlap[0]
        return f"elements {s[i + 1]}..{min(ends[i], ends[i + 1]) - 1} belong to two cases"
    gap = np.flatnonzero(s[1:] > ends[:-1])
    if gap.size:
        i = gap[0]
        return f"elements {ends[i]}..{s[i + 1] - 1} belong to no case"
    if ends[-1] != length:
        return f"elements {ends[-1]}..{length - 1} belong to no case"
    return None
