"""The call space of aclnnAdaptiveAvgPool3dBackward (shrink and hunt): the adaptive-
pooling space over D, H and W, with this operator's products, formats and distributions."""

from __future__ import annotations

from aclcheck.ops.adaptive.space import AdaptiveSpace
from aclcheck.ops.adaptive_avg_pool3d_backward import contract
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case, make_id
from aclcheck.ops.adaptive_avg_pool3d_backward.values import DISTRIBUTIONS

SPACE = AdaptiveSpace(Case, ("D", "H", "W"), contract.PRODUCTS,
                      contract.supported_formats_for_rank, DISTRIBUTIONS, make_id)
