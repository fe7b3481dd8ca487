"""How PyTorch, MindSpore, Paddle and the aclnn library make this operator's call
(docs/contract-maxpool.md §9, measured with torch 2.13.0, mindspore 2.10.0, paddlepaddle
3.3.1 on CPU).

The functions receive the framework module(s) and the input tensors by role, already on
the device with their real strides. A framework is never handed a call whose indices
leave their windows in aclcheck's own process: such cases are isolated only
(Expectation.isolated_only), since PyTorch's CPU kernel checks nothing (index -1 corrupts
its heap).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aclcheck.cases import Case
from aclcheck.ops.adaptive_max_pool2d_backward import contract
from aclcheck.ops.operator import AclnnSignature, Glue

#: What the PyTorch adapter says of an INT32 indices call.
TORCH_INT32_NOTE = ("indices: PyTorch takes INT64 only (\"expected scalar type Long\"); "
                    "converted from INT32")


#: What the Paddle adapter says of a rank-3 call and of INT64 indices.
PADDLE_RANK3_NOTE = "3-D call: Paddle's kernel reads 4-D dims only; ran with a batch dim of 1"
PADDLE_INT64_NOTE = "indices converted to INT32: Paddle's mask is INT32 only"


def torch_backward(torch: Any, tensors: Mapping[str, Any]
                   ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """torch.ops.aten.adaptive_max_pool2d_backward(gradOutput, self, indices), INT32
    indices converted to INT64 (its only index dtype)."""
    indices = tensors["indices"]
    if indices.dtype == torch.int32:
        indices = indices.to(torch.int64)
    return (torch.ops.aten.adaptive_max_pool2d_backward,
            (tensors["grad_output"], tensors["self"], indices))


def torch_note(case: Case) -> str | None:
    """What the PyTorch call changes of a case: INT32 indices become INT64."""
    return TORCH_INT32_NOTE if case.tensor_desc("indices").dtype == "int32" else None


def mindspore_backward(ms: Any, ops: Any, tensors: Mapping[str, Any]) -> Any:
    """The AdaptiveMaxPool2DGrad primitive(gradOutput, self, indices): MindSpore has no
    public function taking the indices (its forward makes its own), so the raw grad
    primitive is the call; INT32 and INT64 indices both go in unchanged."""
    from mindspore.ops.auto_generate import AdaptiveMaxPool2DGrad

    return AdaptiveMaxPool2DGrad()(tensors["grad_output"], tensors["self"], tensors["indices"])


def paddle_backward(paddle: Any, functional: Any, tensors: Mapping[str, Any]
                    ) -> tuple[Callable[[], Any], tuple[str, ...]]:
    """paddle._C_ops.max_pool2d_with_index_grad(self, mask, gradOutput, ...) with the
    arguments F.adaptive_max_pool2d's forward passes ([Ho, Wo], [1, 1], [0, 0], no global
    pooling, adaptive, no ceil mode): (the call to time, notes). Its mask is INT32 only
    (INT64 indices converted), and its kernel reads 4-D dims only: a rank-3 call gets a
    batch dim of 1 (a view). No shape is checked by Paddle itself."""
    grad, self_, idx = tensors["grad_output"], tensors["self"], tensors["indices"]
    rank3 = len(self_.shape) == 3 and len(grad.shape) == 3 and len(idx.shape) == 3
    notes = []
    if rank3:
        notes.append(PADDLE_RANK3_NOTE)
    int64 = str(idx.dtype).split(".")[-1] == "int64"
    if int64:
        notes.append(PADDLE_INT64_NOTE)
    size = [int(grad.shape[-2]), int(grad.shape[-1])] if len(grad.shape) >= 2 else []

    def compute() -> Any:
        x, g, m = self_, grad, idx.astype("int32") if int64 else idx
        if rank3:
            x, g, m = x.unsqueeze(0), g.unsqueeze(0), m.unsqueeze(0)
        out = paddle._C_ops.max_pool2d_with_index_grad(x, m, g, size, [1, 1], [0, 0], False,
                                                       True, False)
        return out.squeeze(0) if rank3 else out

    return compute, tuple(notes)


GLUE = Glue(
    torch=torch_backward, torch_name="torch.ops.aten.adaptive_max_pool2d_backward",
    mindspore=mindspore_backward, mindspore_name="AdaptiveMaxPool2DGrad (the grad primitive)",
    paddle=paddle_backward, paddle_name="_C_ops.max_pool2d_with_index_grad",
    aclnn=AclnnSignature(contract.API, tuple(r.name for r in contract.ROLES)),
    torch_note=torch_note,
)
