"""Memory layouts of case tensors: a storage buffer plus shape, strides and offset.

A layout never changes a tensor's values, only where they live, so a layout case has the
same golden as its contiguous twin and any difference is the implementation's layout bug.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

#: contiguous: row-major; channels_last: C (the axis before the spatial ones) innermost
#: (NHWC / HWC in memory for 2-D pooling); strided: every other element of a padded
#: buffer, with a storage offset; transposed: the last two axes swapped in memory
#: (column-major planes).
LAYOUTS: tuple[str, ...] = ("contiguous", "channels_last", "strided", "transposed")
LAYOUT_TAGS: dict[str, str] = {
    "contiguous": "",
    "channels_last": "cl",
    "strided": "strided",
    "transposed": "hwT",
}
STRIDED_OFFSET = 3


@dataclass(frozen=True)
class StridedTensor:
    """A tensor as an aclTensor sees it: 1-D storage, view shape, element strides, offset."""

    storage: np.ndarray
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int

    @property
    def dtype(self) -> np.dtype:
        return self.storage.dtype

    def view(self) -> np.ndarray:
        """The logical tensor as a numpy view into the storage (no copy, read-only)."""
        if self.offset == 0 and self.storage.size == math.prod(self.shape) \
                and self.strides == contiguous_strides(self.shape):
            out = self.storage.reshape(self.shape)  # a view: the storage is 1-D, whole
            out.flags.writeable = False
            return out
        item = self.storage.dtype.itemsize
        base = self.storage[self.offset :] if self.storage.size else self.storage
        return np.lib.stride_tricks.as_strided(
            base, shape=self.shape, strides=tuple(s * item for s in self.strides), writeable=False
        )

    @property
    def contiguous(self) -> bool:
        return self.offset == 0 and self.strides == contiguous_strides(self.shape)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides."""
    return _contiguous_strides(tuple(shape))


@lru_cache(maxsize=4096)
def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


def contiguous_view(shape: tuple[int, ...]) -> tuple[tuple[int, ...], int, int]:
    """(strides, offset, storage elements) of a row-major tensor; no storage where a dim is
    negative (a call that must be refused: nothing is laid out)."""
    if any(d < 0 for d in shape):
        return contiguous_strides(tuple(max(d, 0) for d in shape)), 0, 0
    return contiguous_strides(shape), 0, math.prod(shape)


def layout_geometry(shape: tuple[int, ...], layout: str, spatial_rank: int = 2
                    ) -> tuple[tuple[int, ...], int, int]:
    """(element strides, storage offset, storage size) of `layout` for `shape`, whose
    last `spatial_rank` axes are spatial (the one before them is C). Cached: generate,
    the store and the judge ask it of the same shapes several times a case."""
    return _layout_geometry(tuple(shape), layout, spatial_rank)


@lru_cache(maxsize=4096)
def _layout_geometry(shape: tuple[int, ...], layout: str, spatial_rank: int
                     ) -> tuple[tuple[int, ...], int, int]:
    rank = len(shape)
    numel = math.prod(shape)
    if layout == "contiguous" or rank < 2:
        return contiguous_strides(shape), 0, numel
    if layout == "channels_last" and rank > spatial_rank:
        # Leading dims before C stay outer; C becomes innermost: (..., C, H, W) -> (..., H, W, C)
        c = max(shape[-spatial_rank - 1], 1)
        spatial = shape[-spatial_rank:]
        inner = (1, *(s * c for s in contiguous_strides(spatial)))
        plane = c * math.prod(max(d, 1) for d in spatial)
        outer = tuple(s * plane for s in contiguous_strides(shape[:-spatial_rank - 1]))
        return outer + inner, 0, numel
    if layout == "transposed":
        h, w = (max(d, 1) for d in shape[-2:])
        outer = tuple(s * h * w for s in contiguous_strides(shape[:-2]))
        return outer + (1, h), 0, numel
    if layout == "strided":
        strides = [0] * rank
        strides[-1] = 2
        span = 2 * shape[-1] + 1
        for d in range(rank - 2, -1, -1):
            strides[d] = span
            span = span * (shape[d] + 1)
        size = STRIDED_OFFSET + span if numel else 0
        return tuple(strides), STRIDED_OFFSET if numel else 0, size
    if layout == "channels_last":  # no C axis: nothing to permute
        return contiguous_strides(shape), 0, numel
    raise ValueError(f"unknown layout {layout!r}; valid: {', '.join(LAYOUTS)}")


