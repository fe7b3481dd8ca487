"""Cases: the frozen record that describes one call, and how to make its tensors.

A Case is small plain data (shapes, dtypes, formats, layout, value distribution, seed);
`make_tensors` turns it into bit-identical arrays on any machine, in any order, because
every random draw comes from generators seeded by the case's own seed alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aclcheck import contract
from aclcheck.arrays import ResultBuffers
from aclcheck.contract import Call, Expectation, TensorDesc
from aclcheck.dtypes import FLOAT_FORMATS, NUMPY_DTYPES, dtype_tag, round_to
from aclcheck.layouts import LAYOUT_TAGS, StridedTensor, place
from aclcheck.reference import backward, spread_plan
from aclcheck.ties import tie_grad

#: Value distributions. The first four are the vendor suites' random ones; the rest are
#: special-purpose (exact golden, IEEE special values, overflow edge).
DISTRIBUTIONS: tuple[str, ...] = (
    "normal",
    "uniform",
    "small",
    "outliers",
    "exact-int",
    "special",
    "inf-fill",
    "nan-fill",
    "subnormal",
    "near-max",
    "ones",
    "ties",
)



def expected_output(case: Case) -> tuple[np.dtype, tuple[int, ...]]:
    """The dtype and shape of the output a call of `case` must return: the judge accepts
    no other, and an isolated worker sends the bytes of no other array."""
    return (np.dtype(NUMPY_DTYPES[case.dtype]),
            tuple(int(d) for d in case.tensor_desc("out").shape))




def shape_tag(shape: tuple[int, ...]) -> str:
    """n2c3h17w9 for 4-D, c3h17w9 for 3-D, d5x6 for other ranks."""
    if len(shape) == 4:
        return "n{}c{}h{}w{}".format(*shape)
    if len(shape) == 3:
        return "c{}h{}w{}".format(*shape)
    return "d" + "x".join(str(d) for d in shape)


def derive_seed(suite_seed: int, *key: object) -> int:
    """A 63-bit case seed from the suite seed and a key naming the case's place in the
    suite (family, product, dtype, format, index): independent of order and sharding."""
    digest = hashlib.blake2b("|".join(map(str, key)).encode(), digest_size=8).digest()
    h = int.from_bytes(digest, "little")
    seq = np.random.SeedSequence(entropy=int(suite_seed), spawn_key=(h & 0xFFFFFFFF, h >> 32))
    lo, hi = seq.generate_state(2, dtype=np.uint32)
    return (int(hi) << 32 | int(lo)) & (2**63 - 1)


@dataclass(frozen=True)
class Case:
    """One call of the operator, fully described. Per-tensor fields left None take the
    case's main dtype / format / self shape; `null` lists tensors passed as null pointers."""

    id: str
    family: str
    product: str
    dtype: str
    format: str
    self_shape: tuple[int, ...]
    grad_shape: tuple[int, ...]
    seed: int
    distribution: str = "normal"
    layout: str = "contiguous"
    out_shape: tuple[int, ...] | None = None
    grad_dtype: str | None = None
    self_dtype: str | None = None
    out_dtype: str | None = None
    grad_format: str | None = None
    self_format: str | None = None
    out_format: str | None = None
    null: tuple[str, ...] = field(default=())

    # -- effective per-tensor descriptions ------------------------------------------------

    def tensor_desc(self, name: str) -> TensorDesc:
        """The (shape, dtype, format) of grad_output / self / out as the call passes it."""
        if name == "grad_output":
            return TensorDesc(self.grad_shape, self.grad_dtype or self.dtype,
                              self.grad_format or self.format)
        if name == "self":
            return TensorDesc(self.self_shape, self.self_dtype or self.dtype,
                              self.self_format or self.format)
        if name == "out":
            return TensorDesc(self.out_shape or self.self_shape, self.out_dtype or self.dtype,
                              self.out_format or self.format)
        raise KeyError(name)

    def call(self) -> Call:
        descs = {n: (None if n in self.null else self.tensor_desc(n))
                 for n in contract.TENSOR_NAMES}
        return Call(self.product, descs["grad_output"], descs["self"], descs["out"])

    @property
    def expectation(self) -> Expectation:
        return contract.expected_status(self.call())

    @property
    def expected_status(self) -> int:
        return self.expectation.status

    @property
    def positive(self) -> bool:
        """A call the contract says must succeed (and so has a golden)."""
        return self.expectation.success

    @property
    def out_written(self) -> bool:
        """False where the contract says out is not written (empty gradOutput)."""
        return math.prod(self.grad_shape) > 0

    @property
    def numel(self) -> int:
        return math.prod(self.self_shape) + math.prod(self.grad_shape)

    # -- record (plain dict) round-trip --------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """Plain JSON-able dict of every field: enough to regenerate the case."""
        rec = dataclasses.asdict(self)
        for key, value in rec.items():
            if isinstance(value, tuple):
                rec[key] = list(value)
        return rec

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> Case:
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in rec.items():
            if key not in names:
                continue
            if key in ("self_shape", "grad_shape", "out_shape", "null") and value is not None:
                value = tuple(int(v) if key != "null" else str(v) for v in value)
            kwargs[key] = value
        kwargs["seed"] = int(kwargs["seed"])
        return cls(**kwargs)

    def replace(self, **changes: Any) -> Case:
        return dataclasses.replace(self, **changes)


