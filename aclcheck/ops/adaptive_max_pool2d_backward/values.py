"""The values of aclnnAdaptiveMaxPool2dBackward's inputs: gradOutput's distributions, the
forward input self (whose values the operator never reads), and the indices, valid by
construction (each inside its cell's window) unless the case's index choice is one of the
invalid ones.

How a case's indices are chosen (its `index_choice`):

    first-max      the first maximum of self's window in row-major order (PyTorch's CPU
                   forward), self drawn uniform
    last-max       the last maximum, self small integers (ties everywhere)
    random         any in-window position, self small integers
    overlap        the in-window position most windows share (a shared position wherever
                   windows overlap), self small integers
    unrelated      random in-window positions, self all NaN (self must not matter)

and the invalid ones (unspecified: run isolated, reported, never judged; one cell of
every plane is broken): out-of-plane (H*W and past), negative, out-of-window (in the
plane, outside the cell's window), duplicate (the position of the first cell, named
again by its neighbour), int64-overflow (a valid position plus 2^31: INT64 only).
"""

from __future__ import annotations

import math

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.values import other_values
from aclcheck.dtypes import FLOAT_FORMATS, round_to
from aclcheck.ops.adaptive.values import drawn_floats, role_rng
from aclcheck.ops.adaptive.windows import spread_plan, window_bounds

#: gradOutput's value distributions: the vendor suites' random ones first, then exact
#: integers, IEEE specials, and two of this operator's own: `wide-sums` (2^p then ones on
#: shared positions: a sum that tells FLOAT32 from the dtype's own accumulation) and
#: `inf-pairs` (+inf and -inf landing on one shared position: NaN).
DISTRIBUTIONS: tuple[str, ...] = (
    "normal", "uniform", "small", "outliers", "exact-int", "special", "inf-fill",
    "nan-fill", "subnormal", "near-max", "ones", "wide-sums", "inf-pairs",
)

VALID_CHOICES: tuple[str, ...] = ("first-max", "last-max", "random", "overlap", "unrelated")
INVALID_CHOICES: tuple[str, ...] = ("out-of-plane", "negative", "out-of-window", "duplicate",
                                    "int64-overflow")
INDEX_CHOICES: tuple[str, ...] = VALID_CHOICES + INVALID_CHOICES

