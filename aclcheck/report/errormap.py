"""A compact terminal picture of where a failing case's errors sit.

Draws an `Evidence` map (worst error/allowed over every plane of the leading axes, per
(H, W) cell) with one block character per cell, darker and redder the further over
budget, downsampled to the terminal width. Plain characters carry the levels too, so
logs without colour read.
"""

from __future__ import annotations

import math

import numpy as np
from rich.text import Text

from aclcheck.judging.case.evidence import Evidence

#: (upper bound of error/allowed, character, style, legend), checked in order; NaN or
#: inf (special-value mismatches) get SPECIAL.
LEVELS: tuple[tuple[float, str, str, str], ...] = (
    (1 / 16, "·", "dim", "<=1/16"),
    (1.0, "░", "green", "<=1 (within budget)"),
    (16.0, "▒", "yellow", "<=16"),
    (256.0, "▓", "red", "<=256"),
    (math.inf, "█", "bold red", ">256"),
)
SPECIAL = ("X", "bold magenta")


def shrink_map(grid: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Worst of each block when `grid` is cut into at most rows x cols blocks."""
    gh, gw = grid.shape
    r_cell = (np.arange(gh) * min(rows, gh)) // max(gh, 1)
    c_cell = (np.arange(gw) * min(cols, gw)) // max(gw, 1)
    red = np.maximum.reduceat(grid, np.flatnonzero(np.diff(r_cell, prepend=-1)), axis=0)
    return np.maximum.reduceat(red, np.flatnonzero(np.diff(c_cell, prepend=-1)), axis=1)


def _cell(value: float) -> tuple[str, str]:
    if math.isinf(value) or math.isnan(value):
        return SPECIAL
    for bound, char, style, _ in LEVELS:
        if value <= bound:
            return char, style
    return SPECIAL


def error_map(evidence: Evidence, width: int, max_rows: int = 16) -> Text:
    """The map as rich Text at most `width` columns wide (cells two characters wide
    where that fits), with axis sizes and a legend."""
    grid = evidence.worst_map
    h, w = evidence.hw
    if grid.size == 0:
        return Text("(no error map: empty output)", style="dim")
    cols_fit = max(1, width - 2)
    cell_w = 2 if grid.shape[1] * 2 <= cols_fit else 1
    small = shrink_map(grid, max_rows, max(1, cols_fit // cell_w))
    levels = {_cell(float(v)) for v in small.reshape(-1)}
    if len(levels) == 1 and small.size > 1:  # a solid block shows nothing: say it
        (char, style), = levels
        label = next((lab for _, c, _, lab in LEVELS if c == char), "NaN/inf mismatch")
        return Text(f"error/allowed, worst over {evidence.planes} plane(s), H={h} x W={w}: "
                    f"every cell {label} (no pattern to draw)", style=style)
    text = Text()
    text.append(f"error/allowed, worst over {evidence.planes} plane(s), H={h} x W={w} "
                f"({small.shape[0]}x{small.shape[1]} cells):\n", style="dim")
    for row in small:
        for value in row:
            char, style = _cell(float(value))
            text.append(char * cell_w, style=style)
        text.append("\n")
    for _, char, style, label in LEVELS:
        text.append(char, style=style)
        text.append(f" {label}  ", style="dim")
    text.append(SPECIAL[0], style=SPECIAL[1])
    text.append(" NaN/inf mismatch", style="dim")
    return text
