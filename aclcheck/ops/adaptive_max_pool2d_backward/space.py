"""The call space of aclnnAdaptiveMaxPool2dBackward (shrink and hunt): the adaptive-pooling
space over H and W, with this operator's products, formats and distributions (a call's
indices follow its shapes: first-max of self's windows unless the case says otherwise)."""

from __future__ import annotations

from aclcheck.ops.adaptive.ids import make_id
from aclcheck.ops.adaptive.space import AdaptiveSpace
from aclcheck.ops.adaptive_max_pool2d_backward import contract
from aclcheck.ops.adaptive_max_pool2d_backward.record import Case
from aclcheck.ops.adaptive_max_pool2d_backward.values import DISTRIBUTIONS

SPACE = AdaptiveSpace(Case, ("H", "W"), contract.PRODUCTS,
                      contract.supported_formats_for_rank, DISTRIBUTIONS, make_id)
