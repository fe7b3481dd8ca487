"""Scale (issue 25): aclcheck against the obvious hand-written alternative, side by side.

Every figure is two whole commands (interpreter start and imports included) run in turns
in one process tree, on the same cases; each part keeps the median of `--rounds` and
reports wall time, the children's CPU time and their peak RSS. aclcheck is byte-compiled
first, as an installed package is (PYTHONDONTWRITEBYTECODE would otherwise make every
start compile it):

  gen-small     `aclcheck generate --count N` (default suite x N, mostly small cases) vs
                a bare loop: numpy values + torch float64 backward + one h5py group per
                case (target: aclcheck >= 3x the bare loop's cases/s)
  verify-ref    `aclcheck verify FILE --impl reference` (default options) vs a bare loop
                over the bare file: h5py read + torch float64 backward + allclose
                (target: <= 1.5x the time)
  verify-torch  `aclcheck verify FILE --impl torch` on the default suite, default options,
                vs a bare loop: h5py read + torch in the case dtype + allclose
                (target: <= 2x the time)
  gen-large     `aclcheck generate --cases-file` of 4 large cases vs numpy + torch float64
                + bare h5py (target: aclcheck >= 3x faster)
  check         `aclcheck inspect FILE --check` on the gen-small file (target: >= 5 000
                cases/s), beside a bare loop reading every dataset of the bare file
  rss           generate, verify --impl reference and inspect --check of suites of
                `--rss-cases` cases: peak RSS (target: independent of the case count)
  rss-verify    the same for verify --impl reference alone, with the default options and
                with --json --junit --html (the files are generated first, outside
                the measurement)
  rss-store     the same for generate and inspect --check only (the store's part)
  verify-isolated  verify-ref beside the bare loop with isolation and the stale-state
                check added by hand (bare_isolated.py), and the three without that check
                (aclcheck --no-stale-check): what those guarantees cost on their own

    python benchmarks/bench_scale.py                        # every part but rss, ~5 min
    python benchmarks/bench_scale.py --part gen-small --part verify-ref --rounds 5
    python benchmarks/bench_scale.py --part rss --rss-cases 10000 --rss-cases 100000
    python benchmarks/bench_scale.py --part rss-verify --rss-cases 10000 --rss-cases 30000
    python benchmarks/bench_scale.py --part verify-torch --profile /tmp/prof
    python benchmarks/bench_scale.py --part verify-isolated --rounds 5

The bare loops are what a user writes by hand: they make contiguous tensors only, keep no
records, run no call the contract rejects (they have no answer for those; PyTorch spins or
crashes on some) and judge with one `allclose`. aclcheck makes every layout, stores the
record of each case, runs the rejected calls in isolated workers and judges each output
under its error budget. `--profile DIR` writes pyinstrument profiles of the aclcheck
commands of gen-small, verify-ref and verify-torch (the parent process; a worker's time
shows as waiting) and, for verify-torch, how long hung calls were waited for.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PARTS = ("gen-small", "verify-ref", "verify-torch", "gen-large", "check", "rss",
         "rss-verify", "rss-store", "verify-isolated")
DEFAULT_PARTS = PARTS[:5]
#: The default suite has this many cases; `--count N` multiplies it (rss sizing).
DEFAULT_SUITE_CASES = 608

#: Four large cases (float32, float16, bfloat16; two layouts): 58 MB of inputs and goldens.
LARGE_CASES = [
    {"id": "large-fp32", "product": "atlas-a2", "dtype": "float32", "format": "NCHW",
     "self_shape": [16, 64, 56, 56], "grad_shape": [16, 64, 7, 7]},
    {"id": "large-fp16", "product": "atlas-a2", "dtype": "float16", "format": "NCHW",
     "self_shape": [8, 64, 33, 47], "grad_shape": [8, 64, 10, 13]},
    {"id": "large-bf16", "product": "atlas-a2", "dtype": "bfloat16", "format": "NCHW",
     "self_shape": [4, 32, 128, 128], "grad_shape": [4, 32, 48, 40]},
    {"id": "large-fp32-cl", "product": "atlas-a2", "dtype": "float32", "format": "NCHW",
     "self_shape": [8, 3, 224, 224], "grad_shape": [8, 3, 7, 7], "layout": "channels_last"},
]

# -- the hand-written alternatives --------------------------------------------------------

BARE_COMMON = r'''
import json, sys, time
import h5py, numpy as np, torch

NUMPY = {"float16": np.float16, "float32": np.float32, "float64": np.float64,
         "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
         "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
         "bool": np.bool_}
TORCH = {"float16": torch.float16, "float32": torch.float32, "bfloat16": torch.bfloat16,
         "float64": torch.float64}
backward = torch.ops.aten._adaptive_avg_pool2d_backward

def stored(values, dtype):
    """float64 values as the file keeps them (bfloat16 as its uint16 bits)."""
    if dtype == "bfloat16":
        t = torch.from_numpy(values.astype(np.float32)).to(torch.bfloat16)
        return t.view(torch.int16).numpy().view(np.uint16)
    return values.astype(NUMPY[dtype])

def as_torch(arr, dtype):
    t = torch.from_numpy(np.ascontiguousarray(arr))
    return t.view(torch.bfloat16) if dtype == "bfloat16" else t
'''

#: numpy tensors + torch float64 backward + one h5py group per case
BARE_GENERATE = BARE_COMMON + r'''
cases = json.load(open(sys.argv[1]))
rng = np.random.default_rng(0)
with h5py.File(sys.argv[2], "w") as f:
    for c in cases:
        g = f.create_group(c["id"])
        g.attrs["dtype"] = c["dtype"]
        grad = stored(rng.standard_normal(c["grad_shape"]) * 3.0, c["grad_dtype"])
        self_ = stored(rng.uniform(-5.0, 5.0, c["self_shape"]), c["self_dtype"])
        g["grad_output"] = grad
        g["self"] = self_
        if c["golden"] and 0 in grad.shape + self_.shape:  # torch refuses empty tensors
            g["golden"] = np.zeros(self_.shape)
        elif c["golden"]:  # from the values as stored (rounded to the dtype)
            golden = backward(as_torch(grad, c["grad_dtype"]).double(),
                              as_torch(self_, c["self_dtype"]).double())
            g["golden"] = golden.numpy()
print(f"bare generate: {len(cases)} cases")
'''

#: h5py read + torch float64 backward + allclose (what `--impl reference` does by hand)
BARE_VERIFY_REF = BARE_COMMON + r'''
checked = close = 0
with h5py.File(sys.argv[1], "r") as f:
    for cid, g in f.items():
        if "golden" not in g:
            continue
        dtype = g.attrs["dtype"]
        grad = as_torch(g["grad_output"][()], dtype).double()
        self_ = as_torch(g["self"][()], dtype).double()
        if 0 in grad.shape or 0 in self_.shape:
            continue
        out = backward(grad, self_)
        checked += 1
        close += np.allclose(out.numpy(), g["golden"][()], equal_nan=True)
print(f"bare verify (float64): {checked} calls, {close} allclose")
'''

#: h5py read + torch in the case dtype + allclose (what `--impl torch` does by hand)
BARE_VERIFY_TORCH = BARE_COMMON + r'''
checked = close = 0
with h5py.File(sys.argv[1], "r") as f:
    for cid, g in f.items():
        if "golden" not in g:
            continue
        dtype = g.attrs["dtype"]
        if dtype not in TORCH:
            continue
        grad = as_torch(g["grad_output"][()], dtype)
        self_ = as_torch(g["self"][()], dtype)
        if 0 in grad.shape or 0 in self_.shape:
            continue
        out = backward(grad, self_)
        checked += 1
        close += np.allclose(out.float().numpy(), g["golden"][()], rtol=1e-2, atol=1e-2,
                             equal_nan=True)
print(f"bare verify ({sys.argv[1]}): {checked} calls, {close} allclose")
'''

#: every dataset of the bare file read once (beside `inspect --check`)
BARE_READ_ALL = r'''
import sys, h5py
n = 0
with h5py.File(sys.argv[1], "r") as f:
    for cid, g in f.items():
        for ds in g.values():
            ds[()]
        n += 1
print(f"bare read: {n} cases")
'''

#: runs a command, then prints its tree's CPU seconds and peak RSS (KiB) as JSON
MEASURE = r'''
import json, resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
                  "rss_kib": ru.ru_maxrss}))
'''


@dataclass
class Run:
    """One measured command: wall and CPU seconds of its process tree, peak RSS (MiB)."""

    wall: float
    cpu: float
    rss_mib: float


def measure(cmd: Sequence[str], cwd: Path) -> Run:
    """Run `cmd` in a fresh measuring process (so RUSAGE_CHILDREN covers only its tree:
    the command, its zygote and workers). Dirty pages are written out first (untimed):
    on ext4 an fsync commits the journal with every file's pending data, so aclcheck's
    fsync would otherwise pay for the bare loop's unsynced file written just before."""
    os.sync()
    out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True,
                         text=True, cwd=cwd, check=True)
    data = json.loads(out.stdout)
    if data["rc"] not in (0, 1):
        raise SystemExit(f"{shlex.join(cmd)}: exit {data['rc']}\n{out.stderr}")
    return Run(data["wall"], data["cpu"], data["rss_kib"] / 1024)


