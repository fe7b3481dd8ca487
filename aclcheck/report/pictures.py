"""Pictures of the HTML report, drawn with matplotlib (Agg) from `Evidence`.

Per case the pictures are tiny PNG images of the data itself (one pixel per map cell or
plane, scaled up by the browser): a matplotlib figure per case costs ~100 ms, which
would make the page slower to write than a verify run; colouring arrays with matplotlib's
colormaps and `imsave` costs ~1 ms. The colour legend, drawn once per page, is a real
matplotlib figure (Agg canvas, no pyplot). Everything is returned as `data:` URIs or
plain numbers, never markup.
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass

import matplotlib.image as mpimg
import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LinearSegmentedColormap, LogNorm
from matplotlib.figure import Figure

from aclcheck.evidence import HIST_LOG2_EDGES, Evidence, hist_labels

#: log10 of error/allowed mapped onto the colours: [LOW, 0] within budget (greys),
#: (0, HIGH] over budget (yellow to dark red); inf (a NaN/inf mismatch) is magenta.
LOW, HIGH = -4.0, 8.0
SPECIAL_RGBA = (0.85, 0.0, 0.85, 1.0)
_UNDER = colormaps["Greys"]
_OVER = colormaps["YlOrRd"]
_PLANES = colormaps["Reds"]


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _png(rgba: np.ndarray) -> bytes:
    buf = io.BytesIO()
    mpimg.imsave(buf, rgba, format="png")
    return buf.getvalue()


def ratio_colours(grid: np.ndarray) -> np.ndarray:
    """RGBA of error/allowed values: greys up to the budget, reds over it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log10(np.where(grid > 0, grid, 10.0 ** LOW))
    lg = np.nan_to_num(lg, nan=HIGH, posinf=HIGH)
    under = _UNDER(0.08 + 0.5 * np.clip((lg - LOW) / -LOW, 0, 1))
    over = _OVER(0.25 + 0.75 * np.clip(lg / HIGH, 0, 1))
    rgba = np.where((grid > 1.0)[..., None], over, under)
    rgba[~np.isfinite(grid)] = SPECIAL_RGBA
    return rgba


@dataclass(frozen=True)
class Bar:
    """One histogram bar as plain numbers for the page's SVG (percent of the height)."""

    label: str
    count: int
    height: float
    over: bool  # bin above the budget (error/allowed >= 1)


#: Longer side of a picture on the page, CSS pixels.
PICTURE_PX = 280


def display_size(rows: int, cols: int, side: int = PICTURE_PX) -> tuple[int, int]:
    """(width, height) in CSS pixels of a rows x cols picture whose longer side is
    `side` (the shorter at least 12 px, so a one-row map stays visible)."""
    rows, cols = max(rows, 1), max(cols, 1)
    scale = side / max(rows, cols)
    return max(12, round(cols * scale)), max(12, round(rows * scale))


@dataclass(frozen=True)
class CasePictures:
    """What the page shows of one case's evidence (URIs, numbers and short texts)."""

    heatmap: str  # data URI
    map_cells: tuple[int, int]
    map_px: tuple[int, int]  # display (width, height)
    hw: tuple[int, int]
    over_cells: int
    planes: str  # data URI
    planes_grid: tuple[int, int]  # rows x cols of the plane picture
    planes_px: tuple[int, int]
    planes_failing: int
    planes_total: int
    plane_group: int
    bars: tuple[Bar, ...]
    standard: str


def _planes_image(ev: Evidence) -> tuple[np.ndarray, tuple[int, int]]:
    """Failure counts laid out N x C when every plane has its own count, else a strip."""
    counts = ev.plane_fails.astype(np.float64)
    shape = ev.shape
    if ev.plane_group == 1 and len(shape) == 4 and shape[0] * shape[1] == counts.size:
        grid = counts.reshape(int(shape[0]), int(shape[1]))
    else:
        width = max(1, math.ceil(math.sqrt(counts.size * 4)))
        pad = (-counts.size) % width
        grid = np.pad(counts, (0, pad), constant_values=np.nan).reshape(-1, width)
    top = np.nanmax(grid) if np.any(grid > 0) else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.log1p(np.nan_to_num(grid)) / math.log1p(top)
    rgba = _PLANES(0.25 + 0.75 * level)
    rgba[grid == 0] = (0.93, 0.96, 0.93, 1.0)
    rgba[np.isnan(grid)] = (1.0, 1.0, 1.0, 0.0)
    return rgba, grid.shape


def case_pictures(ev: Evidence) -> CasePictures:
    """The three pictures of one case: heat map, failing planes, histogram bars."""
    grid = ev.worst_map
    heat = data_uri(_png(ratio_colours(grid))) if grid.size else ""
    planes_rgba, planes_grid = _planes_image(ev)
    counts = ev.hist
    bars: tuple[Bar, ...] = ()
    if counts.size:
        peak = max(1, int(counts.max()))
        labels = hist_labels()
        first_over = HIST_LOG2_EDGES.index(0) + 1  # bins from [1, 2) up
        bars = tuple(Bar(labels[i], int(c), 100.0 * c / peak if c else 0.0, i >= first_over)
                     for i, c in enumerate(counts.tolist()))
    cells = (int(grid.shape[0]), int(grid.shape[1]))
    return CasePictures(
        heatmap=heat, map_cells=cells, map_px=display_size(*cells), hw=ev.hw,
        over_cells=int(np.count_nonzero(grid > 1.0)),
        planes=data_uri(_png(planes_rgba)) if planes_rgba.size else "",
        planes_grid=(int(planes_grid[0]), int(planes_grid[1])),
        planes_px=display_size(int(planes_grid[0]), int(planes_grid[1]), PICTURE_PX * 2 // 3),
        planes_failing=int(np.count_nonzero(ev.plane_fails)),
        planes_total=ev.planes, plane_group=ev.plane_group, bars=bars, standard=ev.standard)


def legend() -> str:
    """The colour scale of the heat maps as a matplotlib colour bar (data URI), drawn
    once per page."""
    steps = np.logspace(LOW, HIGH, 256)
    rgba = ratio_colours(steps[None, :])[0]
    cmap = LinearSegmentedColormap.from_list("aclcheck-ratio", rgba)
    fig = Figure(figsize=(5.2, 0.75), dpi=100)  # no pyplot: no global figure state
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.04, 0.55, 0.92, 0.3))
    bar = fig.colorbar(ScalarMappable(LogNorm(10 ** LOW, 10 ** HIGH), cmap), cax=ax,
                       orientation="horizontal")
    bar.set_label("error / allowed (worst over the N·C planes); 1 = the budget", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    bar.ax.axvline(1.0, color="black", linewidth=1.5)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return data_uri(buf.getvalue())
