"""The case record of aclnnAdaptiveAvgPool3dBackward: the same flat fields as the 2D
operator's (its tensors are also gradOutput, self and out), its own contract."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from aclcheck import cases
from aclcheck.contract import Expectation
from aclcheck.ops.adaptive_avg_pool3d_backward import contract


@dataclass(frozen=True)
class Case(cases.Case):
    """One call of the 3D operator (fields: see the base record)."""

    OPERATOR: ClassVar[str] = contract.OPERATOR

    @property
    def expectation(self) -> Expectation:
        return contract.expected_status(self.call())

    @property
    def out_written(self) -> bool:
        """Every call the contract accepts writes out (empty tensors are invalid here)."""
        return True
