"""How each framework and the aclnn library make aclnnAdaptiveAvgPool2dBackward's call.

PyTorch: the backward op itself (`F.adaptive_avg_pool2d` is avoided on purpose: it
routes output (1, 1) through mean()). MindSpore and Paddle: the gradient of the forward
`adaptive_avg_pool2d(self, output_size)` with gradOutput as the sensitivity, as users
reach it; output_size is gradOutput's last two dims. MindSpore: `mindspore.vjp` of
`ops.adaptive_avg_pool2d`, not the raw primitive `AdaptiveAvgPool2DGrad`, which skips the
public path's shape checks (it accepts a gradOutput of the wrong rank and reads out of
bounds). Paddle: `paddle.grad([out], [self], [gradOutput])` after the forward; it pools
4-D tensors only, so a call where both tensors are 3-D (NCL) gets a batch dim of 1
(`unsqueeze(0)`, a view), as a user would add; any other rank goes in unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aclcheck.cases import Case
from aclcheck.ops.operator import AclnnSignature, Glue


def output_size(grad_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The forward's output_size that makes gradOutput its output: its last two dims
    (all of it for a rank below 2, which the framework then judges)."""
    return tuple(grad_shape[-2:]) if len(grad_shape) >= 2 else tuple(grad_shape)


def torch_call(torch: Any, t: Mapping[str, Any]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    return torch.ops.aten._adaptive_avg_pool2d_backward, (t["grad_output"], t["self"])


def mindspore_call(ms: Any, ops: Any, t: Mapping[str, Any]) -> Any:
    grad, self_ = t["grad_output"], t["self"]
    size = output_size(tuple(grad.shape))
    _, backward = ms.vjp(lambda x: ops.adaptive_avg_pool2d(x, size), self_)
    (result,) = backward(grad)
    return result


def paddle_call(paddle: Any, functional: Any, t: Mapping[str, Any]
                ) -> tuple[Callable[[], Any], tuple[str, ...]]:
    grad, self_ = t["grad_output"], t["self"]
    self_.stop_gradient = False
    size = list(output_size(tuple(grad.shape)))
    ncl = len(self_.shape) == 3 and len(grad.shape) == 3

    def compute() -> Any:
        x, g = (self_.unsqueeze(0), grad.unsqueeze(0)) if ncl else (self_, grad)
        out = functional.adaptive_avg_pool2d(x, size)
        (result,) = paddle.grad([out], [self_], [g])
        return result

    notes = ("3-D call: Paddle pools 4-D tensors only; ran with a batch dim of 1",
             ) if ncl else ()
    return compute, notes


GLUE = Glue(
    torch=torch_call, torch_name="torch.ops.aten._adaptive_avg_pool2d_backward",
    mindspore=mindspore_call, mindspore_name="ops.adaptive_avg_pool2d",
    paddle=paddle_call, paddle_name="F.adaptive_avg_pool2d",
    aclnn=AclnnSignature("aclnnAdaptiveAvgPool2dBackward", ("grad_output", "self", "out")),
)


def probe_geometry(case: Case) -> Any:
    """The contract's M of a case for the measuring probe (aclcheck.ops.adaptive.probe)."""
    from aclcheck.ops.adaptive.probe import geometry  # judging: only when a probe runs

    return geometry(case, ("H", "W"))
