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

from aclcheck.cases import Call, Expectation, Role
from aclcheck.cases import Case as CaseBase
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


CASE_FILE_KEYS: frozenset[str] = frozenset(Case.FILE_ORDER)  # the keys its case files take
