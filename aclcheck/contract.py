"""The documented contract of aclnnAdaptiveAvgPool2dBackward, as code.

The single place that knows products, dtypes, formats, ranks, the integer window
bounds, and which status the first phase must return for a call (docs/contract.md §1-§5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

# the aclDataType names of docs/contract.md §2, read here as in the document (their home is
# aclcheck.dtypes)
from aclcheck.dtypes import (  # noqa: F401
    ACL_DTYPE_ENUM,
    ALL_DTYPES,
    COMPUTE_DTYPES,
    normalize_dtype,
)
from aclcheck.errors import AclcheckError, SuiteError

# -- status codes (docs/contract.md §5) -------------------------------------------------------

SUCCESS = 0
PARAM_NULLPTR = 161001
PARAM_INVALID = 161002
RUNTIME_ERROR = 361001
INNER_TILING_ERROR = 561103
#: Stored in place of a status where the documentation is silent or contradicts the
#: implementation: any answer is acceptable and is reported as a divergence note.
UNSPECIFIED = -1

STATUS_NAMES: dict[int, str] = {
    SUCCESS: "ACLNN_SUCCESS",
    PARAM_NULLPTR: "ACLNN_ERR_PARAM_NULLPTR",
    PARAM_INVALID: "ACLNN_ERR_PARAM_INVALID",
    RUNTIME_ERROR: "ACLNN_ERR_RUNTIME_ERROR",
    INNER_TILING_ERROR: "ACLNN_ERR_INNER_TILING_ERROR",
    UNSPECIFIED: "unspecified",
}

# -- products (docs/contract.md §3, §6) -------------------------------------------------------


@dataclass(frozen=True)
class Product:
    """One product family of the documentation."""

    id: str
    tag: str  # short tag used in case ids
    doc_name: str
    dtypes: tuple[str, ...]
    #: dtype the product accumulates in: "float32", or "input" (the input dtype)
    accumulate: str


PRODUCTS: dict[str, Product] = {
    p.id: p
    for p in (
        Product(
            "atlas-training",
            "train",
            "Atlas training series products",
            ("float16", "float32"),
            "input",
        ),
        Product(
            "atlas-inference",
            "infer",
            "Atlas inference series products",
            ("float16", "float32"),
            "input",
        ),
        Product(
            "atlas-a2",
            "a2",
            "Atlas A2 training products / Atlas A2 inference products",
            ("bfloat16", "float16", "float32"),
            "float32",
        ),
        Product(
            "atlas-a3",
            "a3",
            "Atlas A3 training series products / Atlas A3 inference series products",
            ("bfloat16", "float16", "float32"),
            "float32",
        ),
    )
}

# -- dtypes and formats ------------------------------------------------------------------

#: Documented formats.
FORMATS: tuple[str, ...] = ("ND", "NCHW", "NCL")
#: Public but undocumented for this operator (accepted by the implementation).
UNDOCUMENTED_FORMATS: tuple[str, ...] = ("NHWC",)
#: Private formats: always rejected.
PRIVATE_FORMATS: tuple[str, ...] = ("NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ")
ALL_FORMATS: tuple[str, ...] = FORMATS + UNDOCUMENTED_FORMATS + PRIVATE_FORMATS

#: aclFormat enum values.
ACL_FORMAT_ENUM: dict[str, int] = {
    "NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "FRACTAL_NZ": 29, "NCL": 47,
}

#: Rank a format implies; ND takes its meaning from the rank.
FORMAT_RANK: dict[str, int | None] = {"ND": None, "NCHW": 4, "NCL": 3, "NHWC": 4}

VALID_RANKS: tuple[int, ...] = (3, 4)
MAX_RANK = 8
#: Ho*H, W*Wo or Ho*Wo above this overflow the training/inference assist matrices.
ASSIST_LIMIT = 2**29 - 1

TENSOR_NAMES: tuple[str, ...] = ("grad_output", "self", "out")




def normalize_format(name: str) -> str:
    """Canonical format name (case-insensitive)."""
    key = str(name).strip().upper()
    if key not in ALL_FORMATS:
        raise SuiteError(f"unknown format {name!r}; valid: {', '.join(ALL_FORMATS)}")
    return key


def product(name: str, error: type[AclcheckError] = SuiteError) -> Product:
    """The Product called `name` (else `error`, a ValueError by default, listing the
    valid ones)."""
    try:
        return PRODUCTS[name]
    except KeyError:
        raise error(f"unknown product {name!r}; valid: {', '.join(PRODUCTS)}") from None


# -- window bounds (docs/contract.md §1), integers only ---------------------------------------


def window_start(i: int, out_size: int, in_size: int) -> int:
    """floor(i * in / out), exact for any Python int sizes."""
    return (i // out_size) * in_size + ((i % out_size) * in_size) // out_size


def window_end(i: int, out_size: int, in_size: int) -> int:
    """ceil((i + 1) * in / out), exact for any Python int sizes."""
    return 1 + ((i + 1) * in_size - 1) // out_size


def window_bounds(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of every window, as int64 arrays of length out_size.

    Exact while in_size * out_size < 2**63 (any tensor that fits in memory); larger sizes
    fall back to Python integers.
    """
    i = np.arange(out_size, dtype=np.int64)
    if out_size == 0:
        return i, i.copy()
    if in_size * out_size < 2**62:
        start = (i // out_size) * in_size + ((i % out_size) * in_size) // out_size
        end = 1 + ((i + 1) * in_size - 1) // out_size
        return start, end
    start = np.array([window_start(int(k), out_size, in_size) for k in i], dtype=np.int64)
    end = np.array([window_end(int(k), out_size, in_size) for k in i], dtype=np.int64)
    return start, end


# -- expected status (docs/contract.md §5) ----------------------------------------------------


@dataclass(frozen=True)
class TensorDesc:
    """What the first phase sees of one tensor: shape, dtype, format."""

    shape: tuple[int, ...]
    dtype: str
    format: str


@dataclass(frozen=True)
class Call:
    """A call of the first phase: three tensors (None = null pointer) on a product."""

    product: str
    grad_output: TensorDesc | None
    self: TensorDesc | None
    out: TensorDesc | None


@dataclass(frozen=True)
class Expectation:
    """The documented answer to a call: a status, the rule that decides it, and why.

    `status == UNSPECIFIED` means the documentation does not decide (or contradicts the
    implementation): any answer is acceptable and is reported, not judged.
    """

    status: int
    rule: str
    reason: str
    notes: tuple[str, ...] = field(default=())

    @property
    def unspecified(self) -> bool:
        return self.status == UNSPECIFIED

    @property
    def success(self) -> bool:
        return self.status == SUCCESS


def _invalid(rule: str, reason: str) -> Expectation:
    return Expectation(PARAM_INVALID, rule, reason)


def expected_status(call: Call) -> Expectation:
    """The status the first phase must return, following the documented check order."""
    tensors = {"grad_output": call.grad_output, "self": call.self, "out": call.out}
    missing = [name for name, t in tensors.items() if t is None]
    if missing:
        return Expectation(PARAM_NULLPTR, "1-nullptr", f"null pointer: {', '.join(missing)}")
    grad, self_, out = call.grad_output, call.self, call.out
    assert grad is not None and self_ is not None and out is not None

    # Rule 2: ranks of gradOutput and self.
    if len(grad.shape) != len(self_.shape):
        return _invalid(
            "2-rank", f"gradOutput rank {len(grad.shape)} != self rank {len(self_.shape)}"
        )
    # Rule 3: out rank, leading dims.
    rank = len(self_.shape)
    if len(out.shape) not in VALID_RANKS:
        return _invalid("3-rank", f"out rank {len(out.shape)} is not 3 or 4")
    if len(out.shape) != rank:
        return _invalid("3-rank", f"out rank {len(out.shape)} != self rank {rank}")
    lead = rank - 2
    if tuple(grad.shape[:lead]) != tuple(self_.shape[:lead]):
        return _invalid(
            "3-leading-dims",
            f"gradOutput leading dims {grad.shape[:lead]} != self {self_.shape[:lead]}",
        )
    if tuple(out.shape[:lead]) != tuple(self_.shape[:lead]):
        return _invalid(
            "3-leading-dims", f"out leading dims {out.shape[:lead]} != self {self_.shape[:lead]}"
        )
    # Rule 4: dtypes.
    supported = product(call.product).dtypes
    for name, t in (("self", self_), ("gradOutput", grad)):
        if t.dtype not in supported:
            return _invalid(
                "4-dtype", f"{name} dtype {t.dtype} not supported on {call.product}"
            )
    if grad.dtype != self_.dtype:
        return _invalid("4-dtype", f"gradOutput dtype {grad.dtype} != self dtype {self_.dtype}")
    # Rule 5: formats.
    for name, t in (("gradOutput", grad), ("self", self_), ("out", out)):
        if t.format in PRIVATE_FORMATS:
            return _invalid("5-format", f"{name} has private format {t.format}")
    if grad.format != self_.format:
        return _invalid(
            "5-format", f"gradOutput format {grad.format} != self format {self_.format}"
        )

    # Accepted by the implementation. Where the documentation says otherwise, or is
    # silent, the answer is unspecified.
    divergences: list[str] = []
    if out.dtype != self_.dtype:
        divergences.append(
            f"out dtype {out.dtype} differs from self {self_.dtype} (documented as equal; "
            "the implementation does not check it)"
        )
    if tuple(out.shape) != tuple(self_.shape):
        divergences.append(
            f"out shape {tuple(out.shape)} differs from self {tuple(self_.shape)} in H/W "
            "(documented as equal; the implementation does not check it)"
        )
    if out.format != self_.format:
        divergences.append(
            f"out format {out.format} differs from self {self_.format} (documented as equal)"
        )
    for name, t in (("gradOutput", grad), ("self", self_), ("out", out)):
        if t.format in UNDOCUMENTED_FORMATS:
            divergences.append(f"{name} format {t.format} is undocumented for this operator")
            break
    for name, t in (("gradOutput", grad), ("self", self_)):
        implied = FORMAT_RANK.get(t.format)
        if implied is not None and implied != len(t.shape):
            divergences.append(
                f"{name} format {t.format} on a rank-{len(t.shape)} tensor (the format's "
                "meaning is not checked)"
            )
            break
    if divergences:
        return Expectation(UNSPECIFIED, "unspecified", "; ".join(divergences))

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
            )
    return Expectation(SUCCESS, "0-valid", "valid call", tuple(notes))


def status_name(status: int) -> str:
    """Human name of a status code ("561103" style for unknown codes)."""
    return STATUS_NAMES.get(status, str(status))


def supported_formats_for_rank(rank: int) -> Sequence[str]:
    """Documented formats a tensor of this rank may carry."""
    return tuple(f for f in FORMATS if FORMAT_RANK[f] in (None, rank))
