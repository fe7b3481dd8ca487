"""How the Atlas A2/A3 kernel of adaptive average pooling backward splits its work.

A model of the host-side tiling of the vendor's AdaptiveAvgPool3dGrad kernel, which both
the 2-D operator (reshaped to one D slice, channels-last) and the 3-D operator reach on
Atlas A2/A3 (docs/contract.md section 9). It answers, for one call: does the kernel add
atomically or copy, how many output cells each vector core takes, how many cells fit one
pass through the unified buffer (UB), and how the N·C lanes are sliced when one cell's
lanes do not fit. The case families aim at the edges of exactly these numbers.

Everything here is integer arithmetic over plain ints: no arrays, no operator names.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Vector cores (what the kernel's `GetCoreNumAiv` reports) per Atlas A2/A3 chip model:
#: 910B1/B2 and 910_9391 have 48, 910B3/B4 and 910_9362 have 40 (CANN platform files).
VECTOR_CORES: tuple[int, ...] = (40, 48)
#: Cube cores of the same models (20 and 24): the count an AI-core-based split would use.
CUBE_CORES: tuple[int, ...] = (20, 24)
#: Vector cores a virtual NPU slice of those chips exposes (twice the cube-core slices
#: 2, 3, 4, 5, 6, 10, 12 of the platform files' vir_type_list), and 1 in deterministic mode.
VNPU_CORES: tuple[int, ...] = (1, 4, 6, 8, 10, 12, 20, 24)
#: Unified buffer per core on A2/A3, in bytes.
UB_BYTES = 196_608
#: What the tiling keeps back from the UB before sizing its passes (3 KiB + 3 KiB).
UB_RESERVED = 6 * 1024
#: The kernel's lanes are padded to this many bytes (one vector block).
BLOCK_BYTES = 32


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def lanes_aligned(nc: int, itemsize: int) -> int:
    """N·C rounded up to whole 32-byte blocks (8 FLOAT32 or 16 FLOAT16/BFLOAT16 lanes)."""
    per_block = BLOCK_BYTES // itemsize
    return ceil_div(nc, per_block) * per_block


def bytes_per_cell(nc: int, itemsize: int) -> int:
    """UB bytes one output cell needs: FLOAT32 keeps an input and an output row of lanes;
    FLOAT16/BFLOAT16 keep both in the dtype and in FLOAT32 (2 + 4 + 2 + 4 bytes a lane)."""
    lanes = lanes_aligned(nc, itemsize)
    return lanes * 8 if itemsize == 4 else lanes * 12


def large_lanes_threshold(itemsize: int, ub_bytes: int = UB_BYTES) -> int:
    """The smallest aligned N·C that no longer fits one cell per UB pass: 23 808 for
    FLOAT32, 15 872 for FLOAT16/BFLOAT16 with the A2/A3 UB."""
    usable = ub_bytes - UB_RESERVED
    per_lane = 8 if itemsize == 4 else 12
    return ceil_div(usable, per_lane)


def atomic(in_sizes: tuple[int, ...], out_sizes: tuple[int, ...]) -> bool:
    """True when the kernel accumulates with atomic adds: unless every spatial axis
    divides (in % out == 0 on each), windows may share input elements."""
    return any(i % o for i, o in zip(in_sizes, out_sizes, strict=True))


@dataclass(frozen=True)
class CoreSplit:
    """How `tasks` units of work are dealt to the cores: `used` cores take `per_core`
    each, the last of them the remainder `last` (1 <= last <= per_core)."""

    tasks: int
    used: int
    per_core: int
    last: int

    def span(self, core: int) -> tuple[int, int]:
        """[start, stop) of the tasks of `core` (empty for cores past `used`)."""
        if core >= self.used:
            return self.tasks, self.tasks
        start = core * self.per_core
        count = self.last if core == self.used - 1 else self.per_core
        return start, start + count


def core_split(tasks: int, cores: int) -> CoreSplit:
    """The kernel's split: per_core = ceil(tasks / min(tasks, cores)), then only as many
    cores as that needs (tasks = 49 on 48 cores: 25 cores of 2, the last with 1)."""
    if tasks <= 0:
        return CoreSplit(0, 0, 0, 0)
    used = min(tasks, max(1, cores))
    per_core = ceil_div(tasks, used)
    used = ceil_div(tasks, per_core)
    return CoreSplit(tasks, used, per_core, tasks - per_core * (used - 1))


@dataclass(frozen=True)
class Tiling:
    """The plan of one call on one chip (docs/contract.md section 9)."""

    atomic: bool
    lanes_large: bool  # one cell's N·C lanes exceed a UB pass: lanes are sliced
    lanes: int  # N·C
    lanes_aligned: int
    cells: int  # output cells Do·Ho·Wo
    slices: int  # N·C slices per cell (1 unless lanes_large)
    slice_lanes: int  # lanes of every slice but the last (aligned; may exceed N·C when 1 slice)
    tail_lanes: int  # lanes of the last slice
    split: CoreSplit  # over cells x slices
    cells_per_pass: int  # output cells one UB pass holds (1 when lanes are sliced)
    workspace_bytes: int  # the FLOAT32 accumulator of the 16-bit atomic path


def a2_tiling(out_sizes: tuple[int, ...], lanes: int, in_sizes: tuple[int, ...],
              itemsize: int, cores: int, ub_bytes: int = UB_BYTES) -> Tiling:
    """The A2/A3 plan for spatial output sizes `out_sizes` (Ho, Wo) or (Do, Ho, Wo), input
    sizes `in_sizes` of the same rank, N·C = `lanes`, an element size of 4 (FLOAT32) or 2
    (FLOAT16/BFLOAT16) bytes, on `cores` vector cores (1 in deterministic mode)."""
    usable = ub_bytes - UB_RESERVED
    align = BLOCK_BYTES // itemsize
    aligned = lanes_aligned(lanes, itemsize)
    per_cell = bytes_per_cell(lanes, itemsize)
    cells = 1
    for o in out_sizes:
        cells *= o
    is_atomic = atomic(in_sizes, out_sizes)
    if per_cell < usable:
        slices, slice_lanes, tail, per_pass = 1, aligned, lanes, usable // per_cell
        large = False
    else:
        first = ceil_div(per_cell, usable)
        slice_lanes = aligned // first // align * align
        slices = ceil_div(lanes, slice_lanes)
        tail = lanes - slice_lanes * (slices - 1)
        per_pass, large = 1, True
    split = core_split(cells * slices, cores)
    spatial = 1
    for i in in_sizes:
        spatial *= i
    workspace = lanes * spatial * 4 if is_atomic and itemsize == 2 else 0
    return Tiling(is_atomic, large, lanes, aligned, cells, slices, slice_lanes, tail, split,
                  min(per_pass, split.per_core) if split.per_core else per_pass, workspace)


def pass_edge_cells(lanes: int, itemsize: int, cores: int, ub_bytes: int = UB_BYTES) -> int:
    """The largest cell count for which no core needs a second UB pass: cores x cells a
    pass holds. One cell more and the first core makes two passes, the second partial."""
    usable = ub_bytes - UB_RESERVED
    return cores * (usable // bytes_per_cell(lanes, itemsize))
