"""The case record of aclnnAdaptiveMaxPool2dBackward: one flat field per fact of its call
(the on-disk schema of its golden files, case files and /index): the fields every
adaptive-pooling record opens with (aclcheck.ops.adaptive.record), then its own.

Beyond the average-pooling records: the indices role (`indices_shape`, None: gradOutput's;
`indices_dtype`, INT64 unless set) and `index_choice`, how the indices are chosen
(values.py): a valid choice, or an invalid one that makes the call unspecified.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar

from aclcheck.cases import Call, Check, Expectation, Role
from aclcheck.cases.acl import UNSPECIFIED
from aclcheck.ops.adaptive.record import PoolingRecord
from aclcheck.ops.adaptive_max_pool2d_backward import contract
from aclcheck.ops.adaptive_max_pool2d_backward.values import (
    DISTRIBUTIONS,
    INDEX_CHOICES,
    INVALID_CHOICES,
)


@dataclass(frozen=True)
class Case(PoolingRecord):
    """One call of aclnnAdaptiveMaxPool2dBackward, fully described."""

    OPERATOR: ClassVar[str] = contract.OPERATOR
    ROLES: ClassVar[tuple[Role, ...]] = contract.ROLES
    SPATIAL_RANK: ClassVar[int] = contract.SPATIAL_RANK
    DISTRIBUTIONS: ClassVar[tuple[str, ...]] = DISTRIBUTIONS
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"index_choice": INDEX_CHOICES}
    FILE_ORDER: ClassVar[tuple[str, ...]] = (
        "id", "family", "product", "dtype", "format", "self_shape", "grad_shape",
        "distribution", "layout", "seed", "index_choice", "indices_dtype", "indices_shape",
        "out_shape", "grad_dtype", "self_dtype", "out_dtype", "grad_format", "self_format",
        "indices_format", "out_format", "null")

    index_choice: str = "first-max"
    indices_dtype: str = "int64"
    indices_shape: tuple[int, ...] | None = None
    out_shape: tuple[int, ...] | None = None
    grad_dtype: str | None = None
    self_dtype: str | None = None
    out_dtype: str | None = None
    grad_format: str | None = None
    self_format: str | None = None
    indices_format: str | None = None
    out_format: str | None = None
    null: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.index_choice not in INDEX_CHOICES:
            raise ValueError(f"unknown index_choice {self.index_choice!r}; valid: "
                             f"{', '.join(INDEX_CHOICES)}")

    @classmethod
    def expect(cls, call: Call) -> Expectation:
        return contract.expected_status(call)

    @cached_property
    def expectation(self) -> Expectation:
        """The contract's answer to the call; a call the checks accept whose indices leave
        their windows is unspecified (nothing checks index values: a device may drop,
        move or write outside) and is made only in an isolated worker."""
        exp = self.expect(self.call())
        if self.index_choice not in INVALID_CHOICES or exp.unwritten:
            return exp
        if exp.unspecified:  # undecided already: still never made in aclcheck's process
            return replace(exp, isolated_only=True)
        if not exp.success:
            return exp
        return Expectation(UNSPECIFIED, "unspecified",
                           f"index values ({self.index_choice}): no check reads them; the "
                           "kernels drop, move or write them outside the plane",
                           check=Check.UNSPECIFIED, kinds=("index-values",),
                           isolated_only=True)
