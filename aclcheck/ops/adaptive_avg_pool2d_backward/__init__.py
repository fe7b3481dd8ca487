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

from aclcheck.ops.adaptive.assembly import pooling_operator
from aclcheck.ops.adaptive_avg_pool2d_backward import contract, families, reference
from aclcheck.ops.adaptive_avg_pool2d_backward.glue import GLUE
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool2d_backward.space import SPACE
from aclcheck.ops.adaptive_avg_pool2d_backward.values import tensor_values

OPERATOR = pooling_operator(
    __name__, aliases=("aapool2d-bwd",), contract=contract, families=families,
    reference=reference, case_type=Case, values=tensor_values, space=SPACE, glue=GLUE,
    products_note="All three tensors share dtype and format. Null pointer: 161001; other "
                  "invalid calls: 161002 (order: null, rank, N/C, dtype, format). NHWC, "
                  "another out dtype or out H/W: undocumented (reported, not judged).")
