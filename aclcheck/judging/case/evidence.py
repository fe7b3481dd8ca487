"""Evidence of a comparison: where the errors sit, as small plain data for the renderers.

The comparison already computes, per element, the error over what the gating standard
allows there (error/allowed, infinite for a special-value mismatch). `EvidenceBuilder`
folds those chunks, as they pass, into three small summaries:

- a map over (H, W) of the worst error/allowed over all N*C planes, downsampled to at
  most MAP_CELLS x MAP_CELLS cells (each cell the worst of the elements it covers);
- the failing-element count of each N*C plane (summed in groups past PLANE_BINS planes);
- a histogram of error/allowed on a log scale (one bin per power of two).

Pictures are the renderers' business (console map, HTML page); this module draws nothing.
`Evidence.to_json` / `from_json` carry it through the JSON report so pages can be redrawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Most cells per side of the (H, W) map.
MAP_CELLS = 32
#: Planes up to this many elements keep a full-resolution worst map while chunks pass
#: (one cheap maximum per chunk), downsampled once at the end.
FULL_MAP_LIMIT = 1 << 18
#: Most entries of the per-plane failure counts (larger N*C are summed in groups).
PLANE_BINS = 256
#: Histogram bin edges of error/allowed as powers of two: below 2**-14 (exact included),
#: one bin per power of two, 2**14 and above (special-value mismatches included). Binned
#: from the float exponent (np.frexp): a searchsorted over edges cost 5x more.
HIST_LOG2_EDGES: tuple[int, ...] = tuple(range(-14, 15))
_HIST_BINS = len(HIST_LOG2_EDGES) + 1
#: JSON stand-in for an infinite error/allowed (a special-value mismatch).
JSON_INF = -1.0


@dataclass(frozen=True, eq=False)
class Evidence:
    """Where a case's errors sit (see the module docstring). `worst_map` holds
    error/allowed per cell (inf: a special-value mismatch); `plane_fails[i]` counts the
    failing elements of planes [i*plane_group, (i+1)*plane_group)."""

    shape: tuple[int, ...]  # output shape (N, C, H, W) or (C, H, W)
    worst_map: np.ndarray  # (gh, gw) float64
    plane_fails: np.ndarray  # int64
    plane_group: int
    hist: np.ndarray  # int64, len(HIST_LOG2_EDGES) + 1 bins
    standard: str = ""  # the gating standard the ratios are taken under

    @property
    def hw(self) -> tuple[int, int]:
        return int(self.shape[-2]), int(self.shape[-1])

    @property
    def planes(self) -> int:
        return int(math.prod(self.shape[:-2]))

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict: ratios to 3 significant digits, inf as JSON_INF."""
        cells = [[JSON_INF if math.isinf(x) else float(f"{x:.3g}") for x in row]
                 for row in self.worst_map.tolist()]
        return {"shape": list(self.shape), "map": cells,
                "plane_fails": [int(x) for x in self.plane_fails],
                "plane_group": self.plane_group, "hist": [int(x) for x in self.hist],
                "hist_log2_edges": list(HIST_LOG2_EDGES), "standard": self.standard}

    @classmethod
    def from_json(cls, data: Any) -> Evidence | None:
        """The evidence of a report entry, or None where it is missing or malformed."""
        if not isinstance(data, dict):
            return None
        try:
            shape = tuple(_count(d) for d in data["shape"])
            grid = np.array(data["map"], dtype=np.float64)
            fails = np.array([_count(x) for x in data["plane_fails"]], dtype=np.int64)
            group = _count(data["plane_group"])
            hist = np.array([_count(x) for x in data["hist"]], dtype=np.int64)
            standard = data.get("standard", "")
            # what a report writes, no more: anything else is drawn as missing
            if (not 2 <= len(shape) <= 8 or grid.ndim != 2 or max(grid.shape) > MAP_CELLS
                    or len(fails) > PLANE_BINS or group < 1 or len(hist) > _HIST_BINS
                    or not isinstance(standard, str) or not np.all(
                        np.isfinite(grid) & ((grid >= 0) | (grid == JSON_INF)))):
                return None
            grid[grid == JSON_INF] = np.inf
            if data.get("hist_log2_edges") != list(HIST_LOG2_EDGES):
                hist = np.zeros(0, dtype=np.int64)  # another binning: not drawn
            elif len(hist) != _HIST_BINS:
                return None
            return cls(shape, grid, fails, group, hist, standard)
        except (KeyError, TypeError, ValueError, OverflowError):
            return None


