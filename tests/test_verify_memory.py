"""What keeps `verify`'s memory independent of the case count (issue 25): the selection
streams from the index instead of holding a row per case, and HDF5 keeps no chunk cache
of its own (the packed reader reads each chunk once, in its own window). The peak RSS
figures are benchmarks/'s (bench_scale.py --part rss-verify); these tests count objects
and bytes, never time."""

from __future__ import annotations

import gc
import io
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import overload

import pytest
from rich.console import Console
from rich.table import Table

from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.judging.diagnosis.ranking import diagnose
from aclcheck.judging.diagnosis.signature import (
    AxisKind,
    CaseFacts,
    failure_signature,
    rules,
    tally,
)
from aclcheck.judging.gate import spool as spool_module
from aclcheck.judging.gate.spool import VerdictSpool
from aclcheck.report.console import print_in_pieces
from aclcheck.report.safe_text import data_text
from aclcheck.running.session import FactsLog, Selection
from aclcheck.store.dispatch import open_golden
from aclcheck.store.index import IndexEntry
from aclcheck.suite import sharding
from aclcheck.suite.filters import row_filter, select


class LiveIndex(Sequence[IndexEntry]):
    """An index that makes its rows as they are asked for and counts how many are alive
    (how many a reader of it holds)."""

    def __init__(self, rows: int) -> None:
        self.rows, self.alive, self.most = rows, 0, 0

    def __len__(self) -> int:
        return self.rows

    def _entry(self, i: int) -> IndexEntry:
        entry = IndexEntry(
            f"case-{i:06d}", ("divisible", "nondivisible", "invalid")[i % 3], "atlas-a2",
            ("float32", "float16")[i % 2], "ND", "contiguous", "uniform",
            (("self_shape", (1, 2, 4, 4)),), (), 0, "", True, True, 64 + i % 7)
        self.alive += 1
        self.most = max(self.most, self.alive)
        weakref.finalize(entry, self._gone)
        return entry

    def _gone(self) -> None:
        self.alive -= 1

    @overload
    def __getitem__(self, i: int) -> IndexEntry: ...

    @overload
    def __getitem__(self, i: slice) -> list[IndexEntry]: ...

    def __getitem__(self, i: int | slice) -> IndexEntry | list[IndexEntry]:
        if isinstance(i, slice):
            return [self._entry(j) for j in range(*i.indices(self.rows))]
        return self._entry(i)

    def __iter__(self) -> Iterator[IndexEntry]:
        for i in range(self.rows):
            yield self._entry(i)


def test_selection_holds_no_row_per_case() -> None:
    index = LiveIndex(20_000)
    keep = row_filter(index, families=["!invalid"], dtypes=["float32"])
    chosen = Selection(index, keep)
    assert chosen.count() == sum(1 for i in range(20_000) if i % 3 != 2 and i % 2 == 0)
    taken = 0
    for case_id, position in chosen:  # the run's pass: ids and positions as they come
        assert case_id == f"case-{position:06d}"
        taken += 1
    assert taken == chosen.count()
    assert index.most <= 2  # a row or two at a time, whatever the count
    assert index.alive == 0


def test_selection_is_select_in_index_order() -> None:
    index = LiveIndex(3_000)
    filters = {"families": ["divisible", "invalid"], "id_pattern": ["case-00*", "case-02*"]}
    rows = select(index, **filters)
    chosen = Selection(index, row_filter(index, **filters))
    assert list(chosen) == [(r.id, int(r.id[5:])) for r in rows]
    # --shard: the same cases, in the same order, as a shard of the selected rows
    mine = sharding.select([(r.id, r.nbytes) for r in rows], 2, 3)
    sharded = Selection(index, row_filter(index, **filters), mine)
    assert [cid for cid, _ in sharded] == [r.id for r in rows if r.id in mine]


def test_golden_files_are_read_without_an_hdf5_chunk_cache(a2_fp32_golden: Path) -> None:
    """HDF5's default cache (8 MiB a dataset: each dtype's pool and the index) fills as a
    larger file is read and was most of what verify's peak grew by; the packed reader
    reads each chunk once into its own window, so the cache only held copies."""
    with open_golden(a2_fp32_golden) as gf:
        f = gf._f  # noqa: SLF001 - the open HDF5 file's access properties
        assert f.id.get_access_plist().get_cache()[2] == 0
        first = next(iter(gf.index)).id
        assert gf.data(first).case.id == first  # reads work as before


# -- the diagnosis' facts: counted, not a record a case ------------------------------------

def _facts(i: int, verdict: str = "") -> CaseFacts:
    """Facts of case i: a few distinct kinds, each made anew (as a run's records make them)."""
    kinds = (AxisKind.DIVISIBLE, AxisKind.NONDIVISIBLE, AxisKind.UPSAMPLING)
    return CaseFacts(f"c{i}", verdict, "".join(("fam", str(i % 3))), "contiguous",
                     3 + i % 2, "atlas-a2", ("float16", "float32")[i % 2],
                     i % 5 != 0, (("H", kinds[i % 3]), ("W", kinds[i % 2])), i % 4 == 0,
                     "float32")


def _verdict(i: int) -> CaseVerdict:
    return CaseVerdict(case_id=f"c{i}", verdict=Verdict.FAIL if i % 7 == 0 else Verdict.PASS,
                       message="", product="atlas-a2", dtype="float16", format="ND",
                       family="x")


