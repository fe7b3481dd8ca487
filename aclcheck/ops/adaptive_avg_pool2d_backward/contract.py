"""The documented contract of aclnnAdaptiveAvgPool2dBackward, as code.

The single place that knows what this operator accepts: its tensors, products, dtypes,
formats and ranks, and which status the first phase must return for a call, in the
implementation's check order (docs/contract.md §1-§5). The ABI names the document uses
(status codes, aclDataType and aclFormat enums) are aclcheck's own (aclcheck.cases.acl,
aclcheck.dtypes) and are read here as the document reads them.
"""

from __future__ import annotations

from collections.abc import Sequence

from aclcheck.cases import Call, Check, Expectation, Role, TensorDesc
from aclcheck.cases.acl import (
    ACL_FORMAT_ENUM,
    ALL_FORMATS,
    INNER_TILING_ERROR,
    MAX_RANK,
    PARAM_INVALID,
    PARAM_NULLPTR,
    PRIVATE_FORMATS,
    RUNTIME_ERROR,
    STATUS_NAMES,
    SUCCESS,
    UNSPECIFIED,
    normalize_format,
    status_name,
)
from aclcheck.dtypes import ACL_DTYPE_ENUM, ALL_DTYPES, COMPUTE_DTYPES, normalize_dtype
from aclcheck.errors import AclcheckError, SuiteError
from aclcheck.ops.operator import ProductRules

__all__ = [  # this operator's contract, and the ABI names its document defines
    "ACL_DTYPE_ENUM", "ACL_FORMAT_ENUM", "ALL_DTYPES", "ALL_FORMATS", "ASSIST_LIMIT", "Call",
    "COMPUTE_DTYPES", "FORMATS", "FORMAT_RANK", "INNER_TILING_ERROR", "MAX_RANK",
    "PARAM_INVALID", "PARAM_NULLPTR", "PRIVATE_FORMATS", "PRODUCTS", "ROLES",
    "RUNTIME_ERROR", "STATUS_NAMES", "SUCCESS", "TENSOR_NAMES", "TensorDesc",
    "UNDOCUMENTED_FORMATS", "UNSPECIFIED", "VALID_RANKS", "expected_status",
    "normalize_dtype", "normalize_format", "product", "status_name",
    "supported_formats_for_rank",
]

# -- its tensors ----------------------------------------------------------------------------

ROLES: tuple[Role, ...] = (
    Role("grad_output", "grad", "gradOutput"),
    Role("self", "self", "self"),
    Role("out", "out", "out", output=True, shape_of="self"),
)
TENSOR_NAMES: tuple[str, ...] = tuple(r.name for r in ROLES)

# -- products (docs/contract.md §3, §6) -------------------------------------------------------

PRODUCTS: dict[str, ProductRules] = {
    p.id: p
    for p in (
        ProductRules("atlas-training", ("float16", "float32"), "input"),
        ProductRules("atlas-inference", ("float16", "float32"), "input"),
        ProductRules("atlas-a2", ("bfloat16", "float16", "float32"), "float32"),
        ProductRules("atlas-a3", ("bfloat16", "float16", "float32"), "float32"),
    )
}

# -- dtypes and formats ------------------------------------------------------------------

#: Documented formats.
FORMATS: tuple[str, ...] = ("ND", "NCHW", "NCL")
#: Public but undocumented for this operator (accepted by the implementation).
UNDOCUMENTED_FORMATS: tuple[str, ...] = ("NHWC",)

#: Rank a format implies; ND takes its meaning from the rank.
FORMAT_RANK: dict[str, int | None] = {"ND": None, "NCHW": 4, "NCL": 3, "NHWC": 4}

VALID_RANKS: tuple[int, ...] = (3, 4)
#: Ho*H, W*Wo or Ho*Wo above this overflow the training/inference assist matrices.
ASSIST_LIMIT = 2**29 - 1


def product(name: str, error: type[AclcheckError] = SuiteError) -> ProductRules:
    """The product called `name` (else `error`, a ValueError by default, listing the
    valid ones)."""
    try:
        return PRODUCTS[name]
    except KeyError:
        raise error(f"unknown product {name!r}; valid: {', '.join(PRODUCTS)}") from None


# -- expected status (docs/contract.md §5) ----------------------------------------------------


def _invalid(rule: str, reason: str, check: Check) -> Expectation:
    return Expectation(PARAM_INVALID, rule, reason, check=check)


