"""What a tolerance standard is: its numbers per dtype and what each means (class level),
the error it allows per element of a piece (`allowed`, pure), the running counts of one
comparison under it (`StandardTally`, filled by `count`) and the case verdict (`result`).

compare.py runs the chunked loop and never names a standard; each standard's module
(default_standard.py: aclcheck's own; standards.py: the published ones) holds its numbers
and rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, Protocol

import numpy as np

from aclcheck.dtypes import COMPUTE_DTYPES, FloatFormat
from aclcheck.judging.case.budget import BudgetModel
from aclcheck.judging.case.hints import Hint
from aclcheck.judging.case.pieces import Piece

ParamValue = float | str
Params = Mapping[str, ParamValue]


class OverrideLookup(Protocol):
    """Person-written changes of standards' parameters (aclcheck.judging.case.overrides reads
    them from TOML): what a standard asks of them."""

    def lookup(self, standard: str, dtype: str, product: str | None = None) -> Params: ...

#: float16, float32, bfloat16: every standard's rows
STANDARD_DTYPES: tuple[str, ...] = COMPUTE_DTYPES
#: a row only some standards have: an output of the 3D operator's DOUBLE calls, which its
#: code accepts (contract code); a standard without the row does not judge it
FLOAT64_ROW = "float64"


@dataclass(frozen=True)
class StandardResult:
    """Verdict of one standard: pass/fail, the fraction of elements out of tolerance,
    a one-line detail with the numbers the case rule looked at, notes and hints."""

    name: str
    passed: bool
    mismatch_ratio: float
    detail: str
    notes: tuple[str, ...] = ()
    hints: tuple[Hint, ...] = ()


def same_for_every_dtype(params: Params, dtypes: tuple[str, ...] = STANDARD_DTYPES
                         ) -> dict[str, Params]:
    return {d: dict(params) for d in dtypes}


@dataclass
class StandardTally:
    """The running counts of one comparison under one standard (a standard's own tally
    adds the sums its case rule needs)."""

    fails: int = 0  # elements out of tolerance, special-value failures included
    bad: int = 0  # special-value failures
    #: failures the standard's own hints explain (location hints would mislead)
    explained: int = 0

    def ratio(self, n: int) -> float:
        return self.fails / n if n else 0.0


@dataclass(frozen=True)
class Standard:
    """A named standard. Class level: what it checks (rule), where it comes from, its
    numbers per dtype (table) and the meaning of each parameter (help). Instance level:
    the numbers of one comparison (`params`, overrides applied), the output format and
    the case's budget model; its methods change nothing (see the module docstring)."""

    name: ClassVar[str]
    title: ClassVar[str]
    source: ClassVar[str]
    rule: ClassVar[str]
    table: ClassVar[Mapping[str, Params]]  # dtype -> parameter -> value
    help: ClassVar[Mapping[str, str]]  # parameter -> meaning
    param_names: ClassVar[tuple[str, ...]]

    params: Mapping[str, ParamValue]
    fmt: FloatFormat
    model: BudgetModel = field(repr=False)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "table" in cls.__dict__:  # freeze the published numbers
            cls.table = MappingProxyType(
                {d: MappingProxyType(dict(p)) for d, p in cls.table.items()})
        if "help" in cls.__dict__:
            cls.help = MappingProxyType(dict(cls.help))
            cls.param_names = tuple(cls.help)

    @classmethod
    def judges(cls, dtype: str) -> bool:
        """Whether the standard has numbers for outputs of `dtype`."""
        return dtype in cls.table

    @classmethod
    def dtypes(cls) -> tuple[str, ...]:
        """The dtypes it has numbers for: STANDARD_DTYPES, then its own further rows (float64)."""
        return (*STANDARD_DTYPES, *(d for d in cls.table if d not in STANDARD_DTYPES))

    @classmethod
    def params_for(cls, dtype: str, product: str | None = None,
                   overrides: OverrideLookup | None = None) -> dict[str, ParamValue]:
        """Parameters for one dtype (and product), overrides applied (most specific wins);
        ValueError for a dtype the standard has no numbers for."""
        if not cls.judges(dtype):
            raise ValueError(f"standard {cls.name} has no {dtype} numbers (its source "
                             "publishes none)")
        params = dict(cls.table[dtype])
        if overrides is not None:
            params.update(overrides.lookup(cls.name, dtype, product))
        return params

    def tally(self) -> StandardTally:
        """The counts of a new comparison."""
        return StandardTally()

    def allowed(self, ch: Piece) -> np.ndarray:
        """The error allowed at each element of the piece (float64, flat)."""
        raise NotImplementedError

    def count(self, ch: Piece, allowed: np.ndarray, tally: StandardTally) -> np.ndarray:
        """Count this piece's failures into `tally`; returns the fail mask (special
        failures included)."""
        fail = ch.with_bad(np.greater(ch.err, allowed))
        tally.fails += int(np.count_nonzero(fail))
        if ch.bad is not None:
            tally.bad += int(np.count_nonzero(ch.bad))
        return fail

    def result(self, tally: StandardTally, n: int, metrics: Mapping[str, float | int]
               ) -> StandardResult:
        """The case verdict after every piece of an n-element output."""
        raise NotImplementedError
