"""The case record of aclnnAdaptiveAvgPool3dBackward: the adaptive kit's gradOutput /
self / out record (aclcheck.ops.adaptive.record, the on-disk schema of its golden files,
case files and /index: the same fields as the 2D operator's) bound to this operator's
roles, values and its own contract, and its case ids (over D, H and W)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import ClassVar

from aclcheck.cases import Call, Expectation, Role
from aclcheck.ops.adaptive import ids
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


#: Readable, stable id, e.g. a2-bf16-NCDHW-nondiv0-n2c3d5h7w9-o3x4x5-normal.
make_id = partial(ids.make_id, axes=ids.DHW)
#: n2c3d4h17w9 for 5-D, c3d4h17w9 for 4-D, s5x6 for other ranks.
shape_tag = partial(ids.shape_tag, axes=ids.DHW)
