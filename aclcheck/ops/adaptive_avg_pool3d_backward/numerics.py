"""How each product computes aclnnAdaptiveAvgPool3dBackward (docs/contract-3d.md §6), as
the error budget and the exactness proof see it.

Three paths, chosen by gradOutput's (Do, Ho, Wo) and the product:

- global-1x1x1 (every product, Do = Ho = Wo = 1): out = RN_T(g * F_T) with
  F_T = RN_T(fl32(fl64(1 / (D*H*W)))): the factor is rounded to the dtype before the
  multiply (FLOAT16: subnormal past D*H*W = 16384, zero from 2^25). One rounding of the
  product, so where F_T is exact the output is the correctly rounded golden.
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
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from aclcheck.budget import ProductPath, scale_error
from aclcheck.dtypes import (
    FLOAT32,
    FLOAT_FORMATS,
    FloatFormat,
    correctly_rounded,
    float_format,
    half_ulp,
    quantum,
    quantum_exponent,
)
from aclcheck.exactness import _pow2_rows, is_tie
from aclcheck.ops.adaptive_avg_pool3d_backward import contract
from aclcheck.ops.adaptive_avg_pool3d_backward.reference import Plans, backward, plans

#: Values --accumulate accepts besides a dtype name.
ACCUMULATE_CHOICES: tuple[str, ...] = ("float32", "input", "float16", "bfloat16")

GLOBAL = "global-1x1x1"
DISJOINT = "fp32-disjoint"
ATOMIC = "fp32-atomic"


def resolve_accumulate(product: str, dtype: str, accumulate: str | None = None) -> FloatFormat:
    """The accumulation format: the product's own (FP32) or an override ("float32",
    "input" = the dtype itself, or a compute dtype name)."""
    choice = accumulate if accumulate is not None else contract.product(product).accumulate
    key = str(choice).strip().lower()
    if key == "input":
        return float_format(dtype)
    aliases = {"fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32",
               "bf16": "bfloat16"}
    key = aliases.get(key, key)
    if key not in FLOAT_FORMATS:
        raise ValueError(f"unknown accumulation {choice!r}; valid: "
                         f"{', '.join(ACCUMULATE_CHOICES)}")
    return float_format(key)


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
                 window_plans: Plans | None = None) -> ProductPath | None:
    """The path `product` takes for a valid call of `dtype` with gradOutput (Do, Ho, Wo) and
    self (D, H, W); None where no path is judged (a non-float dtype, or a non-global call on
    a product without a windowed kernel)."""
    if dtype not in FLOAT_FORMATS:
        return None
    fmt = float_format(dtype)
    acc = resolve_accumulate(product, dtype, accumulate)
    rules = contract.product(product)
    out_dhw = tuple(int(v) for v in out_dhw)  # type: ignore[assignment]
    in_dhw = tuple(int(v) for v in in_dhw)  # type: ignore[assignment]
    if out_dhw == (1, 1, 1):
        n = math.prod(in_dhw)
        eps = scale_error([n], fmt)
        note = None
        if fmt is not FLOAT32 and n > 1:
            note = (f"within budget only because of the 1x1x1 path (scale 1/(D*H*W) = 1/{n} "
                    f"rounded to {fmt.name}, relative error {eps:.3g})")
        return ProductPath(
            GLOBAL,
            f"out = gradOutput x fill(1/(D*H*W)) with the fill rounded to float32, then to "
            f"{fmt.name}; one rounding of the product",
            acc, 0, fmt, eps, note,
        )
    if rules.global_only or rules.no_windowed_kernel:
        return None
    p = window_plans if window_plans is not None else plans(out_dhw, in_dhw)
    eps = scale_error(window_volumes(p), FLOAT32)
    if disjoint(out_dhw, in_dhw):
        return ProductPath(
            DISJOINT,
            f"windows tile the input: one term g * fl32(1/(kd*kh*kw)) per element, one "
            f"round-to-nearest-even to {fmt.name}",
            acc, 1, FLOAT32, eps,
        )
    return ProductPath(
        ATOMIC,
        f"terms g * fl32(1/(kd*kh*kw)) added with atomics in {acc.name}, one "
        f"round-to-nearest-even to {fmt.name}",
        acc, 1, FLOAT32, eps,
    )


def paths(product: str, dtype: str, accumulate: str | None = None
          ) -> tuple[ProductPath | None, ProductPath | None]:
    """(windowed path, global path) of a product and dtype on example shapes (for a
    tolerance table): windowed = 2x2x2 over 3x3x3 (atomic on A2/A3), global = 1x1x1 over
    3x3x3. The windowed one is None where the product has none."""
    return (product_path(product, dtype, (2, 2, 2), (3, 3, 3), accumulate),
            product_path(product, dtype, (1, 1, 1), (3, 3, 3), accumulate))


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
        res = half_ulp(np.abs(g) + extra, float_format(dtype))
    res += extra
    return res


# -- exactness: where the output must be the correctly rounded golden --------------------------


@dataclass(frozen=True)
class ExactAxes:
    """The case-level part of the proof, separable over D, H, W: the input positions per
    axis whose covering windows all have a power-of-two size (so every volume reaching
    an element of ok_d x ok_h x ok_w is a power of two), the largest volume, and whether
    the path's one rounding of a one-term element is the final one (the global path)."""

    out: FloatFormat
    acc: FloatFormat
    ok: tuple[np.ndarray, np.ndarray, np.ndarray]  # bool (D,), (H,), (W,)
    single_counts: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # counts == 1 per axis
    max_area: int

    def ok_grid(self) -> np.ndarray:
        """bool (D, H, W): every window reaching the element has a power-of-two volume."""
        d, h, w = self.ok
        return np.multiply.outer(np.multiply.outer(d, h), w)

    def single_grid(self) -> np.ndarray | None:
        """bool (D, H, W): ok and one term, on the global path (None on other paths)."""
        if self.single_counts is None:
            return None
        d, h, w = self.single_counts
        return self.ok_grid() & np.multiply.outer(np.multiply.outer(d, h), w)


