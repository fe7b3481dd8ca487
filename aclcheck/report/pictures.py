"""Pictures of the HTML report, coloured with matplotlib's colormaps from `Evidence`.

Per case the pictures are tiny PNG images of the data itself (one pixel per map cell or
plane, scaled up by the browser, axes and labels in the page): a matplotlib figure per
case costs ~100 ms, which would make the page slower to write than a verify run;
colouring arrays with matplotlib's colormaps and encoding them with Pillow (what
matplotlib's own `imsave` uses) costs well under 1 ms, and importing only
`matplotlib.colors` keeps the start-up cost down. The histogram is numbers for the
page's SVG. Everything is returned as `data:` URIs or plain numbers, never markup.
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass

import numpy as np
from matplotlib import colormaps
from PIL import Image

from aclcheck.judging.case.evidence import HIST_LOG2_EDGES, Evidence, hist_labels

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
    """PNG (RGB, fast compression: these images are tiny and many) of an (rows, cols, 4)
    float RGBA array in [0, 1]; alpha is dropped."""
    pixels = np.ascontiguousarray(np.clip(rgba[..., :3] * 255.0 + 0.5, 0, 255)
                                  .astype(np.uint8))
    buf = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buf, format="PNG", compress_level=1)
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


#: Histogram bins from [1, 2) up: over the budget.
FIRST_OVER = HIST_LOG2_EDGES.index(0) + 1
HIST_ROWS, BAR_W = 40, 3
_BAR_UNDER = (0.55, 0.58, 0.62, 1.0)
_BAR_OVER = (0.81, 0.13, 0.18, 1.0)


def hist_colours(counts: np.ndarray) -> np.ndarray:
    """RGBA bar chart of the histogram: a bar per bin (BAR_W pixels and a gap), grey
    within budget, red over it, heights on a square-root scale (small counts show)."""
    n = counts.size
    rgba = np.ones((HIST_ROWS, n * (BAR_W + 1), 4))
    peak = math.sqrt(max(1, int(counts.max())))
    for i, c in enumerate(counts.tolist()):
        if c:
            height = max(1, round(HIST_ROWS * math.sqrt(c) / peak))
            cols = slice(i * (BAR_W + 1), i * (BAR_W + 1) + BAR_W)
            rgba[HIST_ROWS - height:, cols] = _BAR_OVER if i >= FIRST_OVER else _BAR_UNDER
    rgba[:, FIRST_OVER * (BAR_W + 1) - 1] = (0.0, 0.0, 0.0, 1.0)  # the budget
    return rgba


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
    hist: str  # data URI ("" when the report's binning is not this version's)
    hist_total: int
    hist_over: int  # elements with error/allowed >= 1 (bins from [1, 2) up)
    hist_labels: tuple[str, str]  # first and last bin
    standard: str
    #: every cell of the heat map has one colour: no picture is drawn (a solid block
    #: says nothing), the caption says it
    uniform: bool = False


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
    rgba[np.isnan(grid)] = (1.0, 1.0, 1.0, 1.0)  # padding of the strip
    return rgba, grid.shape


def case_pictures(ev: Evidence) -> CasePictures:
    """The three pictures of one case: heat map, failing planes, histogram bars."""
    grid = ev.worst_map
    colours = ratio_colours(grid)
    uniform = grid.size > 1 and bool(np.all(colours == colours.reshape(-1, 4)[0]))
    heat = data_uri(_png(colours)) if grid.size and not uniform else ""
    planes_rgba, planes_grid = _planes_image(ev)
    counts = ev.hist
    labels = hist_labels()
    cells = (int(grid.shape[0]), int(grid.shape[1]))
    return CasePictures(
        heatmap=heat, map_cells=cells, map_px=display_size(*cells), hw=ev.hw,
        over_cells=int(np.count_nonzero(grid > 1.0)),
        planes=data_uri(_png(planes_rgba)) if planes_rgba.size else "",
        planes_grid=(int(planes_grid[0]), int(planes_grid[1])),
        planes_px=display_size(int(planes_grid[0]), int(planes_grid[1]), PICTURE_PX * 2 // 3),
        planes_failing=int(np.count_nonzero(ev.plane_fails)),
        planes_total=ev.planes, plane_group=ev.plane_group,
        hist=data_uri(_png(hist_colours(counts))) if counts.size == len(labels) else "",
        hist_total=int(counts.sum()), hist_over=int(counts[FIRST_OVER:].sum()),
        hist_labels=(labels[0], labels[-1]), standard=ev.standard, uniform=uniform)


@dataclass(frozen=True)
class Legend:
    """The heat maps' colour scale: a gradient strip and its tick labels (percent from
    the left), drawn once per page."""

    strip: str  # data URI
    ticks: tuple[tuple[float, str], ...]
    budget_at: float  # percent from the left where error/allowed == 1


def legend() -> Legend:
    steps = np.logspace(LOW, HIGH, 240)
    strip = data_uri(_png(ratio_colours(steps[None, :])))
    span = HIGH - LOW
    ticks = tuple((100.0 * (e - LOW) / span, f"1e{e:+d}" if e else "1")
                  for e in range(int(LOW), int(HIGH) + 1, 2))
    return Legend(strip, ticks, 100.0 * -LOW / span)
