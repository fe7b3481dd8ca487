"""The hardware-edge families inside the default suite, judged as `aclcheck verify` judges
(aclcheck's own standard, each case's product and dtype):

- each broken kernel of tests/kernels_hardware.py FAILs some case of its own family, and
  PASSes every case of the other families of the default suite (the suite before this
  family could not see the bug; ALSO_CAUGHT_BY names where another new family reaches it
  too);
- the correct product-path models PASS every case of the new families: the A2/A3 tiled
  kernel on 40 and 48 cores and with its cores in a random order, the plane-split FLOAT32
  kernel, the 1x1 fill of every product, the training/inference matmul path in the input
  dtype, and fed FLOAT16 (FLOAT32 inputs too: every training/inference case).

tests/test_hardware_families.py proves the same bitwise on the families' draws; here the
cases are the default suite's own, with their values, layouts and products.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from aclcheck.ops.adaptive_avg_pool2d_backward.families import HARDWARE_FAMILIES
from tests import kernels
from tests import kernels_hardware as K
from tests.test_discrimination import SATURATING, Item, saturated, suite
from tests.test_hardware_families import ALSO_CAUGHT_BY

TRAINING = ("atlas-training", "atlas-inference")
#: The correct models and the products whose path each one is.
MODELS: dict[str, tuple[K.Kernel, tuple[str, ...]]] = {
    "a2_tiled": (K.a2_tiled, ("atlas-a2", "atlas-a3")),
    "a2_tiled_48": (K.a2_tiled_48, ("atlas-a2", "atlas-a3")),
    "a2_tiled_shuffled": (K.a2_tiled_shuffled, ("atlas-a2", "atlas-a3")),
    "window_sum_fp32": (K.window_sum_fp32, ("atlas-a2", "atlas-a3")),
    "global_fill": (K.global_fill, ("atlas-a2", "atlas-a3")),
    "matmul_path": (kernels.matmul_path, TRAINING),
    "global_path": (kernels.global_path, TRAINING),
}


def _default() -> tuple[Item, ...]:
    return suite("default")  # materialised once per process, shared with discrimination


def _passes(kernel: K.Kernel, item: Item) -> bool:
    """The default standard's verdict on one case (a wrong shape or dtype fails), the
    kernel's output converted as the product's overflow mode does."""
    from aclcheck.ops.adaptive_avg_pool2d_backward.compare import compare

    with np.errstate(all="ignore"):
        out = kernel(item.grad, item.self_)
        if item.case.product in SATURATING and out.shape == item.golden.shape:
            out = saturated(out)  # the training/inference products' overflow mode
    if out.shape != item.golden.shape or out.dtype != item.self_.dtype:
        return False
    return compare(item.golden, out, item.context()).passed


@functools.cache
def failing_families(name: str) -> dict[str, int]:
    """family -> the default-suite cases of it the broken kernel `name` fails."""
    kernel = next(k for ks in K.BROKEN.values() for k in ks if k.__name__ == name)
    out: dict[str, int] = {}
    for item in _default():
        if not _passes(kernel, item):
            out[item.case.family] = out.get(item.case.family, 0) + 1
    return out


def test_the_default_suite_holds_every_hardware_family() -> None:
    families = {item.case.family for item in _default()}
    assert set(HARDWARE_FAMILIES) <= families


@pytest.mark.parametrize(("family", "name"), [
    (family, k.__name__) for family, ks in K.BROKEN.items() for k in ks])
def test_each_family_alone_catches_its_broken_kernel(family: str, name: str) -> None:
    caught = failing_families(name)
    assert caught.get(family, 0) > 0, f"{name} passes every {family} case"
    others = set(caught) - {family} - ALSO_CAUGHT_BY.get(family, set())
    assert not others, f"{name} also fails {others}: the suite without {family} saw it"


@pytest.mark.parametrize("model", sorted(MODELS))
def test_product_path_models_pass_every_hardware_case(model: str) -> None:
    kernel, products = MODELS[model]
    judged = [item for item in _default()
              if item.case.family in HARDWARE_FAMILIES and item.case.product in products]
    assert judged
    failing = [item.case.id for item in judged if not _passes(kernel, item)]
    assert failing == [], f"{model} fails {failing[:5]}"


def test_the_fp16_fed_matmul_passes_every_case_of_training() -> None:
    """The documented training/inference path, FLOAT32 calls fed FLOAT16 included
    (cubeMathType ALLOW_FP32_DOWN_PRECISION), passes every valid case of those products
    in the default suite: the budget models the path (docs/tolerances.md)."""
    judged = [item for item in _default() if item.case.product in TRAINING]
    assert {i.case.dtype for i in judged} == {"float16", "float32"}
    assert [i.case.id for i in judged if not _passes(K.matmul_fp16, i)] == []


def test_families_command_lists_each_family_with_its_fact() -> None:
    from click.testing import CliRunner

    from aclcheck.cli import cli
    from aclcheck.ops import default_operator

    res = CliRunner().invoke(cli, ["families"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    op = default_operator()
    assert set(op.family_notes) == set(op.families)
    for name in op.families:
        assert name in res.output
    for name in HARDWARE_FAMILIES:
        note = op.family_notes[name]
        assert note.section.startswith("9.") and note.aims[:30] in res.output


def test_stress_reaches_every_big_edge_at_count_1() -> None:
    """Index 0 of the stress family's slots: the 2^25 FLOAT16 fill, the 2^24 FLOAT32
    count, i·in past 2^31 with W > 1, and the N·C slices of both element sizes."""
    from aclcheck.ops.adaptive_avg_pool2d_backward.families import shape_case
    from aclcheck.ops.adaptive_avg_pool2d_backward.hardware import slice_edges

    firsts = [c for p, dts in (("atlas-training", ("float16", "float32")),
                               ("atlas-inference", ("float16", "float32")),
                               ("atlas-a2", ("bfloat16", "float16", "float32")),
                               ("atlas-a3", ("bfloat16", "float16", "float32")))
              for d in dts for f in ("ND", "NCHW", "NCL")
              if (c := shape_case("stress", p, d, f, 0, 0)) is not None]
    planes = {(c.dtype, math.prod(c.self_shape[-2:])) for c in firsts
              if tuple(c.grad_shape[-2:]) == (1, 1)}
    assert {("float16", 2**25), ("float32", 2**24)} <= planes
    assert any(c.self_shape[-1] > 1 and c.self_shape[-2] * c.grad_shape[-2] > 2**31
               for c in firsts)
    lanes = {math.prod(c.grad_shape[:-2]) for c in firsts}
    assert set(slice_edges(2)) | set(slice_edges(4)) <= lanes
