"""The contract of aclnnAdaptiveAvgPool3dBackward, as code (docs/contract-3d.md §1-§5).

Two readings of every call are written down separately, and the expected status is where
they meet:

- the implementation (the vendor's op_api, checks in its order: null pointers, shapes,
  dtypes by product *and by the output size*, formats, the Atlas training rule), and
- the documentation (the API page: FLOAT32/FLOAT16/BFLOAT16 on every product, formats
  NCDHW and ND, ranks 4-5, no empty tensor; plus the one rule the issue states as a fact:
  Atlas training accepts only a 1x1x1 output).

Where both give the same status, that is the expectation (the implementation's rule
names it). Where they differ, or one side is silent, the call is *unspecified*: any answer
is accepted and reported as a divergence, exactly as the 2D operator treats the
disagreements of its page and its sources (docs/contract.md §5). That is contract "doc"
(the default); contract "code" (Call.contract) takes the implementation's reading
wherever it gives a status (docs/contract-3d.md §5, "Where the page and the code part").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aclcheck.cases import Call, Check, Expectation, Role, TensorDesc
from aclcheck.cases.acl import PARAM_INVALID, PARAM_NULLPTR, PRIVATE_FORMATS, SUCCESS, UNSPECIFIED
from aclcheck.errors import SuiteError
from aclcheck.ops.operator import ProductRules as BaseRules

OPERATOR = "adaptive_avg_pool3d_backward"
API = "aclnnAdaptiveAvgPool3dBackward"

#: The three tensors in call order, inputs first.
ROLES: tuple[Role, ...] = (
    Role("grad_output", "grad", "gradOutput"),
    Role("self", "self", "self"),
    Role("out", "out", "out", output=True, shape_of="self"),
)
API_NAMES: dict[str, str] = {r.name: r.api for r in ROLES}

SPATIAL_RANK = 3
VALID_RANKS: tuple[int, ...] = (4, 5)

# -- dtypes ----------------------------------------------------------------------------------

#: What the documentation lists, for every product alike.
DOC_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
_TRAIN_INFER = ("float32", "float64", "float16")
_A2_A3_GLOBAL = ("float32", "float64", "float16", "bfloat16")
_A2_A3 = ("float32", "float16", "bfloat16")

# -- formats ---------------------------------------------------------------------------------

#: Documented formats.
FORMATS: tuple[str, ...] = ("NCDHW", "ND")
#: Public formats the implementation accepts (any equal, non-private format passes its
#: checks) though the page does not list them: the vendor's own system test labels 5-D
#: tensors NCHW; NDHWC changes meaning on Ascend 950.
UNDOCUMENTED_FORMATS: tuple[str, ...] = ("NCHW", "NDHWC")
#: Rank a format implies for this operator; ND takes its meaning from the rank.
FORMAT_RANK: dict[str, int | None] = {"NCDHW": 5, "ND": None, "NCHW": 5, "NDHWC": 5}
# -- products --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProductRules(BaseRules):
    """What one product does with this operator (docs/contract-3d.md §3). `dtypes`: the
    dtypes valid by both readings (what suites draw); `accumulate`: the windowed kernel's
    accumulation format (A2/A3: FP32; training and inference run only the global path)."""

    #: the implementation's dtype list for a 1x1x1 gradOutput, and for any other size
    impl_global: tuple[str, ...]
    impl_windowed: tuple[str, ...]
    #: a non-1x1x1 output is rejected (161002): Atlas training
    global_only: bool = False
    #: the non-1x1x1 path has no kernel binary (checks pass, then the launch fails)
    no_windowed_kernel: bool = False

    def impl_dtypes(self, global_output: bool) -> tuple[str, ...]:
        """The implementation's list for a call (chosen by gradOutput's (Do, Ho, Wo))."""
        return self.impl_global if global_output else self.impl_windowed


PRODUCTS: dict[str, ProductRules] = {
    p.id: p
    for p in (
        ProductRules("atlas-training", ("float16", "float32"), "float32",
                     _TRAIN_INFER, _TRAIN_INFER, global_only=True),
        ProductRules("atlas-inference", ("float16", "float32"), "float32",
                     _TRAIN_INFER, _TRAIN_INFER, no_windowed_kernel=True),
        ProductRules("atlas-a2", ("bfloat16", "float16", "float32"), "float32",
                     _A2_A3_GLOBAL, _A2_A3),
        ProductRules("atlas-a3", ("bfloat16", "float16", "float32"), "float32",
                     _A2_A3_GLOBAL, _A2_A3),
    )
}

#: Compute dtypes some product accepts by both readings.
COMPUTE_DTYPES: tuple[str, ...] = ("float16", "float32", "bfloat16")


def product(name: str) -> ProductRules:
    """The ProductRules called `name` (SuiteError listing the valid ones otherwise)."""
    try:
        return PRODUCTS[name]
    except KeyError:
        raise SuiteError(f"unknown product {name!r}; valid: {', '.join(PRODUCTS)}") from None


def is_global(grad_shape: tuple[int, ...]) -> bool:
    """gradOutput's (Do, Ho, Wo) is 1x1x1: the global path of every product."""
    return len(grad_shape) >= SPATIAL_RANK and tuple(grad_shape[-SPATIAL_RANK:]) == (1, 1, 1)