def test_facts_log_keeps_each_distinct_facts_once() -> None:
    log = FactsLog()
    for i in range(30_000):
        log.append(replace(_facts(i), case_id=""))
        if i % 1000 == 999:
            log.append(None)  # a case without facts
    assert len(log) == 30_030
    distinct = len({replace(_facts(i), case_id="") for i in range(30_000)})
    # the log holds the distinct facts (and 4 bytes a case), not a record a case
    held = [o for o in gc.get_objects() if type(o) is CaseFacts]
    assert len(held) <= distinct + 2
    assert len(log._table) == distinct < 100  # noqa: SLF001
    assert log._cases.itemsize == 4  # noqa: SLF001


def test_counted_facts_diagnose_as_the_list_did() -> None:
    """The diagnosis of a run from its FactsLog equals the diagnosis from a list of every
    case's facts (what a run kept before): signature tables, rules, entries."""
    verdicts = [_verdict(i) for i in range(3_000)]
    log = FactsLog()
    for i in range(3_000):
        log.append(replace(_facts(i), case_id=""))
    listed = [replace(_facts(i), verdict=v.verdict.value) for i, v in enumerate(verdicts)]
    counted = log.tally(verdicts)
    assert sum(counted.values()) == len(listed)
    assert failure_signature(counted) == failure_signature(listed)
    assert rules(counted) == rules(listed)
    assert diagnose(verdicts, counted) == diagnose(verdicts, listed)
    # rules that hold read the same counts counted as listed
    layout_only = [replace(f, verdict="FAIL" if f.rank == 3 else "PASS") for f in listed]
    assert rules(layout_only) == rules(tally(layout_only)) != ()


# -- the verdict spool: a file offset per STRIDE verdicts, not one a verdict ---------------

def test_spool_keeps_an_offset_per_stride(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spool_module, "STRIDE", 7)
    monkeypatch.setattr(spool_module, "_CHUNK", 100)  # records span the read blocks
    written = [_verdict(i) for i in range(500)]
    written = [replace(v, detail="d" * (i * 53 % 400)) for i, v in enumerate(written)]
    with VerdictSpool() as spool:
        for v in written:
            spool.append(v)
        assert len(spool._marks) == -(-500 // 7)  # noqa: SLF001
        assert list(spool) == written
        for i in (0, 6, 7, 8, 13, 14, 250, 497, 499, -1, -7):
            assert spool[i] == written[i]
        assert spool[3:17] == written[3:17]


def test_packed_reader_holds_12_bytes_a_case_for_lookups(a2_fp32_golden: Path) -> None:
    """Not the id column (its width a case, 62 bytes in a default suite): a hash and a
    row number; each lookup is confirmed by the row's own id."""
    with open_golden(a2_fp32_golden) as gf:
        held = gf._hashes.nbytes + gf._order.nbytes  # noqa: SLF001
        assert held == 12 * gf.case_count
        ids = list(gf.row_ids())
        for i in (0, len(ids) // 2, len(ids) - 1):
            assert gf.entry(ids[i]).id == ids[i] and ids[i] in gf
            assert gf.case(ids[i]).id == ids[i]
        assert "no-such-case" not in gf and ids[0] + "x" not in gf


# -- the console: a long table written a piece at a time -----------------------------------

class Writes(io.StringIO):
    """A console's file that notes the size of each write."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def write(self, s: str) -> int:
        self.sizes.append(len(s))
        return super().write(s)


@pytest.mark.parametrize("terminal", [False, True])
def test_a_long_table_prints_the_same_bytes_in_pieces(terminal: bool) -> None:
    def table() -> Table:
        t = Table(title="documentation divergences (reported, not judged)")
        t.add_column("case", overflow="fold")
        t.add_column("what the implementation did", overflow="fold")
        for i in range(3_000):
            t.add_row(data_text(f"case-{i:05d}" + "-x" * (i % 40)),
                      data_text("accepted " + "[b]word[/b] " * (i % 13)))
        return t

    files = []
    for show in (lambda c: c.print(table()), lambda c: print_in_pieces(c, table())):
        out = Writes()
        show(Console(file=out, width=90, force_terminal=terminal, color_system="standard"))
        files.append(out)
    whole, pieces = files
    assert pieces.getvalue() == whole.getvalue()
    assert len(whole.sizes) == 1  # rich held the whole table's lines until then
    assert max(pieces.sizes) < len(whole.getvalue()) / 10  # at most 256 lines at a time


# -- the end of a run: each pass over the spooled verdicts unpickles them all -----------------

class Passes(Sequence[CaseVerdict]):
    """Verdicts that count how often they are read through (a VerdictSpool unpickles every
    verdict at each pass)."""

    def __init__(self, items: list[CaseVerdict]) -> None:
        self.items, self.passes = items, 0

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, i: int) -> CaseVerdict: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[CaseVerdict]: ...

    def __getitem__(self, i: int | slice) -> CaseVerdict | Sequence[CaseVerdict]:
        return self.items[i]

    def __iter__(self) -> Iterator[CaseVerdict]:
        self.passes += 1
        return iter(self.items)


def test_the_console_and_the_diagnosis_read_the_verdicts_once_each() -> None:
    from aclcheck.report.console import render

    kinds = [Verdict.PASS, Verdict.FAIL, Verdict.SKIP, Verdict.ERROR, Verdict.XPASS]
    verdicts = Passes([CaseVerdict(case_id=f"c{i}", verdict=kinds[i % 5], message="m",
                                   product="atlas-a2", dtype="float32", format="ND",
                                   family="f", divergence="d" if i % 7 == 0 else None)
                       for i in range(40)])
    out = io.StringIO()
    render(Console(file=out, width=100), verdicts, implementation="impl")
    assert verdicts.passes == 1
    text = out.getvalue()
    assert "16 of 40 cases nonconforming" in text and "documentation divergences" in text
    verdicts.passes = 0
    diagnose(verdicts, [])
    assert verdicts.passes == 1
