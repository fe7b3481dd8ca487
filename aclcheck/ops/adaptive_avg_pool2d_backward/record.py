"""The case record of aclnnAdaptiveAvgPool2dBackward: the adaptive kit's gradOutput /
self / out record (aclcheck.ops.adaptive.record, the on-disk schema of its golden files,
case files and /index) bound to this operator's roles, values and contract.

The role view every other stage uses comes from aclcheck.cases.Case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from aclcheck.cases import Call, Expectation, Role
from aclcheck.ops.adaptive.record import GradSelfOutRecord
from aclcheck.ops.adaptive_avg_pool2d_backward import contract
from aclcheck.ops.adaptive_avg_pool2d_backward.values import DISTRIBUTIONS


@dataclass(frozen=True)
class Case(GradSelfOutRecord):
    """One call of aclnnAdaptiveAvgPool2dBackward, fully described."""

    OPERATOR: ClassVar[str] = contract.OPERATOR
    ROLES: ClassVar[tuple[Role, ...]] = contract.ROLES
    SPATIAL_RANK: ClassVar[int] = contract.SPATIAL_RANK
    DISTRIBUTIONS: ClassVar[tuple[str, ...]] = DISTRIBUTIONS

    @classmethod
    def expect(cls, call: Call) -> Expectation:
        return contract.expected_status(call)

    @property
    def out_written(self) -> bool:
        """False where the contract says out is not written (empty gradOutput)."""
        return math.prod(self.grad_shape) > 0


CASE_FILE_KEYS: frozenset[str] = frozenset(Case.FILE_ORDER)  # the keys its case files take
