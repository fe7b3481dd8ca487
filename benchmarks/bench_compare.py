"""Benchmark: compare() with all metrics vs a bare numpy.allclose, side by side.

Target (issue 4): one large case (64 M float32 elements) compared with every metric costs
at most 4x numpy.allclose on the same arrays, and at most 3x the two arrays' size in
extra memory (peak traced allocations during the call). Target (issue 12): the
exactness analysis (aclcheck.judging.case.exactness: which elements the path computes exactly, and
the RNE check there) adds at most 10 %: compare() runs side by side with the analysis
switched off. It only runs for FLOAT16/BFLOAT16 outputs, so measure with --dtype float16.

    python benchmarks/bench_compare.py                  # 64 M elements, default standard
    python benchmarks/bench_compare.py --dtype float16  # the exactness analysis at work
    python benchmarks/bench_compare.py --elements 4e6 --standards all --repeat 3
"""

from __future__ import annotations

import argparse
import contextlib
import time
import tracemalloc
from collections.abc import Iterator
from unittest import mock

import numpy as np

from aclcheck.dtypes import NUMPY_DTYPES
from aclcheck.judging.case.standards import STANDARDS_BY_NAME
from aclcheck.ops.adaptive_avg_pool2d_backward.compare import Context, compare
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward


def make_case(elements: int, dtype: str = "float32", one_plane: bool = False, seed: int = 0):
    """A (N, C, 128, 128) <- (N, C, 32, 32) case of about `elements` outputs, or one
    square plane (1, 1, S, S) <- (1, 1, S/4, S/4); some outputs one ULP off."""
    rng = np.random.default_rng(seed)
    np_dtype = NUMPY_DTYPES[dtype]
    if one_plane:
        side = 4 * max(1, int(np.sqrt(elements)) // 4)
        grad_shape, in_hw = (1, 1, side // 4, side // 4), (side, side)
    else:
        planes = max(1, elements // (128 * 128))
        grad_shape, in_hw = (max(1, planes // 64), min(planes, 64), 32, 32), (128, 128)
    grad = rng.standard_normal(grad_shape).astype(np.float32).astype(np_dtype)
    golden = backward(grad, in_hw)
    actual = golden.astype(np.float32).astype(np_dtype)
    bits = actual.reshape(-1).view(np.uint16 if actual.itemsize == 2 else np.uint32)
    bits[rng.integers(0, actual.size, 1000)] += 1
    return grad, golden, actual


def side_by_side(fns: list, repeat: int) -> tuple[list[float], list[object]]:
    """Best time of each function over `repeat` rounds, run alternately so that load
    from other processes hits both alike."""
    best = [float("inf")] * len(fns)
    results: list[object] = [None] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            results[i] = fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best, results


def peak_bytes(fn) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


@contextlib.contextmanager
def exactness_off() -> Iterator[None]:
    """compare() without the exactness analysis (no element proven exact): the baseline
    of the analysis' cost."""
    with mock.patch("aclcheck.ops.adaptive_avg_pool2d_backward.numerics.exact_plan",
                    lambda *args: None):
        yield


def without_exactness(fn):
    def run():
        with exactness_off():
            return fn()
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--elements", type=float, default=64 * 2**20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--standards", default="aclcheck",
                    help="comma-separated names, or 'all'")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    ap.add_argument("--one-plane", action="store_true",
                    help="one large (1, 1, S, S) plane instead of many 128x128 planes")
    ap.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    args = ap.parse_args()
    names = (tuple(STANDARDS_BY_NAME) if args.standards == "all"
             else tuple(args.standards.split(",")))
    grad, golden, actual = make_case(int(args.elements), args.dtype, args.one_plane)
    ctx = Context("atlas-a2", args.dtype, grad, golden.shape[-2:])
    arrays = golden.nbytes + actual.nbytes
    print(f"case: golden {golden.shape} float64, actual {args.dtype}, {golden.size / 2**20:.1f} M "
          f"elements, arrays {arrays / 2**20:.0f} MiB; standards {', '.join(names)}")

    def run_compare():
        return compare(golden, actual, ctx, names)

    (t_allclose, t_compare, t_plain), (_, res, _) = side_by_side(
        [lambda: np.allclose(actual, golden), run_compare, without_exactness(run_compare)],
        args.repeat)
    print(f"numpy.allclose  {t_allclose:8.3f} s")
    print(f"compare         {t_compare:8.3f} s   ratio {t_compare / t_allclose:.2f}x "
          "(target <= 4x)")
    print(f"  no exactness  {t_plain:8.3f} s   exactness analysis adds "
          f"{t_compare / t_plain - 1:+.1%} (target <= +10%)")
    print(f"verdict {res.passed}, max_ulp {res.metrics['max_ulp']}, "
          f"max_budget_ratio {res.metrics['max_budget_ratio']:.3g}")
    if not args.no_memory:
        mem_allclose = peak_bytes(lambda: np.allclose(actual, golden))
        mem_compare = peak_bytes(lambda: compare(golden, actual, ctx, names))
        print(f"peak extra memory: allclose {mem_allclose / 2**20:.0f} MiB, compare "
              f"{mem_compare / 2**20:.0f} MiB = {mem_compare / arrays:.2f}x the arrays "
              "(target <= 3x)")


if __name__ == "__main__":
    main()
