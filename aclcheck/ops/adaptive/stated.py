"""The record fields of what a vendor's test case states beyond shape, dtype and format
(docs/case-files.md), shared by the average-pooling operators whose roles are grad,
self and out: each tensor's view, the values of each input, which contract the
prediction follows, the case's provenance and the vendor's expected status."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class StatedFacts:
    """A mixin of a record class: every field optional (None: not stated). Keyword-only,
    so a record's own fields keep their places."""

    grad_view_strides: tuple[int, ...] | None = None
    self_view_strides: tuple[int, ...] | None = None
    out_view_strides: tuple[int, ...] | None = None
    grad_view_offset: int | None = None
    self_view_offset: int | None = None
    out_view_offset: int | None = None
    grad_storage_shape: tuple[int, ...] | None = None
    self_storage_shape: tuple[int, ...] | None = None
    out_storage_shape: tuple[int, ...] | None = None
    grad_range: tuple[float, ...] | None = None
    self_range: tuple[float, ...] | None = None
    grad_normal: tuple[float, ...] | None = None
    self_normal: tuple[float, ...] | None = None
    grad_fill: str | None = None
    self_fill: str | None = None
    grad_values: tuple[float, ...] | None = None
    self_values: tuple[float, ...] | None = None
    contract: str | None = None
    source: str | None = None
    vendor_status: int | None = None


#: The mixin's fields, in case-file order (Case.STATED of a record that takes it).
STATED: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(StatedFacts))
