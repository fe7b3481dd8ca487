"""Proof that the default standard discriminates: correct kernels pass, broken ones fail.

Runs the kernels of tests/kernels.py directly on the default suite's positive cases (and
on extra upsampling and special-value cases), compares with the golden under every
standard, and checks:

- correct FP32-accumulating kernels, the reference and PyTorch CPU float32 PASS all cases;
- each broken kernel (one per bug class of docs/contract.md section 8) FAILs some case;
- round-toward-zero is still flagged in FP16 and in BF16;
- the rounding-mode mutants (ties away, truncation, toward +inf, a bias) fail the rounding
  family on every product, and the float16/float32/int16 window-bound kernels the index
  family on every product;
- on A2/A3 (FP32 accumulation) the default standard flags every case that a published
  standard flags for a broken kernel (where that standard passes the correct kernel);
- c keeps a margin over the measured accumulation error of the correct kernels.

`python tests/test_discrimination.py` prints the measurements for docs/tolerances.md.
"""

from __future__ import annotations

import collections
import functools
import sys
from dataclasses import dataclass

import numpy as np
import pytest

from aclcheck.dtypes import float_format, half_ulp
from aclcheck.judging.case.compare import Comparison
from aclcheck.judging.case.default_standard import DEFAULT_C
from aclcheck.judging.case.overflow import OverflowMode, product_modes, saturate
from aclcheck.judging.case.standards import PUBLISHED, STANDARDS_BY_NAME
from aclcheck.ops.adaptive.windows import term_counts
from aclcheck.ops.adaptive_avg_pool2d_backward.compare import Context, compare
from aclcheck.ops.adaptive_avg_pool2d_backward.numerics import resolve_accumulate
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool2d_backward.reference import backward
from aclcheck.ops.materialize import make_inputs, make_tensors
from aclcheck.suite.selection import Selection, build_suite
from tests import kernels

ALL = tuple(STANDARDS_BY_NAME)
FP32_PRODUCTS = ("atlas-a2", "atlas-a3")
EXTRA_FAMILIES = ("upsampling", "special")
EXTRA_COUNT = 3

REFERENCE_LIKE: dict[str, kernels.Kernel] = {
    "reference": kernels.reference_rounded,
    "torch_cpu_float32": kernels.torch_cpu_float32,
}


@dataclass(frozen=True)
class Item:
    """One positive case, materialised: inputs as laid out, golden."""

    case: Case
    grad: np.ndarray  # view in the case layout
    self_: np.ndarray
    golden: np.ndarray

    def context(self) -> Context:
        return Context(self.case.product, self.case.dtype, self.grad,
                       (int(self.case.self_shape[-2]), int(self.case.self_shape[-1])))


def _items(selection: Selection) -> tuple[Item, ...]:
    out = []
    for case in build_suite(selection):
        if not case.positive:
            continue
        grad, self_ = make_inputs(case)
        golden = make_tensors(case).golden
        if grad is None or self_ is None or golden is None or golden.size == 0:
            continue
        out.append(Item(case, grad.view(), self_.view(), golden))
    return tuple(out)


@functools.cache
def suite(name: str) -> tuple[Item, ...]:
    if name == "default":
        return _items(Selection())
    return _items(Selection(families=EXTRA_FAMILIES, count=EXTRA_COUNT, seed=7))


ALL_KERNELS: dict[str, kernels.Kernel] = {
    **kernels.CORRECT, **REFERENCE_LIKE, **kernels.PRODUCT_PATHS, **kernels.TRUNCATING,
    **kernels.ROUNDING, **kernels.BROKEN, "torch_cpu": kernels.torch_cpu_native,
}
#: The rounding family's dtypes per product: where an exact tie reaches the conversion.
TIE_TARGETS = {"atlas-training": ("float16",), "atlas-inference": ("float16",),
               "atlas-a2": ("float16", "bfloat16"), "atlas-a3": ("float16", "bfloat16")}
INDEX_KERNELS = ("float_bounds", "half_bounds", "int16_bounds")
#: Products that compute in saturation mode (docs/contract.md section 10): the kernels,
#: written in IEEE arithmetic, run there with that mode's output conversion.
SATURATING = tuple(p for p in TIE_TARGETS
                   if product_modes(p)[0] == OverflowMode.SATURATION)


