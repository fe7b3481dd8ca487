"""The documented contract of aclnnAdaptiveAvgPool2dBackward, as code.

The single place that knows what this operator accepts: its tensors, products, dtypes,
formats and ranks, and which status the first phase must return for a call, in the
implementation's check order (docs/contract.md §1-§5). The ABI names the document uses
(status codes, aclDataType and aclFormat enums) are aclcheck's own (aclcheck.cases.acl,
aclcheck.dtypes) and are read here as the document reads them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from aclcheck.cases import Call, Check, Expectation, Role, TensorDesc
from aclcheck.cases.acl import (
    ACL_FORMAT_ENUM,
    ALL_FORMATS,
    INNER_NULLPTR,
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
    "ACL_DTYPE_ENUM", "ACL_FORMAT_ENUM", "ALL_DTYPES", "ALL_FORMATS", "API", "ASSIST_LIMIT",
    "Call", "COMPUTE_DTYPES", "FORMATS", "FORMAT_RANK", "INNER_NULLPTR", "MAX_RANK",
    "OPERATOR", "PARAM_INVALID", "PARAM_NULLPTR", "PRIVATE_FORMATS", "PRODUCTS", "ROLES",
    "RUNTIME_ERROR", "SPATIAL_RANK", "STATUS_NAMES", "SUCCESS", "TENSOR_NAMES", "TensorDesc",
    "UNDOCUMENTED_FORMATS", "UNSPECIFIED", "VALID_RANKS", "expected_status",
    "normalize_dtype", "normalize_format", "product", "status_name",
    "supported_formats_for_rank",
]

# -- its tensors ----------------------------------------------------------------------------

OPERATOR = "adaptive_avg_pool2d_backward"
API = "aclnnAdaptiveAvgPool2dBackward"
SPATIAL_RANK = 2

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


def _negative_dim(grad: TensorDesc, self_: TensorDesc) -> str | None:
    """What CheckInputDims finds first of a negative dim in self, then gradOutput (the
    code rejects it; the page says nothing of negative dims), or None."""
    for name, t in (("self", self_), ("gradOutput", grad)):
        for i, d in enumerate(t.shape):
            if d < 0:
                return f"{name} dim {i} is {d} (negative)"
    return None


def expected_status(call: Call) -> Expectation:
    """The status the first phase must return, following the documented check order.

    `call.contract` "doc" (the default): where the documentation page and the vendor's
    code part (or the page is silent), the call is unspecified. "code": such calls get
    the status the vendor's code returns (docs/contract.md §5, "Where the page and the
    code part"); still unspecified where the code's own answer is no status its first
    phase decides, or one aclcheck cannot judge.
    """
    code = call.contract == "code"
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
    # Rule 2, the code only: a negative dim of self or gradOutput (CheckInputDims).
    negative = _negative_dim(grad, self_)
    if negative is not None and code:
        return _invalid("2-negative-dim", f"{negative}: rejected by the code's "
                        "CheckInputDims; the page is silent", Check.SHAPE)
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
    # Rule 5: formats (the code never looks at out's: CheckFormat).
    checked = (("gradOutput", grad), ("self", self_)) if code else (
        ("gradOutput", grad), ("self", self_), ("out", out))
    for name, t in checked:
        if t.format in PRIVATE_FORMATS:
            return _invalid("5-format", f"{name} has private format {t.format}", Check.FORMAT)
    if grad.format != self_.format:
        return _invalid(
            "5-format", f"gradOutput format {grad.format} != self format {self_.format}",
            Check.FORMAT)

    # Accepted by the implementation. Where the documentation says otherwise, or is
    # silent, the answer is unspecified.
    divergences = _divergences(grad, self_, out)
    if negative is not None:  # doc: the page is silent, the code rejects (rule 2)
        divergences.insert(0, ("negative-dim", f"{negative}: the page is silent, the code "
                               f"returns {PARAM_INVALID} (CheckInputDims)"))
    if code:
        return _code_answer(call.product, grad, self_, out, divergences)
    if divergences:
        return Expectation(UNSPECIFIED, "unspecified", "; ".join(d for _, d in divergences),
                           check=Check.UNSPECIFIED, kinds=tuple(k for k, _ in divergences))

    notes: list[str] = []
    if _empty(grad, self_):
        notes.append(_EMPTY_NOTE)
    elif product(call.product).accumulate == "input":
        ho, wo = grad.shape[-2:]
        h, w = self_.shape[-2:]
        if max(ho * h, w * wo, ho * wo) > ASSIST_LIMIT:
            return Expectation(
                UNSPECIFIED,
                "unspecified",
                f"Ho*H, W*Wo or Ho*Wo exceeds 2^29-1 on {call.product}: the implementation "
                f"returns {INNER_NULLPTR} though the documentation is silent",
                check=Check.UNSPECIFIED, kinds=("inner-tiling-limit",))
    return _valid(grad, tuple(notes))


_EMPTY_NOTE = "empty tensor: success, no kernel runs, out is not written"


def _empty(grad: TensorDesc, self_: TensorDesc) -> bool:
    return any(d == 0 for t in (grad, self_) for d in t.shape)


def _valid(grad: TensorDesc, notes: tuple[str, ...]) -> Expectation:
    unwritten = ("empty gradOutput: out is documented as not written"
                 if any(d == 0 for d in grad.shape) else "")
    return Expectation(SUCCESS, "0-valid", "valid call", notes, unwritten=unwritten)


def _divergences(grad: TensorDesc, self_: TensorDesc, out: TensorDesc) -> list[tuple[str, str]]:
    """What the page and the code part on for a call the code's checks accept:
    (kind, what), in the order the reason lists them."""
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
    return divergences


# -- contract "code": what the vendor's code does after its checks accept a call -------------
#
# Sources (docs/contract.md §5, "Where the page and the code part"): ops-nn
# pooling/adaptive_avg_pool2d_grad/op_api/aclnn_adaptive_avg_pool2d_backward.cpp (the
# empty return, DoAdapativeAvgPool2DBackward's 1x1 fill path, DoFusionAdaptiveAvgPool2D-
# Backward's A2/A3 path through the 3D kernel and the training/inference matmul path),
# pooling/adaptive_avg_pool2d/op_api/adaptive_avg_pool2d_assist_matrix.cpp
# (AssistMatrixInferShape), and the level-0 helpers every path ends in, in ops-math:
# conversion/contiguous/op_host/op_api/contiguous.cpp (ViewCopy, CheckViewCopyParams:
# the result's dtype and view shape must equal out's, its storage format out's or ND) and
# conversion/reshape/op_host/op_api/reshape.cpp (Reshape: equal element counts). A null
# from any of them is returned as ACLNN_ERR_INNER_NULLPTR, 561103.


def _code_answer(product_id: str, grad: TensorDesc, self_: TensorDesc, out: TensorDesc,
                 divergences: list[tuple[str, str]]) -> Expectation:
    """contract "code" for a call the code's checks accept: the status its first phase
    returns (0 where it computes, 561103 where a helper returns null), or unspecified
    where that is not decided by what aclcheck reads, or not judgeable by aclcheck."""
    kinds = tuple(k for k, _ in divergences)
    said = "; ".join(d for _, d in divergences)
    if _empty(grad, self_):
        if {"out-dtype", "out-shape"} & set(kinds):
            return _code_unspecified(
                kinds, f"{said}; the code returns {SUCCESS} before computing anything "
                "(empty tensor, out not written), but aclcheck judges out only in self's "
                "dtype and shape")
        return _code_valid(grad, kinds, (_EMPTY_NOTE,))
    rules = product(product_id)
    ho, wo = grad.shape[-2:]
    h, w = self_.shape[-2:]
    if (ho, wo) == (1, 1):
        path = "fill"  # DoAdapativeAvgPool2DBackward: Fill, Mul, Cast to out's dtype
    elif rules.accumulate == "float32":
        path = "kernel"  # A2/A3: the 3D kernel, Reshape to out's shape, ViewCopy
    else:
        path = "matmul"  # training/inference: assist matrices, two matmuls, ViewCopy
        if max(ho * h, w * wo, ho * wo) > ASSIST_LIMIT:
            return Expectation(
                INNER_NULLPTR, "6-assist-limit",
                f"Ho*H, W*Wo or Ho*Wo exceeds 2^29-1 on {product_id}: the assist matrices "
                f"are refused (AssistMatrixInferShape), the code returns "
                f"{INNER_NULLPTR}", ("contract code: the page is silent "
                                          "(inner-tiling-limit)",), check=Check.PRODUCT)
    fails, open_, unjudged = _view_copy(path, self_, out)
    if fails:
        check = Check.DTYPE if fails[0].startswith("dtype") else Check.SHAPE
        return Expectation(INNER_NULLPTR, "6-view-copy",
                           f"contract code: {said}; on the {path} path the code's ViewCopy "
                           f"(or Reshape) to out refuses it ({'; '.join(fails)}): "
                           f"{INNER_NULLPTR}",
                           (f"contract code: decided as the code ({', '.join(kinds)})",),
                           check=check)
    if open_ or unjudged:
        return _code_unspecified(kinds, f"{said}; " + "; ".join(open_ + unjudged))
    return _code_valid(grad, kinds, ())


def _view_copy(path: str, self_: TensorDesc, out: TensorDesc
               ) -> tuple[list[str], list[str], list[str]]:
    """What the path's last steps make of out's dtype, format and shape: (refusals, what
    the code's answer depends on beyond aclcheck's reading, what it accepts but aclcheck
    cannot judge)."""
    fails: list[str] = []
    open_: list[str] = []
    unjudged: list[str] = []
    if out.dtype != self_.dtype:
        if path == "fill":
            unjudged.append(f"the 1x1 path casts its result to out's dtype {out.dtype} "
                            "(accepted where that Cast exists), but aclcheck judges out "
                            "only in self's dtype")
        else:
            fails.append(f"dtype {self_.dtype} result, out {out.dtype}")
    if out.format in PRIVATE_FORMATS:
        open_.append(f"out's private format {out.format} is never checked, and what the "
                     "copy into it does is not in the code aclcheck reads")
    elif out.format != self_.format:
        # ViewCopy takes out's format from a result labelled so or ND: the matmul path's
        # (SetFormat(bmmOut, ND)), the kernel path's for 3-D calls (Reshape to a lower
        # rank relabels ND); the other labels come from level-0 ops outside ops-nn
        if not (path == "matmul" or path == "kernel" and len(self_.shape) == 3):
            open_.append(f"ViewCopy takes out's format {out.format} only from a result "
                         f"labelled {out.format} or ND, and which label the {path} path's "
                         "level-0 ops give their result is not in the code aclcheck reads")
    if tuple(out.shape) != tuple(self_.shape):
        size, out_size = math.prod(self_.shape), math.prod(out.shape)
        if path == "kernel":  # Reshape(result, out's shape), then ViewCopy
            if -1 not in out.shape and out_size == size:
                unjudged.append("the kernel path reshapes its result to out's shape and "
                                "copies it (accepted: out holds self's gradient in "
                                "row-major order), but aclcheck has no golden of that form")
            else:
                fails.append(f"shape: self {tuple(self_.shape)}, out {tuple(out.shape)}")
        elif size == 1 and out_size == 1:
            open_.append("ViewCopy passes two single-element shapes")
        else:
            fails.append(f"shape: self {tuple(self_.shape)}, out {tuple(out.shape)}")
    return fails, open_, unjudged


def _code_valid(grad: TensorDesc, kinds: tuple[str, ...], notes: tuple[str, ...]
                ) -> Expectation:
    """A call the code accepts and computes (or, empty, accepts without a kernel)."""
    if kinds:
        notes = (*notes, f"contract code: accepted by the code though the page differs "
                         f"({', '.join(kinds)})")
    return _valid(grad, notes)


def _code_unspecified(kinds: tuple[str, ...], reason: str) -> Expectation:
    return Expectation(UNSPECIFIED, "unspecified", f"contract code: {reason}",
                       check=Check.UNSPECIFIED, kinds=kinds)


def supported_formats_for_rank(rank: int) -> Sequence[str]:
    """Documented formats a tensor of this rank may carry."""
    return tuple(f for f in FORMATS if FORMAT_RANK[f] in (None, rank))
