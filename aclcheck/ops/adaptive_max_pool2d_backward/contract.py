"""The contract of aclnnAdaptiveMaxPool2dBackward, as code (docs/contract-maxpool.md §1-§4).

The first phase's checks in the implementation's order (null pointers, dtypes, shapes,
formats, the H*W size, empty tensors), the products that have the operator (Atlas A2 and
A3; the others list no dtype, so every non-null call is 161002), and what neither the
page nor the code decides: gradOutput's N or C against self's (the checks pass, the
tilings refuse later), the page's 2^24 limit on non-divisible shapes, and index values
(nothing checks them: a case whose indices leave their windows is unspecified, run
isolated and reported, never judged; see record.Case.expectation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from aclcheck.cases import Call, Check, Expectation, Role, TensorDesc
from aclcheck.cases.acl import PARAM_INVALID, PARAM_NULLPTR, PRIVATE_FORMATS, SUCCESS, UNSPECIFIED
from aclcheck.errors import SuiteError
from aclcheck.ops.operator import ProductRules

OPERATOR = "adaptive_max_pool2d_backward"
API = "aclnnAdaptiveMaxPool2dBackward"

#: The four tensors in call order, inputs first; indices take gradOutput's shape.
ROLES: tuple[Role, ...] = (
    Role("grad_output", "grad", "gradOutput"),
    Role("self", "self", "self"),
    Role("indices", "indices", "indices", shape_of="grad_output", own_dtype=True),
    Role("out", "out", "gradInput", output=True, shape_of="self"),
)

SPATIAL_RANK = 2
VALID_RANKS: tuple[int, ...] = (3, 4)
#: The indices' dtypes (either on every product that has the operator).
INDEX_DTYPES: tuple[str, ...] = ("int32", "int64")
#: H*W above this is refused (161002): the kernels' INT32 flat positions.
MAX_PLANE = 2**31 - 1
#: The page's limit for non-divisible shapes (the kernel splits an index with a FLOAT32
#: divide): unspecified above it.
PAGE_LIMIT = 2**24

#: Documented formats; the label is not read (the last two dims are always H, W), so any
#: equal public format passes: ND and NCHW for rank 4, ND and NCL for rank 3.
FORMATS: tuple[str, ...] = ("ND", "NCHW", "NCL")
FORMAT_RANK: dict[str, int | None] = {"ND": None, "NCHW": 4, "NCL": 3, "NHWC": 4}

_A2_A3 = ("float32", "float16", "bfloat16")

PRODUCTS: dict[str, ProductRules] = {
    p.id: p
    for p in (
        ProductRules("atlas-training", (), "float32"),
        ProductRules("atlas-inference", (), "float32"),
        ProductRules("atlas-a2", ("bfloat16", "float16", "float32"), "float32"),
        ProductRules("atlas-a3", ("bfloat16", "float16", "float32"), "float32"),
    )
}

#: Compute dtypes some product accepts.
COMPUTE_DTYPES: tuple[str, ...] = _A2_A3

RULE_CHECKS: dict[str, Check] = {
    "0-valid": Check.VALID,
    "0-empty": Check.VALID,
    "1-nullptr": Check.NULL,
    "2-dtype": Check.DTYPE,
    "2-product-dtype": Check.PRODUCT_DTYPE,
    "2-index-dtype": Check.DTYPE,
    "3-rank": Check.SHAPE,
    "3-indices-shape": Check.SHAPE,
    "3-out-shape": Check.SHAPE,
    "4-format": Check.FORMAT,
    "5-plane-size": Check.SHAPE,
    "unspecified": Check.UNSPECIFIED,
}


def product(name: str) -> ProductRules:
    """The ProductRules called `name` (SuiteError listing the valid ones otherwise)."""
    try:
        return PRODUCTS[name]
    except KeyError:
        raise SuiteError(f"unknown product {name!r}; valid: {', '.join(PRODUCTS)}") from None


def supported_formats_for_rank(rank: int) -> tuple[str, ...]:
    """Documented formats a tensor of this rank may carry."""
    return tuple(f for f in FORMATS if FORMAT_RANK[f] in (None, rank))


def divisible(out_hw: tuple[int, int], in_hw: tuple[int, int]) -> bool:
    """H % Ho == 0 and W % Wo == 0: the scatter path (one term per position)."""
    return all(o > 0 and i % o == 0 for o, i in zip(out_hw, in_hw, strict=True))


@dataclass(frozen=True)
class _Refusal:
    rule: str
    reason: str


def _checks(product_id: str, grad: TensorDesc, self_: TensorDesc, indices: TensorDesc,
            out: TensorDesc) -> _Refusal | None:
    """The first refusal of the implementation's checks 2-5, in its order (None: none)."""
    listed = product(product_id).dtypes
    if grad.dtype != self_.dtype:
        return _Refusal("2-dtype", f"gradOutput dtype {grad.dtype} != self dtype {self_.dtype}")
    if out.dtype != self_.dtype:
        return _Refusal("2-dtype", f"gradInput dtype {out.dtype} != self dtype {self_.dtype}")
    if self_.dtype not in listed:
        where = f"not supported on {product_id}" if listed else \
            f"{product_id} lists no dtype for this operator"
        return _Refusal("2-product-dtype", f"self dtype {self_.dtype} {where}")
    if indices.dtype not in INDEX_DTYPES:
        return _Refusal("2-index-dtype", f"indices dtype {indices.dtype} is not int32/int64")
    ranks = {len(t.shape) for t in (grad, self_, indices, out)}
    if len(ranks) > 1:
        return _Refusal("3-rank", f"ranks differ: gradOutput {len(grad.shape)}, self "
                                  f"{len(self_.shape)}, indices {len(indices.shape)}, "
                                  f"gradInput {len(out.shape)}")
    if tuple(indices.shape) != tuple(grad.shape):
        return _Refusal("3-indices-shape", f"indices shape {tuple(indices.shape)} != "
                                           f"gradOutput shape {tuple(grad.shape)}")
    if tuple(out.shape) != tuple(self_.shape):
        return _Refusal("3-out-shape", f"gradInput shape {tuple(out.shape)} != self shape "
                                       f"{tuple(self_.shape)}")
    if any(d < 0 for t in (grad, self_) for d in t.shape):
        return _Refusal("3-rank", "a negative dim")
    formats = {t.format for t in (grad, self_, indices, out)}
    if len(formats) > 1:
        return _Refusal("4-format", f"storage formats differ: {', '.join(sorted(formats))}")
    if grad.format in PRIVATE_FORMATS:
        return _Refusal("4-format", f"private format {grad.format}")
    if len(self_.shape) not in VALID_RANKS:
        return _Refusal("4-format", f"rank {len(self_.shape)} is not 3 or 4")
    h, w = self_.shape[-2:]
    if h * w > MAX_PLANE:
        return _Refusal("5-plane-size", f"H*W = {h * w} exceeds 2^31-1")
    return None


