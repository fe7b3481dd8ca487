"""Cost of isolation (the default for fork-safe adapters): `aclcheck verify` of the
default suite's valid calls, whole commands (interpreter start and imports included),
with `--no-isolate` (in-process) and with the default (every call in a worker forked from
the zygote), side by side in interleaved rounds (the machine is noisy).

    python benchmarks/bench_isolate.py [--impl torch] [--rounds 3]

Target (issue 5): isolated / in-process <= 1.3.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aclcheck.ops.adaptive_avg_pool2d_backward.families import DEFAULT_FAMILIES
from aclcheck.store.codec import run_meta
from aclcheck.suite.generate import generate
from aclcheck.suite.selection import Selection, build_suite


def one_run(golden: Path, impl_name: str, isolate: bool) -> float:
    cmd = [sys.executable, "-m", "aclcheck", "verify", str(golden), "--impl", impl_name,
           "--isolate" if isolate else "--no-isolate"]
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impl", default="torch")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        golden = Path(tmp) / "suite.h5"
        # valid calls only: invalid ones run in a worker in both modes (and PyTorch
        # crashes or spins on some of them), which would measure those
        cases = build_suite(Selection(families=tuple(f for f in DEFAULT_FAMILIES
                                                     if f != "invalid")))
        generate(golden, cases, run_meta("bench_isolate", "default"))
        plain, isolated = [], []
        for _ in range(args.rounds):
            plain.append(one_run(golden, args.impl, False))
            isolated.append(one_run(golden, args.impl, True))
        p, i = statistics.median(plain), statistics.median(isolated)
        print(f"default suite, valid calls: {len(cases)} cases, --impl {args.impl}, "
              f"{args.rounds} rounds, whole commands")
        print(f"--no-isolate  median {p:7.2f} s  runs {[round(x, 2) for x in plain]}")
        print(f"isolated      median {i:7.2f} s  runs {[round(x, 2) for x in isolated]}")
        print(f"ratio isolated/in-process: {i / p:.2f} (target <= 1.30: "
              f"{'met' if i / p <= 1.3 else 'NOT met'})")


if __name__ == "__main__":
    main()
