"""Benchmark: the float64 reference backward against PyTorch CPU, side by side.

Times the operator's reference.backward (aclcheck.ops.adaptive_avg_pool2d_backward)
against torch.ops.aten._adaptive_avg_pool2d_backward in float64 and in float32 on the
issue's shapes, taking turns (the machine is shared and noisy): in each of several rounds
every function runs a few times back to back after a short pause (see best_of; --block 1
--pause 0 interleaves single calls instead). It prints the best time of each, the ratios
torch / ours, their geometric mean and whether the targets are met:

    geometric mean of torch_f64 / ours >= 3, and no shape with torch_f64 / ours < 1.

With --memory it also measures, each in a fresh subprocess, the peak memory of a case with
1 GiB of float32 gradOutput: the reference alone, and make_tensors (values + layout +
golden) end to end. Target: peak below 2.5x (bytes of the case's inputs + float64 result).

    python benchmarks/bench_reference.py                # speed tables (~20 s)
    python benchmarks/bench_reference.py --memory       # + peak memory (~1 min, 6 GiB RAM)
    python benchmarks/bench_reference.py --no-speed --throughput --loops 20   # threads vs jobs

"ours" is the path backward() takes here: the compiled kernel (the operator's _spread) when
it is built, else numpy; the column "numpy ms" times the numpy path (ACLCHECK_PURE_NUMPY=1)
side by side, for the kernel's speed-up. ACLCHECK_THREADS=n caps the kernel's threads.
"ours" writes each result into a caller-owned buffer (`out=` from a ResultBuffers, as the
generate and verify loops do); "fresh" calls backward() without `out=`: every large result
in freshly allocated, page-faulted memory (as torch's are), for what the buffer is worth;
"1thr" is "ours" with the kernel on one thread, for what its thread pool is worth. With
--throughput it also runs a suite of large cases on the kernel's 2 threads, on 2
processes of 1 thread each (as --jobs 2 splits a suite) and on 1 thread, taking turns.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from aclcheck.arrays import ResultBuffers
from aclcheck.ops.adaptive_avg_pool2d_backward import reference
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import DEFAULT_CHUNK_ELEMS, backward

#: (N, C, H, W) of self -> (Ho, Wo) of gradOutput, from the issue.
SHAPES: list[tuple[tuple[int, int, int, int], tuple[int, int]]] = [
    ((32, 64, 56, 56), (7, 7)),
    ((32, 64, 56, 56), (1, 1)),
    ((8, 64, 33, 47), (10, 13)),
    ((4, 32, 20, 20), (40, 40)),
    ((16, 256, 14, 14), (3, 5)),
    ((8, 3, 224, 224), (7, 7)),
]
SPEED_TARGET = 3.0
#: How best_of runs the functions (see there); --block 1 --pause 0 calls them one by one.
TURNS = {"block": 5, "pause": 0.05}
MEMORY_TARGET = 2.5
GIB = 1 << 30


def best_of(fns: list[Callable[[], object]], repeats: int) -> list[float]:
    """Best wall time (ms) of each function: `repeats` rounds, and in each round every
    function runs `block` times back to back, the functions taking turns.

    Back to back, each runs in its own steady state (its memory reused, its caches warm,
    as a loop over cases calls it); taking turns shares the machine's slow moments. Calls
    interleaved one by one measured mostly the previous call's wake: torch's OpenMP
    threads spin on both cores for milliseconds after each call, and each call found the
    caches full of the other's data. A pause before each block lets those threads go
    back to sleep first (libgomp spins ~300 000 times before it waits passively).
    """
    best = [math.inf] * len(fns)
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            time.sleep(TURNS["pause"])
            for _ in range(int(TURNS["block"])):
                t0 = time.perf_counter()
                fn()
                best[k] = min(best[k], (time.perf_counter() - t0) * 1e3)
    return best


def backward_with(env: dict[str, str], *args: object, **kwargs: object) -> np.ndarray:
    """backward() with some environment variables set for the call."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return backward(*args, **kwargs)  # type: ignore[arg-type]
    finally:
        for k, v in saved.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


#: backward() on its numpy path, for the side-by-side column.
numpy_backward = partial(backward_with, {"ACLCHECK_PURE_NUMPY": "1"})


def buffered(buffers: ResultBuffers, grad: np.ndarray, in_hw: tuple[int, int],
             chunk_elems: int, env: dict[str, str] | None = None) -> np.ndarray:
    """backward() into a caller-owned buffer, as a loop over cases calls it."""
    out = buffers.take(tuple(grad.shape[:-2]) + tuple(in_hw))
    return backward_with(env or {}, grad, in_hw, chunk_elems=chunk_elems, out=out)


