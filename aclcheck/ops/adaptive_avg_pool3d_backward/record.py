"""The case record of aclnnAdaptiveAvgPool3dBackward: the adaptive kit's gradOutput /
self / out record (aclcheck.ops.adaptive.record, the on-disk schema of its golden files,
case files and /index: the same fields as the 2D operator's) bound to this operator's
roles, values and its own contract."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from aclcheck.cases import Call, Expectation, Role
from aclcheck.ops.adaptive.record import GradSelfOutRecord
from aclcheck.ops.adaptive_avg_pool3d_backward import contract
from aclcheck.ops.adaptive_avg_pool3d_backward.values import DISTRIBUTIONS


@dataclass(frozen=True)
class Case(GradSelfOutRecord):
    """One call of aclnnAdaptiveAvgPool3dBackward, fully described."""

    OPERATOR: ClassVar[str] = contract.OPERATOR
    ROLES: ClassVar[tuple[Role, ...]] = contract.ROLES
    SPATIAL_RANK: ClassVar[int] = contract.SPATIAL_RANK
    DISTRIBUTIONS: ClassVar[tuple[str, ...]] = DISTRIBUTIONS

    @classmethod
    def expect(cls, call: Call) -> Expectation:
        return contract.expected_status(call)
