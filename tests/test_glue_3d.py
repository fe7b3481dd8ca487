"""The 3D operator's framework glue on the real frameworks (CPU builds): each call
computes the backward the reference computes, within that framework's own precision; the
known differences (MindSpore's float32 window bounds, Paddle's float32 scale) show.

A framework test skips, with the reason, only when its package is absent.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import numpy as np
import pytest

from aclcheck.ops.adaptive_avg_pool3d_backward import glue
from aclcheck.ops.adaptive_avg_pool3d_backward.reference import backward

if importlib.util.find_spec("mindspore") is not None:
    # MindSpore 2.10 does not import after Paddle 3.3 in one process (oneDNN clash)
    importlib.import_module("mindspore")

SHAPES = [
    ((2, 3, 3, 4, 4), (2, 3, 5, 7, 6)),  # upsampling
    ((2, 3, 2, 3, 2), (2, 3, 7, 5, 9)),  # non-divisible
    ((2, 2, 1, 1, 1), (2, 2, 5, 7, 6)),  # global
    ((3, 2, 3, 4), (3, 4, 6, 8)),  # rank 4 (C, D, H, W)
]


def need(module: str) -> Any:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    return importlib.import_module(module)


def data(grad_shape: tuple[int, ...], self_shape: tuple[int, ...], dtype: str
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """gradOutput, self (values unused), the golden and m (for a relative bound)."""
    g = np.random.default_rng(0).normal(0.0, 3.0, grad_shape).astype(dtype)
    s = np.zeros(self_shape, dtype=dtype)
    in_dhw = self_shape[-3:]
    return g, s, backward(g, in_dhw), backward(g, in_dhw, absolute=True)


def test_output_size():
    assert glue.output_size((2, 3, 4, 5, 6)) == (4, 5, 6)
    assert glue.output_size((5, 6)) == (5, 6)


def _torch(torch, tensors):
    fn, args = glue.torch_backward(torch, tensors)
    return fn(*args)


@pytest.mark.parametrize(("grad_shape", "self_shape"), SHAPES)
def test_torch(grad_shape, self_shape):
    torch = need("torch")
    for dtype, rel in (("float64", 1e-15), ("float32", 2.0**-22)):
        g, s, want, m = data(grad_shape, self_shape, dtype)
        got = _torch(torch, {"grad_output": torch.from_numpy(g),
                                          "self": torch.from_numpy(s)}).numpy()
        assert got.dtype == np.dtype(dtype) and got.shape == self_shape
        assert np.all(np.abs(got.astype(np.float64) - want) <= rel * m)
    if len(grad_shape) == 5:  # channels-last-3d inputs: the same values
        g, s, want, _ = data(grad_shape, self_shape, "float64")
        tg = torch.from_numpy(g).contiguous(memory_format=torch.channels_last_3d)
        ts = torch.from_numpy(s).contiguous(memory_format=torch.channels_last_3d)
        cl = _torch(torch, {"grad_output": tg, "self": ts}).numpy()
        plain = _torch(torch, {"grad_output": torch.from_numpy(g),
                                            "self": torch.from_numpy(s)}).numpy()
        assert np.array_equal(cl, plain)


@pytest.mark.parametrize(("grad_shape", "self_shape"), SHAPES)
def test_mindspore(grad_shape, self_shape):
    ms = need("mindspore")
    ops = importlib.import_module("mindspore.ops")
    for dtype, rel in (("float64", 1e-15), ("float32", 2.0**-23)):
        g, s, want, m = data(grad_shape, self_shape, dtype)
        got = glue.mindspore_backward(ms, ops, {"grad_output": ms.Tensor(g),
                                                "self": ms.Tensor(s)}).asnumpy()
        assert got.shape == self_shape
        assert np.all(np.abs(got.astype(np.float64) - want) <= rel * m)


def test_mindspore_rejects_a_gradient_of_another_shape():
    ms = need("mindspore")
    ops = importlib.import_module("mindspore.ops")
    g = np.ones((2, 4, 2, 2, 2), np.float32)
    with pytest.raises(Exception):  # noqa: B017 - MindSpore's error types vary by version
        glue.mindspore_backward(ms, ops, {"grad_output": ms.Tensor(g),
                                          "self": ms.Tensor(np.zeros((2, 3, 4, 4, 4),
                                                                     np.float32))})


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_mindspore_window_bounds_are_float32(axis):
    """The known difference: i*in crossing 2^24 gives a few elements a neighbour's window
    (in 5999 <- out 3000 on one axis: the last elements, research-24 §3)."""
    ms = need("mindspore")
    ops = importlib.import_module("mindspore.ops")
    ins, outs = [1, 1, 1], [1, 1, 1]
    ins[axis], outs[axis] = 5999, 3000
    g, s, want, m = data((1, 1, *outs), (1, 1, *ins), "float64")
    got = glue.mindspore_backward(ms, ops, {"grad_output": ms.Tensor(g),
                                            "self": ms.Tensor(s)}).asnumpy()
    wrong = np.flatnonzero(np.abs(got - want) > 1e-12 * m)
    assert 1 <= wrong.size <= 8 and wrong.min() > 5900


@pytest.mark.parametrize(("grad_shape", "self_shape"), SHAPES)
def test_paddle(grad_shape, self_shape):
    paddle = need("paddle")
    functional = importlib.import_module("paddle.nn.functional")
    # float64 too carries float32 error: Paddle's scale 1/k is formed in float32
    for dtype, rel in (("float64", 2.0**-22), ("float32", 2.0**-21)):
        g, s, want, m = data(grad_shape, self_shape, dtype)
        x = paddle.to_tensor(s, place=paddle.CPUPlace())
        x.stop_gradient = False
        compute, notes = glue.paddle_backward(paddle, functional, {
            "grad_output": paddle.to_tensor(g, place=paddle.CPUPlace()), "self": x})
        got = compute().numpy()
        assert got.shape == self_shape
        assert np.all(np.abs(got.astype(np.float64) - want) <= rel * m)
        assert notes == ((glue.PADDLE_RANK4_NOTE,) if len(self_shape) == 4 else ())