def view_extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Storage elements a view reaches from its offset: 1 + the last element's offset (0
    for an empty view)."""
    if not shape or math.prod(shape) == 0:
        return 0 if shape else 1
    return 1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))


def stated_geometry(shape: tuple[int, ...], strides: tuple[int, ...] | None,
                    offset: int | None, storage: tuple[int, ...] | None
                    ) -> tuple[tuple[int, ...], int, int]:
    """The view a call states (vendor cases): its strides (row-major where not given),
    its offset (0) and its storage (the storage shape's elements, else just what the
    view reaches)."""
    strides = tuple(strides) if strides is not None else contiguous_strides(shape)
    offset = offset or 0
    size = math.prod(storage) if storage is not None \
        else offset + view_extent(shape, strides)
    return strides, offset, size


def geometry_problem(shape: tuple[int, ...], strides: tuple[int, ...] | None,
                     offset: int | None, storage: tuple[int, ...] | None) -> str | None:
    """Why a stated view cannot be laid out (strides of another rank, negative strides,
    offset or storage dims, a view past its storage), or None."""
    if strides is not None and len(strides) != len(shape):
        return f"strides {list(strides)} for a rank-{len(shape)} shape"
    if strides is not None and any(s < 0 for s in strides):
        return f"negative strides {list(strides)}"
    if (offset or 0) < 0:
        return f"negative offset {offset}"
    if storage is not None and any(d < 0 for d in storage):
        return f"negative storage dims {list(storage)}"
    if any(d < 0 for d in shape):
        return None  # nothing is laid out: an invalid call
    strides, offset, size = stated_geometry(shape, strides, offset, storage)
    need = offset + view_extent(shape, strides)
    if math.prod(shape) and need > size:
        return f"the view reaches storage element {need - 1}, the storage has {size}"
    return None


def gap_fill(dtype: np.dtype) -> object:
    """Value written into storage that no view element covers: NaN for floats, so a
    kernel that ignores strides reads poison instead of plausible numbers."""
    if np.issubdtype(dtype, np.integer):
        return np.iinfo(dtype).max
    if dtype == np.bool_:
        return True
    return np.nan


def place(values: np.ndarray, layout: str, spatial_rank: int = 2, *,
          owned: bool = False) -> StridedTensor:
    """Lay out logical `values` in a fresh storage buffer according to `layout`.

    owned: `values` is a fresh array nobody else holds (a case's values as they are
    drawn); a contiguous layout then takes its memory instead of a copy."""
    shape = tuple(values.shape)
    return place_at(values, layout_geometry(shape, layout, spatial_rank), owned=owned)


def place_at(values: np.ndarray, geometry: tuple[tuple[int, ...], int, int], *,
             owned: bool = False) -> StridedTensor:
    """Lay out logical `values` in a fresh storage buffer of the view `geometry`
    (strides, offset, storage elements): storage no element covers holds gap_fill."""
    shape = tuple(values.shape)
    strides, offset, size = geometry
    if strides == contiguous_strides(shape) and offset == 0:
        storage = np.ascontiguousarray(values).reshape(-1)
        if not owned or storage.base is not None and storage.base is not values:
            storage = storage.copy()
        return StridedTensor(storage, shape, strides, 0)
    storage = np.full(size, gap_fill(values.dtype), dtype=values.dtype)
    tensor = StridedTensor(storage, shape, strides, offset)
    item = storage.dtype.itemsize
    target = np.lib.stride_tricks.as_strided(
        storage[offset:], shape=shape, strides=tuple(s * item for s in strides)
    )
    target[...] = values
    return tensor
