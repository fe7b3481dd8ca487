"""Cost of isolation (the default for fork-safe adapters): the default suite verified
in-process (`--no-isolate`) and isolated, side by side (interleaved rounds on the same
golden file; the machine is noisy).

    python benchmarks/bench_isolate.py [--impl torch] [--rounds 3]

Target (issue 5): isolated / in-process <= 1.3.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from aclcheck.cli.verify import GoldenSource
from aclcheck.families import DEFAULT_FAMILIES
from aclcheck.generate import generate
from aclcheck.impls import create
from aclcheck.runner import RunOptions, run_cases
from aclcheck.store import open_golden, run_meta
from aclcheck.suite import Selection, build_suite


def one_run(golden: Path, impl_name: str, isolate: bool) -> float:
    impl = create(impl_name)
    with open_golden(golden) as gf:
        cases = [gf.case(i) for i in gf.ids()]
        start = time.perf_counter()
        run_cases(impl, cases, GoldenSource(gf), RunOptions(isolate=isolate, timeout=5))
        elapsed = time.perf_counter() - start
    impl.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impl", default="torch")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        golden = Path(tmp) / "suite.h5"
        # valid calls only: invalid ones run in the worker in both modes (and PyTorch
        # hangs on some of them until the timeout), which would measure the timeout
        cases = build_suite(Selection(families=tuple(f for f in DEFAULT_FAMILIES
                                                     if f != "invalid")))
        generate(golden, cases, run_meta("bench_isolate", "default"))
        plain, isolated = [], []
        for _ in range(args.rounds):
            plain.append(one_run(golden, args.impl, False))
            isolated.append(one_run(golden, args.impl, True))
        p, i = statistics.median(plain), statistics.median(isolated)
        print(f"default suite, valid calls: {len(cases)} cases, --impl {args.impl}, "
              f"{args.rounds} rounds")
        print(f"in-process  median {p:7.2f} s  runs {[round(x, 2) for x in plain]}")
        print(f"--isolate   median {i:7.2f} s  runs {[round(x, 2) for x in isolated]}")
        print(f"ratio isolated/in-process: {i / p:.2f} (target <= 1.30: "
              f"{'met' if i / p <= 1.3 else 'NOT met'})")


if __name__ == "__main__":
    main()