def saturated(out: np.ndarray, nan: bool = True) -> np.ndarray:
    """An output as a saturation-mode device converts it (judging.case.overflow.saturate):
    inf to the largest finite value, and (nan=True) NaN to 0."""
    fmt = float_format(np.dtype(out.dtype).name)
    if nan:
        return saturate(out, fmt)
    return np.where(np.isinf(out), np.copysign(fmt.max_value, out), out).astype(out.dtype)


@functools.cache
def outcomes(kernel: str, suite_name: str) -> tuple[tuple[Item, Comparison | None], ...]:
    """Each case's comparison under every standard (None: wrong output shape, an ERROR).
    The PyTorch kernels need torch: without it, the tests that use them skip."""
    if kernel.startswith("torch"):
        pytest.importorskip("torch")
    fn = ALL_KERNELS[kernel]
    res = []
    for item in suite(suite_name):
        with np.errstate(all="ignore"):
            out = fn(item.grad, item.self_)
            if item.case.product in SATURATING:  # a broken kernel's NaN is its bug: kept
                out = saturated(out, nan=kernel not in kernels.BROKEN)
        if out.shape != item.golden.shape or out.dtype != item.self_.dtype:
            res.append((item, None))
            continue
        res.append((item, compare(item.golden, out, item.context(), ALL)))
    return tuple(res)


def flagged(kernel: str, suite_name: str, standard: str = "aclcheck",
            products: tuple[str, ...] | None = None) -> list[str]:
    """Ids of the cases the standard flags (wrong shape counts as flagged everywhere)."""
    ids = []
    for item, res in outcomes(kernel, suite_name):
        if products is not None and item.case.product not in products:
            continue
        if res is None or not next(s.passed for s in res.standards if s.name == standard):
            ids.append(item.case.id)
    return ids


# -- correct kernels pass -----------------------------------------------------------------


@pytest.mark.parametrize("kernel", [*kernels.CORRECT, *REFERENCE_LIKE])
@pytest.mark.parametrize("suite_name", ["default", "extra"])
def test_correct_kernels_pass(kernel: str, suite_name: str) -> None:
    assert len(suite(suite_name)) > 100
    failing = flagged(kernel, suite_name)
    assert failing == [], f"{kernel} flagged on {failing[:5]}"


def test_product_path_models_pass_on_their_products() -> None:
    training = ("atlas-training", "atlas-inference")
    for name in ("default", "extra"):
        assert flagged("matmul_path", name, products=training) == []
        assert flagged("global_path", name) == []
    # the input-dtype matmul path is not conformant where FP32 is promised
    assert flagged("matmul_path", "default", products=FP32_PRODUCTS)


def test_global_path_notes_appear() -> None:
    notes = [n for _item, res in outcomes("global_path", "default") if res for n in res.notes]
    assert any("only because of the 1x1 path" in n for n in notes)


# -- broken kernels fail ------------------------------------------------------------------


@pytest.mark.parametrize("kernel", list(kernels.BROKEN))
def test_broken_kernel_fails_default_suite(kernel: str) -> None:
    assert flagged(kernel, "default"), f"{kernel} passes every case"


def test_broken_kernels_fail_where_expected() -> None:
    dtypes = {i.case.id: i.case for i, _ in outcomes("window_sum", "default")}
    layouts = {dtypes[c].layout for c in flagged("ignores_strides", "default")}
    assert layouts and "contiguous" not in layouts
    assert {dtypes[c].layout for c in flagged("channels_last_as_contiguous", "default")} == {
        "channels_last"}
    # (bigglobal aside: its FLOAT16 count of 65 520 overflows in this kernel's FP16 terms,
    # a bug on the 1x1 fill path of every product)
    fp16 = {dtypes[c].product for c in flagged("fp16_accumulation", "default")
            if dtypes[c].dtype == "float16" and dtypes[c].family != "bigglobal"}
    assert fp16 <= set(FP32_PRODUCTS) and fp16  # the training path accumulates in FP16
    assert len(flagged("wrong_shape", "default")) == len(suite("default"))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_truncation_is_flagged(dtype: str) -> None:
    for kernel in kernels.TRUNCATING:
        hits = [i.case.id for i, r in outcomes(kernel, "default")
                if i.case.dtype == dtype and r is not None and not r.passed]
        assert hits, f"{kernel} never flagged in {dtype}"


