"""The case-record fields the adaptive-pooling operators share (the on-disk schema of
their golden files, case files and /index): the fields that open every record, and the
whole record of the operators whose tensors are gradOutput, self and out. Each operator's
record.py names its operator, roles and contract and adds only what differs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from aclcheck.cases import Case as CaseBase
from aclcheck.ops.adaptive.stated import STATED, StatedFacts


@dataclass(frozen=True)
class PoolingRecord(CaseBase):
    """The fields that open every adaptive-pooling record, in this order: who the case is,
    its call's two shapes, and how its values and views are drawn."""

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


@dataclass(frozen=True)
class GradSelfOutRecord(PoolingRecord, StatedFacts):
    """The record of an operator whose tensors are gradOutput, self and out, with what a
    vendor case states (StatedFacts). Per-tensor fields left None take the case's main
    dtype / format / self shape; `null` lists tensors passed as null pointers."""

    STATED: ClassVar[tuple[str, ...]] = STATED
    FILE_ORDER: ClassVar[tuple[str, ...]] = (
        "id", "family", "product", "dtype", "format", "self_shape", "grad_shape",
        "distribution", "layout", "seed", "out_shape", "grad_dtype", "self_dtype",
        "out_dtype", "grad_format", "self_format", "out_format", "null", *STATED)

    out_shape: tuple[int, ...] | None = None
    grad_dtype: str | None = None
    self_dtype: str | None = None
    out_dtype: str | None = None
    grad_format: str | None = None
    self_format: str | None = None
    out_format: str | None = None
    null: tuple[str, ...] = field(default=())
