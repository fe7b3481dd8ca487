"""The 3D hardware-edge families inside the default 3D suite, judged in-process as
`aclcheck verify` judges (aclcheck's standard, each case's product and dtype):

- each broken kernel of tests/kernels_hardware_3d.py FAILs some case of its own family
  and PASSes every case of the other families (the suite without it could not see it);
- the correct model and tests/kernels_documented.py:documented_3d PASS every valid case
  of the new families (no false alarm).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from aclcheck.cases.call import Capabilities, Outcome
from aclcheck.judging.case.judge import JudgeOptions, judge_success
from aclcheck.judging.case.verdicts import Verdict
from aclcheck.ops.adaptive.tiling import core_split
from aclcheck.ops.adaptive_avg_pool3d_backward import families, hardware, numerics
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case
from aclcheck.ops.materialize import make_tensors
from tests import kernels_hardware_3d as K
from tests.kernels_documented import documented_3d
from tests.test_families_3d import suite

CAPS = Capabilities("kernel", False, False)
#: Broken kernels that other families reach by chance: unequal D windows crossing a core's
#: span of cells occur in random draws (nondivisible, index, ...); unequal3d reaches them
#: in every slot by construction (test_unequal3d_fails_the_per_core_divisor_everywhere).
BY_CHANCE = {"kd_per_core"}


@functools.cache
def _items(count: int = 1) -> tuple:
    """(case, data) of every valid case of the default 3D suite (count 1 or more)."""
    return tuple((c, make_tensors(c)) for c in suite(count=count) if c.positive)


def _passes(kernel: K.Kernel, case: Case, data) -> bool:  # noqa: ANN001
    views = {name: t.view() for name, t in data.inputs.items() if t is not None}
    with np.errstate(all="ignore"):
        out = kernel(views["grad_output"], views["self"])
    v = judge_success(numerics.model(case), data, Outcome(output=out), CAPS, JudgeOptions())
    return v.verdict == Verdict.PASS


@functools.cache
def failing_families(name: str) -> dict[str, int]:
    kernel = next(k for ks in K.BROKEN.values() for k in ks if k.__name__ == name)
    out: dict[str, int] = {}
    for case, data in _items():
        if not _passes(kernel, case, data):
            out[case.family] = out.get(case.family, 0) + 1
    return out


def test_the_default_suite_holds_every_3d_hardware_family() -> None:
    assert set(hardware.FAMILIES) <= {c.family for c, _ in _items()}
    assert set(hardware.FAMILIES) <= set(families.DEFAULT_FAMILIES)


@pytest.mark.parametrize(("family", "name"), [
    (f, k.__name__) for f, ks in K.BROKEN.items() for k in ks])
def test_each_family_alone_catches_its_broken_kernel(family: str, name: str) -> None:
    caught = failing_families(name)
    assert caught.get(family, 0) > 0, f"{name} passes every {family} case"
    if name not in BY_CHANCE:
        assert set(caught) == {family}, f"{name} also fails {set(caught) - {family}}"


def test_unequal3d_fails_the_per_core_divisor_everywhere() -> None:
    cases = [(c, d) for c, d in _items() if c.family == "unequal3d"]
    assert len({(c.product, c.dtype) for c, _ in cases}) == 6
    assert [c.id for c, d in cases if _passes(K.kd_per_core, c, d)] == []


def test_the_int32_index_is_caught_past_the_default_count() -> None:
    wide = [families.shape_case("tall3d", p, "float16", "ND", 1, 0)
            for p in ("atlas-a2", "atlas-a3")]
    assert all(c is not None and max(c.self_shape) > 46000 for c in wide)
    for case in wide:
        assert not _passes(K.int32_bounds, case, make_tensors(case))
        assert _passes(K.model, case, make_tensors(case))


@pytest.mark.parametrize("kernel", [K.model, "documented_3d"])
def test_correct_models_pass_every_hardware_case(kernel) -> None:  # noqa: ANN001
    judged = [(c, d) for c, d in _items() if c.family in hardware.FAMILIES]
    assert judged
    failing = []
    for case, data in judged:
        fn = kernel
        if kernel == "documented_3d":
            fn = functools.partial(documented_3d, product=case.product,
                                   overflow_mode="inf-nan")
        if not _passes(fn, case, data):
            failing.append(case.id)
    assert failing == []


def crossing_spans(do: int, plane: int, cores: int) -> int:
    """Cores whose span of output cells (the vendor split over Do·Ho·Wo) holds cells of
    two D windows: what a D divisor taken once per core gets wrong."""
    split = core_split(do * plane, cores)
    return sum(len({c // plane for c in range(*split.span(k))}) > 1 for k in range(split.used))


def test_unequal_draws_cross_d_windows_within_a_core_span() -> None:
    plane = hardware.HW_PLANE[0][1] * hardware.HW_PLANE[1][1]
    for _d, do in hardware.D_PAIRS:
        assert crossing_spans(do, plane, 40) > 0