def path_name() -> str:
    """Which path backward() takes here (what the "ours" column times)."""
    if reference.native_available():
        return f"compiled kernel, {reference.native_threads()} threads max"
    why = "disabled by ACLCHECK_PURE_NUMPY" if reference._native is not None else "not built"
    return f"numpy (compiled kernel {why})"


def speed(repeats: int, chunk_elems: int, input_dtype: str) -> bool:
    import torch

    torch_bw = torch.ops.aten._adaptive_avg_pool2d_backward
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}; numpy "
          f"{np.__version__}; reference input {input_dtype}, chunk_elems {chunk_elems}; "
          f"best of {repeats} rounds x {int(TURNS['block'])} back-to-back calls, taking turns, "
          f"{TURNS['pause']:g} s pause before each")
    print(f"ours: {path_name()}")
    header = (f"{'self (N,C,H,W)':>20} {'-> (Ho,Wo)':>10} {'ours ms':>9} {'t_f64 ms':>9} "
              f"{'t_f32 ms':>9} {'f64/ours':>9} {'f32/ours':>9} {'numpy ms':>9} "
              f"{'fresh ms':>9} {'f64/frs':>9} {'1thr ms':>9} {'f64/1thr':>9}")
    print(header)
    print("-" * len(header))
    r64, r32, rnc, r1 = [], [], [], []
    for (n, c, h, w), (ho, wo) in SHAPES:
        g64 = np.random.default_rng(0).normal(0.0, 1.0, (n, c, ho, wo))
        g32 = g64.astype(np.float32)
        ours_in = g32 if input_dtype == "float32" else g64
        tg64, tg32 = torch.from_numpy(g64), torch.from_numpy(g32)
        ts64 = torch.empty((n, c, h, w), dtype=torch.float64)
        ts32 = torch.empty((n, c, h, w), dtype=torch.float32)
        ours, t64, t32, pure, fresh, one = best_of(
            [partial(buffered, ResultBuffers(), ours_in, (h, w), chunk_elems),
             partial(torch_bw, tg64, ts64),
             partial(torch_bw, tg32, ts32),
             partial(numpy_backward, ours_in, (h, w), chunk_elems=chunk_elems),
             partial(backward, ours_in, (h, w), chunk_elems=chunk_elems),
             partial(buffered, ResultBuffers(), ours_in, (h, w), chunk_elems,
                     {"ACLCHECK_THREADS": "1"})],
            repeats,
        )
        r1.append(t64 / one)
        r64.append(t64 / ours)
        r32.append(t32 / ours)
        rnc.append(t64 / fresh)
        print(f"{str((n, c, h, w)):>20} {str((ho, wo)):>10} {ours:9.2f} {t64:9.2f} "
              f"{t32:9.2f} {r64[-1]:9.2f} {r32[-1]:9.2f} {pure:9.2f} {fresh:9.2f} "
              f"{rnc[-1]:9.2f} {one:9.2f} {r1[-1]:9.2f}")
    gm64, gm32, gmnc, gm1 = (math.exp(sum(map(math.log, r)) / len(r))
                             for r in (r64, r32, rnc, r1))
    print(f"{'geometric mean':>31} {'':>29} {gm64:9.2f} {gm32:9.2f} {'':>19} {gmnc:9.2f} "
          f"{'':>9} {gm1:9.2f}")
    ok_mean, ok_each = gm64 >= SPEED_TARGET, min(r64) >= 1.0
    print(f"target geomean torch_f64/ours >= {SPEED_TARGET}: "
          f"{'met' if ok_mean else 'MISSED'} ({gm64:.2f})")
    print(f"target no shape slower than torch_f64: {'met' if ok_each else 'MISSED'} "
          f"(worst {min(r64):.2f})")
    print(f"float32: geomean torch_f32/ours {gm32:.2f}, worst {min(r32):.2f}")
    print(f"fresh result memory (no out=, every result page-faulted): geomean "
          f"torch_f64/fresh {gmnc:.2f}, worst {min(rnc):.2f} (information)")
    print(f"kernel on 1 thread (ACLCHECK_THREADS=1, into the buffer): geomean "
          f"torch_f64/1thr {gm1:.2f}, worst {min(r1):.2f} (information)")
    return ok_mean and ok_each


