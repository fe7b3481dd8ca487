"""`aclcheck generate` of the default suite with and without the hardware-edge families
(issue 22), whole commands, in interleaved rounds (the machine is noisy): the families
before the issue are selected with `--family`, so both runs share one code base and the
only difference is the new cases. Prints the best time of each, the ratio, and the case
count and file size of each suite.

    python benchmarks/bench_generate.py [--rounds 7]

Target (issue 22): at most ~10 % more generate time for the default suite.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The default families before issue 22 (the invalid-call family included).
BEFORE = ("divisible", "nondivisible", "upsampling", "global", "identity", "rank3",
          "alignment", "exactint", "special", "empty", "layout", "rounding", "index",
          "invalid")


def run(args: list[str], out: Path) -> float:
    cmd = [sys.executable, "-m", "aclcheck", "generate", "-o", str(out), "--force", *args]
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def cases(path: Path) -> int:
    import h5py

    with h5py.File(path, "r") as f:
        return int(f.attrs["case_count"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    before_args = [a for fam in BEFORE for a in ("--family", fam)]
    times: dict[str, list[float]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"before": Path(tmp) / "before.h5", "after": Path(tmp) / "after.h5"}
        for _ in range(args.rounds):
            times["before"].append(run(before_args, paths["before"]))
            times["after"].append(run([], paths["after"]))
        for name in ("before", "after"):
            t = times[name]
            print(f"{name:6s}: best {min(t):.2f} s, median {statistics.median(t):.2f} s, "
                  f"{cases(paths[name])} cases, file {paths[name].stat().st_size / 1e6:.1f} MB")
    best = min(times["after"]) / min(times["before"])
    median = statistics.median(times["after"]) / statistics.median(times["before"])
    print(f"ratio after/before: best {best:.3f}, median {median:.3f}")


if __name__ == "__main__":
    main()
