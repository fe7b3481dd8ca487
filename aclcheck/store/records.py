"""Case records as stored: a case's record <-> the attributes of /cases/<id>, and what a
stored record may hold (docs/store.md). Generic over operators: the fields and what each
may hold come from the record class (Case.record_fields)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.acl import MAX_RANK
from aclcheck.cases.record import INT, NAMES, SHAPE, TEXT
from aclcheck.store.codec import attr_value, is_safe_id, plain_value, text_attr

#: Largest dim a record may declare (aclnn dims are int64; this keeps sizes exact).
MAX_DIM = 2**40


def record_attrs(case: Case) -> dict[str, Any]:
    """Attributes of /cases/<id>: the case record (None omitted, lists of str joined by
    commas, empty `null` as "") plus the expectation."""
    attrs: dict[str, Any] = {}
    for key, value in case.to_record().items():
        if value is None:
            continue
        if key == "null":
            attrs[key] = text_attr(",".join(value))
            continue
        attrs[key] = attr_value(value)
    exp = case.expectation
    attrs["expected_status"] = np.int64(exp.status)
    attrs["expected_rule"] = text_attr(exp.rule)
    attrs["expected_reason"] = text_attr(exp.reason)
    attrs["out_written"] = np.uint8(case.out_written)
    return attrs


def record_from_attrs(attrs: Mapping[str, Any], case_type: type[Case]) -> dict[str, Any]:
    """The case record (Case.to_record() form) from /cases/<id> attributes; an absent
    attribute takes the field's default (None for optional fields); required fields
    without an attribute are left out, so Case.from_record reports them."""
    kinds = {f.name: f.kind for f in case_type.record_fields()}
    rec: dict[str, Any] = {}
    for fld in dataclasses.fields(case_type):  # type: ignore[arg-type]
        key, kind = fld.name, kinds[fld.name]
        if key not in attrs:
            if fld.default is not dataclasses.MISSING:
                rec[key] = fld.default
            elif fld.default_factory is not dataclasses.MISSING:
                rec[key] = list(fld.default_factory())
            continue
        value = plain_value(attrs[key])
        if kind == NAMES:
            value = [v for v in str(value).split(",") if v]
        elif kind == SHAPE:
            value = [int(v) for v in (value if isinstance(value, list) else [value])]
        elif kind == INT:
            value = int(value)
        rec[key] = value
    return rec


def record_problem(case: Case) -> str | None:
    """Why a case record cannot be a stored case (unknown names, bad shapes, a call the
    contract cannot judge), or None. Sizes are checked against limits by the readers."""
    fields = case.record_fields()
    for f in fields:
        if f.kind != TEXT:
            continue
        value = getattr(case, f.name)
        if value is None and f.nullable:
            continue
        if not isinstance(value, str):
            return f"{f.name} must be text, got {value!r}"
        if f.choices is not None and value not in f.choices:
            return f"unknown {f.name} {value!r}"
    if not is_safe_id(case.id):
        return f"unsafe id {case.id!r}"
    for f in fields:
        shape = getattr(case, f.name)
        if f.kind != SHAPE or shape is None:
            continue
        low = -MAX_DIM if f.name == f"{f.role}_shape" else 0  # a refused call's dims
        if len(shape) > MAX_RANK or any(d < low or d > MAX_DIM for d in shape):
            return f"{f.name} {list(shape)}: need at most {MAX_RANK} dims in {low}..2^40"
    roles = tuple(r.name for r in case.ROLES)
    if any(n not in roles for n in case.null):
        return f"null {list(case.null)}: only {', '.join(roles)}"
    if isinstance(case.seed, bool) or not 0 <= case.seed < 2**64:
        return f"seed {case.seed} out of range"
    try:
        case.expectation  # noqa: B018 - the contract must be able to judge the call
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        return f"the contract cannot judge this call ({exc})"
    return None
