"""What-if models of aclnnAdaptiveMaxPool2dBackward: what a kernel with one bug of the
scatter computes on a case (docs/diagnosis.md section 3), bit for bit in the output dtype.

Each model is a pure function of the case's logical inputs; it returns None where the bug
cannot show on the case (no position named twice for the shared-position models, a
FLOAT32 output for the dtype accumulation, windows that start at 0 for the
window-relative reading). Cells are taken in row-major order, the kernels' order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aclcheck.dtypes import FLOAT32, judged_format, round_to
from aclcheck.judging.diagnosis.codes import DiagnosisCode
from aclcheck.ops.adaptive.windows import window_bounds


@dataclass(frozen=True)
class Scatter:
    """A case's scatter as the models read it: gradOutput and the flat indices per plane
    (planes, cells), the plane size, the output dtype's name and shapes."""

    grad: np.ndarray  # float64 (planes, cells)
    idx: np.ndarray  # int64 (planes, cells)
    hw: tuple[int, int]
    out_hw: tuple[int, int]
    dtype: str
    shape: tuple[int, ...]  # gradInput's

    @classmethod
    def of(cls, grad_output: np.ndarray, indices: np.ndarray, shape: tuple[int, ...],
           dtype: str) -> Scatter:
        cells = math.prod(grad_output.shape[-2:])
        planes = math.prod(grad_output.shape[:-2])
        return cls(np.asarray(grad_output, dtype=np.float64).reshape(planes, cells),
                   np.asarray(indices, dtype=np.int64).reshape(planes, cells),
                   (int(shape[-2]), int(shape[-1])),
                   (int(grad_output.shape[-2]), int(grad_output.shape[-1])), dtype,
                   tuple(int(d) for d in shape))

    @property
    def shared(self) -> bool:
        """Some position is named by more than one cell of its plane."""
        s = np.sort(self.idx, axis=1)
        return bool(np.any(s[:, 1:] == s[:, :-1]))

    def written(self, keep: str, idx: np.ndarray | None = None) -> np.ndarray:
        """Each plane's scatter of its gradients to `idx` (default: the case's indices;
        -1: dropped), in the dtype: `keep` "all" adds them, "last" / "first" keeps one
        cell's gradient per position."""
        idx = self.idx if idx is None else idx
        size = self.hw[0] * self.hw[1]
        keys = (idx + np.arange(idx.shape[0])[:, None] * size).reshape(-1)
        vals = self.grad.reshape(-1)
        live = idx.reshape(-1) >= 0
        keys, vals = keys[live], vals[live]
        out = np.zeros(idx.shape[0] * size)
        if keep == "all":
            np.add.at(out, keys, vals)
        else:  # np.unique gives each key's first occurrence: reverse it for the last
            order = slice(None, None, -1) if keep == "last" else slice(None)
            uniq, first = np.unique(keys[order], return_index=True)
            out[uniq] = vals[order][first]
        return round_to(out, judged_format(self.dtype)).astype(np.float64).reshape(self.shape)


def shared_store(sc: Scatter) -> np.ndarray | None:
    """A shared position keeps the last cell's gradient: a store, not an add."""
    return sc.written("last") if sc.shared else None


def shared_first(sc: Scatter) -> np.ndarray | None:
    """A shared position keeps the first cell's gradient (later ones dropped)."""
    return sc.written("first") if sc.shared else None


def dtype_accumulation(sc: Scatter) -> np.ndarray | None:
    """The gradients of a shared position added in the output dtype, each add rounded."""
    fmt = judged_format(sc.dtype)
    if not sc.shared or fmt.precision >= FLOAT32.precision:
        return None
    out = np.zeros((sc.idx.shape[0], sc.hw[0] * sc.hw[1]))
    rows = np.arange(out.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(sc.idx.shape[1]):
            p = sc.idx[:, k]
            out[rows, p] = round_to(out[rows, p] + sc.grad[:, k], fmt)
    return out.reshape(sc.shape)


def window_relative(sc: Scatter) -> np.ndarray | None:
    """Indices read as positions inside the cell's window: its start added again (a
    position past the plane dropped)."""
    (h, w), (ho, wo) = sc.hw, sc.out_hw
    hs, ws = window_bounds(ho, h)[0], window_bounds(wo, w)[0]
    if not (hs.any() or ws.any()):
        return None
    r = sc.idx // w + np.repeat(hs, wo)[None, :]
    c = sc.idx % w + np.tile(ws, ho)[None, :]
    moved = np.where((r < h) & (c < w), r * w + c, -1)
    return sc.written("all", moved)


@dataclass(frozen=True)
class BugModel:
    code: DiagnosisCode
    summary: str
    compute: Callable[[Scatter], np.ndarray | None]


MODELS: tuple[BugModel, ...] = (
    BugModel(DiagnosisCode.ACCUMULATE_INPUT_DTYPE, "gradients of a shared position added "
             "in the input dtype (FP16/BF16), each add rounded, not in FP32",
             dtype_accumulation),
    BugModel(DiagnosisCode.SHARED_STORE, "a shared position keeps the last cell's "
             "gradient: a store where the gradients must add", shared_store),
    BugModel(DiagnosisCode.SHARED_FIRST, "a shared position keeps the first cell's "
             "gradient, the later ones dropped", shared_first),
    BugModel(DiagnosisCode.INDEX_WINDOW_RELATIVE, "indices read as positions inside the "
             "cell's window (its start added again), not in the plane", window_relative),
)


def what_ifs(grad_output: np.ndarray, indices: np.ndarray, shape: tuple[int, ...],
             dtype: str) -> list[tuple[DiagnosisCode, str, np.ndarray]]:
    """(code, the bug in words, the output bit for bit as float64) of each model that can
    show on the case."""
    sc = Scatter.of(grad_output, indices, shape, dtype)
    out = []
    with np.errstate(over="ignore", invalid="ignore"):
        for m in MODELS:
            values = m.compute(sc)
            if values is not None:
                out.append((m.code, m.summary, values))
    return out
