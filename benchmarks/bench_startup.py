"""Start-up of the command line: `aclcheck --version` and `aclcheck --help` (and, for
information, a light and a heavy command) against `python -c "import click,
rich.console"`, whole processes, in interleaved rounds (the machine is noisy). With
`--before REV` the same commands of an older commit run beside them (its tree exported
to a temporary folder and put first on PYTHONPATH).

    python benchmarks/bench_startup.py [--rounds 15] [--before 5a28265]

Target (issue 20): --version and --help within 3x of the click + rich.console import.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE = ("import click, rich.console", [sys.executable, "-c", "import click, rich.console"])
TARGETS = ("--version", "--help")
INFORMATION = ("products", "verify --help")
IMPORTS = ("numpy", "h5py", "ml_dtypes")


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                   cwd=cwd, check=True)
    return time.perf_counter() - start


def export_tree(rev: str, into: Path) -> Path:
    """The package of commit `rev`, as files (no build: its optional C kernel is absent,
    which start-up does not touch)."""
    data = subprocess.run(["git", "-C", str(REPO), "archive", rev, "aclcheck"],
                          capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--before", metavar="REV", default=None,
                    help="also time these commands as commit REV had them")
    args = ap.parse_args()
    now_env = dict(os.environ)
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        BASELINE[0]: (BASELINE[1], now_env)}
    for name in IMPORTS:
        commands[f"import {name}"] = ([sys.executable, "-c", f"import {name}"], now_env)
    with tempfile.TemporaryDirectory() as tmp:
        trees = [("", now_env)]
        if args.before:
            old = export_tree(args.before, Path(tmp) / "before")
            trees.append((f" [{args.before}]",
                          dict(os.environ, PYTHONPATH=str(old), ACLCHECK_PURE_NUMPY="1")))
        for label, env in trees:
            for what in (*TARGETS, *INFORMATION):
                commands[f"aclcheck {what}{label}"] = (
                    [sys.executable, "-m", "aclcheck", *what.split()], env)
        # a neutral working folder: `python -m` puts it first on sys.path
        neutral = Path(tmp) / "cwd"
        neutral.mkdir()
        for cmd, env in commands.values():
            timed(cmd, env, str(neutral))  # warm the page cache
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, (cmd, env) in commands.items():
                times[name].append(timed(cmd, env, str(neutral)))
    base = statistics.median(times[BASELINE[0]])
    print(f"{args.rounds} interleaved rounds, whole processes, median seconds; "
          f"ratio to `python -c \"{BASELINE[0]}\"`")
    for name, runs in times.items():
        med = statistics.median(runs)
        target = ""
        if any(name == f"aclcheck {t}" for t in TARGETS):
            target = f"  (target <= 3x: {'met' if med <= 3 * base else 'NOT met'})"
        print(f"  {name:40s} {med:6.3f} s  {med / base:5.2f}x{target}")


if __name__ == "__main__":
    main()
