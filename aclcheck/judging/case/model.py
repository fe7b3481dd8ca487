"""What judging needs to know about one case, built once by its operator and handed down.

`CaseModel` is the case as the judge sees it (its expectation, what its product accepts);
its `numbers` (a `NumericModel`) is what the comparison needs to judge an output's values:
the product's numeric path, the number of terms reaching each output element, which
elements the path computes exactly, and the operator's kernels on the case's inputs
(`Numerics`: the magnitudes m the error budget scales with, the inputs' quanta). Judging
reads these; it never asks the operator again, and never imports it. The operator
(aclcheck.ops) stands above judging and builds them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from aclcheck.cases.record import Case, Expectation
from aclcheck.dtypes import FloatFormat
from aclcheck.judging.case.overflow import OverflowMode

Block = tuple[slice, ...]  # a block of the leading (batch) axes of an output


@dataclass(frozen=True)
class Axis:
    """One axis of an output: its name in worst-element indices ("h"), and the word
    hints use for a line along it ("row"; None for batch axes)."""

    name: str
    word: str | None = None


@dataclass(frozen=True)
class AxisTables:
    """A per-element table of an output that is a product of per-axis vectors (terms per
    element, windows with power-of-two areas): one 1-D vector per output axis, None for
    an axis along which the table does not change (all ones / all true). The last two
    axes (rows, columns of a plane) always have a vector."""

    vectors: tuple[np.ndarray | None, ...]

    def grid(self, rows: slice = slice(None), cols: slice = slice(None)) -> np.ndarray:
        """The (rows, cols) window of one plane's table (before any plane factor)."""
        return np.multiply.outer(self.vectors[-2][rows], self.vectors[-1][cols])

    def plane_factors(self, lead: tuple[int, ...], block: Block = ()) -> np.ndarray | None:
        """Per plane of a block of the leading axes (`lead`: their sizes), in C order, the
        product of the leading vectors; None where every plane is alike."""
        vectors = self.vectors[:-2]
        if all(v is None for v in vectors):
            return None
        dtype = next(v.dtype for v in vectors if v is not None)
        table = np.ones((), dtype=dtype)
        for size, v in zip(lead, vectors, strict=True):
            table = np.multiply.outer(table, np.ones(size, dtype=dtype) if v is None else v)
        return np.asarray(table[block]).reshape(-1)

    def max(self) -> int:
        return math.prod(int(v.max()) if v is not None and v.size else 1
                         for v in self.vectors)


@dataclass(frozen=True)
class NumericPath:
    """How one product computes one case (docs/contract.md section 6), as the error budget
    and the exactness proof see it."""

    name: str  # "fp32-atomic", "matmul" or "global-1x1"
    description: str
    accumulate: FloatFormat  # format of terms and partial sums
    extra_roundings: int  # r: roundings per term beyond the accumulation's k - 1 adds
    scale_format: FloatFormat  # format the scale 1/(kh*kw) (or 1/(H*W)) is rounded to
    scale_error: float  # eps_scale: largest relative error of that rounded scale
    #: Set when the scale rounding is a product-path effect worth reporting (the scale is
    #: rounded to a 16-bit input dtype): what to say when only this term saves an element.
    scale_note: str | None = None
    #: the format the r extra roundings round to, where it is narrower than the
    #: accumulation (Atlas training/inference feed their matmuls FLOAT16 for a FLOAT32
    #: call: terms and the intermediate rounded to FLOAT16, sums in FLOAT32); None: the
    #: accumulation's own
    inner: FloatFormat | None = None
    #: each term is the input times a scale (1/(kh*kw) or a fill); False: terms are the
    #: inputs themselves (a scatter)
    scaled: bool = True

    @property
    def roundoff(self) -> float:
        """The relative error of a term's r extra roundings: r * u of the accumulation,
        or (1 + u)^r - 1 of the narrower inner format (compounded: u^2 is not small
        against the accumulation's roundoff there)."""
        if self.inner is None:
            return self.extra_roundings * self.accumulate.unit_roundoff
        return (1.0 + self.inner.unit_roundoff) ** self.extra_roundings - 1.0

    @property
    def underflow_unit(self) -> float:
        """The smallest subnormal of the narrowest format a term or a sum is rounded to:
        what a term can lose below the normal range."""
        inner = self.inner.smallest_subnormal if self.inner is not None else 0.0
        return max(self.accumulate.smallest_subnormal, inner)

    @property
    def overflow_format(self) -> FloatFormat:
        """The narrowest format on the way: where a partial sum or an intermediate may
        overflow (or saturate)."""
        if self.inner is not None and (self.inner.overflow_threshold
                                       < self.accumulate.overflow_threshold):
            return self.inner
        return self.accumulate

    @property
    def arithmetic(self) -> str:
        """How the path computes, in a few words (reports)."""
        if self.inner is None:
            return f"accumulate {self.accumulate.name}"
        return f"accumulate {self.accumulate.name}, terms rounded to {self.inner.name}"


