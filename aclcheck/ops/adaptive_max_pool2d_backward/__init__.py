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

from aclcheck.ops.adaptive.assembly import pooling_operator
from aclcheck.ops.adaptive_max_pool2d_backward import contract, families, reference
from aclcheck.ops.adaptive_max_pool2d_backward.glue import GLUE
from aclcheck.ops.adaptive_max_pool2d_backward.record import Case
from aclcheck.ops.adaptive_max_pool2d_backward.space import SPACE
from aclcheck.ops.adaptive_max_pool2d_backward.values import tensor_values

OPERATOR = pooling_operator(
    __name__, aliases=("ampool2d-bwd",), contract=contract, families=families,
    reference=reference, case_type=Case, values=tensor_values, space=SPACE, glue=GLUE,
    contract_doc="docs/contract-maxpool.md", probe=False, vendor_cases=False,
    products_note="gradOutput, self and gradInput share a float dtype; indices INT32 or "
                  "INT64 of gradOutput's shape; all four one format. Null pointer: "
                  "161001; other invalid calls: 161002. Atlas training and inference "
                  "have no such operator (every non-null call 161002). An empty tensor "
                  "succeeds, gradInput not written. Index values are not checked "
                  "(invalid ones: unspecified, isolated only).")
