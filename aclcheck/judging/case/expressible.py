"""Why an adapter cannot express a call, or why the call would prove nothing on it: the
reasons a case is SKIP before it runs, from the case model and what the adapter declares.
"""

from __future__ import annotations

from aclcheck.cases import Check
from aclcheck.cases.acl import PARAM_NULLPTR
from aclcheck.cases.call import Capabilities
from aclcheck.judging.case.model import CaseModel


def unsupported_probe(model: CaseModel, caps: Capabilities) -> str | None:
    """Why an invalid-call probe proves nothing on this adapter, if so: it uses a dtype
    the product supports but the adapter declares it does not, so a rejection would be
    the adapter refusing the dtype, not the broken rule (a right answer for the wrong
    reason). Dtypes the product lacks are what a dtype probe tests: never a reason."""
    case = model.case
    if caps.dtypes is None or model.expectation.success or model.product_dtypes is None:
        return None
    used = {case.tensor_desc(r.name).dtype for r in case.ROLES}
    missing = sorted(d for d in used if d in model.product_dtypes and d not in caps.dtypes)
    if not missing:
        return None
    return (f"{caps.name} does not support dtype {', '.join(missing)}: a rejection would "
            f"not test the rule ({model.expectation.reason})")


def not_expressible(model: CaseModel, caps: Capabilities) -> str | None:
    """Why this adapter cannot express the call (or the call would prove nothing on it),
    if so: reported as SKIP with that reason."""
    probe = unsupported_probe(model, caps)
    if probe is not None:
        return probe
    if caps.models_products:
        return None
    case, exp = model.case, model.expectation
    if exp.status == PARAM_NULLPTR or case.null:
        return f"{caps.name} cannot pass null pointers (product-level rule)"
    inputs = case.inputs()
    if exp.check == Check.PRODUCT_DTYPE \
            and len({case.tensor_desc(r.name).dtype for r in inputs if not r.own_dtype}) == 1:
        return f"dtype {case.dtype} support is a product rule; {caps.name} models no product"
    if exp.check == Check.PRODUCT:
        return f"{exp.reason}: a product rule; {caps.name} models no product"
    out = case.output().key
    if any(getattr(case, f"{out}_{fact}") is not None for fact in ("shape", "dtype", "format")):
        return f"{caps.name} allocates its own out tensor"
    if exp.check == Check.FORMAT or any(
        getattr(case, f"{r.key}_format") is not None for r in inputs
    ) or case.format not in model.documented_formats:
        return f"{caps.name} has no format argument"
    return None
