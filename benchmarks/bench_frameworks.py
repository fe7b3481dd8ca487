"""Cost of `--impl mindspore` and `--impl paddle` against `--impl torch`: whole
`aclcheck verify` commands on the committed default suite (framework start-up included,
as a user pays it), interleaved rounds, medians.

    python benchmarks/bench_frameworks.py [--rounds 3] [--part valid|all|both]

`valid`: the valid calls (every family but `invalid`), in-process; `all`: the whole file
with the CI gate's flags (`--timeout 10`): invalid calls run in an isolated worker, and
PyTorch hangs on some of them until the timeout, so that part measures timeouts too.
Target (issue 15): each framework <= 3x torch.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden" / "ci-suite.h5"
IMPLS = ("torch", "mindspore", "paddle")
VALID_FAMILIES = ("divisible", "nondivisible", "upsampling", "global", "identity", "rank3",
                  "alignment", "exactint", "special", "empty", "layout")
TARGET = 3.0


def command(impl: str, part: str) -> list[str]:
    cmd = [sys.executable, "-m", "aclcheck", "verify", str(GOLDEN), "--impl", impl,
           "--timeout", "10"]
    if part == "valid":
        for family in VALID_FAMILIES:
            cmd += ["--family", family]
    return cmd


def one_run(impl: str, part: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(command(impl, part), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{impl}: exit {done.returncode}: {done.stdout[-400:]}")
    return elapsed


def measure(part: str, rounds: int) -> bool:
    times: dict[str, list[float]] = {impl: [] for impl in IMPLS}
    for _ in range(rounds):
        for impl in IMPLS:  # interleaved: the machine's load hits all three alike
            times[impl].append(one_run(impl, part))
    base = statistics.median(times["torch"])
    print(f"\n{part} ({'valid calls' if part == 'valid' else 'whole file, CI flags'}), "
          f"{rounds} round(s), command: aclcheck "
          f"{' '.join(command('IMPL', part)[3:]).replace(str(ROOT) + '/', '')}")
    ok = True
    for impl in IMPLS:
        med = statistics.median(times[impl])
        ratio = med / base
        verdict = "" if impl == "torch" else (
            f"  target <= {TARGET:.0f}x: {'met' if ratio <= TARGET else 'NOT met'}")
        ok &= impl == "torch" or ratio <= TARGET
        print(f"  {impl:10s} median {med:7.2f} s  ratio {ratio:5.2f}  runs "
              f"{[round(t, 2) for t in times[impl]]}{verdict}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--part", choices=("valid", "all", "both"), default="both")
    args = ap.parse_args()
    parts = ("valid", "all") if args.part == "both" else (args.part,)
    ok = all([measure(part, args.rounds) for part in parts])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
