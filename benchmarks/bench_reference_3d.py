"""The 3D operator's float64 reference (numpy, separable, chunked) vs PyTorch CPU's
`torch.ops.aten._adaptive_avg_pool3d_backward` in float64 and float32, side by side.

    python benchmarks/bench_reference_3d.py [--repeats 5] [--rounds 5]

Ours gets the float32 gradOutput (what a golden is made from) and writes into a
caller-owned buffer; torch gets the same values in float64 and float32. In each round every
function runs `repeats` times back to back after a short pause and keeps its best time;
the table shows the best over the rounds. Read the ratios (the machine may be shared).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from aclcheck.ops.adaptive_avg_pool3d_backward.reference import backward

SHAPES: tuple[tuple[tuple[int, ...], tuple[int, int, int]], ...] = (
    ((4, 32, 16, 28, 28), (4, 7, 7)),  # divisible
    ((4, 32, 16, 28, 28), (1, 1, 1)),  # global
    ((2, 16, 17, 33, 29), (5, 7, 6)),  # non-divisible
    ((2, 8, 6, 10, 10), (13, 21, 20)),  # upsampling
    ((8, 16, 8, 14, 14), (8, 14, 14)),  # identity
)


def best(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import torch

    op = torch.ops.aten._adaptive_avg_pool3d_backward
    print(f"{'self (N,C,D,H,W) -> (Do,Ho,Wo)':>40} {'ours ms':>8} {'t_f64 ms':>9} "
          f"{'t_f32 ms':>9} {'f64/ours':>9} {'f32/ours':>9}")
    ratios = []
    for self_shape, out_dhw in SHAPES:
        grad_shape = self_shape[:2] + out_dhw
        g32 = np.random.default_rng(0).normal(size=grad_shape).astype(np.float32)
        out = np.empty(self_shape)
        t64, t32 = torch.from_numpy(g32.astype(np.float64)), torch.from_numpy(g32)
        s64 = torch.empty(self_shape, dtype=torch.float64)
        s32 = torch.empty(self_shape, dtype=torch.float32)
        fns = {
            "ours": lambda g32=g32, out=out, s=self_shape: backward(g32, s[-3:], out=out),
            "f64": lambda t=t64, s=s64: op(t, s),
            "f32": lambda t=t32, s=s32: op(t, s),
        }
        found = {name: float("inf") for name in fns}
        for _ in range(args.rounds):
            for name, fn in fns.items():
                time.sleep(0.05)
                found[name] = min(found[name], best(fn, args.repeats))
        ratio64 = found["f64"] / found["ours"]
        ratios.append(ratio64)
        print(f"{str(self_shape) + ' ' + str(out_dhw):>40} {found['ours'] * 1e3:8.2f} "
              f"{found['f64'] * 1e3:9.2f} {found['f32'] * 1e3:9.2f} {ratio64:9.2f} "
              f"{found['f32'] / found['ours']:9.2f}")
    geo = float(np.exp(np.mean(np.log(ratios))))
    print(f"geometric mean torch_f64 / ours: {geo:.2f}")


if __name__ == "__main__":
    main()
