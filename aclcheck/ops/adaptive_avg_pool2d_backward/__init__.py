"""aclnnAdaptiveAvgPool2dBackward: the gradient of adaptive average pooling 2D.

    contract    what it accepts and the status of every call (docs/contract.md)
    record      its case record (the on-disk schema) and case ids
    families    the seeded case families and the invalid-call rules
    values      the values of its inputs (ties: aclcheck.ops.adaptive.ties)
    space       its call space for shrink and hunt (the adaptive-pooling space)
    reference   the float64 backward (numpy, and the compiled _spread.c)
    glue        the PyTorch, MindSpore, Paddle and aclnn calls
    bugs        what-if models: alternative computations a broken kernel may do
    diagnose    a failing case's evidence (models re-judged) and signature facts
    hardware    the families at the hardware's edges (tiling model: ops/adaptive/tiling)
    coverage    which edges a file's cases reach (`aclcheck inspect --coverage`)
"""

from __future__ import annotations

from aclcheck.ops.adaptive_avg_pool2d_backward import contract, families, reference
from aclcheck.ops.adaptive_avg_pool2d_backward.glue import GLUE
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool2d_backward.space import SPACE
from aclcheck.ops.adaptive_avg_pool2d_backward.values import tensor_values
from aclcheck.ops.operator import Diagnosis, Display, Hook, Operator, Probe


def late(module: str, name: str) -> Hook:
    """`name` of this folder's `module`, imported on first call (numerics, diagnose and
    coverage import judging: generate never calls them)."""
    return Hook(f"{__name__}.{module}", name)


def shapes_text(case: Case) -> str:
    return f"{list(case.self_shape)} <- {list(case.grad_shape)}"


OPERATOR = Operator(
    name="adaptive_avg_pool2d_backward",
    aliases=("aapool2d-bwd",),
    api="aclnnAdaptiveAvgPool2dBackward",
    roles=contract.ROLES,
    spatial_rank=2,
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
    display=Display(
        axis_names=late("numerics", "axis_names"), map_axes=("H", "W"), shapes_text=shapes_text,
        magnitude_source="|gradOutput|",
        products_note="All three tensors share dtype and format. Null pointer: 161001; other "
                      "invalid calls: 161002 (order: null, rank, N/C, dtype, format). NHWC, "
                      "another out dtype or out H/W: undocumented (reported, not judged)."),
    family_notes=families.NOTES,
    coverage=late("coverage", "case_coverage"),
    diagnosis=Diagnosis(facts=late("diagnose", "facts"), evidence=late("diagnose", "evidence"),
                        windows=late("diagnose", "windows"), family=late("diagnose", "family")),
    vendor_cases=late("vendor", "read_vendor"),
    probe=Probe(linear_role="grad_output", geometry=late("glue", "probe_geometry")),
)