def exact_axes(path: ProductPath, dtype: str, p: Plans) -> ExactAxes | None:
    """The proof's plan for a case, or None where nothing can be proven exact (FLOAT32
    output: no wider accumulator is converted to it; or an axis without power-of-two
    windows; or a scale below the scale format's smallest subnormal)."""
    fmt = float_format(dtype)
    if fmt is FLOAT32:
        return None
    ok = tuple(_pow2_rows(plan) for plan in p)
    if not all(v.any() for v in ok):
        return None
    area = math.prod(int(plan.sizes.max()) for plan in p)
    if area <= 0 or 1.0 / area < path.scale_format.smallest_subnormal:
        return None
    single = None
    if path.name == GLOBAL:
        single = tuple(plan.counts == 1 for plan in p)
    return ExactAxes(fmt, path.accumulate, ok, single, area)  # type: ignore[arg-type]


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


def plane_bounds(exact: ExactAxes, quanta: np.ndarray) -> np.ndarray:
    """Per output plane: the bound 2**p_acc * q / max_area below which m proves every
    term and partial sum exact in the accumulator (0 where nothing can be proven)."""
    q = quanta / exact.max_area
    bound = np.ldexp(np.minimum(q, exact.acc.max_value), exact.acc.precision)
    bound = np.minimum(bound, exact.acc.max_value)
    return np.where(q >= exact.acc.smallest_subnormal, bound, 0.0)


def proven_mask(exact: ExactAxes, m: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """bool (rows, D, H, W): elements proven exact, m the sums of magnitudes and bounds
    (rows, D) the output planes' bounds."""
    mask = np.less(m, bounds[:, :, None, None])
    mask &= exact.ok_grid()
    single = exact.single_grid()
    if single is not None:
        mask |= single
    return mask


def exact_ties(product: str, dtype: str, grad: np.ndarray, golden: np.ndarray,
               accumulate: str | None = None) -> tuple[int, int]:
    """(elements proven exact, of which exact ties of the output dtype) of a valid case on
    its product's path (whole arrays: for `aclcheck inspect --ties` and the suite docs)."""
    if dtype not in ("float16", "bfloat16") or golden.size == 0 or np.size(grad) == 0:
        return 0, 0
    g = np.asarray(golden, dtype=np.float64)
    in_dhw = tuple(int(v) for v in g.shape[-3:])
    grad = np.asarray(grad)
    out_dhw = tuple(int(v) for v in grad.shape[-3:])
    p = plans(out_dhw, in_dhw)
    path = product_path(product, dtype, out_dhw, in_dhw, accumulate, p)  # type: ignore[arg-type]
    exact = None if path is None else exact_axes(path, dtype, p)
    if exact is None:
        return 0, 0
    rows = math.prod(grad.shape[:-3])
    g3 = grad.reshape(rows, *out_dhw)
    m = backward(g3, in_dhw, absolute=True, window_plans=p)  # type: ignore[arg-type]
    bounds = plane_bounds(exact, plane_quanta(g3, p[0], exact.out))
    flat = g.reshape(rows, *in_dhw)[proven_mask(exact, m, bounds)]
    flat = flat[np.isfinite(flat)]
    return int(flat.size), int(np.count_nonzero(is_tie(flat, exact.out)))


def rne(golden: np.ndarray, dtype: str) -> np.ndarray:
    """The golden correctly rounded to the dtype (float64): what an exact element must be."""
    return correctly_rounded(golden, float_format(dtype))
