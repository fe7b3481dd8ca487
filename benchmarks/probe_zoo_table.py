"""The probe zoo's table (docs/diagnosis.md §7): for each broken kernel of
tests/kernels_probe_zoo.py, its real cause, aclcheck's leading diagnosis, whether that is
right in kind and names the cause (read from the JSON report's data), and the probe calls
it took. Not a speed benchmark: the same small suites as tests/test_probe_run.py.

    python benchmarks/probe_zoo_table.py             # markdown, ~20 s
    python benchmarks/probe_zoo_table.py --kernel plane_slip

Run from the repository root with the package installed (`pip install -e .`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aclcheck.cli import cli  # noqa: E402
from tests.kernels_probe_zoo import ZOO  # noqa: E402
from tests.test_probe_run import FAMILIES_2D, FAMILIES_3D  # noqa: E402

OPS = {"2d": ("aapool2d-bwd", FAMILIES_2D), "3d": ("aapool3d-bwd", FAMILIES_3D)}


def invoke(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if result.exit_code not in (0, 1):
        raise SystemExit(result.output)


def suites(folder: Path) -> dict[str, Path]:
    out = {}
    for key, (op, families) in OPS.items():
        path = folder / f"{key}.h5"
        invoke("generate", "-o", str(path), "--op", op, "--product", "atlas-a2",
               *(x for f in families for x in ("--family", f)))
        out[key] = path
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", action="append", default=[], help="zoo kernel (repeatable)")
    args = parser.parse_args(argv)
    chosen = [e for e in ZOO if not args.kernel or e.name in args.kernel]
    print("| kernel | op | real cause | first diagnosis | right in kind | names the cause "
          "| probe calls |")
    print("|---|---|---|---|---|---|---|")
    kind_n = cause_n = 0
    with tempfile.TemporaryDirectory() as tmp:
        golden = suites(Path(tmp))
        for e in chosen:
            report = Path(tmp) / f"{e.name}.json"
            invoke("verify", str(golden[e.op]), "--impl",
                   f"{ROOT / 'tests/kernels_probe_zoo.py'}:{e.name}", "--no-isolate",
                   "--json", str(report))
            entries = json.loads(report.read_text()).get("diagnosis") or []
            first = entries[0] if entries else None
            kind, cause = e.judged(first)
            kind_n, cause_n = kind_n + kind, cause_n + cause
            calls = max((x.get("calls", 0) for x in entries), default=0)
            m = (first or {}).get("measured")
            said = "-" if first is None else first["code"] + (
                f" {m['axis']} {m['quantity']}: {m['measured'] or 'no formula fits'}"
                if m else "")
            print(f"| {e.name} | {e.op} | {e.cause} | {said} | {'yes' if kind else 'no'} | "
                  f"{'yes' if cause else 'no'} | {calls} |")
    print(f"\nright in kind: {kind_n} of {len(chosen)}; names the cause: {cause_n} of "
          f"{len(chosen)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
