"""aclnnAdaptiveAvgPool3dBackward: the gradient of adaptive average pooling 3D
(docs/contract.md, "The 3D operator").

    contract    what it accepts and the status of every call (both readings: the
                implementation's checks in order, the documentation)
    record      its case record (the on-disk schema)
    families    the seeded case families and the invalid-call rules
    values      its case ids and the values of its inputs
    space       its call space for shrink and hunt (the adaptive-pooling space over D, H, W)
    reference   the float64 backward, separable over D, H, W
    numerics    each product's numeric path, the per-case model judging reads
    glue        the PyTorch, MindSpore, Paddle and aclnn calls
"""

from __future__ import annotations

from aclcheck.cases import Case as CaseBase
from aclcheck.ops.adaptive_avg_pool3d_backward import contract, families, reference
from aclcheck.ops.adaptive_avg_pool3d_backward.glue import GLUE
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool3d_backward.space import SPACE
from aclcheck.ops.adaptive_avg_pool3d_backward.values import tensor_values
from aclcheck.ops.operator import Diagnosis, Display, Hook, Operator, Probe


def late(module: str, name: str) -> Hook:
    """`name` of this folder's `module`, imported on first call (numerics imports
    judging: generate never calls it)."""
    return Hook(f"{__name__}.{module}", name)


def shapes_text(case: CaseBase) -> str:
    return (f"{list(case.tensor_desc('self').shape)} <- "
            f"{list(case.tensor_desc('grad_output').shape)}")


OPERATOR = Operator(
    name=contract.OPERATOR,
    aliases=("aapool3d-bwd",),
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
        magnitude_source="|gradOutput|",
        products_note="All three tensors share dtype, format and (out, self) shape. Null "
                      "pointer: 161001; other invalid calls, an empty tensor included: "
                      "161002. Atlas training: only a 1x1x1 output; Atlas inference: no "
                      "kernel for other sizes (unspecified). DOUBLE, NCHW/NDHWC: "
                      "undocumented (reported, not judged)."),
    diagnosis=Diagnosis(facts=late("diagnose", "facts"), evidence=late("diagnose", "evidence"),
                        windows=late("diagnose", "windows"), family=late("diagnose", "family")),
    vendor_cases=late("vendor", "read_vendor"),
    probe=Probe(linear_role="grad_output", geometry=late("glue", "probe_geometry")),
)
