"""A small case printed whole: the input, the golden, the output, the error in ULP per
element, and the window tables per axis; what `shrink` shows once it has found the
smallest case that still fails the same way.

Plain text from plain arrays (any rank; the last two axes are printed as a matrix per
plane). A case larger than DUMP_ELEMENTS is not printed element by element.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aclcheck.dtypes import FloatFormat, correctly_rounded, ordered_bits

#: Cases with more output elements than this are summarised, not printed whole.
DUMP_ELEMENTS = 64


@dataclass(frozen=True)
class AxisWindows:
    """The windows of one axis: their starts and (exclusive) ends."""

    name: str  # "h", "w"
    start: tuple[int, ...]
    end: tuple[int, ...]


def _cell(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.6g}"


def _matrix(a: np.ndarray, fmt_cell=_cell) -> list[str]:  # noqa: ANN001
    """Rows of a 2-D array, right-aligned columns."""
    cells = [[fmt_cell(float(v)) for v in row] for row in np.atleast_2d(a)]
    width = max((len(c) for row in cells for c in row), default=1)
    return ["  " + " ".join(c.rjust(width) for c in row) for row in cells]


def _planes(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [tuple(int(i) for i in idx) for idx in np.ndindex(*shape[:-2])] or [()]


def _label(index: tuple[int, ...], names: Sequence[str]) -> str:
    if not index:
        return ""
    lead = names[: len(index)]
    return "[" + ", ".join(f"{n}={i}" for n, i in zip(lead, index, strict=True)) + "] "


def ulp_errors(golden: np.ndarray, actual: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """ULP of fmt between each output and the correctly rounded golden (float64; NaN where
    either is NaN, inf where one is infinite and the other not)."""
    g = np.asarray(golden, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        r = correctly_rounded(g, fmt)
        both = np.isfinite(r) & np.isfinite(a)
        hold = fmt.np_dtype
        oa = ordered_bits(np.where(both, a, 0.0).astype(np.float32).astype(hold), fmt)
        og = ordered_bits(np.where(both, r, 0.0).astype(np.float32).astype(hold), fmt)
        dist = np.abs(oa.astype(np.int64) - og.astype(np.int64)).astype(np.float64)
        same_special = (a == r) | (np.isnan(a) & np.isnan(r))
    out = np.where(both, dist, np.where(same_special, 0.0, np.inf))
    return np.where(np.isnan(a) != np.isnan(r), np.nan, out)


def dump(grad: np.ndarray, golden: np.ndarray, actual: np.ndarray, fmt: FloatFormat,
         windows: Sequence[AxisWindows], names: Sequence[str], *,
         input_name: str = "input") -> list[str]:
    """The lines that show a small case whole (or say why it is not shown)."""
    golden = np.asarray(golden, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    lines = []
    if golden.size > DUMP_ELEMENTS:
        lines.append(f"(not printed element by element: {golden.size} output elements, "
                     f"more than {DUMP_ELEMENTS})")
    else:
        errors = ulp_errors(golden, actual, fmt)
        for title, arr, cell in (
                (input_name, np.asarray(grad, dtype=np.float64), _cell),
                ("golden (float64)", golden, _cell),
                (f"actual ({fmt.name})", actual, _cell),
                ("error (ULP)", errors, lambda x: _cell(x) if not math.isfinite(x)
                 else f"{x:.0f}")):
            lines.append(f"{title}:")
            for plane in _planes(arr.shape):
                label = _label(plane, names)
                if label:
                    lines.append(f" {label}")
                lines.extend(_matrix(arr[plane] if plane else arr, cell))
    for axis in windows:
        if len(axis.start) > DUMP_ELEMENTS:
            lines.append(f"windows along {axis.name}: {len(axis.start)} (not listed)")
            continue
        parts = [f"[{s},{e}) k={e - s}" for s, e in zip(axis.start, axis.end, strict=True)]
        lines.append(f"windows along {axis.name}: " + "  ".join(parts))
    return lines