def speed_single_thread(repeats: int, chunk_elems: int, input_dtype: str) -> None:
    """Ours against torch float64 on one thread: immune to the OpenMP stalls that a
    2-thread torch suffers when another process holds a core (information only)."""
    import torch

    torch_bw = torch.ops.aten._adaptive_avg_pool2d_backward
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        print("\ntorch float64 on 1 thread (information; the targets use the default threads)")
        ratios = []
        for (n, c, h, w), (ho, wo) in SHAPES:
            g64 = np.random.default_rng(0).normal(0.0, 1.0, (n, c, ho, wo))
            ours_in = g64.astype(np.float32) if input_dtype == "float32" else g64
            ts64 = torch.empty((n, c, h, w), dtype=torch.float64)
            ours, t64 = best_of(
                [partial(buffered, ResultBuffers(), ours_in, (h, w), chunk_elems),
                 partial(torch_bw, torch.from_numpy(g64), ts64)],
                repeats,
            )
            ratios.append(t64 / ours)
            print(f"{str((n, c, h, w)):>20} {str((ho, wo)):>10} {ours:9.2f} {t64:9.2f} "
                  f"{ratios[-1]:9.2f}")
        gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"torch_f64(1 thread)/ours: geomean {gm:.2f}, worst {min(ratios):.2f}")
    finally:
        torch.set_num_threads(threads)


# -- memory ----------------------------------------------------------------------------------

#: 1 GiB float32 gradOutput (1, 64, 2048, 2048): identity (uniform path) and a
#: non-divisible, mildly downsampling self (overlapping windows, the gather path).
MEMORY_CASES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "identity": ((1, 64, 2048, 2048), (1, 64, 2048, 2048)),
    "nondiv": ((1, 64, 2100, 2100), (1, 64, 2048, 2048)),
}


def _rss_peak_bytes() -> int:
    """High-water mark of the resident set (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _rss_now_bytes() -> int:
    """Current resident set (the baseline: the high-water mark may include freed memory)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def memory_child(kind: str, mode: str) -> dict[str, float]:
    """Runs in a fresh process: peak RSS above the pre-input baseline, in bytes."""
    from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
    from aclcheck.ops.materialize import make_tensors

    self_shape, grad_shape = MEMORY_CASES[kind]
    nbytes = {"grad": math.prod(grad_shape) * 4, "self": math.prod(self_shape) * 4,
              "result": math.prod(self_shape) * 8}
    case = Case(f"mem-{kind}", "bench", "atlas-a2", "float32", "NCHW", self_shape,
                grad_shape, 1, "uniform")
    baseline = _rss_now_bytes()
    t0 = time.perf_counter()
    if mode == "reference":
        grad = np.ones(grad_shape, dtype=np.float32)  # the inputs, pages touched
        self_ = np.ones(self_shape, dtype=np.float32)
        with_inputs = _rss_now_bytes()
        t0 = time.perf_counter()  # time the reference alone
        out = backward(grad, self_shape[-2:])
        assert out.shape == self_shape and self_.size
    else:
        with_inputs = baseline
        tensors = make_tensors(case)
        assert tensors.golden is not None
    seconds = time.perf_counter() - t0
    return {"peak": _rss_peak_bytes() - baseline, "with_inputs": with_inputs - baseline,
            "seconds": seconds, **nbytes}


def memory() -> bool:
    print("\npeak memory, 1 GiB float32 gradOutput (fresh subprocess each; "
          "peak RSS above the pre-input baseline)")
    header = (f"{'case':>9} {'measured':>14} {'inputs+result':>14} {'peak':>9} "
              f"{'ratio':>6} {'temps':>9} {'time s':>7}")
    print(header)
    print("-" * len(header))
    ok = True
    for kind in MEMORY_CASES:
        for mode in ("reference", "make_tensors"):
            proc = subprocess.run(
                [sys.executable, __file__, "--memory-child", kind, mode],
                capture_output=True, text=True, check=True,
            )
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            own = r["grad"] + r["self"] + r["result"]
            ratio = r["peak"] / own
            temps = r["peak"] - own
            ok &= ratio < MEMORY_TARGET
            print(f"{kind:>9} {mode:>14} {own / GIB:11.2f} GiB {r['peak'] / GIB:5.2f} GiB "
                  f"{ratio:6.2f} {temps / GIB:5.2f} GiB {r['seconds']:7.1f}")
    print(f"target peak < {MEMORY_TARGET}x (inputs + float64 result): "
          f"{'met' if ok else 'MISSED'}")
    return ok


# -- kernel threads vs case-level processes ---------------------------------------------------

