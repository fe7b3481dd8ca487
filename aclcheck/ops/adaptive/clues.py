"""Findings inside one failing case that read the window tables of adaptive pooling:

- divisor-ratio: where one window alone reaches an element, actual/golden is the same
  number across that window's elements (not 1, not 0): the window's term is scaled, i.e.
  its divisor (kh*kw, kd*kh*kw) is wrong;
- overlap-only: wrong elements only where windows overlap (k > 1): bounds or accumulation;
- window-edges: wrong elements only on the first or last position of windows along an
  axis: off-by-one window bounds.

Generic over the spatial axes (the last len(windows) axes of the output); `windows` are the
case's (out_size, in_size) pairs per spatial axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from aclcheck.judging.diagnosis.clues import REGION_MAX, Clue
from aclcheck.judging.diagnosis.codes import DiagnosisCode
from aclcheck.ops.adaptive.windows import window_bounds


def _coverage(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(counts, first window, edge flag) per input position of one axis."""
    start, end = window_bounds(out_size, in_size)
    pos = np.arange(in_size, dtype=np.int64)
    lo = np.searchsorted(end, pos, side="right")
    hi = np.searchsorted(start, pos, side="right")
    edge = np.zeros(in_size, dtype=bool)
    edge[np.clip(start, 0, max(in_size - 1, 0))] = True
    edge[np.clip(end - 1, 0, max(in_size - 1, 0))] = True
    return hi - lo, lo, edge


def _outer(vectors: Sequence[np.ndarray]) -> np.ndarray:
    out = vectors[0]
    for v in vectors[1:]:
        out = np.multiply.outer(out, v)
    return out


def window_findings(wrong: np.ndarray, golden: np.ndarray, actual: np.ndarray,
                    windows: Sequence[tuple[int, int]], precision: int) -> list[Clue]:
    """The window findings of one case (unordered). precision: the output format's
    significand bits (the tolerance of a constant ratio)."""
    wrong = np.asarray(wrong, dtype=bool)
    total = int(np.count_nonzero(wrong))
    s = len(windows)
    if not total or wrong.ndim < s or not all(o > 0 and i > 0 for o, i in windows):
        return []
    cover = [_coverage(o, i) for o, i in windows]
    k = _outer([c[0] for c in cover])
    lead = wrong.shape[:-s]
    planes = math.prod(lead)
    w3 = wrong.reshape((planes,) + k.shape)
    out: list[Clue] = []
    overlap = k > 1
    if 0 < overlap.mean() <= REGION_MAX:
        n = int(np.count_nonzero(w3 & overlap))
        if n == total:
            out.append(Clue(DiagnosisCode.OVERLAP_ONLY, 1.0, (
                "wrong only where windows overlap (k > 1): window bounds or accumulation")))
    for d, (_, _, edge) in enumerate(cover):
        if not 0 < edge.mean() <= REGION_MAX:
            continue
        shape = [1] * len(cover)
        shape[d] = edge.size
        n = int(np.count_nonzero(w3 & edge.reshape(shape)))
        if n >= 0.9 * total:
            out.append(Clue(DiagnosisCode.WINDOW_EDGES, n / total, (
                f"wrong elements sit on the first or last position of windows along axis "
                f"{d - len(cover)}: off-by-one window bounds")))
            break
    ratio = _divisor_ratio(w3, np.asarray(golden, dtype=np.float64).reshape(w3.shape),
                           np.asarray(actual, dtype=np.float64).reshape(w3.shape),
                           k == 1, [c[1] for c in cover], precision)
    if ratio is not None:
        share, typical = ratio
        out.append(Clue(DiagnosisCode.DIVISOR_RATIO, share, (
            f"actual/golden is constant within each window (e.g. {typical:.4g}): the "
            "window's divisor (the product of its sizes)")))
    return out


def _divisor_ratio(wrong: np.ndarray, g: np.ndarray, a: np.ndarray, single: np.ndarray,
                   first: Sequence[np.ndarray], precision: int
                   ) -> tuple[float, float] | None:
    """(share of the wrong elements in windows with a constant ratio != 1, a typical
    ratio), over elements one window alone reaches; None when no window qualifies."""
    total = int(np.count_nonzero(wrong))
    mask = wrong & single & np.isfinite(g) & np.isfinite(a) & (g != 0)
    if not mask.any():
        return None
    p, *pos = np.nonzero(mask)
    ids = [first[d][pos[d]] for d in range(len(pos))]
    key = np.ravel_multi_index([p, *ids], (g.shape[0],) + tuple(
        int(f.max()) + 1 for f in first))
    r = a[mask] / g[mask]
    order = np.argsort(key, kind="stable")
    key, r = key[order], r[order]
    bounds = np.flatnonzero(np.diff(key)) + 1
    starts = np.concatenate(([0], bounds))
    lo = np.minimum.reduceat(r, starts)
    hi = np.maximum.reduceat(r, starts)
    size = np.diff(np.concatenate((starts, [r.size])))
    tol = 2.0 ** (2 - precision)
    mid = (lo + hi) / 2
    steady = (size >= 2) & (hi - lo <= tol * np.abs(mid)) & (np.abs(mid - 1) > tol) \
        & (np.abs(mid) > tol)  # a ratio of 0 is an unwritten window (clues.unwritten)
    if not steady.any():
        return None
    explained = int(size[steady].sum())
    return explained / total, float(np.median(mid[steady]))