def in_turns(label: str, cmds: dict[str, Sequence[str]], cwd: Path, rounds: int,
             cases: int | None = None) -> dict[str, Run]:
    """The commands in turns (in the order given), `rounds` times; medians printed."""
    runs: dict[str, list[Run]] = {name: [] for name in cmds}
    for _ in range(rounds):
        for name, cmd in cmds.items():
            runs[name].append(measure(cmd, cwd))
    med = {k: Run(statistics.median(r.wall for r in v), statistics.median(r.cpu for r in v),
                  max(r.rss_mib for r in v)) for k, v in runs.items()}
    print(f"\n== {label} ({rounds} rounds, medians)")
    width = max(9, *(len(name) for name in cmds))
    for name in cmds:
        m = med[name]
        rate = f"  {cases / m.wall:8.0f} cases/s" if cases else ""
        walls = ", ".join(f"{r.wall:.2f}" for r in runs[name])
        print(f"  {name:<{width}} wall {m.wall:7.2f} s  cpu {m.cpu:7.2f} s  peak RSS "
              f"{m.rss_mib:6.0f} MiB{rate}   (walls: {walls})")
    return med


def side_by_side(label: str, ours: Sequence[str], bare: Sequence[str], cwd: Path,
                 rounds: int, cases: int | None = None) -> tuple[Run, Run]:
    """Both commands in turns (bare first, then ours), `rounds` times; medians printed."""
    med = in_turns(label, {"bare": bare, "aclcheck": ours}, cwd, rounds, cases)
    a, b = med["aclcheck"], med["bare"]
    print(f"  aclcheck / bare: wall {a.wall / b.wall:.2f}x, cpu {a.cpu / b.cpu:.2f}x")
    print(f"  command: {shlex.join(['aclcheck', *ours[3:]])}")
    return a, b


