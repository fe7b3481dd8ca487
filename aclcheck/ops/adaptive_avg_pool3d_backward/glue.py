"""How PyTorch, MindSpore, Paddle and the aclnn library make this operator's call
(docs/contract-3d.md §8 for what each accepts, measured with torch 2.13.0, mindspore
2.10.0, paddlepaddle 3.3.1 on CPU).

The functions receive the framework module(s) and the input tensors by role, already on
the device with their real strides; the adapters own devices, dtypes and conversions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aclcheck.cases import Case
from aclcheck.ops.adaptive_avg_pool3d_backward import contract
from aclcheck.ops.operator import AclnnSignature, Glue

#: The rank-4 call as Paddle needs it (its pooling takes 5-D tensors only).
PADDLE_RANK4_NOTE = "4-D call: Paddle pools 5-D tensors only; ran with a batch dim of 1"


def output_size(grad_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The forward's output_size that makes gradOutput its output: its last three dims
    (all of it below rank 3, which the framework then judges)."""
    return tuple(grad_shape[-3:]) if len(grad_shape) >= 3 else tuple(grad_shape)


def torch_backward(torch: Any, tensors: Mapping[str, Any]
                   ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """torch.ops.aten._adaptive_avg_pool3d_backward(gradOutput, self); not
    F.adaptive_avg_pool3d, which routes a 1x1x1 output through mean()."""
    return (torch.ops.aten._adaptive_avg_pool3d_backward,
            (tensors["grad_output"], tensors["self"]))


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
                    ) -> tuple[Callable[[], Any], tuple[str, ...]]:
    """paddle.grad of F.adaptive_avg_pool3d(self, gradOutput's D, H, W): (the call to
    time, notes).

    self must not stop gradients. A call where both tensors are 4-D (CDHW) gets a batch
    dim of 1 (a view), as a user would add; any other rank goes in unchanged.
    """
    grad, self_ = tensors["grad_output"], tensors["self"]
    self_.stop_gradient = False
    size = list(output_size(tuple(grad.shape)))
    cdhw = len(self_.shape) == 4 and len(grad.shape) == 4

    def compute() -> Any:
        x, g = (self_.unsqueeze(0), grad.unsqueeze(0)) if cdhw else (self_, grad)
        out = functional.adaptive_avg_pool3d(x, size)
        (result,) = paddle.grad([out], [self_], [g])
        return result

    return compute, ((PADDLE_RANK4_NOTE,) if cdhw else ())


GLUE = Glue(
    torch=torch_backward, torch_name="torch.ops.aten._adaptive_avg_pool3d_backward",
    mindspore=mindspore_backward, mindspore_name="ops.adaptive_avg_pool3d",
    paddle=paddle_backward, paddle_name="F.adaptive_avg_pool3d",
    aclnn=AclnnSignature(contract.API, tuple(r.name for r in contract.ROLES)),
)


def probe_geometry(case: Case) -> Any:
    """The contract's M of a case for the measuring probe (aclcheck.ops.adaptive.probe)."""
    from aclcheck.ops.adaptive.probe import geometry  # judging: only when a probe runs

    return geometry(case, ("D", "H", "W"))
