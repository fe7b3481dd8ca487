"""Start-up of the command line: `aclcheck --version` and `aclcheck --help` (and, for
information, a light and a heavy command) against `python -c "import click,
rich.console"`, whole processes, in interleaved rounds (the machine is noisy). With
`--before REV` the same commands of an older commit run beside them (its tree exported
to a temporary folder and put first on PYTHONPATH).

    python benchmarks/bench_startup.py [--rounds 15] [--before 5a28265]
    python benchmarks/bench_startup.py --generate [--rounds 5] [--before 6ebcb96]

Target (issue 20): --version and --help within 3x of the click + rich.console import.
With --generate (issue 25): `import aclcheck.cli.generate`, `generate --help` and
`generate` of bench_scale.py's 4 large cases against `import numpy, h5py, click,
rich.progress`, wall and CPU time (the children's user + system), target <= 0.2 s wall
for the import. Bytecode is cached (written in a warm-up run); with --source every run
compiles aclcheck's own sources (caches removed, PYTHONDONTWRITEBYTECODE=1: a shell
that sets it, on a tree never byte-compiled).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
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
GEN_BASELINE = ("import numpy, h5py, click, rich.progress",
                [sys.executable, "-c", "import numpy, h5py, click, rich.progress"])
GEN_COMMANDS = {"import aclcheck.cli.generate": ["-c", "import aclcheck.cli.generate"],
                "aclcheck generate --help": ["-m", "aclcheck", "generate", "--help"],
                "aclcheck generate (4 large cases)": [
                    "-m", "aclcheck", "generate", "-o", "large.h5", "--cases-file",
                    "large.json", "--force"]}


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    return timed_cpu(cmd, env, cwd)[0]


def timed_cpu(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Wall and CPU seconds of one whole command."""
    cpu, start = cpu_of_children(), time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                   cwd=cwd, check=True)
    return time.perf_counter() - start, cpu_of_children() - cpu


def generate_startup(rounds: int, before: str | None, source: bool) -> None:
    """generate's start-up (issue 25): the commands of GEN_COMMANDS, interleaved."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_scale import LARGE_CASES

    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp) / "cwd"
        cwd.mkdir()
        (cwd / "large.json").write_text(json.dumps(LARGE_CASES))
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if source:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        packages = [REPO / "aclcheck"]
        trees = [("", env)]
        if before:
            old = export_tree(before, Path(tmp) / "before")
            for built in REPO.glob("aclcheck/**/*.so"):  # this tree's kernel, as now
                if (old / built.relative_to(REPO)).parent.is_dir():
                    shutil.copy2(built, old / built.relative_to(REPO))
            trees.append((f" [{before}]", dict(env, PYTHONPATH=str(old))))
            packages.append(old / "aclcheck")
        if source:
            for cache in [c for p in packages for c in p.rglob("__pycache__")]:
                shutil.rmtree(cache)
        commands = {GEN_BASELINE[0]: (GEN_BASELINE[1], trees[0][1])}
        for name, args in GEN_COMMANDS.items():
            for label, tree_env in trees:
                commands[f"{name}{label}"] = ([sys.executable, *args], tree_env)
        for cmd, cmd_env in commands.values():
            timed_cpu(cmd, cmd_env, str(cwd))  # warm the page cache (and write bytecode)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(rounds):
            for name, (cmd, cmd_env) in commands.items():
                runs[name].append(timed_cpu(cmd, cmd_env, str(cwd)))
    print(f"{rounds} interleaved rounds, whole processes, medians: wall s, CPU s "
          f"({'sources compiled every run' if source else 'bytecode cached'})")
    for name, got in runs.items():
        wall = statistics.median(w for w, _ in got)
        cpu = statistics.median(c for _, c in got)
        print(f"  {name:58s} {wall:6.3f} {cpu:6.3f}")


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
    ap.add_argument("--generate", action="store_true",
                    help="generate's start-up instead (issue 25)")
    ap.add_argument("--source", action="store_true",
                    help="with --generate: no bytecode cache for aclcheck's sources")
    args = ap.parse_args()
    if args.generate:
        generate_startup(args.rounds, args.before, args.source)
        return
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