#: Large cases (float64 results of 20-51 MB), twice over: the suite a --jobs run would split.
LARGE_CASES: list[tuple[tuple[int, int, int, int], tuple[int, int]]] = [
    ((32, 64, 56, 56), (7, 7)), ((32, 64, 56, 56), (1, 1)), ((16, 64, 56, 56), (10, 13)),
    ((16, 64, 56, 56), (3, 5)), ((8, 64, 112, 112), (7, 7)), ((64, 64, 28, 28), (5, 5)),
    ((8, 32, 100, 100), (9, 11)), ((32, 64, 56, 56), (56, 56)),
] * 2


def throughput_child(k: int, n: int, loops: int) -> dict[str, float]:
    """Runs in a fresh process: the reference over every n-th large case from the k-th,
    `loops` times, into caller-owned buffers (as a generate/verify loop does)."""
    mine = LARGE_CASES[k::n]
    grads = [np.random.default_rng(i).normal(0.0, 1.0, (s[0], s[1], *o)).astype(np.float32)
             for i, (s, o) in enumerate(mine)]
    buffers = ResultBuffers()
    backward(grads[0], mine[0][0][-2:], out=buffers.take(mine[0][0]))  # warm the pool
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(loops):
        for g, (s, _o) in zip(grads, mine, strict=True):
            backward(g, s[-2:], out=buffers.take(s))
    return {"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0}


def throughput(rounds: int, loops: int) -> None:
    """Kernel threads (1 process, ACLCHECK_THREADS=2) against case-level parallelism (2
    processes of 1 thread, each half the cases, as --jobs 2 splits a suite) and 1 thread
    alone; the modes take turns. Reports the loop's wall time (the slowest process)."""
    modes = {"threads": (1, "2"), "jobs": (2, "1"), "serial": (1, "1")}
    print(f"\n{len(LARGE_CASES)} large cases (results 20-51 MB) x {loops} loops, "
          f"{rounds} rounds, modes taking turns; wall s of the loop (slowest process)")
    times: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(rounds):
        for mode, (procs, threads) in modes.items():
            env = {**os.environ, "ACLCHECK_THREADS": threads}
            children = [subprocess.Popen(
                [sys.executable, __file__, "--throughput-child", str(k), str(procs), str(loops)],
                stdout=subprocess.PIPE, text=True, env=env) for k in range(procs)]
            outs = [json.loads(c.communicate()[0].strip().splitlines()[-1]) for c in children]
            times[mode].append(max(o["seconds"] for o in outs))
    for mode, ts in times.items():
        print(f"{mode:>8} ({modes[mode][0]} process x {modes[mode][1]} thread): "
              f"best {min(ts):.2f} s, median {sorted(ts)[len(ts) // 2]:.2f} s, "
              f"range {min(ts):.2f}-{max(ts):.2f} s")
    ratios = sorted(j / t for j, t in zip(times["jobs"], times["threads"], strict=True))
    print(f"jobs / threads per round: {', '.join(f'{r:.2f}' for r in ratios)} "
          f"(> 1: the kernel's threads are faster)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--block", type=int, default=int(TURNS["block"]),
                        help="calls of one function back to back in each turn")
    parser.add_argument("--pause", type=float, default=TURNS["pause"],
                        help="seconds of pause before each turn")
    parser.add_argument("--chunk-elems", type=int, default=DEFAULT_CHUNK_ELEMS)
    parser.add_argument("--input-dtype", choices=("float32", "float64"), default="float32",
                        help="dtype of the gradOutput handed to the reference")
    parser.add_argument("--memory", action="store_true", help="also measure peak memory")
    parser.add_argument("--no-speed", action="store_true", help="skip the speed table")
    parser.add_argument("--throughput", action="store_true",
                        help="also compare kernel threads with 2 processes of 1 thread")
    parser.add_argument("--loops", type=int, default=3, help="--throughput: loops per round")
    parser.add_argument("--throughput-child", nargs=3, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--memory-child", nargs=2, metavar=("CASE", "MODE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.throughput_child:
        print(json.dumps(throughput_child(*args.throughput_child)))
        return 0
    if args.memory_child:
        print(json.dumps(memory_child(*args.memory_child)))
        return 0
    TURNS.update(block=max(1, args.block), pause=max(0.0, args.pause))
    ok = True
    if not args.no_speed:
        ok &= speed(args.repeats, args.chunk_elems, args.input_dtype)
        speed_single_thread(args.repeats, args.chunk_elems, args.input_dtype)
    if args.throughput:
        throughput(args.repeats, args.loops)
    if args.memory:
        ok &= memory()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
