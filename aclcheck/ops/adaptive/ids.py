"""The shapes part of a 2-D pooling case's id, shared by the operators over H and W."""

from __future__ import annotations

from aclcheck.cases import join_id
from aclcheck.cases.layouts import LAYOUT_TAGS


def shape_tag(shape: tuple[int, ...]) -> str:
    """n2c3h17w9 for 4-D, c3h17w9 for 3-D, d5x6 for other ranks."""
    if len(shape) == 4:
        return "n{}c{}h{}w{}".format(*shape)
    if len(shape) == 3:
        return "c{}h{}w{}".format(*shape)
    return "d" + "x".join(str(d) for d in shape)


def shapes_text(self_shape: tuple[int, ...], grad_shape: tuple[int, ...]) -> str:
    """The shapes part of an id: self's shape tag, then the output size ("o5x4")."""
    return f"{shape_tag(self_shape)}-o{'x'.join(str(d) for d in grad_shape[-2:])}"


def make_id(
    product: str,
    dtype: str,
    fmt: str,
    label: str,
    self_shape: tuple[int, ...],
    grad_shape: tuple[int, ...],
    distribution: str,
    layout: str = "contiguous",
) -> str:
    """Readable, stable id, e.g. a2-bf16-NCHW-nondiv0-n2c3h17w9-o5x4-normal."""
    return join_id(product, dtype, fmt, label, shapes_text(self_shape, grad_shape),
                   distribution, LAYOUT_TAGS.get(layout, ""))