@dataclass(frozen=True)
class ExactPlan:
    """The case-level part of the exactness proof (aclcheck.judging.case.exactness): which
    elements have only power-of-two windows, the largest such area, the formats."""

    out: FloatFormat  # output (= input) format
    acc: FloatFormat  # accumulation format
    ok: AxisTables  # bool: every window reaching the element has a pow2 area
    #: bool: ok and one term, on a path whose term rounding is the final rounding (None:
    #: not such a path)
    single: AxisTables | None
    max_area: int

    def plane_bounds(self, quanta: np.ndarray) -> np.ndarray:
        """Per plane, from the smallest quantum of the inputs reaching it (0: none): the
        bound 2**p_acc * q below which m proves an element exact (0 where no element of
        the plane can be proven)."""
        q = quanta / self.max_area  # inf: an all-zero plane
        bound = np.ldexp(np.minimum(q, self.acc.max_value), self.acc.precision)
        bound = np.minimum(bound, self.acc.max_value)
        return np.where(q >= self.acc.smallest_subnormal, bound, 0.0)


class Numerics(Protocol):
    """The operator's kernels on a case's input values (by role), per block of the
    output's leading axes."""

    def magnitudes(self, inputs: Mapping[str, np.ndarray], block: Block) -> np.ndarray:
        """m: the backward of the inputs' magnitudes on the block, float64, the output
        block's shape (the sum of the terms' magnitudes reaching each element)."""
        ...

    def quanta(self, inputs: Mapping[str, np.ndarray], block: Block) -> np.ndarray:
        """Per output plane of the block: the smallest quantum (largest power of two
        dividing every value) of the input values whose terms reach it (0: none)."""
        ...


@dataclass(frozen=True)
class NumericModel:
    """What the comparison needs to judge one output's numbers."""

    product: str
    fmt: FloatFormat  # the output's format
    path: NumericPath
    index_names: tuple[str, ...]  # names of an output index's entries (): shown as a list
    plane_axes: tuple[Axis, Axis]  # the rows and columns of an output plane (hints)
    terms: AxisTables  # k: terms reaching each output element (int64 vectors)
    exact: ExactPlan | None  # None: no element can be proven exact
    numerics: Numerics
    #: the operator's own window tables (its reference and bug models read them)
    windows: tuple[object, ...] = ()
    #: how special values are judged: the product's overflow mode (judging.case.overflow)
    overflow: OverflowMode = OverflowMode.INF_NAN


@dataclass(frozen=True)
class CaseModel:
    """A case as judging sees it, built once per case by its operator."""

    case: Case
    expectation: Expectation
    product_dtypes: tuple[str, ...] | None  # what the case's product accepts (None: unknown)
    documented_formats: tuple[str, ...]  # the formats the operator documents
    #: None: no numeric judgement (an invalid call, a dtype without a float format)
    numbers: NumericModel | None
