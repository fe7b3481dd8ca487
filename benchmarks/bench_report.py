"""Benchmark: the cost of the HTML report, its size, and shrink on the issue's case.

Targets (issue 11):
- with 400 failing cases, `verify --html` takes at most 1.25x the time of the same
  `verify` without it (whole commands, run alternately, best of --rounds);
- the page of 1000 failing cases stays under 20 MB;
- `shrink` reduces the (4, 16, 57, 61) end-index-bug case to one row or column within
  its default time limit (60 s).

    python benchmarks/bench_report.py                 # all three
    python benchmarks/bench_report.py --cases 400 --rounds 3 --skip-size
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "tests"))
KERNEL = "kernels:off_by_one_end"


def write_suite(folder: Path, n: int, seed: int = 0) -> Path:
    """n failing-prone cases (non-divisible windows, mixed ranks, formats, layouts)."""
    rng = np.random.default_rng(seed)
    lines = ['suite = "bench-report"']
    formats = {4: ("NCHW", "ND"), 3: ("NCL", "ND")}
    for i in range(n):
        rank = 4 if i % 3 else 3
        lead = [int(rng.integers(1, 4)), int(rng.integers(1, 9))][-(rank - 2):]
        h, w = (int(rng.integers(9, 65)) for _ in range(2))
        ho, wo = (int(rng.integers(2, s)) for s in (h, w))
        lines += ["", "[[cases]]", f'id = "c{i}"', 'product = "atlas-a2"',
                  f'dtype = "{("float32", "float16", "bfloat16")[i % 3]}"',
                  f'format = "{formats[rank][i % 2]}"',
                  f"self_shape = {[*lead, h, w]}", f"grad_shape = {[*lead, ho, wo]}",
                  f'layout = "{("contiguous", "channels_last")[i % 2 if rank == 4 else 0]}"']
    cases = folder / f"cases{n}.toml"
    cases.write_text("\n".join(lines) + "\n")
    golden = folder / f"suite{n}.h5"
    subprocess.run([sys.executable, "-m", "aclcheck", "generate", "--cases-file", str(cases),
                    "-o", str(golden), "--force"], check=True, capture_output=True, env=ENV)
    return golden


def verify(golden: Path, *extra: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one verify command. CPU time is the
    steadier figure on a shared machine (other processes stretch wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "aclcheck", "verify", str(golden), "--impl",
                           KERNEL, *extra], capture_output=True, env=ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def bench_overhead(folder: Path, n: int, rounds: int) -> None:
    golden = write_suite(folder, n)
    page = folder / "r.html"
    base = html = (float("inf"), float("inf"))
    for _ in range(rounds):  # alternately, best of each: load hits both alike
        base = tuple(map(min, base, verify(golden)))
        html = tuple(map(min, html, verify(golden, "--html", str(page))))
    print(f"verify, {n} failing cases ({KERNEL}): without --html {base[0]:.2f} s wall / "
          f"{base[1]:.2f} s CPU, with {html[0]:.2f} s / {html[1]:.2f} s: ratio "
          f"{html[0] / base[0]:.3f} wall, {html[1] / base[1]:.3f} CPU (target <= 1.25); "
          f"page {page.stat().st_size / 1e6:.1f} MB")


def bench_size(folder: Path, n: int) -> None:
    golden = write_suite(folder, n, seed=1)
    page = folder / "big.html"
    seconds, _ = verify(golden, "--html", str(page), "--json", str(folder / "big.json"))
    size = page.stat().st_size / 1e6
    print(f"page of {n} failing cases: {size:.1f} MB (target < 20 MB); JSON "
          f"{(folder / 'big.json').stat().st_size / 1e6:.1f} MB; verify --html {seconds:.1f} s")


def bench_shrink(folder: Path) -> None:
    cases = folder / "big.toml"
    cases.write_text('[[cases]]\nid = "big"\nproduct = "atlas-a2"\ndtype = "float32"\n'
                     'format = "NCHW"\nself_shape = [4, 16, 57, 61]\n'
                     'grad_shape = [4, 16, 10, 12]\n')
    golden = folder / "big.h5"
    subprocess.run([sys.executable, "-m", "aclcheck", "generate", "--cases-file", str(cases),
                    "-o", str(golden), "--force"], check=True, capture_output=True, env=ENV)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "aclcheck", "shrink", str(golden), "--impl",
                           KERNEL, "--id", "big"], capture_output=True, text=True, env=ENV)
    seconds = time.perf_counter() - t0
    line = next((x for x in proc.stdout.splitlines() if x.startswith("shrunk")), proc.stdout)
    print(f"shrink (4, 16, 57, 61), {KERNEL}: exit {proc.returncode}, {seconds:.1f} s "
          f"(limit 60 s): {line}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--size-cases", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-size", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bench_overhead(folder, args.cases, args.rounds)
        if not args.skip_size:
            bench_size(folder, args.size_cases)
        bench_shrink(folder)


if __name__ == "__main__":
    main()