def _empty(*tensors: TensorDesc) -> bool:
    return any(d == 0 for t in tensors for d in t.shape)


def _unspecified(reason: str, kind: str, isolated_only: bool = False) -> Expectation:
    return Expectation(UNSPECIFIED, "unspecified", reason, check=Check.UNSPECIFIED,
                       kinds=(kind,), isolated_only=isolated_only)


def expect(product_id: str, tensors: Mapping[str, TensorDesc | None],
           contract: str = "doc") -> Expectation:
    """The status the first phase must return for a call (tensors by role; None: a null
    pointer). Both contracts alike: where the page and the code part (N/C mismatch, the
    2^24 page limit), the code gives no status either (its later stages decide)."""
    missing = [r.api for r in ROLES if tensors.get(r.name) is None]
    if missing:
        return Expectation(PARAM_NULLPTR, "1-nullptr", f"null pointer: {', '.join(missing)}",
                           check=Check.NULL)
    grad, self_, indices, out = (tensors[r.name] for r in ROLES)
    assert grad is not None and self_ is not None and indices is not None and out is not None
    refused = _checks(product_id, grad, self_, indices, out)
    if refused is not None:
        return Expectation(PARAM_INVALID, refused.rule, refused.reason,
                           check=RULE_CHECKS[refused.rule])
    if _empty(grad, self_, indices):
        return Expectation(SUCCESS, "0-empty", "a zero dim: success, no kernel runs",
                           unwritten="empty tensor: gradInput is not written")
    lead = len(self_.shape) - SPATIAL_RANK
    if tuple(grad.shape[:lead]) != tuple(self_.shape[:lead]):
        return _unspecified(f"gradOutput leading dims {tuple(grad.shape[:lead])} != self "
                            f"{tuple(self_.shape[:lead])}: the checks pass, the tilings "
                            "refuse later (an internal code or a launch failure)", "nc-mismatch",
                            isolated_only=True)  # a peer scatters past the planes
    hw, ohw = tuple(self_.shape[-2:]), tuple(grad.shape[-2:])
    if not divisible(ohw, hw) and math.prod(hw) > PAGE_LIMIT:
        return _unspecified(f"non-divisible call with H*W = {math.prod(hw)} above the page's "
                            "2^24 limit (the kernel splits indices with a FLOAT32 divide)",
                            "page-limit")
    return Expectation(SUCCESS, "0-valid", "valid call")


def expected_status(call: Call) -> Expectation:
    """expect() for a Call (the product, the tensors by role, the contract it follows)."""
    return expect(call.product, {r.name: call[r.name] for r in ROLES}, call.contract)
