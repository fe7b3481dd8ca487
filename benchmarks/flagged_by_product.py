"""How many cases of the default 2-D suite each broken kernel of tests/ is flagged on, per
product: the measure that a change to the error budget keeps the suite's teeth.

Every broken, truncating and rounding kernel of tests/kernels.py, the diagnosis zoo
(tests/kernels_zoo.py) and the hardware-edge kernels (tests/kernels_hardware.py) runs on
the default suite's cases (outputs of saturating products converted as that mode does),
judged by the default standard as `aclcheck verify` judges.

    python benchmarks/flagged_by_product.py after.json               # this checkout
    python benchmarks/flagged_by_product.py --compare before.json after.json   # a table

To compare two versions of the budget, run the first form in both checkouts (the same
tests/ kernels in each) and then the second.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

PRODUCTS = ("atlas-training", "atlas-inference", "atlas-a2", "atlas-a3")


def measure() -> dict[str, dict[str, int]]:
    import numpy as np

    from aclcheck.ops.adaptive_avg_pool2d_backward.compare import compare
    from tests import kernels, kernels_zoo
    from tests import kernels_hardware as hw
    from tests.test_discrimination import SATURATING, saturated, suite

    broken = {**kernels.BROKEN, **kernels.TRUNCATING, **kernels.ROUNDING}
    broken.update({f"zoo:{e.name}": kernels_zoo.make(e.name) for e in kernels_zoo.ZOO})
    broken.update({f"hw:{k.__name__}": k for ks in hw.BROKEN.values() for k in ks})
    items = suite("default")
    result: dict[str, dict[str, int]] = {}
    for name, fn in broken.items():
        flagged: collections.Counter[str] = collections.Counter()
        for item in items:
            with np.errstate(all="ignore"):
                try:
                    out = fn(item.grad, item.self_)
                except Exception:  # noqa: BLE001 - a kernel that raises is flagged
                    flagged[item.case.product] += 1
                    continue
                if item.case.product in SATURATING and out.shape == item.golden.shape:
                    out = saturated(out, nan=False)
            if (out.shape != item.golden.shape or out.dtype != item.self_.dtype
                    or not compare(item.golden, out, item.context()).passed):
                flagged[item.case.product] += 1
        result[name] = dict(flagged)
    return result


def table(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> str:
    lines = ["| kernel | " + " | ".join(PRODUCTS) + " |",
             "|---|" + "---|" * len(PRODUCTS)]
    for name in before:
        cells = []
        for p in PRODUCTS:
            x, y = before[name].get(p, 0), after.get(name, {}).get(p, 0)
            cells.append(str(x) if x == y else f"{x} -> {y}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lost = [n for n in before for p in PRODUCTS
            if before[n].get(p, 0) and not after.get(n, {}).get(p, 0)]
    lines.append("")
    lines.append(f"kernel x product pairs caught before and not after: {len(lost)}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--compare", action="store_true",
                        help="print the table of two measurements (before, after)")
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(f.read_text()) for f in args.files[:2])
        print(table(before, after))
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    args.files[0].write_text(json.dumps(measure(), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
