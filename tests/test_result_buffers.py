"""Caller-owned result memory: backward(out=...) and arrays.ResultBuffers.

A result written into `out=` must be bit-identical to a fresh one; a wrong buffer is
refused (never silently reshaped or cast); ResultBuffers reuses a block only when nothing
made from it is alive, so a result the caller still holds is never overwritten.
"""

from __future__ import annotations

import numpy as np
import pytest

from aclcheck.arrays import ResultBuffers
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward
from aclcheck.ops.materialize import make_tensors
from aclcheck.suite.selection import Selection, build_suite

BIG = (4 << 20) // 8  # float64 elements of the smallest result a ResultBuffers keeps


def grads(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(2, 3, 7, 9)).astype(np.float32)


@pytest.mark.parametrize("pure", ["0", "1"])
def test_out_gives_the_same_bits_and_is_returned(pure: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACLCHECK_PURE_NUMPY", pure)
    g = grads()
    want = backward(g, (20, 23))
    out = np.full((2, 3, 20, 23), 123.0)  # stale contents: every element must be written
    got = backward(g, (20, 23), out=out)
    assert got is out
    assert got.tobytes() == want.tobytes()
    m = backward(g, (20, 23), absolute=True, out=np.empty((2, 3, 20, 23)))
    assert m.tobytes() == backward(g, (20, 23), absolute=True).tobytes()


def test_out_with_empty_grad_is_zero_filled() -> None:
    out = np.full((2, 0, 4, 4), 5.0)
    assert backward(np.ones((2, 0, 2, 2)), (4, 4), out=out) is out
    out = np.full((3, 4, 4), 5.0)
    assert not backward(np.ones((3, 0, 2)), (4, 4), out=out).any()


@pytest.mark.parametrize("out, error, words", [
    (np.empty((2, 3, 20, 22)), ValueError, "shape"),
    (np.empty((6, 20, 23)), ValueError, "shape"),
    (np.empty((2, 3, 20, 23), dtype=np.float32), TypeError, "float64"),
    (np.empty((2, 3, 23, 20)).transpose(0, 1, 3, 2), ValueError, "C-contiguous"),
    ([[0.0]], TypeError, "numpy array"),
])
def test_wrong_out_is_refused(out: object, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        backward(grads(), (20, 23), out=out)  # type: ignore[arg-type]


def test_read_only_or_overlapping_out_is_refused() -> None:
    ro = np.empty((2, 3, 20, 23))
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="writable"):
        backward(grads(), (20, 23), out=ro)
    # The result would overwrite terms not yet read: refused, not computed wrongly.
    storage = np.zeros(2 * 3 * 20 * 23)
    g = storage[: 2 * 3 * 7 * 9].reshape(2, 3, 7, 9)
    with pytest.raises(ValueError, match="shares memory"):
        backward(g, (20, 23), out=storage.reshape(2, 3, 20, 23))


def test_buffers_reuse_a_block_once_its_result_is_gone() -> None:
    bufs = ResultBuffers(slots=2)
    a = bufs.take((2, BIG))
    first = a.__array_interface__["data"][0]
    del a
    b = bufs.take((BIG, 2))  # the same bytes: the same block
    assert bufs.reused == 1 and b.__array_interface__["data"][0] == first
    assert b.shape == (BIG, 2) and b.dtype == np.float64 and b.flags.c_contiguous
    del b
    c = bufs.take((BIG,))  # smaller: fits in the kept block
    assert bufs.reused == 2 and c.__array_interface__["data"][0] == first


def test_buffers_never_alias_a_live_result_or_view() -> None:
    bufs = ResultBuffers(slots=2)
    a = bufs.take((BIG,))
    b = bufs.take((BIG,))
    assert not np.shares_memory(a, b)
    view = a[10:20]
    wrapped = memoryview(b)
    del a, b
    c = bufs.take((BIG,))  # both blocks still in use (a view, a memoryview): fresh memory
    assert bufs.reused == 0
    assert not np.shares_memory(c, view) and not np.shares_memory(c, np.asarray(wrapped))
    del view
    d = bufs.take((BIG,))  # a's block is free now
    assert bufs.reused == 1 and not np.shares_memory(d, np.asarray(wrapped))
    assert not np.shares_memory(d, c)


def test_buffers_replace_a_free_block_that_is_too_small() -> None:
    bufs = ResultBuffers(slots=1)
    small = bufs.take((BIG,))
    del small
    large = bufs.take((3 * BIG,))  # the free block is too small: replaced, not reused
    assert bufs.reused == 0
    del large
    again = bufs.take((2 * BIG,))
    assert bufs.reused == 1 and again.size == 2 * BIG


def test_small_and_huge_results_are_not_kept() -> None:
    bufs = ResultBuffers(max_bytes=2 * BIG * 8)
    for _ in range(3):
        assert bufs.take((3, 4)).shape == (3, 4)  # below min_bytes
        assert bufs.take((3 * BIG,)).shape == (3 * BIG,)  # above max_bytes
    assert bufs.reused == 0  # plain np.empty each time, nothing kept
    bufs.take((2 * BIG,))
    bufs.take((2 * BIG,))
    assert bufs.reused == 1


def test_bad_slots() -> None:
    with pytest.raises(ValueError, match="slots"):
        ResultBuffers(slots=0)


def test_golden_loop_with_buffers_is_bit_identical() -> None:
    """make_tensors with shared buffers (the generate loop) gives the same goldens, and a
    golden kept by the caller is never overwritten by the next case's."""
    cases = [c for c in build_suite(Selection(count=1)) if c.positive][:12]
    bufs = ResultBuffers(slots=1, min_bytes=0)  # every golden through the buffers
    kept = []
    for case in cases:
        golden = make_tensors(case, buffers=bufs).golden
        assert golden is not None
        kept.append(golden)  # all alive: each must land in memory of its own
    for case, golden in zip(cases, kept, strict=True):
        want = make_tensors(case).golden
        assert want is not None and golden.tobytes() == want.tobytes()
    kept.clear()
    for case in cases:  # dropped each time: the one block is reused
        golden = make_tensors(case, buffers=bufs).golden
        want = make_tensors(case).golden
        assert golden is not None and want is not None
        assert golden.tobytes() == want.tobytes()
        del golden
    assert bufs.reused >= len(cases) - 1
