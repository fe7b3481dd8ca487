"""What aclcheck names first for broken kernels of known cause (not a speed benchmark).

Runs `aclcheck verify` on the default suite once per kernel of the zoo
(tests/kernels_zoo.py: the ten kinds of issue 21 and kinds of our own, plus correct
controls) and prints one row per kernel: the real cause, the failing cases, aclcheck's
first diagnosis (the first entry of the JSON report's `diagnosis`; for reports without
one, the message of the first failing case, which is what the console led with), and
whether the first diagnosis names the real cause (its code is one the zoo lists for the
kernel; a control is right when nothing is diagnosed).

    python benchmarks/bench_diagnosis.py                    # every kernel, ~3 min
    python benchmarks/bench_diagnosis.py --kernel end_floor --kernel ties_away
    python benchmarks/bench_diagnosis.py --suite suite.h5 --markdown
    python benchmarks/bench_diagnosis.py --suite suite.h5 --cost end_floor   # its price
    python benchmarks/bench_diagnosis.py --probe-cost end_floor --probe-cost plane_slip

The table is the what-if models' ranking (`verify --no-probe`); the measuring probe's
own table is benchmarks/probe_zoo_table.py, and `--probe-cost KERNEL` (a kernel of
tests/kernels_zoo.py or tests/kernels_probe_zoo.py) prices the probe stage: `verify`
with it beside `verify --no-probe`, as a markdown table.

Run from the repository root with the package installed (`pip install -e .`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.kernels_zoo import CONTROLS, ZOO, Entry  # noqa: E402

ZOO_FILE = "tests/kernels_zoo.py"


@dataclass(frozen=True)
class Row:
    kernel: str
    cause: str
    failing: int
    cases: int
    first: str  # the first diagnosis (code: message), or the first failing message
    code: str | None  # its code, when the report has a diagnosis
    right: bool
    seconds: float


def _aclcheck() -> list[str]:
    exe = Path(sys.executable).with_name("aclcheck")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "aclcheck"]


def run_kernel(suite: Path, name: str, out_dir: Path) -> tuple[dict, float]:
    """The JSON report of `verify SUITE --impl tests/kernels_zoo.py:NAME` and its time."""
    report = out_dir / f"{name}.json"
    cmd = [*_aclcheck(), "verify", str(suite), "--impl", f"{ZOO_FILE}:{name}",
           "--json", str(report), "--no-probe"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1) or not report.exists():
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return json.loads(report.read_text()), seconds


def first_diagnosis(report: dict) -> tuple[str, str | None]:
    """(text, code) of what the report names first."""
    entries = report.get("diagnosis") or []
    if entries:
        top = entries[0]
        return f"{top['code']}: {top['message']}", str(top["code"])
    failing = [c for c in report.get("cases", []) if c.get("verdict") in
               ("FAIL", "WRONG_STATUS", "UNIMPLEMENTED", "NONDETERMINISTIC", "ERROR")]
    if not failing:
        return "-", None
    return f"(no diagnosis) {failing[0]['message']}", None


def row_of(entry: Entry | None, name: str, report: dict, seconds: float) -> Row:
    summary = report.get("summary", {})
    failing = sum(int(summary.get(k, 0)) for k in
                  ("failed", "wrong_status", "unimplemented", "nondeterministic", "error"))
    text, code = first_diagnosis(report)
    if entry is None:  # a control: right when nothing fails and nothing is diagnosed
        right = failing == 0 and not report.get("diagnosis")
        cause = "none (correct kernel)"
    else:
        right = code is not None and code in entry.codes
        cause = entry.cause
    return Row(name, cause, failing, int(summary.get("cases", 0)), text, code, right,
               seconds)


def make_suite(folder: Path) -> Path:
    suite = folder / "suite.h5"
    subprocess.run([*_aclcheck(), "generate", "-o", str(suite), "--force"], cwd=ROOT,
                   check=True, capture_output=True)
    return suite


def render(rows: list[Row], markdown: bool, width: int = 90) -> str:
    head = ("kernel", "real cause", "failing", "first diagnosis", "right")
    lines = []
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
    for r in rows:
        first = r.first if len(r.first) <= width else r.first[: width - 3] + "..."
        cells = (r.kernel, r.cause, f"{r.failing}/{r.cases}", first,
                 "yes" if r.right else "no")
        if markdown:
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        else:
            lines.append("  ".join(cells))
    right = sum(r.right for r in rows)
    lines.append(f"\n{right} of {len(rows)} first diagnoses name the real cause "
                 f"({sum(r.seconds for r in rows):.0f} s of verify runs)")
    return "\n".join(lines)


def cost(suite: Path, name: str, rounds: int = 3) -> tuple[float, float]:
    """Median seconds of `verify --no-isolate` (in this process) of one zoo kernel with
    the operator's diagnosis and without it (its hooks removed), side by side."""
    import dataclasses
    import statistics

    from click.testing import CliRunner

    from aclcheck import ops
    from aclcheck.cli import cli

    op = ops.OPERATORS[ops.DEFAULT]
    bare = dataclasses.replace(op, diagnosis=None)
    args = ["verify", str(suite), "--impl", f"{ROOT / ZOO_FILE}:{name}", "--no-isolate"]
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for _ in range(rounds):
            for diagnosed in (True, False):
                ops.OPERATORS[op.name] = op if diagnosed else bare
                start = time.perf_counter()
                CliRunner().invoke(cli, args)
                times[diagnosed].append(time.perf_counter() - start)
    finally:
        ops.OPERATORS[op.name] = op
    return statistics.median(times[True]), statistics.median(times[False])


