"""The aclnn ABI every operator shares (docs/contract.md §2, §5): status codes, the
aclFormat names and enum, the largest rank, and the hardware products. Which of these an
operator accepts is its own contract (aclcheck.ops)."""

from __future__ import annotations

from dataclasses import dataclass

from aclcheck.errors import SuiteError

# -- status codes (docs/contract.md §5) -------------------------------------------------------

SUCCESS = 0
PARAM_NULLPTR = 161001
PARAM_INVALID = 161002
RUNTIME_ERROR = 361001
INNER_NULLPTR = 561103
#: Stored in place of a status where the documentation is silent or contradicts the
#: implementation: any answer is acceptable and is reported as a divergence note.
UNSPECIFIED = -1

STATUS_NAMES: dict[int, str] = {
    SUCCESS: "ACLNN_SUCCESS",
    PARAM_NULLPTR: "ACLNN_ERR_PARAM_NULLPTR",
    PARAM_INVALID: "ACLNN_ERR_PARAM_INVALID",
    RUNTIME_ERROR: "ACLNN_ERR_RUNTIME_ERROR",
    INNER_NULLPTR: "ACLNN_ERR_INNER_NULLPTR",
    UNSPECIFIED: "unspecified",
}


def status_name(status: int) -> str:
    """Human name of a status code ("561103" style for unknown codes)."""
    return STATUS_NAMES.get(status, str(status))


# -- formats ----------------------------------------------------------------------------------

#: aclFormat enum values.
ACL_FORMAT_ENUM: dict[str, int] = {
    "NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "NDHWC": 27,
    "FRACTAL_NZ": 29, "NCDHW": 30, "NDC1HWC0": 32, "FRACTAL_Z_3D": 33, "NCL": 47,
}
#: Private formats: always rejected.
PRIVATE_FORMATS: tuple[str, ...] = ("NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ", "NDC1HWC0",
                                    "FRACTAL_Z_3D")
#: Every format name aclcheck knows (new names go at the end; an operator whose case
#: draws rotate on format order keeps its own frozen order).
ALL_FORMATS: tuple[str, ...] = ("ND", "NCHW", "NCL", "NHWC", "NC1HWC0", "FRACTAL_Z",
                                "FRACTAL_NZ", "NCDHW", "NDHWC", "NDC1HWC0", "FRACTAL_Z_3D")

#: Largest rank of an aclTensor.
MAX_RANK = 8


def normalize_format(name: str) -> str:
    """Canonical format name (case-insensitive)."""
    key = str(name).strip().upper()
    if key not in ALL_FORMATS:
        raise SuiteError(f"unknown format {name!r}; valid: {', '.join(ALL_FORMATS)}")
    return key


# -- hardware products (docs/contract.md §3) ------------------------------------------------


@dataclass(frozen=True)
class Product:
    """One product family of the documentation (what each accepts: the operator's)."""

    id: str
    tag: str  # short tag used in case ids
    doc_name: str
    #: the overflow modes its devices offer, the default first (docs/contract.md §10)
    overflow_modes: tuple[str, ...] = ("inf-nan", "saturation")


PRODUCTS: dict[str, Product] = {
    p.id: p
    for p in (
        Product("atlas-training", "train", "Atlas training series products",
                ("saturation",)),
        Product("atlas-inference", "infer", "Atlas inference series products",
                ("saturation",)),
        Product("atlas-a2", "a2", "Atlas A2 training products / Atlas A2 inference products"),
        Product("atlas-a3", "a3",
                "Atlas A3 training series products / Atlas A3 inference series products"),
    )
}