@pytest.mark.parametrize("kernel", list(kernels.ROUNDING))
def test_rounding_mutants_fail_on_every_product_with_the_tie_message(kernel: str) -> None:
    """Each rounding-mode mutant FAILs the default standard on the default suite's
    rounding cases of every product and tie dtype, reported as an exact-rounding error."""
    for product, dtypes in TIE_TARGETS.items():
        for dtype in dtypes:
            hits = [r for i, r in outcomes(kernel, "default")
                    if (i.case.family, i.case.product, i.case.dtype) == ("rounding", product,
                                                                       dtype)
                    and r is not None and not r.passed]
            assert hits, f"{kernel} passes every rounding case of {product} {dtype}"
            assert all("exact ties" in r.gating.detail for r in hits)
    if kernel == "ties_away":
        details = [r.gating.detail for i, r in outcomes(kernel, "default")
                   if r is not None and not r.passed and i.case.family == "rounding"]
        assert all("exact ties rounded away from zero; RNE gives the even neighbour" in d
                   for d in details)


@pytest.mark.parametrize("kernel", INDEX_KERNELS)
def test_index_kernels_fail_the_index_family_on_every_product(kernel: str) -> None:
    products = {i.case.product for i, r in outcomes(kernel, "default")
                if i.case.family == "index" and (r is None or not r.passed)}
    assert products == set(TIE_TARGETS), f"{kernel} passes the index family on some product"


def test_default_flags_what_published_standards_flag_on_fp32_products() -> None:
    base = {i.case.id: r for i, r in outcomes("window_sum", "default")}
    missed = []
    for kernel in [*kernels.BROKEN, *kernels.TRUNCATING]:
        for item, res in outcomes(kernel, "default"):
            if item.case.product not in FP32_PRODUCTS or res is None or not res.passed:
                continue
            correct = base[item.case.id]
            assert correct is not None
            ok_correct = {s.name: s.passed for s in correct.standards}
            for s in res.standards:
                if s.name in PUBLISHED and not s.passed and ok_correct[s.name]:
                    missed.append((kernel, item.case.id, s.name))
    assert missed == []


def test_torch_cpu_low_precision() -> None:
    """PyTorch CPU FP16/BF16 accumulates in low precision: within the matmul-path budget
    of the training/inference products, not within A2/A3's FP32 promise."""
    low = {i.case.id: i.case for i, _ in outcomes("torch_cpu", "default")
           if i.case.dtype != "float32"}
    failing = [c for c in flagged("torch_cpu", "default") if c in low]
    assert {low[c].product for c in failing} <= set(FP32_PRODUCTS)
    assert {low[c].dtype for c in failing} == {"float16", "bfloat16"}


# -- the measurement behind c -------------------------------------------------------------


#: the correct kernels c is measured on, by what they need
MEASURED = {"numpy": [*kernels.CORRECT, "reference"], "torch": ["torch_cpu_float32"]}