def _grad_values(case: Case, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    rng = role_rng(case, "grad_output")
    fmt = FLOAT_FORMATS[dtype]
    dist = case.distribution
    n = math.prod(shape)
    if dist == "exact-int":
        vals = rng.integers(-2, 3, n).reshape(shape).astype(np.float64)
    elif dist == "wide-sums":
        # the first cell (row-major) naming each position carries 2^p (p: the dtype's
        # precision), the others 1: 2^p + 1 + 1 (+ 1) is exact in FLOAT32, not in the
        # dtype, when added in the kernels' cell order
        vals = np.ones(shape)
        if _windowed(case) and case.tensor_desc("indices").dtype in ("int32", "int64"):
            h, w = case.tensor_desc("self").shape[-2:]
            idx = index_values(case).astype(np.int64).reshape(-1, math.prod(shape[-2:]))
            keys = idx + np.arange(idx.shape[0])[:, None] * (h * w)
            first = np.unique(keys.reshape(-1), return_index=True)[1]
            vals.reshape(-1)[first] = float(2 ** fmt.precision)
    elif dist == "inf-pairs":
        vals = rng.uniform(-5.0, 5.0, n).reshape(shape)
        if len(shape) >= 2:
            vals[..., 0::2, 0::3] = np.inf
            vals[..., 1::2, 0::3] = -np.inf
    else:
        vals = drawn_floats(rng, shape, dist, dtype)
    with np.errstate(over="ignore"):
        return round_to(vals, fmt)


def _self_values(case: Case, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    rng = role_rng(case, "self")
    n = math.prod(shape)
    if case.index_choice == "unrelated":  # type: ignore[attr-defined]
        vals = np.full(shape, np.nan)
    elif case.index_choice == "first-max":  # type: ignore[attr-defined]
        vals = rng.uniform(-1.0, 1.0, n).reshape(shape)
    else:
        vals = rng.integers(0, 3, n).reshape(shape).astype(np.float64)
    return round_to(vals, FLOAT_FORMATS[dtype])


def tensor_values(case: Case, name: str) -> np.ndarray:
    """The logical values of grad_output, self or indices, in that tensor's numpy dtype."""
    desc = case.tensor_desc(name)
    shape, dtype = tuple(desc.shape), desc.dtype
    if name == "indices":
        return index_values(case)
    if dtype not in FLOAT_FORMATS:
        return other_values(role_rng(case, name), shape, dtype)
    if name == "grad_output":
        return _grad_values(case, shape, dtype)
    return _self_values(case, shape, dtype)


# -- the indices ------------------------------------------------------------------------------


def _windowed(case: Case) -> bool:
    """Whether the case's indices can be drawn from windows: indices shaped like gradOutput,
    self of the same rank with the same leading dims, no empty or negative dim."""
    grad, self_ = (tuple(case.tensor_desc(n).shape) for n in ("grad_output", "self"))
    idx = tuple(case.tensor_desc("indices").shape)
    return (len(grad) == len(self_) >= 3 and idx == grad and grad[:-2] == self_[:-2]
            and min(grad + self_) > 0)


def window_rows(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions (out_size, k) of each window along one axis, clipped; valid mask)."""
    start, end = window_bounds(out_size, in_size)
    k = int((end - start).max())
    pos = start[:, None] + np.arange(k)[None, :]
    valid = pos < end[:, None]
    return np.minimum(pos, in_size - 1), valid


def chosen_positions(self_planes: np.ndarray, ho: int, wo: int, choice: str,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the position each cell names, (P, Ho, Wo) each, valid by
    construction: inside the cell's window. self_planes: (P, H, W) float64."""
    p_count, h, w = self_planes.shape
    if choice in ("first-max", "last-max"):
        rows, rv = window_rows(ho, h)
        cols, cv = window_rows(wo, w)
        kh, kw = rows.shape[1], cols.shape[1]
        win = self_planes[:, rows[:, :, None, None], cols[None, None, :, :]]  # P,Ho,kh,Wo,kw
        win = np.where(rv[None, :, :, None, None] & cv[None, None, None, :, :], win, -np.inf)
        flat = win.transpose(0, 1, 3, 2, 4).reshape(p_count, ho, wo, kh * kw)
        k = (np.argmax(flat, axis=-1) if choice == "first-max"
             else kh * kw - 1 - np.argmax(flat[..., ::-1], axis=-1))
        r, c = k // kw, k % kw
        return rows[np.arange(ho)[None, :, None], r], cols[np.arange(wo)[None, None, :], c]
    (hs, he), (ws, we) = window_bounds(ho, h), window_bounds(wo, w)
    if choice == "overlap":  # the most-shared position of each window, the last of ties
        ch, cw = spread_plan(ho, h).counts, spread_plan(wo, w).counts
        row = np.array([e - 1 - int(np.argmax(ch[s:e][::-1]))
                        for s, e in zip(hs, he, strict=True)], dtype=np.int64)
        col = np.array([e - 1 - int(np.argmax(cw[s:e][::-1]))
                        for s, e in zip(ws, we, strict=True)], dtype=np.int64)
        shape = (p_count, ho, wo)
        return (np.broadcast_to(row[None, :, None], shape).copy(),
                np.broadcast_to(col[None, None, :], shape).copy())
    # random, unrelated (and the base of the invalid choices)
    u = rng.random((2, p_count, ho, wo))
    r = hs[None, :, None] + (u[0] * (he - hs)[None, :, None]).astype(np.int64)
    c = ws[None, None, :] + (u[1] * (we - ws)[None, None, :]).astype(np.int64)
    return r, c


def _broken(flat: np.ndarray, choice: str, h: int, w: int, rng: np.random.Generator
            ) -> np.ndarray:
    """The valid flat positions (P, Ho, Wo) with one cell of every plane made invalid."""
    out = flat.astype(np.int64)
    ho, wo = out.shape[-2:]
    i, j = int(rng.integers(ho)), int(rng.integers(wo))
    if choice == "out-of-plane":
        out[:, i, j] = h * w + int(rng.integers(0, 3))
    elif choice == "negative":
        out[:, i, j] = -1 - int(rng.integers(0, 3))
    elif choice == "int64-overflow":
        out[:, i, j] += 2**31
    elif choice == "duplicate":
        if ho * wo < 2:
            out[:, i, j] = h * w
        else:
            a, b = (0, 1) if wo > 1 else (1, 0)
            out[:, a, b] = out[:, 0, 0]
    elif choice == "out-of-window":
        (hs, he), (ws, we) = window_bounds(ho, h), window_bounds(wo, w)
        if he[i] < h or hs[i] > 0:
            row = int(he[i]) if he[i] < h else int(hs[i]) - 1
            out[:, i, j] = row * w + int(ws[j])
        elif we[j] < w or ws[j] > 0:
            col = int(we[j]) if we[j] < w else int(ws[j]) - 1
            out[:, i, j] = int(hs[i]) * w + col
        else:  # a global window covers the plane: nothing in it is outside
            out[:, i, j] = h * w
    return out


def index_values(case: Case) -> np.ndarray:
    """The indices of a case in their dtype: flat positions h*W + w of each cell's choice."""
    desc = case.tensor_desc("indices")
    shape, dtype = tuple(desc.shape), desc.dtype
    rng = role_rng(case, "indices")
    if dtype in FLOAT_FORMATS:  # a refused call's float indices: small whole numbers
        return round_to(rng.integers(0, 4, shape).astype(np.float64), FLOAT_FORMATS[dtype])
    if not _windowed(case) or dtype not in ("int32", "int64"):
        return other_values(rng, shape, dtype)
    choice = case.index_choice  # type: ignore[attr-defined]
    self_desc = case.tensor_desc("self")
    h, w = (int(v) for v in self_desc.shape[-2:])
    ho, wo = shape[-2:]
    planes = math.prod(shape[:-2])
    base = choice if choice in VALID_CHOICES else "random"
    if base in ("first-max", "last-max"):
        sv = tensor_values(case, "self")  # the values self is stored with
        self_planes = sv.astype(np.float64).reshape(planes, h, w)
    else:
        self_planes = np.empty((planes, h, w))
    r, c = chosen_positions(self_planes, ho, wo, base, rng)
    flat = r * w + c
    if choice in INVALID_CHOICES:
        flat = _broken(flat, choice, h, w, rng)
    if dtype == "int32":  # an INT64-only choice never has int32 indices; wrap as a cast
        flat = flat.astype(np.int64).astype(np.int32)
    return flat.astype(np.dtype(dtype)).reshape(shape)
