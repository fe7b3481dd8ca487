"""Case records as stored: a case's record <-> the attributes of /cases/<id>, and what a
stored record may hold (docs/store.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from aclcheck import contract
from aclcheck.cases import DISTRIBUTIONS, Case
from aclcheck.dtypes import NUMPY_DTYPES
from aclcheck.layouts import LAYOUTS
from aclcheck.store.codec import attr_value, is_safe_id, plain_value, text_attr


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


def record_from_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The case record (Case.to_record() form) from /cases/<id> attributes; an absent
    attribute takes the field's default (None for optional fields); required fields
    without an attribute are left out, so Case.from_record reports them."""
    rec: dict[str, Any] = {}
    for fld in dataclasses.fields(Case):
        key, kind = fld.name, str(fld.type)
        if key not in attrs:
            if fld.default is not dataclasses.MISSING:
                rec[key] = fld.default
            elif fld.default_factory is not dataclasses.MISSING:
                rec[key] = list(fld.default_factory())
            continue
        value = plain_value(attrs[key])
        if key == "null":
            value = [v for v in str(value).split(",") if v]
        elif "tuple[int" in kind:
            value = [int(v) for v in (value if isinstance(value, list) else [value])]
        elif kind == "int":
            value = int(value)
        rec[key] = value
    return rec


#: Case fields that must be strings, and the values each may take (None: any string).
_TEXT_FIELDS: dict[str, tuple[str, ...] | None] = {
    "id": None, "family": None, "product": tuple(contract.PRODUCTS),
    "dtype": tuple(NUMPY_DTYPES), "format": contract.ALL_FORMATS,
    "distribution": DISTRIBUTIONS, "layout": LAYOUTS,
}
_OPTIONAL_TEXT = {"grad_dtype": tuple(NUMPY_DTYPES), "self_dtype": tuple(NUMPY_DTYPES),
                  "out_dtype": tuple(NUMPY_DTYPES), "grad_format": contract.ALL_FORMATS,
                  "self_format": contract.ALL_FORMATS, "out_format": contract.ALL_FORMATS}
#: Largest dim a record may declare (aclnn dims are int64; this keeps sizes exact).
MAX_DIM = 2**40


def record_problem(case: Case) -> str | None:
    """Why a case record cannot be a stored case (unknown names, bad shapes, a call the
    contract cannot judge), or None. Sizes are checked against limits by the readers."""
    for key, valid in {**_TEXT_FIELDS, **_OPTIONAL_TEXT}.items():
        value = getattr(case, key)
        if value is None and key in _OPTIONAL_TEXT:
            continue
        if not isinstance(value, str):
            return f"{key} must be text, got {value!r}"
        if valid is not None and value not in valid:
            return f"unknown {key} {value!r}"
    if not is_safe_id(case.id):
        return f"unsafe id {case.id!r}"
    for key in ("self_shape", "grad_shape", "out_shape"):
        shape = getattr(case, key)
        if shape is None:
            continue
        if len(shape) > contract.MAX_RANK or any(d < 0 or d > MAX_DIM for d in shape):
            return f"{key} {list(shape)}: need at most {contract.MAX_RANK} dims in 0..2^40"
    if any(n not in contract.TENSOR_NAMES for n in case.null):
        return f"null {list(case.null)}: only {', '.join(contract.TENSOR_NAMES)}"
    if isinstance(case.seed, bool) or not 0 <= case.seed < 2**64:
        return f"seed {case.seed} out of range"
    try:
        case.expectation  # noqa: B018 - the contract must be able to judge the call
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        return f"the contract cannot judge this call ({exc})"
    return None
