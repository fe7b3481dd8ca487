"""The case record of aclnnAdaptiveAvgPool2dBackward: one flat field per fact of its
call (the on-disk schema of its golden files, case files and /index), and its ids.

Per-tensor fields left None take the case's main dtype / format / self shape; `null`
lists tensors passed as null pointers. The role view every other stage uses comes from
aclcheck.cases.Case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from aclcheck.cases import Call, Expectation, Role, join_id
from aclcheck.cases import Case as CaseBase
from aclcheck.cases.layouts import LAYOUT_TAGS
from aclcheck.ops.adaptive.stated import STATED, StatedFacts
from aclcheck.ops.adaptive_avg_pool2d_backward import contract
from aclcheck.ops.adaptive_avg_pool2d_backward.values import DISTRIBUTIONS


@dataclass(frozen=True)
class Case(CaseBase, StatedFacts):
    """One call of aclnnAdaptiveAvgPool2dBackward, fully described."""

    OPERATOR: ClassVar[str] = "adaptive_avg_pool2d_backward"
    ROLES: ClassVar[tuple[Role, ...]] = contract.ROLES
    SPATIAL_RANK: ClassVar[int] = 2
    DISTRIBUTIONS: ClassVar[tuple[str, ...]] = DISTRIBUTIONS
    STATED: ClassVar[tuple[str, ...]] = STATED
    FILE_ORDER: ClassVar[tuple[str, ...]] = (
        "id", "family", "product", "dtype", "format", "self_shape", "grad_shape",
        "distribution", "layout", "seed", "out_shape", "grad_dtype", "self_dtype",
        "out_dtype", "grad_format", "self_format", "out_format", "null", *STATED)

    id: str
    family: str
    product: str
    dtype: str
    format: str
    self_shape: tuple[int, ...]
    grad_shape: tuple[int, ...]
    seed: int
    distribution: str = "normal"
    layout: str = "contiguous"
    out_shape: tuple[int, ...] | None = None
    grad_dtype: str | None = None
    self_dtype: str | None = None
    out_dtype: str | None = None
    grad_format: str | None = None
    self_format: str | None = None
    out_format: str | None = None
    null: tuple[str, ...] = field(default=())

    @classmethod
    def expect(cls, call: Call) -> Expectation:
        return contract.expected_status(call)

    @property
    def out_written(self) -> bool:
        """False where the contract says out is not written (empty gradOutput)."""
        return math.prod(self.grad_shape) > 0


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
CASE_FILE_KEYS: frozenset[str] = frozenset(Case.FILE_ORDER)  # the keys its case files take
