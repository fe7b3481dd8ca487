"""How PyTorch, MindSpore and Paddle CPU fare on a golden file: the README's tables, and
the failures no known-failure list explains (to refresh those lists).

Each framework runs in its own `aclcheck verify` process (as CI runs them; MindSpore
also cannot import after Paddle in one process), with every published standard shown
beside the default one and with its list golden/<framework>-cpu.xfail.toml.

    python benchmarks/frameworks_table.py                      # README tables (markdown)
    python benchmarks/frameworks_table.py --unexplained        # what the lists miss (exit 1 if
                                                               # any) and entries now unused
    python benchmarks/frameworks_table.py golden/other.h5 --impl paddle --unexplained
    python benchmarks/frameworks_table.py golden/ci-suite-3d.h5     # the 3D operator's suite,
                                                               # its golden/*-cpu-3d lists

Exit codes: 0 done (with --unexplained: nothing unexplained), 1 unexplained failures or
XPASS, 2 a framework could not run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = ("torch", "mindspore", "paddle")
STANDARDS = ("aclcheck", "cann-mixed", "cann-mere", "msopst", "torch-npu", "msprobe-ulp",
             "assert-close")
SHORT_PRODUCT = {"atlas-training": "training", "atlas-inference": "inference",
                 "atlas-a2": "a2", "atlas-a3": "a3"}
SHORT_DTYPE = {"float16": "fp16", "float32": "fp32", "bfloat16": "bf16"}
UNEXPLAINED = ("FAIL", "WRONG_STATUS", "UNIMPLEMENTED", "NONDETERMINISTIC", "ERROR", "XPASS")


def xfail_list(impl: str, golden: Path = ROOT / "golden" / "ci-suite.h5") -> Path:
    """golden/<framework>-cpu<suffix>.xfail.toml, the suffix that of the suite's name
    (ci-suite.h5: none; ci-suite-3d.h5: -3d)."""
    suffix = Path(golden).stem.removeprefix("ci-suite")
    return ROOT / "golden" / f"{impl}-cpu{suffix}.xfail.toml"


def run_verify(golden: Path, impl: str, timeout: float) -> dict[str, Any]:
    """One `aclcheck verify` run of impl (its xfail list, every standard); the JSON report."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "aclcheck", "verify", str(golden), "--impl", impl,
               "--timeout", str(timeout), "--json", str(report)]
        for name in STANDARDS:
            cmd += ["--standard", name]
        if xfail_list(impl, golden).is_file():
            cmd += ["--xfail", str(xfail_list(impl, golden))]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode not in (0, 1) or not report.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"{impl}: aclcheck verify exited {done.returncode}: {tail[0]}")
        return json.loads(report.read_text())


def outcome_table(reports: dict[str, dict[str, Any]]) -> list[str]:
    """product x dtype rows; per framework pass / fail / skip / known (default standard,
    after the framework's known-failure list). Rows every framework skips are left out."""
    counts: dict[tuple[str, str], dict[str, Counter[str]]] = defaultdict(
        lambda: defaultdict(Counter))
    for impl, report in reports.items():
        for case in report["cases"]:
            key = (case["product"], case["dtype"])
            v = case["verdict"]
            bucket = ("pass" if v in ("PASS", "MISTRUSTED") else "skip" if v == "SKIP"
                      else "known" if v == "XFAIL" else "fail")
            counts[key][impl][bucket] += 1
    impls = list(reports)
    lines = ["| product | dtype | " + " | ".join(
        f"{i} pass / fail / skip / known" for i in impls) + " |",
        "|---|---|" + "---|" * len(impls)]
    for (prod, dtype), row in sorted(counts.items(), key=_order):
        if all(set(row[i]) == {"skip"} for i in impls):
            continue  # e.g. the float64 / int32 probes: no framework can express them
        cells = [" / ".join(str(row[i][b]) for b in ("pass", "fail", "skip", "known"))
                 for i in impls]
        lines.append(f"| {SHORT_PRODUCT.get(prod, prod)} | {SHORT_DTYPE.get(dtype, dtype)} | "
                     + " | ".join(cells) + " |")
    return lines


