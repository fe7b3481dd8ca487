"""aclnnAdaptiveAvgPool3dBackward: the gradient of adaptive average pooling 3D
(docs/contract.md, "The 3D operator").

    contract    what it accepts and the status of every call (both readings: the
                implementation's checks in order, the documentation)
    record      its case record (the on-disk schema) and case ids
    families    the seeded case families and the invalid-call rules
    values      the values of its inputs
    space       its call space for shrink and hunt (the adaptive-pooling space over D, H, W)
    reference   the float64 backward, separable over D, H, W
    numerics    each product's numeric path, the per-case model judging reads
    glue        the PyTorch, MindSpore, Paddle and aclnn calls
"""

from __future__ import annotations

from aclcheck.ops.adaptive.assembly import pooling_operator
from aclcheck.ops.adaptive_avg_pool3d_backward import contract, families, reference
from aclcheck.ops.adaptive_avg_pool3d_backward.glue import GLUE
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool3d_backward.space import SPACE
from aclcheck.ops.adaptive_avg_pool3d_backward.values import tensor_values

OPERATOR = pooling_operator(
    __name__, aliases=("aapool3d-bwd",), contract=contract, families=families,
    reference=reference, case_type=Case, values=tensor_values, space=SPACE, glue=GLUE,
    products_note="All three tensors share dtype, format and (out, self) shape. Null "
                  "pointer: 161001; other invalid calls, an empty tensor included: "
                  "161002. Atlas training: only a 1x1x1 output; Atlas inference: no "
                  "kernel for other sizes (unspecified). DOUBLE, NCHW/NDHWC: "
                  "undocumented (reported, not judged).")
