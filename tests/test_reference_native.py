"""The operator's compiled kernel (_spread) against the numpy path of the reference, bit
for bit.

Every comparison is of the raw bytes (`.tobytes()`), so a -0.0, a subnormal or a NaN's
sign that differed would fail. The one documented exception: a sum of two NaNs of
different sign, where numpy's own result depends on the position of the element in its
SIMD loop (and so on the chunk size); there the kernel keeps the accumulator's NaN, and
the tests below compare NaN-ness plus every other bit.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager

import ml_dtypes
import numpy as np
import pytest

from aclcheck.ops.adaptive.windows import spread_plan
from aclcheck.ops.adaptive_avg_pool2d_backward import reference
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward
from aclcheck.ops.materialize import make_inputs
from aclcheck.suite.selection import Selection, build_suite

pytestmark = pytest.mark.skipif(
    reference._native is None,
    reason="aclcheck.ops.adaptive_avg_pool2d_backward._spread is not built (no C "
    "compiler at install time?); "
    "the numpy path is in use and tests/test_reference.py covers it",
)

#: The platform's default NaN (what inf - inf gives): an input NaN with these bits meets
#: only NaNs with the same bits, so every result is exact even where NaNs add up.
with np.errstate(invalid="ignore"):
    DEFAULT_NAN = float(np.array(np.inf) - np.array(np.inf))


@contextmanager
def env(**values: str | None) -> Iterator[None]:
    """Set (or with None, remove) environment variables for the duration of a block."""
    with pytest.MonkeyPatch.context() as mp:
        for k, v in values.items():
            if v is None:
                mp.delenv(k, raising=False)
            else:
                mp.setenv(k, v)
        yield


def numpy_path(grad: np.ndarray, in_hw: tuple[int, int], **kw: object) -> np.ndarray:
    with env(ACLCHECK_PURE_NUMPY="1"):
        assert not reference.native_available()
        return backward(grad, in_hw, **kw)  # type: ignore[arg-type]


def native_path(grad: np.ndarray, in_hw: tuple[int, int], threads: int | None = None,
                **kw: object) -> np.ndarray:
    with env(ACLCHECK_PURE_NUMPY=None, ACLCHECK_THREADS=None if threads is None
             else str(threads)):
        assert reference.native_available()
        return backward(grad, in_hw, **kw)  # type: ignore[arg-type]


def assert_same_bits(want: np.ndarray, got: np.ndarray, what: object) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype == np.float64, what
    assert got.flags.c_contiguous, what
    if got.tobytes() != want.tobytes():
        bad = np.argwhere(want.view(np.uint64) != got.view(np.uint64))
        at = tuple(bad[0])
        pytest.fail(f"{what}: {len(bad)} elements differ, first at {at}: "
                    f"numpy {want[at]!r} ({int(want.view(np.uint64)[at]):#x}), "
                    f"compiled {got[at]!r} ({int(got.view(np.uint64)[at]):#x})")


def assert_same_up_to_nan_sign(want: np.ndarray, got: np.ndarray, what: object) -> None:
    """NaN where numpy has NaN, every other element bit for bit."""
    assert got.shape == want.shape, what
    nan = np.isnan(want)
    assert np.array_equal(nan, np.isnan(got)), what
    assert want[~nan].tobytes() == got[~nan].tobytes(), what


def compare(grad: np.ndarray, in_hw: tuple[int, int], *, exact: bool = True,
            threads: int | None = None, **kw: object) -> None:
    want = numpy_path(grad, in_hw, **kw)
    got = native_path(grad, in_hw, threads=threads, **kw)
    what = (np.shape(grad), in_hw, kw, threads)
    if exact:
        assert_same_bits(want, got, what)
    else:
        assert_same_up_to_nan_sign(want, got, what)


def specials(rng: np.random.Generator, shape: tuple[int, ...], nan: float) -> np.ndarray:
    """Normal values with +-inf, NaN (the given bits), +-0, subnormals and huge values."""
    n = math.prod(shape)
    v = rng.normal(0.0, 3.0, n)
    pool = np.array([np.inf, -np.inf, nan, 0.0, -0.0, 5e-324, -5e-324, 2.2e-308, -1e-310,
                     1.7e308, -1.7e308])
    pick = rng.random(n) < 0.4
    v[pick] = pool[rng.integers(0, len(pool), int(pick.sum()))]
    return v.reshape(shape)


# -- the suite's goldens ------------------------------------------------------------------


def _positive_cases(sel: Selection) -> list:
    return [c for c in build_suite(sel) if c.positive]


SUITE = _positive_cases(Selection(count=3))
STRESS = _positive_cases(Selection(families=("stress",), count=2))


@pytest.mark.parametrize("part", range(4))
def test_suite_goldens_are_bit_identical(part: int) -> None:
    """Every positive case of build_suite(Selection(count=3)), its golden and its m."""
    cases = SUITE[part::4]
    assert cases
    for case in cases:
        grad, _ = make_inputs(case)
        assert grad is not None
        hw = tuple(case.self_shape[-2:])
        for absolute in (False, True):
            want = numpy_path(grad.view(), hw, absolute=absolute)
            got = native_path(grad.view(), hw, absolute=absolute)
            assert_same_bits(want, got, (case.id, absolute))


def test_stress_family_is_bit_identical() -> None:
    """Index-stress shapes (i * in beyond 2**31), at two chunk sizes and two thread counts."""
    assert STRESS
    for case in STRESS:
        grad, _ = make_inputs(case)
        assert grad is not None
        hw = tuple(case.self_shape[-2:])
        want = numpy_path(grad.view(), hw)
        for threads, chunk in ((1, reference.DEFAULT_CHUNK_ELEMS), (2, 1 << 22)):
            got = native_path(grad.view(), hw, threads=threads, chunk_elems=chunk)
            assert_same_bits(want, got, (case.id, threads, chunk))


# -- random shapes ------------------------------------------------------------------------


def _random_shape(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, int]]:
    """(grad shape, (H, W)): downsampling, upsampling (depth > 2), 1x1, lead dims 0-3."""
    kind = rng.integers(0, 4)
    if kind == 0:  # downsampling, mostly non-divisible
        ho, wo = rng.integers(1, 12, 2)
        h, w = int(ho * rng.integers(1, 4) + rng.integers(0, 5)), int(wo + rng.integers(0, 20))
    elif kind == 1:  # upsampling: several windows cover one position (depth up to ~9)
        h, w = rng.integers(1, 8, 2)
        ho, wo = int(h * rng.integers(1, 5) + rng.integers(0, 4)), int(w + rng.integers(0, 30))
    elif kind == 2:  # 1x1 on either side
        ho, wo, h, w = rng.integers(1, 30, 4)
        if rng.random() < 0.5:
            ho, wo = 1, 1
        else:
            h, w = 1, 1
    else:
        ho, wo, h, w = rng.integers(1, 40, 4)
    lead = tuple(int(x) for x in rng.integers(1, 5, rng.integers(0, 4)))
    return lead + (int(ho), int(wo)), (int(h), int(w))


@pytest.mark.parametrize("seed", range(4))
def test_random_shapes_are_bit_identical(seed: int) -> None:
    """400 random shapes (100 per seed), finite values, random chunk sizes, absolute too."""
    rng = np.random.default_rng([7, seed])
    for _ in range(100):
        gshape, hw = _random_shape(rng)
        g = rng.normal(0.0, 1.0, gshape) * 10.0 ** rng.integers(-300, 300)
        chunk = int(rng.choice([1, 7, 64, 1000, reference.DEFAULT_CHUNK_ELEMS]))
        compare(g, hw, chunk_elems=chunk, absolute=bool(rng.random() < 0.3))


@pytest.mark.parametrize("seed", range(3))
def test_specials_are_bit_identical(seed: int) -> None:
    """inf, -inf, NaN, +-0, subnormals, overflow to inf, inf - inf: exact bits.

    The input NaN carries the default NaN's bits, so every NaN in the computation does.
    """
    rng = np.random.default_rng([11, seed])
    for _ in range(100):
        gshape, hw = _random_shape(rng)
        g = specials(rng, gshape, DEFAULT_NAN)
        chunk = int(rng.choice([1, 5, 100, reference.DEFAULT_CHUNK_ELEMS]))
        compare(g, hw, chunk_elems=chunk)
        compare(g, hw, chunk_elems=chunk, absolute=True)


def test_nans_of_both_signs_agree_except_the_sign_of_nan_sums() -> None:
    """+NaN and -NaN inputs: NaN where numpy has NaN, every other bit identical."""
    rng = np.random.default_rng(13)
    for i in range(150):
        gshape, hw = _random_shape(rng)
        g = specials(rng, gshape, np.nan if i % 2 else -np.nan)
        compare(g, hw, exact=False, chunk_elems=int(rng.choice([3, 1000, 1 << 18])))


def test_power_of_two_areas_multiply_exactly() -> None:
    """Every window size a power of two: the kernel multiplies by the exact reciprocal of
    the area instead of dividing; subnormal, huge and special terms round the same."""
    rng = np.random.default_rng(41)
    for gshape, hw in (((3, 4, 7, 7), (56, 56)), ((2, 5, 4, 8), (32, 8)),
                       ((6, 1, 1), (64, 128)), ((2, 3, 16, 16), (16, 16))):
        tiny = rng.normal(size=gshape) * 10.0 ** rng.integers(-320, -300, gshape)
        huge = rng.normal(size=gshape) * 1e307
        for g in (tiny, huge, specials(rng, gshape, DEFAULT_NAN)):
            compare(g, hw)
            with np.errstate(over="ignore", under="ignore"):  # float32: more inf and zeros
                g32 = g.astype(np.float32)
            compare(g32, hw)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_four_plane_lanes_and_remainders(threads: int) -> None:
    """Small non-divisible planes run four at a time in vector lanes: plane counts that
    are not a multiple of four, widths that are not, float32 and float64, specials."""
    rng = np.random.default_rng(43)
    for rows, (ho, wo), (h, w) in ((7, (5, 3), (14, 11)), (4, (10, 13), (33, 47)),
                                   (9, (3, 5), (14, 14)), (130, (2, 7), (3, 9)),
                                   (5, (1, 6), (1, 13))):
        g = specials(rng, (rows, ho, wo), DEFAULT_NAN)
        compare(g, (h, w), threads=threads)
        with np.errstate(over="ignore", under="ignore"):
            compare(g.astype(np.float32), (h, w), threads=threads)
        compare(rng.normal(size=(rows, ho, wo)), (h, w), threads=threads)


def test_signed_zero_sums_keep_their_sign() -> None:
    """All -0.0 windows stay -0.0; +0.0 with -0.0 gives +0.0 (as numpy)."""
    for g in (np.full((2, 3, 5), -0.0), np.full((2, 3, 5), 0.0)):
        compare(g, (7, 11))
        compare(g, (2, 9))
    g = np.full((3, 5), -0.0)
    g[1, 2] = 0.0
    compare(g, (7, 11))


# -- inputs of every kind ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.float32, ml_dtypes.bfloat16, np.float64])
def test_dtypes_and_non_contiguous_inputs(dtype: type) -> None:
    """Any dtype, transposed, sliced and negatively strided gradOutput: same bits."""
    rng = np.random.default_rng(17)
    with np.errstate(over="ignore"):  # huge values become inf: more specials
        base = specials(rng, (4, 6, 13, 10), DEFAULT_NAN).astype(dtype)
    views = [base, base.transpose(1, 0, 2, 3), base[:, ::2, 1:, ::-1],
             np.swapaxes(base, -1, -2), base[::-1, :, ::3, :]]
    for v in views:
        assert v.dtype == dtype
        for hw in ((13, 10), (5, 7), (20, 31), (1, 1)):
            compare(v, hw)
            compare(v, hw, chunk_elems=50)


def test_empty_dims() -> None:
    """Empty lead dims, empty self planes, empty gradOutput planes: same results."""
    cases = [((0, 3, 4, 5), (6, 7)), ((2, 0, 4, 5), (6, 7)), ((2, 3, 4, 5), (0, 7)),
             ((2, 3, 4, 5), (6, 0)), ((2, 3, 0, 5), (6, 7)), ((2, 3, 4, 0), (6, 7)),
             ((0, 0), (3, 3)), ((3, 0), (0, 0))]
    for gshape, hw in cases:
        g = np.ones(gshape)
        compare(g, hw)


def test_rank2_and_rank5() -> None:
    rng = np.random.default_rng(19)
    compare(rng.normal(size=(9, 4)), (20, 7))
    compare(rng.normal(size=(2, 1, 3, 9, 4)), (20, 7), chunk_elems=100)


# -- threads -------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
def test_thread_count_never_changes_a_bit(threads: int) -> None:
    """Blocks above the threading threshold, both stage orders, any thread count."""
    rng = np.random.default_rng(23)
    for gshape, hw in (((3, 50, 7, 5), (33, 47)), ((2, 40, 70, 70), (45, 45)),
                       ((4, 30, 9, 11), (64, 64)), ((97, 3, 5), (128, 100))):
        g = specials(rng, gshape, DEFAULT_NAN)
        assert math.prod(gshape[:-2]) * hw[0] * hw[1] >= reference.NATIVE_PARALLEL_MIN_ELEMS
        compare(g, hw, threads=threads)
        compare(g, hw, threads=threads, chunk_elems=1 << 22)


def test_kernel_threads_direct() -> None:
    """The kernel itself, below the threading threshold too: rows split over 1-7 threads."""
    rng = np.random.default_rng(29)
    g = specials(rng, (11, 6, 9), DEFAULT_NAN)
    ph, pw = spread_plan(6, 13), spread_plan(9, 4)
    results = []
    for threads in range(1, 8):
        for w_first in (False, True):
            out = np.empty((11, 13, 4))
            reference._native.backward_block(g, out, ph.index[0], ph.counts, ph.sizes,
                                             pw.index[0], pw.counts, pw.sizes, 11,
                                             w_first, threads)
            results.append((w_first, out.tobytes()))
    for w_first in (False, True):
        assert len({b for f, b in results if f == w_first}) == 1


def test_kernel_rejects_bad_arguments() -> None:
    """Wrong dtypes, sizes or plans raise; they never read out of bounds."""
    ph, pw = spread_plan(3, 5), spread_plan(2, 4)
    g, out = np.zeros((2, 3, 2)), np.empty((2, 5, 4))
    call = reference._native.backward_block
    plans = (ph.index[0], ph.counts, ph.sizes, pw.index[0], pw.counts, pw.sizes)
    call(g, out, *plans, 2, True, 1)  # the valid call
    with pytest.raises(TypeError):
        call(g.astype(np.float16), out, *plans, 2, True, 1)
    with pytest.raises(ValueError):
        call(g, out, *plans, 3, True, 1)  # rows do not match the buffers
    with pytest.raises(ValueError):
        call(g, np.empty((2, 5, 3)), *plans, 2, True, 1)
    bad_lo = ph.index[0].copy()
    bad_lo[-1] = 3  # window 3 of 3 does not exist
    with pytest.raises(ValueError, match="plan"):
        call(g, out, bad_lo, *plans[1:], 2, True, 1)
    with pytest.raises(TypeError):
        call(g, out.astype(np.float32), *plans, 2, True, 1)
    with pytest.raises((TypeError, ValueError, BufferError)):
        call(g, out[:, ::2], *plans, 2, True, 1)  # not contiguous


def test_pure_numpy_switch() -> None:
    with env(ACLCHECK_PURE_NUMPY="1"):
        assert not reference.native_available()
    with env(ACLCHECK_PURE_NUMPY="0"):
        assert reference.native_available()
    with env(ACLCHECK_THREADS="3"):
        assert reference.native_threads() == 3
    with env(ACLCHECK_THREADS="junk"):
        assert reference.native_threads() >= 1


def _child_backward(conn: object, grad: np.ndarray, hw: tuple[int, int]) -> None:
    out = native_path(grad, hw, threads=2)
    conn.send(out.tobytes())  # type: ignore[attr-defined]
    conn.close()  # type: ignore[attr-defined]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_restarts_the_worker_pool() -> None:
    """A child forked after the parent's workers started gets its own pool (no hang)."""
    import multiprocessing

    g = np.random.default_rng(31).normal(size=(64, 9, 7))
    hw = (60, 50)
    want = native_path(g, hw, threads=2)  # starts the parent's workers
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_backward, args=(child, g, hw))
    proc.start()
    got = parent.recv() if parent.poll(60) else None
    proc.join(60)
    if proc.is_alive():
        proc.kill()
    assert proc.exitcode == 0 and got == want.tobytes()


def test_concurrent_callers_get_the_same_bits() -> None:
    """Python threads calling at once (the GIL is released): one uses the pool, the others
    run on their own thread; every result is the same."""
    from concurrent.futures import ThreadPoolExecutor

    g = np.random.default_rng(37).normal(size=(64, 9, 7)).astype(np.float32)
    hw = (60, 50)
    want = numpy_path(g, hw).tobytes()
    with env(ACLCHECK_PURE_NUMPY=None, ACLCHECK_THREADS="2"):
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda _: backward(g, hw).tobytes(), range(16)))
    assert all(b == want for b in got)
