"""The minimal case printed whole (aclcheck/report/casedump.py)."""

from __future__ import annotations

import numpy as np

from aclcheck.dtypes import FLOAT16
from aclcheck.report.casedump import DUMP_ELEMENTS, AxisWindows, dump, ulp_errors


def test_ulp_errors() -> None:
    golden = np.array([1.0, 1.0 + 2.0 ** -12, 2.0, 3.0, np.nan])
    actual = np.array([1.0 + 2.0 ** -10, 1.0, np.inf, np.nan, np.nan])
    err = ulp_errors(golden, actual, FLOAT16)
    assert err[0] == 1 and err[1] == 0 and np.isinf(err[2]) and np.isnan(err[3])
    assert err[4] == 0


def test_dump_shows_every_array_and_the_windows() -> None:
    grad = np.arange(4, dtype=np.float16).reshape(1, 2, 2)
    golden = np.linspace(0.1, 0.6, 6).reshape(1, 3, 2)
    actual = golden.astype(np.float16).astype(np.float64)
    actual[0, 2, 1] = 7.0
    lines = dump(grad, golden, actual, FLOAT16,
                 [AxisWindows("h", (0, 1), (2, 3)), AxisWindows("w", (0, 1), (1, 2))],
                 ("c", "h", "w"), input_name="gradOutput")
    text = "\n".join(lines)
    for title in ("gradOutput:", "golden (float64):", "actual (float16):", "error (ULP):"):
        assert title in text
    assert " [c=0] " in text
    assert "windows along h: [0,2) k=2  [1,3) k=2" in text
    assert lines[lines.index("error (ULP):") + 4].split()[-1] != "0"  # the wrong element


def test_large_case_is_not_printed_element_by_element() -> None:
    n = DUMP_ELEMENTS + 1
    lines = dump(np.zeros((1, n)), np.ones((1, n)), np.ones((1, n)), FLOAT16,
                 [AxisWindows("w", tuple(range(n)), tuple(range(1, n + 1)))], ("h", "w"))
    assert lines[0].startswith("(not printed element by element")
    assert lines[-1] == f"windows along w: {n} (not listed)"
