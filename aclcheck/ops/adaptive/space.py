"""The space of calls of an adaptive-pooling backward, for shrink and hunt.

A call is the forward's input shape (self: leading dims, then one size per spatial
axis), the output size per spatial axis (gradOutput's trailing dims), a product, dtype,
format, memory layout and value distribution. `proposals` walks it toward smaller
calls, dimension by dimension (N, C, then each spatial input size, then each output
size), smallest sizes first; `random_case` draws valid calls with divisible,
non-divisible, upsampling, global and identity windows per axis. Seeded: the same
generator draws the same calls in the same order.

The seeded case families (each operator's families.py) are sub-spaces whose draws are
the committed golden data; they read the operator's contract, not this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.layouts import LAYOUTS
from aclcheck.ops.operator import ProductRules

#: Window kinds of one axis (output size from the input size), drawn uniformly.
WINDOW_KINDS: tuple[str, ...] = ("divisible", "nondivisible", "upsampling", "global",
                                 "identity")

#: dimension name -> (role key, axis from the end) pairs it changes together
Dims = dict[str, list[tuple[str, int]]]


def _in_size(rng: np.random.Generator) -> int:
    """Mostly small sizes (fast, and where tails and overlaps show), sometimes larger."""
    return int(rng.integers(1, 21)) if rng.random() < 0.75 else int(rng.integers(21, 97))


def _out_size(rng: np.random.Generator, size: int) -> int:
    kind = WINDOW_KINDS[int(rng.integers(len(WINDOW_KINDS)))]
    if kind == "divisible":
        divisors = [d for d in range(1, size + 1) if size % d == 0]
        return int(divisors[int(rng.integers(len(divisors)))])
    if kind == "nondivisible":
        return int(rng.integers(1, size + 1))
    if kind == "upsampling":
        return int(rng.integers(size + 1, 2 * size + 2))
    return 1 if kind == "global" else size


def candidates(value: int) -> list[int]:
    """Smaller sizes to try, smallest first."""
    return sorted({v for v in (1, 2, 3, value // 4, value // 2, value - 1) if 0 < v < value})


@dataclass(frozen=True)
class AdaptiveSpace:
    """The call space of one adaptive-pooling backward operator."""

    case_type: type[Case]
    axes: tuple[str, ...]  # spatial axis names, outermost first ("H", "W")
    products: dict[str, ProductRules]
    formats_for_rank: Callable[[int], Sequence[str]]  # documented formats of a rank
    distributions: tuple[str, ...]  # what random calls draw (weighted to the first two)
    make_id: Callable[..., str]  # (product, dtype, fmt, label, self_shape, grad_shape,
    #                               distribution, layout) -> id
    #: value distributions shrink tries, simplest first
    simple_values: tuple[str, ...] = ("ones", "exact-int")
    in_key: str = "self"  # role key of the forward's input
    out_key: str = "grad"  # role key of the forward's output (the incoming gradient)

    # -- shrinking

    def dims(self, case: Case) -> Dims:
        """Each dimension of the call: the (role key, axis) pairs it sets."""
        s = len(self.axes)
        ins, outs = self._shape(case, self.in_key), self._shape(case, self.out_key)
        rank = len(ins)
        dims: Dims = {}
        if rank > s and len(outs) == rank:
            lead = ["N", "C"] if rank == s + 2 else ["C"]
            for k, name in enumerate(lead):
                axis = -rank + k
                keys = [self.in_key, self.out_key]
                if ins[axis] != outs[axis]:
                    keys = [self.in_key]  # a mismatch is the call's point: keep it
                dims[name] = [(key, axis) for key in keys]
        if rank >= s:
            for k, name in enumerate(self.axes):
                dims[name] = [(self.in_key, k - s)]
        if len(outs) >= s:
            for k, name in enumerate(self.axes):
                dims[name + "o"] = [(self.out_key, k - s)]
        return dims

    def proposals(self, case: Case) -> Iterator[Case]:
        """Smaller calls, dimension by dimension, the smallest sizes first."""
        for where in self.dims(case).values():
            key, axis = where[0]
            for value in candidates(int(self._shape(case, key)[axis])):
                yield self._with_size(case, where, value)

    def renamed(self, case: Case, label: str = "min") -> Case:
        """The case under an id that says what it is now."""
        return case.replace(id=self.make_id(
            case.product, case.dtype, case.format, label, self._shape(case, self.in_key),
            self._shape(case, self.out_key), case.distribution, case.layout))

    def _shape(self, case: Case, key: str) -> tuple[int, ...]:
        return tuple(getattr(case, f"{key}_shape"))

    def _with_size(self, case: Case, where: list[tuple[str, int]], value: int) -> Case:
        shapes = {key: list(self._shape(case, key)) for key in (self.in_key, self.out_key)}
        out = case.output().key
        override = getattr(case, f"{out}_shape")
        out_shape = list(override) if override is not None else None
        for key, axis in where:
            shapes[key][axis] = value
            if key == self.in_key and out_shape is not None \
                    and len(out_shape) == len(shapes[key]):
                out_shape[axis] = value  # an out override follows the input's size
        changes = {f"{key}_shape": tuple(shape) for key, shape in shapes.items()}
        changes[f"{out}_shape"] = tuple(out_shape) if out_shape is not None else None
        return self.renamed(case.reshaped(**changes))

    # -- hunting

    def random_case(self, rng: np.random.Generator, products: Sequence[str],
                    dtypes: Sequence[str], index: int) -> Case | None:
        """One random valid call, or None when no product offers any of the dtypes."""
        pairs = [(p, d) for p in products for d in self.products[p].dtypes
                 if not dtypes or d in dtypes]
        if not pairs:
            return None
        dists = tuple(d for d in self.distributions if d != "ties")  # ties: own shapes
        weights = np.array([4.0 if d in self.distributions[:2] else 1.0 for d in dists])
        s = len(self.axes)
        while True:
            product, dtype = pairs[int(rng.integers(len(pairs)))]
            rank = s + 2 if rng.random() < 0.7 else s + 1
            fmt_choices = self.formats_for_rank(rank)
            fmt = fmt_choices[int(rng.integers(len(fmt_choices)))]
            lead = (int(rng.integers(1, 4)), int(rng.integers(1, 9)))[-(rank - s):]
            sizes = [_in_size(rng) for _ in range(s)]
            self_shape = (*lead, *sizes)
            grad_shape = (*lead, *(_out_size(rng, n) for n in sizes))
            dist = str(rng.choice(dists, p=weights / weights.sum()))
            layout = LAYOUTS[int(rng.integers(len(LAYOUTS)))]
            case = self.case_type(  # type: ignore[call-arg]
                id=self.make_id(product, dtype, fmt, f"hunt{index}", self_shape, grad_shape,
                                dist, layout),
                family="hunt", product=product, dtype=dtype, format=fmt,
                seed=int(rng.integers(2**63)), distribution=dist, layout=layout,
                **{f"{self.in_key}_shape": self_shape, f"{self.out_key}_shape": grad_shape})
            if case.positive and not case.expectation.unspecified:
                return case
