"""What the sequence stage of `verify` costs (aclcheck.running.sequences, issue 39).

Runs `aclcheck verify SUITE --impl IMPL` with the stage on (the default --sequences 8, or
--sequences N) and with `--sequences 0`, in fresh processes, in interleaved rounds (on,
off, on, off, ...: a machine's drift hits both alike), isolated (the default for
fork-safe adapters: each sequence in a fresh fork) and in one process (--no-isolate), and
prints the medians and their ratio as a markdown table.

    python benchmarks/bench_sequences.py                      # default suite, reference
    python benchmarks/bench_sequences.py --rounds 7 --impl torch --suite suite.h5

Run from the repository root with the package installed (`pip install -e .`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _aclcheck() -> list[str]:
    exe = Path(sys.executable).with_name("aclcheck")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "aclcheck"]


def make_suite(folder: Path) -> Path:
    """The default suite (`aclcheck generate`), in `folder`."""
    suite = folder / "suite.h5"
    subprocess.run([*_aclcheck(), "generate", "-o", str(suite), "--force"], cwd=ROOT,
                   check=True, capture_output=True)
    return suite


def seconds(args: list[str]) -> float:
    """Wall seconds of one `aclcheck verify` run (exit 0 or 1), a fresh process."""
    start = time.perf_counter()
    proc = subprocess.run([*_aclcheck(), *args], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"aclcheck {' '.join(args)}: exit {proc.returncode}\n"
                         f"{proc.stderr[-2000:]}")
    return took


def measure(suite: Path, impl: str, count: int, rounds: int, isolation: list[str]
            ) -> tuple[float, float]:
    """Median seconds with the stage (--sequences count) and with --sequences 0."""
    base = ["verify", str(suite), "--impl", impl, *isolation]
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for on in (True, False):
            times[on].append(seconds([*base, "--sequences", str(count if on else 0)]))
    return statistics.median(times[True]), statistics.median(times[False])


def table(rows: list[tuple[str, float, float]], count: int) -> str:
    lines = [f"| run | --sequences {count} (s) | --sequences 0 (s) | stage (s) | ratio |",
             "|---|---|---|---|---|"]
    for name, on, off in rows:
        lines.append(f"| {name} | {on:.2f} | {off:.2f} | {on - off:+.2f} | "
                     f"{on / off:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, help="golden file (default: generate the "
                        "default suite into a temporary folder)")
    parser.add_argument("--impl", default="reference", help="implementation (reference)")
    parser.add_argument("--sequences", type=int, default=8, help="the stage's N (8)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        suite = args.suite or make_suite(Path(tmp))
        rows = []
        for name, isolation in (("isolated (default)", []), ("--no-isolate",
                                                             ["--no-isolate"])):
            on, off = measure(suite, args.impl, args.sequences, args.rounds, isolation)
            rows.append((f"{args.impl}, {name}", on, off))
    print(table(rows, args.sequences))
    print(f"\n{args.rounds} interleaved rounds each, medians; "
          f"`verify {suite.name if args.suite else 'DEFAULT-SUITE'} --impl {args.impl}`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
