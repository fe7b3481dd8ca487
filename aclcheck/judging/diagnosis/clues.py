"""Clues inside one failing case that need no window tables: which planes, batches,
rows and columns hold the wrong elements, and whether they look unwritten.

Each clue says what share of the case's wrong elements it accounts for; a clue is
made only when the region it names is small enough to mean something (REGION_MAX of the
elements at most) or is a pattern across planes. Pure over whole arrays of one case:
the wrong-element mask (the gating standard's failures), golden and actual.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from aclcheck.dtypes import FloatFormat
from aclcheck.judging.case.roundings import Rounding, explaining, is_neighbour
from aclcheck.judging.diagnosis.codes import DiagnosisCode

#: A clue about a region covering more than this share of the elements says nothing.
REGION_MAX = 0.75


@dataclass(frozen=True)
class Clue:
    """Where one case's wrong elements sit: the share of them a statement accounts for."""

    code: DiagnosisCode
    share: float
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code.value, "share": round(self.share, 6), "text": self.text}


def _share(n: int, wrong: int) -> float:
    return n / wrong if wrong else 0.0


def plane_clues(wrong: np.ndarray, batch_rank: int) -> list[Clue]:
    """Plane 0 right and the other planes wrong (plane stride); batch 0 right and later
    batches wrong (batch stride); only the last channel wrong (a vector tail)."""
    total = int(np.count_nonzero(wrong))
    if not total or batch_rank < 1:
        return []
    lead = wrong.shape[:batch_rank]
    per_plane = wrong.reshape(math.prod(lead), -1).any(axis=1).reshape(lead)
    planes = per_plane.size
    out = []
    if batch_rank >= 2 and lead[0] > 1 and not per_plane[0].any():
        later = per_plane[1:].any(axis=tuple(range(1, batch_rank)))
        if later.mean() >= 0.5:
            out.append(Clue(DiagnosisCode.BATCH_STRIDE, 1.0, (
                f"batch 0 right, {int(later.sum())} of {lead[0] - 1} later batches wrong: "
                "the batch offset or stride")))
            return out
    flat = per_plane.reshape(-1)
    if planes > 1 and not flat[0] and flat[1:].mean() >= 0.5:
        out.append(Clue(DiagnosisCode.PLANE_STRIDE, 1.0, (
            f"plane 0 right, {int(flat[1:].sum())} of {planes - 1} other planes wrong: "
            "the plane offset or stride")))
    channels = lead[-1]
    if channels > 1:
        last = int(np.count_nonzero(wrong[(Ellipsis, channels - 1) + (slice(None),) * (
            wrong.ndim - batch_rank)]))
        if last == total and 1 / channels <= REGION_MAX:
            out.append(Clue(DiagnosisCode.LAST_PLANE, 1.0, (
                f"only the last channel (c={channels - 1} of {channels}) is wrong: a tail "
                "(odd C, vector remainder) computed another way")))
    return out


def edge_clues(wrong: np.ndarray) -> list[Clue]:
    """Wrong elements only in the last row, the last column, or both."""
    total = int(np.count_nonzero(wrong))
    if not total or wrong.ndim < 2:
        return []
    h, w = wrong.shape[-2:]
    last_row = int(np.count_nonzero(wrong[..., -1, :])) if h > 1 else 0
    last_col = int(np.count_nonzero(wrong[..., :, -1])) if w > 1 else 0
    both = int(np.count_nonzero(wrong[..., -1, -1])) if h > 1 and w > 1 else 0
    if h > 1 and last_row == total:
        return [Clue(DiagnosisCode.LAST_ROW, 1.0, (
            f"every wrong element is in the last row (h={h - 1}): a dropped tail row or "
            "an off-by-one end index"))]
    if w > 1 and last_col == total:
        return [Clue(DiagnosisCode.LAST_COLUMN, 1.0, (
            f"every wrong element is in the last column (w={w - 1}): a dropped tail "
            "column or an off-by-one end index"))]
    edge = last_row + last_col - both
    region = (h + w - 1) / (h * w)
    if h > 1 and w > 1 and region <= REGION_MAX and edge >= 0.9 * total:
        return [Clue(DiagnosisCode.LAST_ROW_AND_COLUMN, _share(edge, total), (
            "wrong elements sit in the last row and column: tail handling"))]
    return []


def unwritten_clues(wrong: np.ndarray, golden: np.ndarray,
                    actual: np.ndarray) -> list[Clue]:
    """Wrong elements that hold NaN or zero where the golden has a value."""
    total = int(np.count_nonzero(wrong))
    if not total:
        return []
    g = np.asarray(golden, dtype=np.float64)[wrong]
    a = np.asarray(actual, dtype=np.float64)[wrong]
    blank = (np.isnan(a) | (a == 0)) & (g != 0) & ~np.isnan(g)
    n = int(np.count_nonzero(blank))
    if n < 0.5 * total:
        return []
    return [Clue(DiagnosisCode.UNWRITTEN, _share(n, total), (
        f"{n} wrong elements hold NaN or 0 where the golden has a value: never written, "
        "or read from memory the tensor does not cover"))]


#: the words of each rounding of a final conversion
ROUNDING_WORDS = {Rounding.TIES_AWAY: "to nearest, ties away from zero",
                  Rounding.TOWARD_ZERO: "toward zero", Rounding.UP: "up (toward +inf)",
                  Rounding.DOWN: "down (toward -inf)", Rounding.TO_ODD: "to odd"}


def rounding_clues(wrong: np.ndarray, golden: np.ndarray, actual: np.ndarray,
                   fmt: FloatFormat) -> list[Clue]:
    """A one-ULP failure whose every element is the exact value rounded one other way
    (aclcheck.judging.case.roundings.explaining): the final conversion's rounding, named; or
    that no single rounding explains it."""
    total = int(np.count_nonzero(wrong))
    g = np.asarray(golden, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    if not total or not np.all(is_neighbour(a[wrong], g[wrong], fmt)):
        return []
    modes = [m for m in explaining(a, g, fmt) if m in ROUNDING_WORDS]
    if not modes:  # said, so the one-ULP failure is not left to a guess
        return [Clue(DiagnosisCode.NO_CAST_ROUNDING, 1.0, (
            "every wrong element is one ULP from the exact value, but no single rounding "
            "of the final conversion (to nearest either way, toward zero, up, down, to "
            "odd) gives them all: rounding before the last step (accumulation order or "
            "precision)"))]
    return [Clue(DiagnosisCode.CAST_ROUNDING, 1.0, (
        f"every element is the exact value rounded {ROUNDING_WORDS[modes[0]]}: the final "
        "conversion's rounding mode"))]


def generic_clues(wrong: np.ndarray, golden: np.ndarray, actual: np.ndarray,
                  batch_rank: int) -> list[Clue]:
    """Every generic clue of one case (unordered)."""
    wrong = np.asarray(wrong, dtype=bool)
    return (plane_clues(wrong, batch_rank) + edge_clues(wrong)
            + unwritten_clues(wrong, golden, actual))