# -- preparing the inputs (outside every timing) ------------------------------------------


def aclcheck_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "aclcheck", *args]


def case_list(path: Path, *, count: int | None = None,
              cases_file: Path | None = None) -> int:
    """The cases aclcheck generates, as the bare scripts read them (JSON)."""
    from aclcheck.suite.generate import plan_suite

    plan = plan_suite(count=count, cases_file=cases_file)
    rows = [{"id": c.id, "dtype": c.dtype,
             "grad_dtype": c.tensor_desc("grad_output").dtype,
             "self_dtype": c.tensor_desc("self").dtype,
             "grad_shape": list(c.grad_shape), "self_shape": list(c.self_shape),
             "golden": c.positive and "grad_output" not in c.null}
            for c in plan.cases]
    path.write_text(json.dumps(rows))
    return len(rows)


def write_scripts(tmp: Path) -> dict[str, Path]:
    scripts = {"generate": BARE_GENERATE, "verify_ref": BARE_VERIFY_REF,
               "verify_torch": BARE_VERIFY_TORCH, "read_all": BARE_READ_ALL}
    paths = {}
    for name, text in scripts.items():
        paths[name] = tmp / f"bare_{name}.py"
        paths[name].write_text(text)
    return paths


def run_quiet(cmd: Sequence[str], cwd: Path, *, codes: tuple[int, ...] = (0,)) -> None:
    """Run a preparation step; an exit code outside `codes` stops the benchmark."""
    rc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL).returncode
    if rc not in codes:
        raise SystemExit(f"{shlex.join(cmd)}: exit {rc}")