def supported_formats_for_rank(rank: int) -> tuple[str, ...]:
    """Documented formats a tensor of this rank may carry."""
    return tuple(f for f in FORMATS if FORMAT_RANK[f] in (None, rank))


# -- the two readings ----------------------------------------------------------------------

#: Which kind of check a rule is (what generic code branches on).
RULE_CHECKS: dict[str, Check] = {
    "0-valid": Check.VALID,
    "1-nullptr": Check.NULL,
    "2-rank": Check.SHAPE,
    "2-empty": Check.SHAPE,
    "2-out-shape": Check.SHAPE,
    "2-leading-dims": Check.SHAPE,
    "3-dtype": Check.DTYPE,
    "3-product-dtype": Check.PRODUCT_DTYPE,
    "4-format": Check.FORMAT,
    "5-global-only": Check.PRODUCT,
    "unspecified": Check.UNSPECIFIED,
}


@dataclass(frozen=True)
class Reading:
    """One reading's answer: a status (None: silent or unknown), the rule and why."""

    status: int | None
    rule: str
    reason: str


def _no(rule: str, reason: str) -> Reading:
    return Reading(PARAM_INVALID, rule, reason)


_VALID = Reading(SUCCESS, "0-valid", "valid call")


def _shape_checks(grad: TensorDesc, self_: TensorDesc, out: TensorDesc) -> Reading | None:
    """Rule 2 in the implementation's order (CheckInputOutDims)."""
    rank = len(self_.shape)
    if rank not in VALID_RANKS:
        return _no("2-rank", f"self rank {rank} is not 4 or 5")
    if len(grad.shape) != rank:
        return _no("2-rank", f"gradOutput rank {len(grad.shape)} != self rank {rank}")
    if len(out.shape) != rank:
        return _no("2-rank", f"out rank {len(out.shape)} != self rank {rank}")
    for i, (s, o) in enumerate(zip(self_.shape, out.shape, strict=True)):
        if s < 0:  # the empty-dim check (<= 0) of the code and of the page
            return _no("2-empty", f"self dim {i} is {s} (negative): a dim <= 0 is invalid")
        if s <= 0:
            return _no("2-empty", f"self dim {i} is {s}: empty tensors are invalid")
        if o != s:
            return _no("2-out-shape", f"out shape {tuple(out.shape)} != self shape "
                                      f"{tuple(self_.shape)}")
    lead = rank - SPATIAL_RANK
    if tuple(grad.shape[:lead]) != tuple(self_.shape[:lead]):
        return _no("2-leading-dims", f"gradOutput leading dims {tuple(grad.shape[:lead])} "
                                     f"!= self {tuple(self_.shape[:lead])}")
    if any(d < 0 for d in grad.shape[lead:]):
        return _no("2-empty", f"gradOutput output size {tuple(grad.shape[lead:])} has a "
                              "negative dim: a dim <= 0 is invalid")
    if any(d <= 0 for d in grad.shape[lead:]):
        return _no("2-empty", f"gradOutput output size {tuple(grad.shape[lead:])} has a "
                              "zero dim: empty tensors are invalid")
    return None


