"""A pooling case's id, shared by the adaptive-pooling operators: the slot, the label, the
shapes part (self's shape tag, then the output size) and the values' and layout's tags,
over H and W (the 2-D operators) or D, H and W (the 3-D one)."""

from __future__ import annotations

from dataclasses import dataclass

from aclcheck.cases import join_id
from aclcheck.cases.layouts import LAYOUT_TAGS


@dataclass(frozen=True)
class IdAxes:
    """How an operator's shapes are named in ids: the spatial axes' letters (after n and
    c), and the prefix of a shape of any other rank."""

    names: str
    other: str


#: The 2-D operators' (n2c3h17w9, c3h17w9, d5x6) and the 3-D one's (n2c3d4h17w9, s5x6).
HW = IdAxes("hw", "d")
DHW = IdAxes("dhw", "s")


def shape_tag(shape: tuple[int, ...], axes: IdAxes = HW) -> str:
    """n2c3h17w9 for 4-D, c3h17w9 for 3-D, d5x6 for other ranks (HW; DHW likewise)."""
    letters = "nc" + axes.names
    if len(shape) in (len(letters), len(letters) - 1):
        return "".join(f"{k}{d}" for k, d in zip(letters[-len(shape):], shape, strict=True))
    return axes.other + "x".join(str(d) for d in shape)


def shapes_text(self_shape: tuple[int, ...], grad_shape: tuple[int, ...],
                axes: IdAxes = HW) -> str:
    """The shapes part of an id: self's shape tag, then the output size ("o5x4")."""
    out = "x".join(str(d) for d in grad_shape[-len(axes.names):])
    return f"{shape_tag(self_shape, axes)}-o{out}"


def make_id(
    product: str,
    dtype: str,
    fmt: str,
    label: str,
    self_shape: tuple[int, ...],
    grad_shape: tuple[int, ...],
    distribution: str,
    layout: str = "contiguous",
    axes: IdAxes = HW,
) -> str:
    """Readable, stable id, e.g. a2-bf16-NCHW-nondiv0-n2c3h17w9-o5x4-normal."""
    return join_id(product, dtype, fmt, label, shapes_text(self_shape, grad_shape, axes),
                   distribution, LAYOUT_TAGS.get(layout, ""))