# -- parts --------------------------------------------------------------------------------


def part_gen_small(tmp: Path, s: dict[str, Path], rounds: int, count: int) -> None:
    n = case_list(tmp / "small.json", count=count)
    side_by_side(f"gen-small: default suite x {count} ({n} cases)",
                 aclcheck_cmd("generate", "-o", "small.h5", "--count", str(count), "--force"),
                 [sys.executable, str(s["generate"]), "small.json", "bare_small.h5"],
                 tmp, rounds, n)


def ensure_small(tmp: Path, s: dict[str, Path], count: int) -> int:
    """The gen-small files (aclcheck's and the bare one), made once."""
    n = case_list(tmp / "small.json", count=count)
    if not (tmp / "small.h5").exists():
        run_quiet(aclcheck_cmd("generate", "-o", "small.h5", "--count", str(count)), tmp)
    if not (tmp / "bare_small.h5").exists():
        run_quiet([sys.executable, str(s["generate"]), "small.json", "bare_small.h5"], tmp)
    return n


def part_verify_ref(tmp: Path, s: dict[str, Path], rounds: int, count: int) -> None:
    n = ensure_small(tmp, s, count)
    side_by_side(f"verify-ref: --impl reference, default options ({n} cases)",
                 aclcheck_cmd("verify", "small.h5", "--impl", "reference"),
                 [sys.executable, str(s["verify_ref"]), "bare_small.h5"], tmp, rounds, n)


def part_verify_isolated(tmp: Path, s: dict[str, Path], rounds: int, count: int) -> None:
    """verify-ref beside the bare loop with isolation and the stale-state check added by
    hand (bare_isolated.py), with and without that check."""
    n = ensure_small(tmp, s, count)
    isolated = [sys.executable, str(Path(__file__).with_name("bare_isolated.py")),
                "bare_small.h5"]
    for label, more, extra in (("every check", (), ()),
                               ("no stale-state check", ("--no-stale-check",),
                                ("--no-recall",))):
        med = in_turns(f"verify-isolated, {label} ({n} cases)", {
            "bare": [sys.executable, str(s["verify_ref"]), "bare_small.h5"],
            "bare isolated": [*isolated, *extra],
            "aclcheck": aclcheck_cmd("verify", "small.h5", "--impl", "reference", *more),
        }, tmp, rounds, n)
        bare, iso, ours = med["bare"], med["bare isolated"], med["aclcheck"]
        print(f"  bare isolated / bare: wall {iso.wall / bare.wall:.2f}x; aclcheck / bare "
              f"isolated: wall {ours.wall / iso.wall:.2f}x; aclcheck / bare: wall "
              f"{ours.wall / bare.wall:.2f}x")


def part_verify_torch(tmp: Path, s: dict[str, Path], rounds: int) -> None:
    n = case_list(tmp / "default.json")
    if not (tmp / "default.h5").exists():
        run_quiet(aclcheck_cmd("generate", "-o", "default.h5"), tmp)
        run_quiet([sys.executable, str(s["generate"]), "default.json", "bare_default.h5"],
                  tmp)
    side_by_side(f"verify-torch: default suite, --impl torch, default options ({n} cases)",
                 aclcheck_cmd("verify", "default.h5", "--impl", "torch"),
                 [sys.executable, str(s["verify_torch"]), "bare_default.h5"], tmp, rounds, n)
    hung_calls(tmp)


