"""What keeps `verify`'s memory independent of the case count (issue 25): the selection
streams from the index instead of holding a row per case, and HDF5 keeps no chunk cache
of its own (the packed reader reads each chunk once, in its own window). The peak RSS
figures are benchmarks/'s (bench_scale.py --part rss-verify); these tests count objects
and bytes, never time."""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

from aclcheck.running.session import Selection
from aclcheck.store import IndexEntry, open_golden
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
