"""aclnnAdaptiveMaxPool2dBackward: the gradient of adaptive max pooling 2D
(docs/contract-maxpool.md): gradients scattered to the positions an integer `indices`
tensor names, added where overlapping windows share a position.

    contract    what it accepts and the status of every call (checks in the
                implementation's order; A2/A3 only)
    record      its case record (indices role, index choice) and case ids
    values      gradOutput's distributions, self, and the indices (valid by construction)
    families    the seeded case families and the invalid-call rules
    space       its call space for shrink and hunt (the adaptive-pooling space)
    reference   the float64 scatter-add (and an independent loop for tests)
    numerics    the copy and FP32-add paths, the per-case model judging reads
    glue        the PyTorch, MindSpore, Paddle and aclnn calls
    diagnose    a failing case's evidence and signature facts (no probe: see there)
    coverage    which edges a file's cases reach (`aclcheck inspect --coverage`)
"""

from __future__ import annotations

from aclcheck.ops.adaptive_max_pool2d_backward import contract, families, reference
from aclcheck.ops.adaptive_max_pool2d_backward.glue import GLUE
from aclcheck.ops.adaptive_max_pool2d_backward.record import Case
from aclcheck.ops.adaptive_max_pool2d_backward.space import SPACE
from aclcheck.ops.adaptive_max_pool2d_backward.values import tensor_values
from aclcheck.ops.operator import Diagnosis, Display, Hook, Operator


def late(module: str, name: str) -> Hook:
    """`name` of this folder's `module`, imported on first call (numerics imports
    judging: generate never calls it)."""
    return Hook(f"{__name__}.{module}", name)


def shapes_text(case: Case) -> str:
    return f"{list(case.self_shape)} <- {list(case.grad_shape)}"


OPERATOR = Operator(
    name=contract.OPERATOR,
    aliases=("ampool2d-bwd",),
    api=contract.API,
    roles=contract.ROLES,
    spatial_rank=contract.SPATIAL_RANK,
    case_type=Case,
    products=contract.PRODUCTS,
    dtypes=contract.COMPUTE_DTYPES,
    formats=contract.FORMATS,
    format_rank=contract.FORMAT_RANK,
    ranks=contract.VALID_RANKS,
    expected_status=contract.expected_status,
    families=families.ALL_FAMILIES,
    default_families=families.DEFAULT_FAMILIES,
    shape_case=families.shape_case,
    invalid_cases=families.invalid_cases,
    values=tensor_values,
    space=SPACE,
    golden=reference.golden,
    model=late("numerics", "model"),
    paths=late("numerics", "paths"),
    case_bytes=reference.case_bytes,
    glue=GLUE,
    family_notes=families.NOTES,
    coverage=late("coverage", "case_coverage"),
    display=Display(
        axis_names=late("numerics", "axis_names"), map_axes=("H", "W"), shapes_text=shapes_text,
        magnitude_source="|gradOutput|", contract_doc="docs/contract-maxpool.md",
        products_note="gradOutput, self and gradInput share a float dtype; indices INT32 or "
                      "INT64 of gradOutput's shape; all four one format. Null pointer: "
                      "161001; other invalid calls: 161002. Atlas training and inference "
                      "have no such operator (every non-null call 161002). An empty tensor "
                      "succeeds, gradInput not written. Index values are not checked "
                      "(invalid ones: unspecified, isolated only)."),
    diagnosis=Diagnosis(facts=late("diagnose", "facts"), evidence=late("diagnose", "evidence"),
                        windows=late("diagnose", "windows"), family=late("diagnose", "family")),
)
