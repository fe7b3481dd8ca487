"""What a stored case record may hold (docs/store.md): the check every golden reader
applies to a record before it trusts it. Generic over operators: the fields and what
each may hold come from the record class (Case.record_fields)."""

from __future__ import annotations

from aclcheck.cases import Case
from aclcheck.cases.acl import MAX_RANK
from aclcheck.cases.record import SHAPE, TEXT
from aclcheck.store.codec import is_safe_id

#: Largest dim a record may declare (aclnn dims are int64; this keeps sizes exact).
MAX_DIM = 2**40


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
