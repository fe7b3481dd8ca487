"""Reused memory for large results (aclcheck._resultbuf via reference.empty_result).

What must hold: a result's memory is never handed out again while any array or view of
it is alive; freed memory is reused only for a request of a similar size; the cache stays
within its limit; with the limit at 0 results are plain np.empty arrays; and results made
from reused memory are as correct and as picklable as any other.
"""

from __future__ import annotations

import gc
import pickle
from collections.abc import Iterator

import numpy as np
import pytest

from aclcheck import reference
from aclcheck.reference import RESULT_CACHE_MIN_BYTES, backward, empty_result

pytestmark = pytest.mark.skipif(reference._resultbuf is None,
                                reason="aclcheck._resultbuf is not built (no C compiler?)")

BIG = RESULT_CACHE_MIN_BYTES // 8  # float64 elements of the smallest cached result
MIB = 1 << 20


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with an empty cache at a 64 MiB limit, and leaves none behind."""
    rb = reference._resultbuf
    assert rb is not None
    monkeypatch.setenv("ACLCHECK_RESULT_CACHE_MB", "64")
    gc.collect()
    rb.set_limit(0)
    rb.set_limit(64 * MIB)
    yield
    gc.collect()
    rb.set_limit(0)


def owner(a: np.ndarray) -> object:
    """The object at the end of an array's chain of bases (what keeps its memory)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.base


def stats() -> dict[str, int]:
    assert reference._resultbuf is not None
    return reference._resultbuf.stats()


def test_large_results_come_from_the_cache_and_go_back() -> None:
    a = empty_result((2, BIG))
    assert a.dtype == np.float64 and a.shape == (2, BIG)
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned
    assert isinstance(owner(a), reference._resultbuf.Block)
    a.fill(1.5)
    assert stats()["blocks"] == 0
    del a
    assert stats()["blocks"] == 1 and stats()["bytes"] == 2 * BIG * 8
    hits = stats()["hits"]
    b = empty_result((BIG, 2))  # the same bytes: reused
    assert stats()["hits"] == hits + 1 and stats()["blocks"] == 0
    del b


def test_small_results_are_plain_numpy() -> None:
    a = empty_result((3, 4, 5))
    assert a.base is None and a.flags.owndata


def test_memory_is_not_reused_while_a_view_lives() -> None:
    a = empty_result((BIG,))
    a.fill(7.0)
    view = a[10:20]
    del a
    assert stats()["blocks"] == 0  # the view keeps the block
    b = empty_result((BIG,))
    b.fill(-1.0)
    assert np.all(view == 7.0)
    del view
    assert stats()["blocks"] == 1
    del b


def test_only_similar_sizes_reuse_a_block() -> None:
    a = empty_result((4 * BIG,))
    del a
    misses = stats()["misses"]
    b = empty_result((BIG,))  # a quarter of the cached block: fresh memory
    assert stats()["misses"] == misses + 1 and stats()["blocks"] == 1
    c = empty_result((3 * BIG,))  # three quarters: reuses it
    assert stats()["blocks"] == 0
    del b, c


def test_cache_stays_within_its_limit() -> None:
    arrays = [empty_result((BIG,)) for _ in range(12)]  # 12 x 4 MiB, 8 slots, 64 MiB
    del arrays
    s = stats()
    assert s["blocks"] <= 8 and s["bytes"] <= s["limit"] == 64 * MIB
    huge = empty_result((20 * BIG,))  # 80 MiB: larger than the limit, never cached
    del huge
    assert stats()["bytes"] <= 64 * MIB
    reference._resultbuf.set_limit(8 * MIB)
    assert stats()["bytes"] <= 8 * MIB
    with pytest.raises(ValueError, match="limit must be >= 0"):
        reference._resultbuf.set_limit(-1)
    with pytest.raises(ValueError, match="nbytes must be >= 1"):
        reference._resultbuf.empty(0)


def test_the_oldest_blocks_go_first() -> None:
    a, b = empty_result((BIG,)), empty_result((2 * BIG,))
    del a  # cached first: the oldest
    del b
    reference._resultbuf.set_limit(2 * BIG * 8)  # room for one of them: b stays
    assert stats()["blocks"] == 1 and stats()["bytes"] == 2 * BIG * 8
    hits = stats()["hits"]
    c = empty_result((2 * BIG,))
    assert stats()["hits"] == hits + 1
    del c


def test_limit_zero_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACLCHECK_RESULT_CACHE_MB", "0")
    a = empty_result((BIG,))
    assert a.base is None and a.flags.owndata
    out = backward(np.ones((4, 8, 8), np.float32), (512, 256))
    assert owner(out) is None
    monkeypatch.setenv("ACLCHECK_RESULT_CACHE_MB", "junk")  # not a number: the default
    assert reference.result_cache_limit() == reference.RESULT_CACHE_DEFAULT_MB * MIB


def test_results_in_reused_memory_are_exact_and_picklable() -> None:
    rng = np.random.default_rng(5)
    g = rng.normal(size=(3, 7, 9)).astype(np.float32)
    hw = (700, 500)  # 8.4 MB of result: cached
    first = backward(g, hw)
    assert isinstance(owner(first), reference._resultbuf.Block)
    want = first.copy()
    del first
    for _ in range(3):  # every later result reuses the block: same bits each time
        again = backward(g, hw)
        assert again.tobytes() == want.tobytes()
        assert pickle.loads(pickle.dumps(again)).tobytes() == want.tobytes()
        del again
    assert stats()["hits"] >= 3