def implementation(product_id: str, grad: TensorDesc, self_: TensorDesc,
                   out: TensorDesc) -> Reading:
    """What the vendor's first phase returns, check by check in its order."""
    shape = _shape_checks(grad, self_, out)
    if shape is not None:
        return shape
    prod = product(product_id)
    glob = is_global(grad.shape)
    listed = prod.impl_dtypes(glob)
    for name, t in (("gradOutput", grad), ("self", self_)):
        if t.dtype not in listed:
            size = "a 1x1x1" if glob else "this"
            return _no("3-product-dtype", f"{name} dtype {t.dtype} not supported on "
                                          f"{product_id} for {size} output size")
    if grad.dtype != self_.dtype:
        return _no("3-dtype", f"gradOutput dtype {grad.dtype} != self dtype {self_.dtype}")
    if out.dtype != self_.dtype:
        return _no("3-dtype", f"out dtype {out.dtype} != self dtype {self_.dtype}")
    if grad.format != self_.format:
        return _no("4-format", f"gradOutput format {grad.format} != self format "
                               f"{self_.format}")
    if out.format != self_.format:
        return _no("4-format", f"out format {out.format} != self format {self_.format}")
    if grad.format in PRIVATE_FORMATS:
        return _no("4-format", f"gradOutput has private format {grad.format}")
    if not glob and prod.global_only:
        return _no("5-global-only", f"{product_id} accepts only a 1x1x1 output, got "
                                    f"{tuple(grad.shape[-SPATIAL_RANK:])}")
    if not glob and prod.no_windowed_kernel:
        return Reading(None, "unspecified", f"{product_id} has no kernel for a non-1x1x1 "
                                            "output (the checks pass, the launch cannot)")
    return _VALID


def documentation(product_id: str, grad: TensorDesc, self_: TensorDesc,
                  out: TensorDesc) -> Reading:
    """What the API page promises for the call (None where it says nothing)."""
    shape = _shape_checks(grad, self_, out)
    if shape is not None:
        return shape
    for name, t in (("gradOutput", grad), ("self", self_), ("out", out)):
        if t.dtype not in DOC_DTYPES:
            return _no("3-product-dtype", f"{name} dtype {t.dtype} is not documented")
    if len({grad.dtype, self_.dtype, out.dtype}) > 1:
        return _no("3-dtype", "gradOutput, self and out dtypes differ")
    for name, t in (("gradOutput", grad), ("self", self_), ("out", out)):
        if t.format not in FORMATS:
            return _no("4-format", f"{name} format {t.format} is not documented")
    if len({grad.format, self_.format, out.format}) > 1:
        return _no("4-format", "gradOutput, self and out formats differ")
    for name, t in (("gradOutput", grad), ("self", self_)):
        implied = FORMAT_RANK.get(t.format)
        if implied is not None and implied != len(t.shape):
            return Reading(None, "unspecified", f"{name} format {t.format} on a rank-"
                                                f"{len(t.shape)} tensor")
    if not is_global(grad.shape) and product(product_id).global_only:
        return _no("5-global-only", f"{product_id} accepts only a 1x1x1 output")
    return _VALID


def _said(reading: Reading, who: str) -> str:
    if reading.status is None:
        return f"the {who} is silent ({reading.reason})"
    if reading.status == SUCCESS:
        return f"the {who} accepts it"
    return f"the {who} rejects it with {reading.status} ({reading.reason})"


def expect(product_id: str, tensors: Mapping[str, TensorDesc | None],
           contract: str = "doc") -> Expectation:
    """The status the first phase must return for a call (tensors by role; None: a null
    pointer), with the rule that decides it. `contract` "doc": where the two readings
    part, unspecified; "code": the implementation's reading wherever it gives a status
    (unspecified only where it gives none: a windowed call on Atlas inference)."""
    missing = [r.api for r in ROLES if tensors.get(r.name) is None]
    if missing:
        return Expectation(PARAM_NULLPTR, "1-nullptr", f"null pointer: {', '.join(missing)}",
                           check=Check.NULL)
    grad, self_, out = (tensors[r.name] for r in ROLES)
    assert grad is not None and self_ is not None and out is not None
    impl = implementation(product_id, grad, self_, out)
    doc = documentation(product_id, grad, self_, out)
    if impl.status is not None and impl.status == doc.status:
        return Expectation(impl.status, impl.rule, impl.reason, check=RULE_CHECKS[impl.rule])
    kinds = (f"documentation {doc.rule}, implementation {impl.rule}",)
    if contract == "code":
        if impl.status is not None:
            note = (f"contract code: decided as the implementation "
                    f"({_said(doc, 'documentation')})")
            return Expectation(impl.status, impl.rule, impl.reason, (note,),
                               check=RULE_CHECKS[impl.rule])
        return Expectation(UNSPECIFIED, "unspecified",
                           f"contract code: {_said(impl, 'implementation')}: its first "
                           "phase's status is not decided by its checks",
                           check=Check.UNSPECIFIED, kinds=kinds)
    return Expectation(UNSPECIFIED, "unspecified",
                       f"{_said(doc, 'documentation')}; {_said(impl, 'implementation')}",
                       check=Check.UNSPECIFIED, kinds=kinds)


def expected_status(call: Call) -> Expectation:
    """expect() for a Call (the product, the tensors by role, the contract it follows)."""
    return expect(call.product, {r.name: call[r.name] for r in ROLES}, call.contract)