def expected_status(call: Call) -> Expectation:
    """The status the first phase must return, following the documented check order."""
    missing = [name for name in TENSOR_NAMES if call[name] is None]
    if missing:
        return Expectation(PARAM_NULLPTR, "1-nullptr", f"null pointer: {', '.join(missing)}",
                           check=Check.NULL)
    grad, self_, out = call["grad_output"], call["self"], call["out"]
    assert grad is not None and self_ is not None and out is not None

    # Rule 2: ranks of gradOutput and self.
    if len(grad.shape) != len(self_.shape):
        return _invalid(
            "2-rank", f"gradOutput rank {len(grad.shape)} != self rank {len(self_.shape)}",
            Check.SHAPE)
    # Rule 3: out rank, leading dims.
    rank = len(self_.shape)
    if len(out.shape) not in VALID_RANKS:
        return _invalid("3-rank", f"out rank {len(out.shape)} is not 3 or 4", Check.SHAPE)
    if len(out.shape) != rank:
        return _invalid("3-rank", f"out rank {len(out.shape)} != self rank {rank}",
                        Check.SHAPE)
    lead = rank - 2
    if tuple(grad.shape[:lead]) != tuple(self_.shape[:lead]):
        return _invalid(
            "3-leading-dims",
            f"gradOutput leading dims {grad.shape[:lead]} != self {self_.shape[:lead]}",
            Check.SHAPE)
    if tuple(out.shape[:lead]) != tuple(self_.shape[:lead]):
        return _invalid(
            "3-leading-dims", f"out leading dims {out.shape[:lead]} != self {self_.shape[:lead]}",
            Check.SHAPE)
    # Rule 4: dtypes.
    supported = product(call.product).dtypes
    for name, t in (("self", self_), ("gradOutput", grad)):
        if t.dtype not in supported:
            return _invalid(
                "4-dtype", f"{name} dtype {t.dtype} not supported on {call.product}",
                Check.PRODUCT_DTYPE)
    if grad.dtype != self_.dtype:
        return _invalid("4-dtype", f"gradOutput dtype {grad.dtype} != self dtype {self_.dtype}",
                        Check.DTYPE)
    # Rule 5: formats.
    for name, t in (("gradOutput", grad), ("self", self_), ("out", out)):
        if t.format in PRIVATE_FORMATS:
            return _invalid("5-format", f"{name} has private format {t.format}", Check.FORMAT)
    if grad.format != self_.format:
        return _invalid(
            "5-format", f"gradOutput format {grad.format} != self format {self_.format}",
            Check.FORMAT)

    # Accepted by the implementation. Where the documentation says otherwise, or is
    # silent, the answer is unspecified.
    divergences: list[tuple[str, str]] = []  # (kind, what)
    if out.dtype != self_.dtype:
        divergences.append(("out-dtype", f"out dtype {out.dtype} differs from self "
                            f"{self_.dtype} (documented as equal; the implementation does "
                            "not check it)"))
    if tuple(out.shape) != tuple(self_.shape):
        divergences.append(("out-shape", f"out shape {tuple(out.shape)} differs from self "
                            f"{tuple(self_.shape)} in H/W (documented as equal; the "
                            "implementation does not check it)"))
    if out.format != self_.format:
        divergences.append(("out-format", f"out format {out.format} differs from self "
                            f"{self_.format} (documented as equal)"))
    for name, t in (("gradOutput", grad), ("self", self_), ("out", out)):
        if t.format not in FORMATS:  # NHWC, or another operator's format (NCDHW)
            divergences.append(("undocumented-format",
                                f"{name} format {t.format} is undocumented for this operator"))
            break
    for name, t in (("gradOutput", grad), ("self", self_)):
        implied = FORMAT_RANK.get(t.format)
        if implied is not None and implied != len(t.shape):
            divergences.append(("format-rank", f"{name} format {t.format} on a "
                                f"rank-{len(t.shape)} tensor (the format's meaning is not "
                                "checked)"))
            break
    if divergences:
        return Expectation(UNSPECIFIED, "unspecified", "; ".join(d for _, d in divergences),
                           check=Check.UNSPECIFIED, kinds=tuple(k for k, _ in divergences))

    notes: list[str] = []
    if any(d == 0 for t in (grad, self_) for d in t.shape):
        notes.append("empty tensor: success, no kernel runs, out is not written")
    elif product(call.product).accumulate == "input":
        ho, wo = grad.shape[-2:]
        h, w = self_.shape[-2:]
        if max(ho * h, w * wo, ho * wo) > ASSIST_LIMIT:
            return Expectation(
                UNSPECIFIED,
                "unspecified",
                f"Ho*H, W*Wo or Ho*Wo exceeds 2^29-1 on {call.product}: the implementation "
                f"returns {INNER_TILING_ERROR} though the documentation is silent",
                check=Check.UNSPECIFIED, kinds=("inner-tiling-limit",))
    unwritten = ("empty gradOutput: out is documented as not written"
                 if any(d == 0 for d in grad.shape) else "")
    return Expectation(SUCCESS, "0-valid", "valid call", tuple(notes), unwritten=unwritten)


def supported_formats_for_rank(rank: int) -> Sequence[str]:
    """Documented formats a tensor of this rank may carry."""
    return tuple(f for f in FORMATS if FORMAT_RANK[f] in (None, rank))
