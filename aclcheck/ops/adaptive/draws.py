"""What the adaptive-pooling operators' seeded families share: the draws of their small
shapes (leading dims, a random distribution, an overlapping (in, out) pair), a drawn call
and the case it makes, the stable ordinal a count-1 suite rotates its variants on, and the
invalid-call family built from the contract's rules. Each operator's families.py keeps
only what differs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from aclcheck.cases import derive_seed
from aclcheck.ops.adaptive.record import PoolingRecord

#: The vendor suites' random distributions, which most families draw from.
RANDOM_DISTS: tuple[str, ...] = ("normal", "uniform", "small", "outliers")


@dataclass(frozen=True)
class Draw:
    """A drawn call: self's and gradOutput's shapes, gradOutput's value distribution and
    the tensors' memory layout."""

    self_shape: tuple[int, ...]
    grad_shape: tuple[int, ...]
    distribution: str = "uniform"
    layout: str = "contiguous"

    @classmethod
    def of(cls, lead: tuple[int, ...], ins: tuple[int, ...], outs: tuple[int, ...],
           distribution: str = "uniform", layout: str = "contiguous") -> Draw:
        """The draw of leading dims `lead` and spatial sizes `ins` (self) and `outs`
        (gradOutput)."""
        return cls(lead + tuple(ins), lead + tuple(outs), distribution, layout)


#: (product, dtype, format, label, self shape, grad shape, distribution, layout) -> id
MakeId = Callable[..., str]
#: an operator's record class
R = TypeVar("R", bound=PoolingRecord)


def drawn_case(case_type: type[R], make_id: MakeId, family: str, label: str, product: str,
               dtype: str, fmt: str, seed: int, d: Draw) -> R:
    """The record of a drawn call, named by its slot, its label and what was drawn."""
    cid = make_id(product, dtype, fmt, label, d.self_shape, d.grad_shape, d.distribution,
                  d.layout)
    return case_type(cid, family, product, dtype, fmt, d.self_shape, d.grad_shape, seed,
                     d.distribution, d.layout)


def lead(rng: np.random.Generator, rank: int, full_rank: int, most_c: int = 4,
         most_n: int = 2) -> tuple[int, ...]:
    """Leading dims: (N, C) at the operator's full rank, (C,) one below; C in 1..most_c,
    N in 1..most_n (C drawn first)."""
    c = int(rng.integers(1, most_c + 1))
    return (int(rng.integers(1, most_n + 1)), c) if rank == full_rank else (c,)


def random_dist(rng: np.random.Generator) -> str:
    return str(rng.choice(RANDOM_DISTS))


def nondiv_pair(rng: np.random.Generator, lo: int, hi: int) -> tuple[int, int]:
    """(in, out) with 1 < out < in and in % out != 0: overlapping windows."""
    while True:
        n = int(rng.integers(lo, hi + 1))
        o = int(rng.integers(2, n)) if n > 2 else 1
        if n % o:
            return n, o


def rank_for(implied: int | None, full_rank: int, below: bool, p_full: float,
             rng: np.random.Generator) -> int | None:
    """The rank a family's case takes: one below the full rank for a family about that
    rank (`below`; None where the format implies the full rank), else the format's rank,
    else the full rank with probability `p_full`."""
    if below:
        return None if implied == full_rank else full_rank - 1
    if implied is not None:
        return implied
    return full_rank if rng.random() < p_full else full_rank - 1


def rotation(products: Sequence[str], dtypes: Sequence[str], formats: Sequence[str],
             product: str, dtype: str, fmt: str) -> int:
    """Stable ordinal of a (product, dtype, format) combination: families that rotate over
    variants rotate on index + this, so a count-1 suite covers every variant across its
    combinations instead of repeating variant 0 everywhere."""
    p = list(products).index(product) if product in products else 0
    d = list(dtypes).index(dtype) if dtype in dtypes else 0
    f = list(formats).index(fmt) if fmt in formats else 0
    return f + len(formats) * (d + len(dtypes) * p)


@dataclass(frozen=True)
class Rule:
    """An invalid-call recipe: a name and the field overrides that break the call
    (self's and gradOutput's shapes, the dtype, the format -> overrides).

    per_dtype: probed once in each dtype the product supports (an adapter lacking one
    dtype still gets the probe in the others); False for recipes that set the dtype.
    products: where the recipe applies (None: everywhere).
    """

    name: str
    make: Callable[[tuple[int, ...], tuple[int, ...], str, str], dict]
    per_dtype: bool = True
    products: tuple[str, ...] | None = None


def other_dtype(d: str) -> str:
    """A compute dtype other than `d` (a dtype-mismatch probe)."""
    return "float32" if d != "float32" else "float16"


def recipes(rules: Sequence[Rule], product: str, supported: Sequence[str],
            lacking: Sequence[str], formats: Sequence[str], index: int,
            self_shape: tuple[int, ...], grad_shape: tuple[int, ...]
            ) -> list[tuple[str, str, str, dict]]:
    """(rule name, dtype, format, overrides) of one product's invalid family: each rule
    that applies once per supported dtype (once for rules that set the dtype; formats
    rotate), then one probe per selected dtype the product lacks."""
    out: list[tuple[str, str, str, dict]] = []
    if supported:
        applying = [r for r in rules if r.products is None or product in r.products]
        for k, rule in enumerate(applying):
            probed = supported if rule.per_dtype else [supported[(k + index) % len(supported)]]
            for j, d in enumerate(probed):
                f = formats[(k + j + index) % len(formats)]
                out.append((rule.name, d, f, rule.make(self_shape, grad_shape, d, f)))
    for k, d in enumerate(lacking):
        out.append((f"dtype_{d}", d, formats[(k + index) % len(formats)], {}))
    return out


@dataclass(frozen=True)
class InvalidFamily(Generic[R]):
    """An operator's invalid-call family: its rules, its record and ids, the rank and
    format of its probes, and the tag its seeds are derived under."""

    rules: Sequence[Rule]
    case_type: type[R]
    make_id: MakeId
    format_rank: Mapping[str, int | None]
    full_rank: int
    default_format: str
    seed_tag: str


def invalid_cases(family: InvalidFamily[R], product: str, product_dtypes: Sequence[str],
                  dtypes: Sequence[str], formats: Sequence[str], index: int,
                  suite_seed: int, self_shape: tuple[int, ...],
                  grad_shape: tuple[int, ...]) -> list[R]:
    """The invalid-call family of one product (which has `product_dtypes`): each rule once
    per selected dtype the product supports (once for rules that set the dtype; the
    selected formats of the full rank rotate), plus one case per selected dtype the product
    lacks; every probe starts from (self_shape, grad_shape)."""
    supported = [d for d in dtypes if d in product_dtypes] or list(product_dtypes)
    lacking = [d for d in dtypes if d not in product_dtypes]
    fmts = ([f for f in formats if family.format_rank.get(f) in (None, family.full_rank)]
            or [family.default_format])
    cases = []
    for name, d, f, changes in recipes(family.rules, product, supported, lacking, fmts,
                                       index, self_shape, grad_shape):
        seed = derive_seed(suite_seed, family.seed_tag, product, name, index)
        base = family.case_type("", "invalid", product, d, f, self_shape, grad_shape, seed,
                                "uniform")
        case = base.replace(**changes)
        cid = family.make_id(product, case.dtype, case.format, f"invalid{index}_{name}",
                             case.self_shape, case.grad_shape, case.distribution)
        cases.append(case.replace(id=cid))
    return cases