def measure_c(suite_names: tuple[str, ...] = ("default", "extra"),
              names: tuple[str, ...] = (*MEASURED["numpy"], *MEASURED["torch"])
              ) -> dict[str, object]:
    """Largest error of the correct kernels beyond the output's half ULP, in units of
    k * u_acc * m, over normal-range elements; underflow elements in units of k * eta."""
    worst, where = 0.0, ""
    worst_floor = 0.0
    for name in suite_names:
        for item in suite(name):
            case = item.case
            fmt = float_format(case.dtype)
            acc = resolve_accumulate(case.product, case.dtype)
            in_hw = item.golden.shape[-2:]
            m = backward(item.grad, in_hw, absolute=True)
            k = term_counts(item.grad.shape[-2:], in_hw).astype(np.float64)
            g = item.golden
            with np.errstate(all="ignore"):
                base = np.abs(g)
                usable = np.isfinite(g) & (base < fmt.max_value) & (m > 0)
                normal = usable & (m >= 2.0**acc.min_exp)
                tiny = usable & ~normal
                for kname in names:
                    a = ALL_KERNELS[kname](item.grad, item.self_).astype(np.float64)
                    excess = np.abs(a - g) - half_ulp(base, fmt)
                    ratio = np.where(normal & np.isfinite(a),
                                     excess / (k * acc.unit_roundoff * m), -np.inf)
                    if ratio.size and ratio.max() > worst:
                        worst, where = float(ratio.max()), f"{case.id} ({kname})"
                    floor = np.where(tiny & np.isfinite(a),
                                     excess / (k * acc.smallest_subnormal), -np.inf)
                    if floor.size:
                        worst_floor = max(worst_floor, float(floor.max()))
    return {"max_ratio": worst, "where": where, "max_floor_ratio": worst_floor,
            "cases": sum(len(suite(n)) for n in suite_names)}


@pytest.mark.parametrize("needs", ["numpy", "torch"])
def test_c_has_margin_over_measurement(needs: str) -> None:
    if needs == "torch":
        pytest.importorskip("torch")
    found = measure_c(("default",), tuple(MEASURED[needs]))
    assert 0 < found["max_ratio"] < DEFAULT_C / 2  # type: ignore[operator]
    assert found["max_floor_ratio"] < DEFAULT_C / 2  # type: ignore[operator]


# -- tables for the docs ------------------------------------------------------------------


def missed_matrix() -> dict[str, dict[str, int]]:
    """kernel -> standard -> number of default-suite cases where aclcheck flags the broken
    kernel but the standard does not (0 = the standard catches everything aclcheck does)."""
    matrix: dict[str, dict[str, int]] = {}
    for kernel in [*kernels.BROKEN, *kernels.TRUNCATING, *kernels.ROUNDING]:
        row = collections.Counter()
        acl = set(flagged(kernel, "default"))
        row["aclcheck"] = len(acl)
        for std in PUBLISHED:
            row[std] = len(acl - set(flagged(kernel, "default", std)))
        matrix[kernel] = dict(row)
    return matrix


def failure_counts(kernel: str) -> dict[tuple[str, str], dict[str, int]]:
    """(product, dtype) -> standard -> failing cases of one kernel on the default suite."""
    table: dict[tuple[str, str], dict[str, int]] = collections.defaultdict(
        lambda: {s: 0 for s in ("cases", *ALL)})
    for item, res in outcomes(kernel, "default"):
        row = table[(item.case.product, item.case.dtype)]
        row["cases"] += 1
        for s in res.standards if res else ():
            row[s.name] += not s.passed
    return dict(table)


def _print_tables() -> None:
    found = measure_c()
    print(f"c measurement over {found['cases']} cases: max excess/(k u_acc m) = "
          f"{found['max_ratio']:.3g} at {found['where']}; underflow max excess/(k eta) = "
          f"{found['max_floor_ratio']:.3g}; DEFAULT_C = {DEFAULT_C}")
    print("\n| broken kernel | aclcheck flags | " + " | ".join(PUBLISHED) + " |")
    print("|---" * (len(PUBLISHED) + 2) + "|")
    for kernel, row in missed_matrix().items():
        cells = [str(row[s]) if row[s] else "-" for s in PUBLISHED]
        print(f"| {kernel} | {row['aclcheck']} | " + " | ".join(cells) + " |")
    for kernel in ("torch_cpu", "window_sum", "torch_cpu_float32"):
        print(f"\n{kernel}: failing cases per standard (default suite)")
        print("| product | dtype | cases | " + " | ".join(ALL) + " |")
        print("|---" * (len(ALL) + 3) + "|")
        for (prod, dtype), row in sorted(failure_counts(kernel).items()):
            print(f"| {prod} | {dtype} | {row['cases']} | "
                  + " | ".join(str(row[s]) for s in ALL) + " |")


if __name__ == "__main__":
    sys.exit(_print_tables())