def _count(value: object) -> int:
    """A non-negative integer of a report (a size, a count); ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**62:
        raise ValueError("not a count")
    return value


def hist_labels() -> list[str]:
    """Labels of the histogram bins: "<2^-14", "2^-14..2^-13", ..., ">=2^14"."""
    e = HIST_LOG2_EDGES
    inner = [f"2^{lo}..2^{hi}" for lo, hi in zip(e[:-1], e[1:], strict=True)]
    return [f"<2^{e[0]}", *inner, f">=2^{e[-1]}"]


def _cell_index(size: int, cells: int) -> np.ndarray:
    """Cell of each of `size` positions when `size` is cut into `cells` cells."""
    return (np.arange(size, dtype=np.int64) * cells) // max(size, 1)


class EvidenceBuilder:
    """Folds (error/allowed, fail mask) chunks of one comparison into an Evidence.

    Chunks are contiguous C-order ranges of the output: whole planes, rows of one plane,
    or a piece of one row (what compare's chunking yields); any other range also works,
    one row piece at a time.
    """

    def __init__(self, shape: tuple[int, ...], standard: str = "") -> None:
        self.shape = tuple(int(s) for s in shape)
        self.h, self.w = self.shape[-2], self.shape[-1]
        self.plane = self.h * self.w
        self.gh, self.gw = min(self.h, MAP_CELLS), min(self.w, MAP_CELLS)
        self.row_cell = _cell_index(self.h, self.gh)
        self.col_cell = _cell_index(self.w, self.gw)
        self.worst = np.zeros((self.gh, self.gw))
        self.full = np.zeros((self.h, self.w)) if self.plane <= FULL_MAP_LIMIT else None
        n_planes = int(math.prod(self.shape[:-2]))
        self.fails = np.zeros(n_planes, dtype=np.int64)
        self.hist = np.zeros(_HIST_BINS, dtype=np.int64)
        self.standard = standard

    def add(self, ratio: np.ndarray, fail: np.ndarray | None, start: int) -> None:
        """Fold one chunk: `ratio` (flat error/allowed), `fail` (flat mask or None when
        nothing failed), `start` the flat index of its first element."""
        n = ratio.size
        if n == 0:
            return
        self._histogram(ratio, fail is not None)
        plane0, off = divmod(start, self.plane)
        if off == 0 and n % self.plane == 0:
            p = n // self.plane
            self._fold(ratio.reshape(p, self.h, self.w).max(axis=0), 0, 0)
            if fail is not None:
                self.fails[plane0:plane0 + p] += np.count_nonzero(
                    fail.reshape(p, self.plane), axis=1)
            return
        if fail is not None:
            self._count_fails(fail, start)
        pos = 0
        while pos < n:  # rows (or row pieces) of the range
            row, col = divmod((start + pos) % self.plane, self.w)
            if col == 0 and n - pos >= self.w:
                rows = min((n - pos) // self.w, self.h - row)
                self._fold(ratio[pos:pos + rows * self.w].reshape(rows, self.w), row, 0)
                pos += rows * self.w
            else:
                take = min(self.w - col, n - pos)
                self._fold(ratio[pos:pos + take].reshape(1, take), row, col)
                pos += take

    def _histogram(self, ratio: np.ndarray, any_fail: bool) -> None:
        # ratio in [2**(e-1), 2**e); frexp(0) and frexp(inf) have e == 0: lift zeros
        # (exact elements) far below the first edge, send infinities to the top below
        exp = np.frexp(np.add(ratio, 1e-300))[1]
        exp -= HIST_LOG2_EDGES[0]
        np.clip(exp, 0, _HIST_BINS - 1, out=exp)
        if any_fail:
            exp[~np.isfinite(ratio)] = _HIST_BINS - 1
        self.hist += np.bincount(exp, minlength=_HIST_BINS)

    def _count_fails(self, fail: np.ndarray, start: int) -> None:
        idx = np.flatnonzero(fail)
        if idx.size:
            planes = (idx + start) // self.plane
            np.add.at(self.fails, planes, 1)

    def _fold(self, block: np.ndarray, row0: int, col0: int) -> None:
        """Max of a (rows, cols) block at (row0, col0) of a plane into the map cells."""
        rows, cols = block.shape
        if self.full is not None:
            target = self.full[row0:row0 + rows, col0:col0 + cols]
            np.maximum(target, block, out=target)
            return
        self._fold_cells(block, row0, col0)

    def _fold_cells(self, block: np.ndarray, row0: int, col0: int) -> None:
        rows, cols = block.shape
        rc = self.row_cell[row0:row0 + rows]
        cc = self.col_cell[col0:col0 + cols]
        r_starts = np.flatnonzero(np.diff(rc, prepend=-1))
        c_starts = np.flatnonzero(np.diff(cc, prepend=-1))
        red = np.maximum.reduceat(block, r_starts, axis=0)
        red = np.maximum.reduceat(red, c_starts, axis=1)
        target = self.worst[np.ix_(rc[r_starts], cc[c_starts])]
        np.maximum(target, red, out=target)
        self.worst[np.ix_(rc[r_starts], cc[c_starts])] = target

    def result(self) -> Evidence:
        if self.full is not None and self.full.size:
            self._fold_cells(self.full, 0, 0)
        group = max(1, math.ceil(self.fails.size / PLANE_BINS))
        fails = self.fails
        if group > 1:
            pad = (-fails.size) % group
            fails = np.pad(fails, (0, pad)).reshape(-1, group).sum(axis=1)
        worst = np.where(np.isnan(self.worst), np.inf, self.worst)
        return Evidence(self.shape, worst, fails, group, self.hist.copy(), self.standard)
