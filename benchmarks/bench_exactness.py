"""Benchmark: `aclcheck verify` on the default suite with and without the exactness
analysis, side by side.

Target (issue 12): the analysis (which elements the product's path computes exactly, and
the round-to-nearest-even check there; aclcheck/judging/case/exactness.py) adds at most 20 % to
verify on the default suite. The script writes the default suite (seed 0) to a temporary
file, then runs `aclcheck verify FILE --impl reference` in-process (click's runner)
alternately with the analysis on and switched off, and keeps each one's best time.

    python benchmarks/bench_exactness.py
    python benchmarks/bench_exactness.py --repeat 7
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_compare import exactness_off  # the same switch (run as a script from the root)
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.store.codec import run_meta
from aclcheck.suite.generate import generate
from aclcheck.suite.selection import Selection, build_suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "default.h5"
        cases = build_suite(Selection())
        generate(path, cases, run_meta("bench_exactness", "default"))
        runner = CliRunner()

        def verify() -> float:
            t0 = time.perf_counter()
            res = runner.invoke(cli, ["verify", str(path), "--impl", "reference"])
            elapsed = time.perf_counter() - t0
            if res.exit_code != 0:
                raise SystemExit(f"verify failed ({res.exit_code}): {res.output[-2000:]}")
            return elapsed

        def plain() -> float:
            with exactness_off():
                return verify()

        best = {"on": float("inf"), "off": float("inf")}
        for _ in range(args.repeat):
            best["on"] = min(best["on"], verify())
            best["off"] = min(best["off"], plain())
    print(f"default suite: {len(cases)} cases, verify --impl reference, best of {args.repeat}")
    print(f"with the exactness analysis     {best['on']:7.3f} s")
    print(f"without it                      {best['off']:7.3f} s")
    print(f"the analysis adds {best['on'] / best['off'] - 1:+.1%} (target <= +20%)")


if __name__ == "__main__":
    main()