def standards_table(reports: dict[str, dict[str, Any]]) -> list[str]:
    """Numerically judged cases (valid, non-empty) failing each standard, per product x
    dtype x framework; rows where every framework passes every standard are left out."""
    judged: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for impl, report in reports.items():
        for case in report["cases"]:
            if not case.get("standards"):
                continue
            key = (case["product"], case["dtype"], impl)
            judged[key]["cases"] += 1
            for name, ok in case["standards"].items():
                judged[key][name] += not ok
    lines = ["| product | dtype | framework | cases | " + " | ".join(STANDARDS) + " |",
             "|---|---|---|---|" + "---|" * len(STANDARDS)]
    for (prod, dtype, impl), row in sorted(judged.items(), key=_order):
        if not any(row[s] for s in STANDARDS):
            continue
        lines.append(f"| {SHORT_PRODUCT.get(prod, prod)} | {SHORT_DTYPE.get(dtype, dtype)} | "
                     f"{impl} | {row['cases']} | " + " | ".join(str(row[s]) for s in STANDARDS)
                     + " |")
    return lines


def _order(item: tuple[tuple[str, ...], object]) -> tuple[object, ...]:
    key = item[0]
    products = list(SHORT_PRODUCT)
    prod = products.index(key[0]) if key[0] in products else len(products)
    rest = tuple(FRAMEWORKS.index(k) if k in FRAMEWORKS else k for k in key[1:])
    return (prod, *rest)


def unexplained(reports: dict[str, dict[str, Any]]) -> list[str]:
    """Every case whose verdict (after the xfail lists) gates, and every XPASS."""
    found = []
    for impl, report in reports.items():
        for case in report["cases"]:
            if case["verdict"] in UNEXPLAINED:
                found.append(f"{impl}: {case['verdict']} {case['id']}: "
                             f"{case['message'].splitlines()[0][:160]}")
    return found


def stale_entries(reports: dict[str, dict[str, Any]], golden: Path) -> list[str]:
    """Known-failure entries that explain no failure of this run (candidates to remove)."""
    from aclcheck.judging.gate import xfail

    found = []
    for impl, report in reports.items():
        if not xfail_list(impl, golden).is_file():
            continue
        known = [c["id"] for c in report["cases"] if c["verdict"] == "XFAIL"]
        for entry in xfail.load_xfails(xfail_list(impl, golden)).entries:
            if not any(entry.matches(cid, report["implementation"]) for cid in known):
                found.append(f"{impl}: stale entry {entry.pattern!r} ({entry.reason})")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("golden", nargs="?", default=str(ROOT / "golden" / "ci-suite.h5"))
    parser.add_argument("--impl", action="append", choices=FRAMEWORKS,
                        help="only this framework (repeatable; default: all three)")
    parser.add_argument("--unexplained", action="store_true",
                        help="print the failures the known-failure lists do not explain, "
                             "and the entries that explain nothing")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds per isolated call (as in CI) [10]")
    args = parser.parse_args(argv)
    reports = {}
    for impl in args.impl or FRAMEWORKS:
        print(f"running {impl} ...", file=sys.stderr)
        try:
            reports[impl] = run_verify(Path(args.golden), impl, args.timeout)
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.unexplained:
        found = unexplained(reports)
        print("\n".join(found) if found else "nothing unexplained: every failure is listed")
        stale = stale_entries(reports, Path(args.golden))
        print("\n".join(stale) if stale else "no stale entries: every entry explains a failure")
        return 1 if found else 0
    impls = ", ".join(r["implementation"] for r in reports.values())
    print(f"<!-- python benchmarks/frameworks_table.py ({impls}) -->\n")
    print("\n".join(outcome_table(reports)))
    print()
    print("\n".join(standards_table(reports)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
