"""How PyTorch, MindSpore, Paddle and the aclnn library make this operator's call
(docs/contract-3d.md §8 for what each accepts, measured with torch 2.13.0, mindspore
2.10.0, paddlepaddle 3.3.1 on CPU).

The functions receive the framework module(s) and the input tensors by role, already on
the device with their real strides; the adapters own devices, dtypes and conversions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aclcheck.ops.adaptive_avg_pool3d_backward import contract

TORCH_NAME = "torch.ops.aten._adaptive_avg_pool3d_backward"
MINDSPORE_NAME = "mindspore.vjp of ops.adaptive_avg_pool3d"
PADDLE_NAME = "paddle.grad of F.adaptive_avg_pool3d"

#: The aclnn C functions and the tensors of the first phase, in argument order:
#: aclnnStatus GetWorkspaceSize(gradOutput, self, out, uint64_t*, aclOpExecutor**);
#: aclnnStatus aclnnAdaptiveAvgPool3dBackward(void*, uint64_t, aclOpExecutor*, aclrtStream).
ACLNN_NAME = contract.API
ACLNN_TENSORS: tuple[str, ...] = ("grad_output", "self", "out")
#: Positional arguments of a `module:function` implementation: fn(grad_output, self).
CALLABLE_ARGS: tuple[str, ...] = ("grad_output", "self")

#: The rank-4 call as Paddle needs it (its pooling takes 5-D tensors only).
PADDLE_RANK4_NOTE = "4-D call: Paddle pools 5-D tensors only; ran with a batch dim of 1"


def output_size(grad_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The forward's output_size that makes gradOutput its output: its last three dims
    (all of it below rank 3, which the framework then judges)."""
    return tuple(grad_shape[-3:]) if len(grad_shape) >= 3 else tuple(grad_shape)


def torch_refusal(shapes: Mapping[str, tuple[int, ...] | None]) -> str | None:
    """Why a call must not reach PyTorch's CPU kernel, if so: with an empty spatial dim
    of self and the matching gradOutput axis above 1, its window end (1 + (-1) / out,
    C truncation) writes one element out of bounds: the process dies (SIGSEGV)."""
    grad, self_ = shapes.get("grad_output"), shapes.get("self")
    if grad is None or self_ is None or len(grad) < 3 or len(self_) < 3:
        return None
    for axis in (-3, -2, -1):
        if self_[axis] == 0 and grad[axis] > 1:
            return ("PyTorch CPU writes out of bounds for an empty spatial dim of self with "
                    "that gradOutput axis > 1 (SIGSEGV); not called")
    return None


def torch_backward(torch: Any, tensors: Mapping[str, Any]) -> Any:
    """torch.ops.aten._adaptive_avg_pool3d_backward(gradOutput, self); not
    F.adaptive_avg_pool3d, which routes a 1x1x1 output through mean()."""
    return torch.ops.aten._adaptive_avg_pool3d_backward(tensors["grad_output"],
                                                         tensors["self"])


def mindspore_backward(ms: Any, ops: Any, tensors: Mapping[str, Any]) -> Any:
    """mindspore.vjp of ops.adaptive_avg_pool3d(self, gradOutput's D, H, W), with
    gradOutput as the sensitivity: the public path, which checks the sensitivity's shape
    against the forward output (the raw AdaptiveAvgPool3DGrad primitive does not)."""
    grad, self_ = tensors["grad_output"], tensors["self"]
    size = output_size(tuple(grad.shape))
    _, backward = ms.vjp(lambda x: ops.adaptive_avg_pool3d(x, size), self_)
    (result,) = backward(grad)
    return result


def paddle_backward(paddle: Any, functional: Any, tensors: Mapping[str, Any]
                    ) -> tuple[Any, tuple[str, ...]]:
    """paddle.grad of F.adaptive_avg_pool3d(self, gradOutput's D, H, W): (result, notes).

    self must not stop gradients. A call where both tensors are 4-D (CDHW) gets a batch
    dim of 1 (a view), as a user would add; any other rank goes in unchanged.
    """
    grad, self_ = tensors["grad_output"], tensors["self"]
    size = list(output_size(tuple(grad.shape)))
    cdhw = len(self_.shape) == 4 and len(grad.shape) == 4
    x, g = (self_.unsqueeze(0), grad.unsqueeze(0)) if cdhw else (self_, grad)
    out = functional.adaptive_avg_pool3d(x, size)
    (result,) = paddle.grad([out], [self_], [g])
    return result, ((PADDLE_RANK4_NOTE,) if cdhw else ())