def make_id(
    product: str,
    dtype: str,
    fmt: str,
    label: str,
    self_shape: tuple[int, ...],
    grad_shape: tuple[int, ...],
    distribution: str,
    layout: str = "contiguous",
) -> str:
    """Readable, stable id, e.g. a2-bf16-NCHW-nondiv0-n2c3h17w9-o5x4-normal."""
    tag = contract.PRODUCTS[product].tag if product in contract.PRODUCTS else product
    out_hw = "x".join(str(d) for d in grad_shape[-2:])
    parts = [tag, dtype_tag(dtype), fmt, label, shape_tag(self_shape), f"o{out_hw}", distribution]
    if LAYOUT_TAGS.get(layout):
        parts.append(LAYOUT_TAGS[layout])
    return "-".join(parts)


# -- values ----------------------------------------------------------------------------


def _random_floats(rng: np.random.Generator, shape: tuple[int, ...], dist: str,
                   dtype: str) -> np.ndarray:
    """float64 values of one of the random distributions (before rounding to dtype)."""
    n = math.prod(shape)
    if dist == "uniform":
        return rng.uniform(-5.0, 5.0, n).reshape(shape)
    if dist == "small":
        return rng.uniform(-1e-3, 1e-3, n).reshape(shape)
    if dist == "ones":
        return np.ones(shape)
    # normal / outliers: the vendor's parameterisation, one (mean, std) per tensor
    if rng.random() < 0.5:
        mean, std = rng.uniform(-100.0, 100.0), rng.uniform(1.0, 25.0)
    else:
        mean, std = rng.uniform(-5.0, 5.0), rng.uniform(0.1, 2.0)
    vals = rng.normal(mean, std, n)
    if dist == "outliers" and n:
        k = max(1, n // 100)
        pick = rng.choice(n, size=k, replace=False)
        vals[pick] *= 1000.0
        if dtype in FLOAT_FORMATS:  # outliers, not overflow: x1000 passes fp16's 65504
            limit = FLOAT_FORMATS[dtype].max_value / 8
            np.clip(vals, -limit, limit, out=vals)
    return vals.reshape(shape)


def _special_floats(rng: np.random.Generator, shape: tuple[int, ...], dist: str,
                    dtype: str) -> np.ndarray:
    fmt = FLOAT_FORMATS[dtype]
    n = math.prod(shape)
    if dist == "inf-fill":
        sign = 1.0 if rng.random() < 0.5 else -1.0
        return np.full(shape, sign * np.inf)
    if dist == "nan-fill":
        return np.full(shape, np.nan)
    if dist == "subnormal":
        tiny = fmt.smallest_subnormal
        return (rng.integers(-64, 65, n) * tiny).reshape(shape)
    if dist == "near-max":
        mags = rng.uniform(0.5, 1.0, n) * fmt.max_value
        return (np.where(rng.random(n) < 0.5, -1.0, 1.0) * mags).reshape(shape)
    # "special": ordinary values with each IEEE special sprinkled in
    vals = rng.uniform(-5.0, 5.0, n)
    if n:
        specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, fmt.smallest_subnormal,
                             -fmt.smallest_subnormal * 3, fmt.max_value, -fmt.max_value])
        k = min(n, max(len(specials), n // 8))
        pick = rng.choice(n, size=k, replace=False)
        vals[pick] = specials[np.arange(k) % len(specials)]
    return vals.reshape(shape)


def _exact_int_grad(rng: np.random.Generator, grad_shape: tuple[int, ...],
                    in_hw: tuple[int, int]) -> np.ndarray:
    """gradOutput with every term g / (kh * kw) a small integer, so the golden is exact."""
    ho, wo = grad_shape[-2:]
    kh = spread_plan(ho, in_hw[0]).sizes.astype(np.float64)
    kw = spread_plan(wo, in_hw[1]).sizes.astype(np.float64)
    t = rng.integers(-2, 3, math.prod(grad_shape)).reshape(grad_shape).astype(np.float64)
    return t * np.multiply.outer(kh, kw)


def tensor_values(case: Case, name: str) -> np.ndarray:
    """The logical values of grad_output or self, in that tensor's numpy dtype."""
    desc = case.tensor_desc(name)
    shape, dtype = tuple(desc.shape), desc.dtype
    stream = {"grad_output": 1, "self": 2}[name]
    rng = np.random.default_rng([case.seed, stream])
    np_dtype = NUMPY_DTYPES[dtype]
    if dtype not in FLOAT_FORMATS:
        if dtype == "float64":
            return rng.uniform(-5.0, 5.0, math.prod(shape)).reshape(shape)
        if dtype == "bool":
            return rng.integers(0, 2, math.prod(shape)).reshape(shape).astype(np.bool_)
        info = np.iinfo(np_dtype)
        lo, hi = max(info.min, -5), min(info.max, 5)
        return rng.integers(lo, hi + 1, math.prod(shape)).reshape(shape).astype(np_dtype)
    dist = case.distribution if name == "grad_output" else "uniform"
    ties = None
    if dist == "ties":  # exact rounding ties of the output dtype (aclcheck.ties)
        ties = tie_grad(rng, shape, tuple(case.self_shape[-2:]), FLOAT_FORMATS[dtype])
        dist = "ties" if ties is not None else "exact-int"  # no tie layout for this shape
    if ties is not None:
        vals = ties
    elif dist == "exact-int":
        if len(shape) >= 2 and len(case.self_shape) >= 2:
            vals = _exact_int_grad(rng, shape, tuple(case.self_shape[-2:]))
        else:
            vals = rng.integers(-2, 3, math.prod(shape)).reshape(shape).astype(np.float64)
    elif dist in ("special", "inf-fill", "nan-fill", "subnormal", "near-max"):
        vals = _special_floats(rng, shape, dist, dtype)
    else:
        vals = _random_floats(rng, shape, dist, dtype)
    with np.errstate(over="ignore"):
        return round_to(vals, FLOAT_FORMATS[dtype])


@dataclass(frozen=True)
class CaseTensors:
    """The materialised call: input tensors as laid out in memory (None = null pointer)
    and the float64 golden (None where the call must be rejected)."""

    grad_output: StridedTensor | None
    self: StridedTensor | None
    golden: np.ndarray | None


def make_inputs(case: Case) -> tuple[StridedTensor | None, StridedTensor | None]:
    """grad_output and self laid out per the case's layout (None where passed as null)."""
    tensors = []
    for name in ("grad_output", "self"):
        if name in case.null:
            tensors.append(None)
            continue
        tensors.append(place(tensor_values(case, name), case.layout))
    return tensors[0], tensors[1]


def make_tensors(case: Case, buffers: ResultBuffers | None = None) -> CaseTensors:
    """Inputs and golden of a case, bit-identical for the same record on any machine.

    buffers: where a loop over cases keeps golden memory for reuse (see ResultBuffers).
    """
    grad, self_ = make_inputs(case)
    golden = None
    if case.positive and grad is not None:
        hw = tuple(case.self_shape[-2:])
        out = buffers.take(tuple(grad.shape[:-2]) + hw) if buffers is not None else None
        golden = backward(grad.view(), hw, out=out)
        # The sign and payload of a NaN are not part of any contract and differ between
        # CPUs (x86's default NaN is negative, Arm's positive) and between vectorised and
        # scalar adds: store one canonical quiet NaN so golden bytes are the same anywhere.
        np.copyto(golden, np.nan, where=np.isnan(golden))
    return CaseTensors(grad, self_, golden)
