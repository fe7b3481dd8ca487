"""How each product computes aclnnAdaptiveAvgPool3dBackward (docs/contract-3d.md §6), as
the error budget and the exactness proof see it.

Three paths, chosen by gradOutput's (Do, Ho, Wo) and the product:

- global-1x1x1 (every product, Do = Ho = Wo = 1): out = RN_T(g * F_T) with
  F_T = RN_T(fl32(fl64(1 / (D*H*W)))): the factor is rounded to the dtype before the
  multiply (FLOAT16: subnormal from D*H*W = 16393, zero from 2^25). One rounding of the
  product, so where F_T is exact the output is the correctly rounded golden. DOUBLE
  (contract code) takes this path only: F = fl32(1/(D*H*W)) widened exactly, the product
  rounded once in double, so its relative error is at most eps(F) (<= 2^-24) + 2^-53.
- fp32-disjoint (A2/A3, D % Do = H % Ho = W % Wo = 0): the windows tile the input; each
  element gets one term fl32(g * fl32(1/k)), written directly (FP32) or rounded once to
  nearest even (FP16/BF16). Deterministic.
- fp32-atomic (A2/A3, otherwise): the same terms added with FP32 atomics in any order
  (in (od, oh, ow) order on one core in deterministic mode) into an FP32 buffer cleared
  to +0, then one round-to-nearest-even to the dtype.

Atlas training accepts only the global path (161002 otherwise); Atlas inference has no
kernel for the others (unspecified): neither has a windowed path to judge.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from aclcheck.cases import Case
from aclcheck.dtypes import (
    FLOAT32,
    FLOAT64,
    JUDGED_FORMATS,
    FloatFormat,
    accumulation_format,
    correctly_rounded,
    half_ulp,
    judged_format,
    quantum,
    quantum_exponent,
    scale_error,
    scale_error_of,
)
from aclcheck.judging.case.exactness import count_exact_ties as exact_ties_of
from aclcheck.judging.case.model import (
    Axis,
    AxisTables,
    Block,
    CaseModel,
    ExactPlan,
    NumericModel,
    NumericPath,
)
from aclcheck.judging.case.overflow import product_modes
from aclcheck.ops.adaptive.windows import pow2_positions
from aclcheck.ops.adaptive_avg_pool3d_backward import contract
from aclcheck.ops.adaptive_avg_pool3d_backward.reference import Plans, backward, plans

GLOBAL = "global-1x1x1"
DISJOINT = "fp32-disjoint"
ATOMIC = "fp32-atomic"


def resolve_accumulate(product: str, dtype: str, accumulate: str | None = None) -> FloatFormat:
    """The accumulation format: the product's own (FP32) or an override ("float32",
    "input" = the dtype itself, or a compute dtype name or alias). DOUBLE's own is
    FLOAT64: its one path multiplies in double and sums nothing in FP32."""
    if accumulate is None and dtype == FLOAT64.name:
        return FLOAT64
    choice = accumulate if accumulate is not None else contract.product(product).accumulate
    return accumulation_format(choice, dtype)


def disjoint(out_dhw: Iterable[int], in_dhw: Iterable[int]) -> bool:
    """Every axis tiles exactly (in % out == 0): one term per element, no atomics (the
    kernel's isAtomicAdd = 0). Upsampling never tiles (in < out gives in % out = in)."""
    return all(o > 0 and i % o == 0 for o, i in zip(out_dhw, in_dhw, strict=True))


def window_volumes(p: Plans) -> np.ndarray:
    """The distinct window volumes kd * kh * kw of a case (int64, sorted)."""
    sizes = [np.unique(plan.sizes) for plan in p]
    return np.unique(np.multiply.outer(np.multiply.outer(sizes[0], sizes[1]), sizes[2]))


def product_path(product: str, dtype: str, out_dhw: tuple[int, int, int],
                 in_dhw: tuple[int, int, int], accumulate: str | None = None,
                 window_plans: Plans | None = None) -> NumericPath | None:
    """The path `product` takes for a valid call of `dtype` with gradOutput (Do, Ho, Wo) and
    self (D, H, W); None where no path is judged (a non-float dtype, or a non-global call on
    a product without a windowed kernel; DOUBLE with another output than 1x1x1)."""
    if dtype not in JUDGED_FORMATS:
        return None
    fmt = judged_format(dtype)
    out_dhw = tuple(int(v) for v in out_dhw)  # type: ignore[assignment]
    in_dhw = tuple(int(v) for v in in_dhw)  # type: ignore[assignment]
    if fmt is FLOAT64 and out_dhw != (1, 1, 1):
        return None  # no kernel computes it: 161002, or unspecified (contract-3d.md §5)
    acc = resolve_accumulate(product, dtype, accumulate)
    rules = contract.product(product)
    if out_dhw == (1, 1, 1):
        n = math.prod(in_dhw)
        # DOUBLE: the fill's float scalar, widened exactly, is the only narrow rounding;
        # scale_error takes the larger of it and an exact double factor's
        eps = scale_error([n], fmt)
        scale_fmt = FLOAT32 if fmt is FLOAT64 else fmt
        note = None
        if fmt is not FLOAT32 and n > 1:
            note = (f"within budget only because of the 1x1x1 path (scale 1/(D*H*W) = 1/{n} "
                    f"rounded to {scale_fmt.name}, relative error {eps:.3g})")
        return NumericPath(
            GLOBAL,
            f"out = gradOutput x fill(1/(D*H*W)) with the fill rounded to float32, then to "
            f"{fmt.name}; one rounding of the product",
            acc, 0, scale_fmt, eps, note,
        )
    if rules.global_only or rules.no_windowed_kernel:
        return None
    p = window_plans if window_plans is not None else plans(out_dhw, in_dhw)
    eps = scale_error_of(tuple(int(v) for v in window_volumes(p)), FLOAT32)
    if disjoint(out_dhw, in_dhw):
        return NumericPath(
            DISJOINT,
            f"windows tile the input: one term g * fl32(1/(kd*kh*kw)) per element, one "
            f"round-to-nearest-even to {fmt.name}",
            acc, 1, FLOAT32, eps,
        )
    return NumericPath(
        ATOMIC,
        f"terms g * fl32(1/(kd*kh*kw)) added with atomics in {acc.name}, one "
        f"round-to-nearest-even to {fmt.name}",
        acc, 1, FLOAT32, eps,
    )


def paths(product: str, dtype: str, accumulate: str | None = None
          ) -> tuple[NumericPath | None, NumericPath]:
    """(windowed path, global path) of a product and dtype on example shapes (for a
    tolerance table): windowed = 2x2x2 over 3x3x3 (atomic on A2/A3), global = 1x1x1 over
    3x3x3. The windowed one is None where the product has none."""
    global_ = product_path(product, dtype, (1, 1, 1), (3, 3, 3), accumulate)
    if global_ is None:
        raise ValueError(f"no numeric path for dtype {dtype!r}")
    return product_path(product, dtype, (2, 2, 2), (3, 3, 3), accumulate), global_


# -- the error budget, whole arrays ----------------------------------------------------------


def budget(golden: np.ndarray, grad_output: np.ndarray, product: str, dtype: str, *,
           c: float, accumulate: str | None = None, atol: float = 0.0) -> np.ndarray:
    """Per-element budget ulp_out(|g| + E) / 2 + E of a valid case (float64, golden's
    shape), E = ((c*k + r) * u_acc + eps_scale) * m + c * k * eta_acc + atol: the rule of
    docs/tolerances.md with k from three axes. For tests and studies; the comparison
    computes the same chunk by chunk."""
    g = np.asarray(golden, dtype=np.float64)
    in_dhw = tuple(int(v) for v in g.shape[-3:])
    out_dhw = tuple(int(v) for v in np.shape(grad_output)[-3:])
    p = plans(out_dhw, in_dhw)
    path = product_path(product, dtype, out_dhw, in_dhw, accumulate, p)  # type: ignore[arg-type]
    if path is None:
        raise ValueError(f"no numeric path for {dtype} {out_dhw} on {product}")
    k = np.multiply.outer(np.multiply.outer(p[0].counts, p[1].counts),
                          p[2].counts).astype(np.float64)
    u, eta = path.accumulate.unit_roundoff, path.accumulate.smallest_subnormal
    m = backward(grad_output, in_dhw, absolute=True, window_plans=p)  # type: ignore[arg-type]
    extra = m * (c * k * u + path.extra_roundings * u + path.scale_error)
    extra += c * k * eta + atol
    with np.errstate(invalid="ignore"):
        res = half_ulp(np.abs(g) + extra, judged_format(dtype))
    res += extra
    return res


# -- the per-case model judging reads ---------------------------------------------------------


def exact_plan(path: NumericPath, fmt: FloatFormat, p: Plans, lead: int) -> ExactPlan | None:
    """Which elements the path computes exactly (aclcheck.judging.case.exactness), separable
    over D, H, W; None where nothing can be proven exact (FLOAT32 or FLOAT64 output: no
    wider accumulator is converted to it; an axis without power-of-two windows; a scale
    below the scale format's smallest subnormal). `lead`: the output's N, C axes."""
    if fmt.precision >= FLOAT32.precision:
        return None
    ok = tuple(pow2_positions(plan) for plan in p)
    if not all(v.any() for v in ok):
        return None
    area = math.prod(int(plan.sizes.max()) for plan in p)
    if area <= 0 or 1.0 / area < path.scale_format.smallest_subnormal:
        return None
    single = None
    if path.name == GLOBAL or path.accumulate is fmt:
        single = AxisTables((None,) * lead + tuple(o & (plan.counts == 1)
                                                   for o, plan in zip(ok, p, strict=True)))
    return ExactPlan(fmt, path.accumulate, AxisTables((None,) * lead + ok), single, area)


def plane_quanta(grad: np.ndarray, plan_d: object, fmt: FloatFormat) -> np.ndarray:
    """Per output plane (row, d) of a gradOutput block (rows, Do, Ho, Wo): the smallest
    quantum (largest power of two dividing every value) of the gradOutput planes od whose
    windows reach d (inf where every such value is zero or not finite)."""
    g = np.asarray(grad)
    rows, do = g.shape[0], g.shape[1]
    if g.dtype == fmt.np_dtype and fmt.bits_dtype.itemsize == 2:
        e = quantum_exponent(g, fmt).reshape(rows, do, -1).min(axis=2)
        q = np.where(e < 1 << 19, np.ldexp(1.0, np.minimum(e, 1100)), np.inf)
    else:
        q = quantum(g.astype(np.float64)).reshape(rows, do, -1).min(axis=2)
    padded = np.concatenate([q, np.full((rows, 1), np.inf)], axis=1)  # the pad slot
    index = plan_d.index  # type: ignore[attr-defined]
    return padded[:, index].min(axis=1) if index.size else np.full((rows, 0), np.inf)




@dataclass(frozen=True)
class Numerics3D:
    """The reference on a case's inputs, per block of the output's leading axes (N, C, D):
    m (the backward of |gradOutput|) and the quanta of the gradOutput planes reaching each
    output plane (n, c, d)."""

    in_dhw: tuple[int, int, int]
    fmt: FloatFormat  # the input (= output) format
    p: Plans

    def _grad(self, inputs: Mapping[str, np.ndarray], block: Block) -> np.ndarray:
        return np.asarray(inputs["grad_output"][block[:-1]] if block else inputs["grad_output"])

    @staticmethod
    def _d(block: Block) -> Block:
        return (slice(None),) * (len(block) - 1) + block[-1:] if block else ()

    def magnitudes(self, inputs: Mapping[str, np.ndarray], block: Block) -> np.ndarray:
        m = backward(self._grad(inputs, block), self.in_dhw, absolute=True,
                     window_plans=self.p)
        return m[self._d(block)]

    def quanta(self, inputs: Mapping[str, np.ndarray], block: Block) -> np.ndarray:
        g = self._grad(inputs, block)
        q = plane_quanta(g.reshape(-1, *g.shape[-3:]), self.p[0], self.fmt)
        q = q.reshape(*g.shape[:-3], q.shape[-1])
        return np.ascontiguousarray(q[self._d(block)]).reshape(-1)


#: the rows and columns of a plane: H and W
PLANE_AXES = (Axis("h", "row"), Axis("w", "column"))


def axis_names(rank: int) -> tuple[str, ...]:
    """Names of an output's axes (NCDHW or CDHW), () for other ranks."""
    return {5: ("n", "c", "d", "h", "w"), 4: ("c", "d", "h", "w")}.get(rank, ())


def numeric_model(product: str, dtype: str, grad_shape: tuple[int, ...],
                  in_dhw: tuple[int, int, int], accumulate: str | None = None
                  ) -> NumericModel | None:
    """What the comparison needs for an output of this shape (None for a dtype without a
    float format, or a call no product path computes). From raw shapes, so tests and
    studies judge arrays directly."""
    if dtype not in JUDGED_FORMATS or len(grad_shape) < 4:
        return None
    out_dhw = (int(grad_shape[-3]), int(grad_shape[-2]), int(grad_shape[-1]))
    dhw = (int(in_dhw[0]), int(in_dhw[1]), int(in_dhw[2]))
    p = plans(out_dhw, dhw)
    path = product_path(product, dtype, out_dhw, dhw, accumulate, p)
    if path is None:
        return None
    fmt = judged_format(dtype)
    lead = len(grad_shape) - 3
    return NumericModel(product, fmt, path, axis_names(lead + 3), PLANE_AXES,
                        AxisTables((None,) * lead + tuple(plan.counts for plan in p)),
                        exact_plan(path, fmt, p, lead), Numerics3D(dhw, fmt, p), p,
                        product_modes(product)[0])


def model(case: Case, accumulate: str | None = None) -> CaseModel:
    """The per-case model judging reads (see aclcheck.judging.case.model)."""
    exp = case.expectation
    numbers = None
    if exp.success:
        grad = tuple(case.tensor_desc("grad_output").shape)
        dhw = tuple(case.tensor_desc("self").shape[-3:])
        numbers = numeric_model(case.product, case.dtype, grad, (dhw[0], dhw[1], dhw[2]),
                                accumulate)
    rules = contract.PRODUCTS.get(case.product)
    return CaseModel(case, exp, rules.dtypes if rules is not None else None,
                     contract.FORMATS, numbers)


def exact_ties(product: str, dtype: str, grad: np.ndarray, golden: np.ndarray,
               accumulate: str | None = None) -> tuple[int, int]:
    """(elements proven exact, of which exact ties of the output dtype) of a valid case on
    its product's path, from its gradOutput and golden (whole arrays: small cases)."""
    g = np.asarray(golden)
    numbers = numeric_model(product, dtype, np.shape(grad),
                            (g.shape[-3], g.shape[-2], g.shape[-1]), accumulate)
    if numbers is None or g.size == 0:
        return 0, 0
    return exact_ties_of(numbers, {"grad_output": np.asarray(grad)}, g)


def rne(golden: np.ndarray, dtype: str) -> np.ndarray:
    """The golden correctly rounded to the dtype (float64): what an exact element must be."""
    return correctly_rounded(golden, judged_format(dtype))
