"""One aclcheck command in two source trees, whole commands in interleaved rounds (the
machine is noisy): this tree against a baseline checkout, e.g. the commit before a
change. Prints the best and median time of each and the ratio.

    git clone -q . /tmp/base && git -C /tmp/base checkout -q REV
    python benchmarks/bench_checkouts.py --base /tmp/base --rounds 7 -- \
        generate -o {out} --force
    python benchmarks/bench_checkouts.py --base /tmp/base -- \
        verify golden/ci-suite.h5 --impl reference

`{out}` in the command becomes a fresh path per tree. Each command runs in its tree's
folder, which Python puts first on the import path (before an editable install), so
both share this interpreter and its packages; relative paths are each tree's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def run(tree: Path, args: list[str], out: Path) -> float:
    cmd = [sys.executable, "-m", "aclcheck", *(a.replace("{out}", str(out)) for a in args)]
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tree)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{tree}: {' '.join(cmd)} exited {done.returncode}\n"
                         f"{done.stderr.decode(errors='replace')}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, type=Path, help="the baseline tree")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    ns = parser.parse_args()
    args = [a for a in ns.command if a != "--"]
    trees = {"base": ns.base.resolve(), "this": HERE}
    times: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(ns.rounds):
            for name, tree in trees.items():
                times[name].append(run(tree, args, Path(tmp) / f"{name}.h5"))
    for name, ts in times.items():
        print(f"{name:5s} best {min(ts):7.2f} s  median {statistics.median(ts):7.2f} s  "
              f"({trees[name]})")
    print(f"ratio this/base: best {min(times['this']) / min(times['base']):.3f}, median "
          f"{statistics.median(times['this']) / statistics.median(times['base']):.3f}")


if __name__ == "__main__":
    main()