def probe_cost(suite: Path, names: list[str], rounds: int = 3) -> str:
    """Markdown: median seconds of `verify --no-isolate` (in this process) of each kernel
    with the probe and with --no-probe, interleaved, the ratio, and the probe calls."""
    import statistics

    from click.testing import CliRunner

    from aclcheck.cli import cli
    from tests.kernels_probe_zoo import ZOO as PROBE_ZOO

    probe_names = {e.name for e in PROBE_ZOO}
    lines = ["| kernel | with probe (s) | --no-probe (s) | ratio | probe calls |",
             "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "r.json"
        for name in names:
            zoo = "tests/kernels_probe_zoo.py" if name in probe_names else ZOO_FILE
            args = ["verify", str(suite), "--impl", f"{ROOT / zoo}:{name}", "--no-isolate",
                    "--json", str(report)]
            times: dict[bool, list[float]] = {True: [], False: []}
            calls = 0
            for _ in range(rounds):
                for probed in (True, False):
                    start = time.perf_counter()
                    CliRunner().invoke(cli, args + ([] if probed else ["--no-probe"]))
                    times[probed].append(time.perf_counter() - start)
                    if probed:
                        entries = json.loads(report.read_text()).get("diagnosis") or []
                        calls = max((e.get("calls", 0) for e in entries), default=0)
            on, off = statistics.median(times[True]), statistics.median(times[False])
            lines.append(f"| {name} | {on:.2f} | {off:.2f} | {on / off:.2f} | {calls} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, help="golden file (default: generate the "
                        "default suite into a temporary folder)")
    parser.add_argument("--kernel", action="append", default=[],
                        help="zoo kernel to run (repeatable; default: all and the controls)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--keep", type=Path, help="folder to keep the JSON reports in")
    parser.add_argument("--cost", metavar="KERNEL", help="instead: the time verify takes "
                        "on KERNEL with and without the diagnosis, side by side")
    parser.add_argument("--probe-cost", metavar="KERNEL", action="append", default=[],
                        help="instead: verify on KERNEL with the probe and with --no-probe "
                             "(repeatable), a markdown table")
    args = parser.parse_args(argv)
    if args.probe_cost:
        with tempfile.TemporaryDirectory() as tmp:
            suite = args.suite.resolve() if args.suite else make_suite(Path(tmp))
            print(probe_cost(suite, args.probe_cost))
        return 0
    if args.cost:
        with tempfile.TemporaryDirectory() as tmp:
            suite = args.suite.resolve() if args.suite else make_suite(Path(tmp))
            with_d, without = cost(suite, args.cost)
        print(f"verify {args.cost}: {with_d:.2f} s with the diagnosis, {without:.2f} s "
              f"without (ratio {with_d / without:.2f}; medians of 3, in-process)")
        return 0
    by_name = {e.name: e for e in ZOO}
    names = args.kernel or [*by_name, *CONTROLS]
    unknown = [n for n in names if n not in by_name and n not in CONTROLS]
    if unknown:
        parser.error(f"unknown kernel {', '.join(unknown)} (known: "
                     f"{', '.join([*by_name, *CONTROLS])})")
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.keep or Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        suite = args.suite.resolve() if args.suite else make_suite(Path(tmp))
        rows = []
        for name in names:
            report, seconds = run_kernel(suite, name, out_dir)
            rows.append(row_of(by_name.get(name), name, report, seconds))
            print(f"  {name}: {rows[-1].failing} failing, {seconds:.1f} s",
                  file=sys.stderr, flush=True)
    print(render(rows, args.markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
