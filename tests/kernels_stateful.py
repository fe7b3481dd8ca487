"""Deliberately stateful broken kernels for the sequence stage (aclcheck.running.sequences,
tests/test_sequences.py), 2D operator.

Each has the adapter signature `fn(grad_output, self) -> out` and is right in a fresh
process and after the calls a small suite makes in its own order (shapes that differ
from case to case), but wrong right after one chosen predecessor: its state lives in
this module, so it persists within a worker (or within the process, --no-isolate).

- `dtype_blind_plan`: a one-entry plan cache keyed by the shapes, not the dtype; the
  plan's output buffer has the dtype of the call that made it, so a FLOAT32 or FLOAT16
  call right after a BFLOAT16 one of the same shapes is rounded to BFLOAT16
  (`other-dtype`);
- `grad_keyed_plan`: a one-entry plan keyed by gradOutput's shape and dtype, not self's:
  the window tables of the previous self (`other-self`);
- `reused_workspace`: the previous call's FP32 workspace is reused where it is large
  enough, and only the flat prefix the current call needs is cleared (right only at the
  workspace's own row pitch): a larger call's sums stay behind (`larger`);
- `sticky_ftz`: a FLOAT16 call whose gradOutput is all subnormal leaves a flush-to-zero
  flag set for the next call, which flushes results below FLOAT16's smallest normal
  (`fp16-subnormals`).

`counted` is a correct kernel that notes each call's (gradOutput shape, self shape,
dtype) in `CALLS`; `reset()` forgets every kernel's state (in-process test runs share
this module).
"""

from __future__ import annotations

import math

import numpy as np

from tests.kernels import _empty_out, _geometry, _sequential, _terms, _to_dtype

F32 = np.float32
#: FLOAT16's smallest normal: what the flag flushes below
HALF_TINY = 2.0 ** -14

_PLAN: dict[str, object] = {}
_GRAD_PLAN: dict[str, object] = {}
_WORKSPACE: dict[str, np.ndarray] = {}
_FLAGS: dict[str, bool] = {}
CALLS: list[tuple[tuple[int, ...], tuple[int, ...], str]] = []


def reset() -> None:
    for state in (_PLAN, _GRAD_PLAN, _WORKSPACE, _FLAGS, CALLS):
        state.clear()


def _sums(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """The FP32 window sums of a call (terms g/(kh*kw), window order): self's shape."""
    kh, kw, ih, iw = _geometry(grad_output, self)
    return _sequential(_terms(grad_output.astype(F32), kh, kw), ih, iw, self.shape)


def dtype_blind_plan(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """One-entry plan keyed by (gradOutput shape, self shape): its buffer's dtype is the
    dtype of the call that made it."""
    empty = _empty_out(grad_output, self)
    if empty is not None:
        return empty
    key = (grad_output.shape, self.shape)
    if _PLAN.get("key") != key:
        _PLAN.update(key=key, out=np.empty(self.shape, dtype=self.dtype))
    out = _PLAN["out"]
    assert isinstance(out, np.ndarray)
    out[...] = _sums(grad_output, self)
    return out.astype(self.dtype)


def grad_keyed_plan(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """One-entry plan keyed by gradOutput's shape and dtype: the windows (and output
    size) of the self it was made for; the output gets what that plan covers."""
    empty = _empty_out(grad_output, self)
    if empty is not None:
        return empty
    key = (grad_output.shape, grad_output.dtype)
    if _GRAD_PLAN.get("key") != key:
        _GRAD_PLAN.update(key=key, geometry=_geometry(grad_output, self), shape=self.shape)
    kh, kw, ih, iw = _GRAD_PLAN["geometry"]  # type: ignore[misc]
    planned = _GRAD_PLAN["shape"]
    assert isinstance(planned, tuple)
    sums = _sequential(_terms(grad_output.astype(F32), kh, kw), ih, iw, planned)
    out = np.zeros(self.shape, dtype=F32)
    h, w = min(self.shape[-2], planned[-2]), min(self.shape[-1], planned[-1])
    out[..., :h, :w] = sums[..., :h, :w]
    return _to_dtype(out, self.dtype)


def reused_workspace(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """The previous call's workspace (planes, H, W) reused where it has as many planes
    and is as large in H and W; cleared in its first planes*H*W elements only."""
    empty = _empty_out(grad_output, self)
    if empty is not None:
        return empty
    planes, (h, w) = math.prod(self.shape[:-2]), self.shape[-2:]
    ws = _WORKSPACE.get("ws")
    if ws is None or ws.shape[0] != planes or ws.shape[1] < h or ws.shape[2] < w:
        ws = np.zeros((planes, h, w), dtype=F32)
    ws.reshape(-1)[:planes * h * w] = 0  # the clear: the flat prefix
    region = ws[:, :h, :w]
    region += _sums(grad_output, self).reshape(planes, h, w)
    _WORKSPACE["ws"] = ws
    return _to_dtype(region.reshape(self.shape), self.dtype)


def sticky_ftz(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Right, except right after a FLOAT16 call whose gradOutput is all subnormal: that
    call leaves a flush-to-zero flag set, and the next call (which clears it) flushes
    results below FLOAT16's smallest normal to zero."""
    empty = _empty_out(grad_output, self)
    if empty is not None:
        return empty
    flush = _FLAGS.pop("ftz", False)
    sums = _sums(grad_output, self)
    if flush:
        sums[np.abs(sums) < HALF_TINY] = 0
    g = np.abs(grad_output.astype(np.float64))
    if grad_output.dtype == np.float16 and g.max(initial=0) > 0 \
            and not (g >= HALF_TINY).any():
        _FLAGS["ftz"] = True
    return _to_dtype(sums, self.dtype)


def counted(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
    """Right, and the call noted in CALLS."""
    CALLS.append((grad_output.shape, self.shape, str(grad_output.dtype)))
    empty = _empty_out(grad_output, self)
    return empty if empty is not None else _to_dtype(_sums(grad_output, self), self.dtype)


#: every stateful kernel, with the predecessor kind that shows its state
STATEFUL = {"dtype_blind_plan": "other-dtype", "grad_keyed_plan": "other-self",
            "reused_workspace": "larger", "sticky_ftz": "fp16-subnormals"}