def hung_calls(tmp: Path) -> None:
    """How much of a torch run was spent waiting out hung calls (from its JSON report)."""
    report = tmp / "torch.json"
    run_quiet(aclcheck_cmd("verify", "default.h5", "--impl", "torch", "--json", str(report)),
              tmp, codes=(0, 1))
    cases = json.loads(report.read_text())["cases"]
    hung = [c for c in cases if "timeout" in c.get("message", "")]
    waited = sum(c.get("time_s") or 0.0 for c in hung)
    total = sum(c.get("time_s") or 0.0 for c in cases)
    print(f"  hung calls in one more run: {len(hung)}, waited {waited:.1f} s of "
          f"{total:.1f} s of call time ({', '.join(c['id'] for c in hung) or 'none'})")


def part_gen_large(tmp: Path, s: dict[str, Path], rounds: int) -> None:
    (tmp / "large.json").write_text(json.dumps(LARGE_CASES))
    n = case_list(tmp / "large_cases.json", cases_file=tmp / "large.json")
    side_by_side(f"gen-large: {n} large cases",
                 aclcheck_cmd("generate", "-o", "large.h5", "--cases-file", "large.json",
                              "--force"),
                 [sys.executable, str(s["generate"]), "large_cases.json", "bare_large.h5"],
                 tmp, rounds, n)


def part_check(tmp: Path, s: dict[str, Path], rounds: int, count: int) -> None:
    n = ensure_small(tmp, s, count)
    side_by_side(f"check: inspect --check ({n} cases)",
                 aclcheck_cmd("inspect", "small.h5", "--check"),
                 [sys.executable, str(s["read_all"]), "bare_small.h5"], tmp, rounds, n)


def part_rss(tmp: Path, sizes: Sequence[int], verify: bool = True) -> None:
    """Peak RSS (and time) of generate, verify --impl reference (unless not `verify`) and
    inspect --check at each size: suites of `n` cases as default suite x ceil(n / 548)."""
    print("\n== rss: peak RSS of the process tree by suite size")
    print(f"  {'cases':>8} {'command':<34} {'wall s':>8} {'cpu s':>8} {'cases/s':>8} "
          f"{'peak MiB':>9}")
    for n in sizes:
        count = max(1, math.ceil(n / DEFAULT_SUITE_CASES))
        name = f"rss{count}.h5"
        cases = count * DEFAULT_SUITE_CASES
        for label, cmd in (
            ("generate", aclcheck_cmd("generate", "-o", name, "--count", str(count),
                                      "--force")),
            ("verify --impl reference", aclcheck_cmd("verify", name, "--impl", "reference")),
            ("inspect --check", aclcheck_cmd("inspect", name, "--check")),
        ):
            if label.startswith("verify") and not verify:
                continue
            r = measure(cmd, tmp)
            print(f"  {cases:>8} {label:<34} {r.wall:8.1f} {r.cpu:8.1f} "
                  f"{cases / r.wall:8.0f} {r.rss_mib:9.0f}", flush=True)
        (tmp / name).unlink()


def part_rss_verify(tmp: Path, sizes: Sequence[int]) -> None:
    """Peak RSS (and time) of verify --impl reference alone at each size (suites of `n`
    cases as default suite x ceil(n / 608), generated first if missing, not timed), with
    the default options and with the JSON, JUnit and HTML reports."""
    import h5py

    print("\n== rss-verify: peak RSS of verify --impl reference by suite size")
    print(f"  {'cases':>8} {'options':<24} {'wall s':>8} {'cpu s':>8} {'cases/s':>8} "
          f"{'peak MiB':>9}")
    reports = ("--json", "r.json", "--junit", "r.xml", "--html", "r.html")
    for n in sizes:
        count = max(1, math.ceil(n / DEFAULT_SUITE_CASES))
        name = f"rss{count}.h5"
        if not (tmp / name).exists():
            run_quiet(aclcheck_cmd("generate", "-o", name, "--count", str(count)), tmp)
        with h5py.File(tmp / name, "r") as f:
            cases = int(f.attrs["case_count"])
        for label, more in (("default", ()), ("--json --junit --html", reports)):
            r = measure(aclcheck_cmd("verify", name, "--impl", "reference", *more), tmp)
            print(f"  {cases:>8} {label:<24} {r.wall:8.1f} {r.cpu:8.1f} "
                  f"{cases / r.wall:8.0f} {r.rss_mib:9.1f}", flush=True)


