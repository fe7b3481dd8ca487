"""Where a hardware-edge case goes: a `Slot` (product, dtype, the rank its format implies,
the variant index) and what the adaptive-pooling families read of it: the element size,
the vector-core counts of the product's tiled kernel, and stable ordinals of the product
and the dtype that recipes rotate their edges on. A recipe depends only on its slot, so a
case keeps its id and seed in any selection.
"""

from __future__ import annotations

from dataclasses import dataclass

from aclcheck.dtypes import float_format
from aclcheck.ops.adaptive.tiling import VECTOR_CORES

#: Atlas A2/A3 run the tiled vector kernel (docs/contract.md section 9.1); each product
#: ships chips of 40 and 48 vector cores: the first count is the one its index-0 slot
#: draws, `--count 2` draws the other.
PRODUCT_CORES: dict[str, tuple[int, ...]] = {
    "atlas-a2": VECTOR_CORES,
    "atlas-a3": tuple(reversed(VECTOR_CORES)),
}
#: Stable ordinals of the products and dtypes (recipes rotate their edges on them).
PRODUCT_ORDER = {"atlas-training": 0, "atlas-inference": 1, "atlas-a2": 2, "atlas-a3": 3}
DTYPE_ORDER = {"float32": 0, "float16": 1, "bfloat16": 2}


@dataclass(frozen=True)
class Slot:
    """Where a case goes: product, dtype, the rank its format implies (None: any rank
    the operator takes) and the variant index (`--count N` reaches 0 .. N-1)."""

    product: str
    dtype: str
    rank: int | None
    index: int

    @property
    def itemsize(self) -> int:
        return int(float_format(self.dtype).np_dtype.itemsize)

    @property
    def cores(self) -> tuple[int, ...]:
        """Vector-core counts of the product's tiled kernel; () where it has none."""
        return PRODUCT_CORES.get(self.product, ())

    @property
    def order(self) -> int:
        """A stable ordinal of (product, dtype): recipes rotate their edges on it."""
        return PRODUCT_ORDER.get(self.product, 0) + DTYPE_ORDER.get(self.dtype, 0)
