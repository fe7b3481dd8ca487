"""What a max-pooling suite exercises: the edges its families aim at, and how many of a
golden file's cases reach each (`aclcheck inspect FILE --coverage`).

The hardware edges come from how Atlas A2/A3 compute (docs/contract-maxpool.md §5): the
divisible copy and the adding path, each vector kernel's window bound in the UB (past
it, the scatter kernels), the adding kernel's 64 planes per task and 64 x cores, indices
near 2^24 on the adding path (on request). The other groups: window kinds per axis, the
index dtype and choices (valid ones judged; invalid ones, unspecified, made), value
distributions, empty calls, layouts, products x dtypes. Every edge is listed, reached or
not. Sections are docs/contract-maxpool.md's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from aclcheck.cases import Case
from aclcheck.cases.coverage import Coverage, Edge
from aclcheck.ops.adaptive.coverage_rows import count_edge, window_sizes
from aclcheck.ops.adaptive.tiling import VECTOR_CORES
from aclcheck.ops.adaptive_max_pool2d_backward import contract
from aclcheck.ops.adaptive_max_pool2d_backward.values import INVALID_CHOICES, VALID_CHOICES

Test = Callable[[Case], bool]

#: The UB bytes a vector kernel's window may take (docs/contract-maxpool.md §5).
COPY_UB, ADD_UB = 180_160, 169_984
PLANES_PER_TASK = 64


def _ceil(x: int, m: int) -> int:
    return -(-x // m) * m


def extents(case: Case) -> tuple[int, int]:
    """(kh, kw): the largest window along H and W."""
    (h, w), (ho, wo) = case.self_shape[-2:], case.grad_shape[-2:]
    return max(window_sizes(h, ho), default=0), max(window_sizes(w, wo), default=0)


def copy_fits(case: Case) -> bool:
    """The divisible vector kernel holds the window (else the scatter kernel runs)."""
    kh, kw = extents(case)
    if case.dtype == "float32":
        return 256 * kh * kw + 512 * kh * _ceil(kw, 8) <= COPY_UB
    return 256 * kh * kw + 384 * kh * _ceil(kw, 16) <= COPY_UB


def add_fits(case: Case) -> bool:
    """The non-divisible vector kernel holds the window (else scatter-overlap runs)."""
    kh, kw = extents(case)
    return 512 * kh * _ceil(kw, 8) + 544 * kh * kw <= ADD_UB


def divisible(case: Case) -> bool:
    return contract.divisible(tuple(case.grad_shape[-2:]), tuple(case.self_shape[-2:]))


def planes(case: Case) -> int:
    return math.prod(case.grad_shape[:-2])


def _empty(case: Case) -> bool:
    return min(tuple(case.self_shape) + tuple(case.grad_shape)) == 0


def _hardware_tests() -> list[tuple[str, Test]]:
    tests: list[tuple[str, Test]] = [
        ("divisible: each gradient copied (vector kernel)", lambda c: divisible(c)
         and copy_fits(c)),
        ("divisible, window past the UB bound: scatter kernel", lambda c: divisible(c)
         and not copy_fits(c)),
        ("divisible, the largest window the vector kernel holds (14x14 FLOAT32, 16x16 "
         "FLOAT16/BFLOAT16)", lambda c: divisible(c) and copy_fits(c)
         and extents(c) == ((14, 14) if c.dtype == "float32" else (16, 16))),
        ("non-divisible: FLOAT32 adds (vector kernel)", lambda c: not divisible(c)
         and add_fits(c)),
        ("non-divisible, the largest window the vector kernel holds (11x11)",
         lambda c: not divisible(c) and extents(c) == (11, 11)),
        ("non-divisible, window past 11x11: scatter-overlap kernel",
         lambda c: not divisible(c) and not add_fits(c)),
        ("non-divisible, N·C = 64 (one task)", lambda c: not divisible(c)
         and planes(c) == PLANES_PER_TASK),
        ("non-divisible, N·C = 65 (a second task of one plane)", lambda c: not divisible(c)
         and planes(c) == PLANES_PER_TASK + 1),
    ]
    for cores in VECTOR_CORES:
        full = PLANES_PER_TASK * cores
        tests += [(f"non-divisible, N·C = 64·{cores} ± 1 (every core a task; one more)",
                   lambda c, f=full: not divisible(c) and abs(planes(c) - f) <= 1)]
    tests.append(("non-divisible, indices near 2^24 (H·W > 2^24 - 2^12)",
                  lambda c: not divisible(c)
                  and contract.PAGE_LIMIT - 2**12 < math.prod(c.self_shape[-2:])
                  <= contract.PAGE_LIMIT))
    return tests


#: the hardware edges only the on-request stress family reaches
ON_REQUEST = frozenset({"non-divisible, indices near 2^24 (H·W > 2^24 - 2^12)"})


def _shape_tests() -> list[tuple[str, Test]]:
    tests: list[tuple[str, Test]] = []
    for k, a in enumerate(("H", "W")):
        def kind(c: Case, k: int = k) -> tuple[int, int]:
            return c.self_shape[-2 + k], c.grad_shape[-2 + k]
        tests += [
            (f"{a} divides ({a}o < {a})", lambda c, f=kind: f(c)[1] < f(c)[0]
             and f(c)[0] % f(c)[1] == 0),
            (f"{a} overlaps ({a} % {a}o != 0, {a}o < {a})", lambda c, f=kind: f(c)[1] < f(c)[0]
             and f(c)[0] % f(c)[1] != 0),
            (f"{a} upsampled ({a}o > {a})", lambda c, f=kind: f(c)[1] > f(c)[0]),
            (f"{a} identity", lambda c, f=kind: f(c)[1] == f(c)[0]),
        ]
    return tests + [
        ("both axes overlap", lambda c: all(i % o for i, o in zip(
            c.self_shape[-2:], c.grad_shape[-2:], strict=True))),
        ("one window per plane (1x1 output)", lambda c: tuple(c.grad_shape[-2:]) == (1, 1)),
        ("rank 3 (C, H, W)", lambda c: len(c.self_shape) == 3),
        ("rank 4, N > 1 and C > 1", lambda c: len(c.self_shape) == 4
         and min(c.self_shape[:2]) > 1),
    ]


def _index_tests() -> list[tuple[str, Test]]:
    tests: list[tuple[str, Test]] = [
        (f"indices {d.upper()}", lambda c, d=d: c.tensor_desc("indices").dtype == d)
        for d in contract.INDEX_DTYPES]
    tests += [(f"indices {choice}", lambda c, x=choice: c.index_choice == x)
              for choice in VALID_CHOICES]
    tests.append(("a shared position named by several cells",
                  lambda c: c.index_choice == "overlap" and not divisible(c)))
    tests += [(f"invalid indices: {choice} (unspecified, made isolated)",
               lambda c, x=choice: c.index_choice == x) for choice in INVALID_CHOICES]
    return tests


def _other_tests(present: set[str]) -> list[tuple[str, str, Test]]:
    tests: list[tuple[str, str, Test]] = [
        ("value", f"gradOutput {d}", lambda c, d=d: c.distribution == d)
        for d in sorted(present)]
    tests += [
        ("empty", "N = 0 (success, not written)", lambda c: len(c.self_shape) == 4
         and c.self_shape[0] == 0),
        ("empty", "Ho or Wo = 0 with a non-empty self", lambda c: min(c.grad_shape[-2:]) == 0
         and min(c.self_shape) > 0),
        ("empty", "H or W = 0", lambda c: min(c.self_shape[-2:]) == 0),
    ]
    tests += [("layout", f"layout {name}", lambda c, x=name: c.layout == x)
              for name in ("contiguous", "channels_last", "strided", "transposed")]
    tests += [("dtype", f"{p} {d}", lambda c, p=p, d=d: c.product == p and c.dtype == d)
              for p, rules in contract.PRODUCTS.items() for d in rules.dtypes]
    return tests


def case_coverage(cases: Iterable[Case]) -> Coverage:
    """The coverage of a file's cases: the calls the contract accepts (valid, empty
    included) and the invalid-index calls (unspecified, made isolated)."""
    made: Sequence[Case] = [c for c in cases if c.positive or c.expectation.isolated_only
                            and c.index_choice in INVALID_CHOICES]
    judged = [c for c in made if not _empty(c)]
    valid = [c for c in judged if c.positive]
    groups: list[tuple[str, str, str, Sequence[Case], Test]] = [
        ("hardware", label, "5", valid, t) for label, t in _hardware_tests()]
    groups += [("shape", label, "6", valid, t) for label, t in _shape_tests()]
    groups += [("index", label, "7", judged, t) for label, t in _index_tests()]
    groups += [(group, label, "4" if group == "empty" else "6", made, t)
               for group, label, t in _other_tests({c.distribution for c in judged})]
    edges: list[Edge] = [replace(count_edge(group, label, section, pool, test),  # type: ignore[arg-type]
                                 on_request=group == "hardware" and label in ON_REQUEST)
                         for group, label, section, pool, test in groups]
    extremes = (
        ("largest N·C", max((planes(c) for c in judged), default=0)),
        ("largest H·W", max((math.prod(c.self_shape[-2:]) for c in judged), default=0)),
        ("largest window kh·kw", max((math.prod(extents(c)) for c in judged), default=0)),
    )
    return Coverage(len(judged), tuple(edges), extremes)