def profile(tmp: Path, folder: Path, count: int) -> None:
    """pyinstrument text profiles of the aclcheck commands (the parent process)."""
    folder.mkdir(parents=True, exist_ok=True)
    runs = {
        "generate": ["generate", "-o", "prof.h5", "--count", str(count), "--force"],
        "verify-reference": ["verify", "small.h5", "--impl", "reference"],
        "verify-torch": ["verify", "default.h5", "--impl", "torch"],
    }
    for label, args in runs.items():
        out = folder / f"{label}.txt"
        subprocess.run([sys.executable, "-m", "pyinstrument", "-r", "text", "-o", str(out),
                        "-m", "aclcheck", *args], cwd=tmp, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        print(f"  profile of aclcheck {' '.join(args)} -> {out}")


def compile_bytecode() -> None:
    """Byte-compile aclcheck as an install does: an editable checkout run with
    PYTHONDONTWRITEBYTECODE set (as some shells and CI images do) would otherwise compile
    every module at every start, which the bare loops (one small script each; numpy, h5py
    and torch compiled when pip installed them) never pay."""
    import compileall

    import aclcheck

    folder = Path(aclcheck.__file__).parent
    compileall.compile_dir(str(folder), quiet=1)
    print(f"aclcheck byte-compiled in {folder} (as installed)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", action="append", choices=PARTS,
                    help=f"what to run (repeatable; default: {', '.join(DEFAULT_PARTS)})")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=10,
                    help="default suite x COUNT for gen-small, verify-ref, check")
    ap.add_argument("--rss-cases", type=int, action="append",
                    help="suite sizes of the rss part (repeatable; default 10000)")
    ap.add_argument("--profile", type=Path, default=None, metavar="DIR")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="folder for the files (default: a temp folder)")
    args = ap.parse_args()
    parts = args.part or list(DEFAULT_PARTS)
    import h5py
    import numpy as np

    compile_bytecode()

    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, h5py "
          f"{h5py.version.version}, HDF5 {h5py.version.hdf5_version}, {os.cpu_count()} CPUs, "
          f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=args.workdir) as name:
        tmp = Path(name)
        scripts = write_scripts(tmp)
        if "gen-small" in parts:
            part_gen_small(tmp, scripts, args.rounds, args.count)
        if "verify-ref" in parts:
            part_verify_ref(tmp, scripts, args.rounds, args.count)
        if "verify-isolated" in parts:
            part_verify_isolated(tmp, scripts, args.rounds, args.count)
        if "verify-torch" in parts:
            part_verify_torch(tmp, scripts, args.rounds)
        if "gen-large" in parts:
            part_gen_large(tmp, scripts, args.rounds)
        if "check" in parts:
            part_check(tmp, scripts, args.rounds, args.count)
        if "rss" in parts:
            part_rss(tmp, args.rss_cases or [10_000])
        if "rss-verify" in parts:
            part_rss_verify(tmp, args.rss_cases or [10_000])
        if "rss-store" in parts:
            part_rss(tmp, args.rss_cases or [10_000], verify=False)
        if args.profile is not None:
            ensure_small(tmp, scripts, args.count)
            if not (tmp / "default.h5").exists():
                run_quiet(aclcheck_cmd("generate", "-o", "default.h5"), tmp)
            profile(tmp, args.profile, args.count)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(f"\n(benchmark took {time.perf_counter() - start:.0f} s; its own peak RSS "
          f"{ru.ru_maxrss / 1024:.0f} MiB; load average now "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()
