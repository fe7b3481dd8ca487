"""Measured against contracted (aclcheck.judging.diagnosis.probe): the differences, as data, each
fitted to a family of simple formulas over the shape's integers.

Window bounds: floor, ceil and round of i·I/O and (i+1)·I/O, their ±1 variants, the same
with another axis's sizes, and the divisible path's i·(I//O); weights: 1/(a product or a
sum of window sizes, of any axes, repeated or left out), 1, 1/(whole input); planes: q = p,
q = p + k (mod planes), q = 0. A Difference names the fitting formula, or none ("").
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from aclcheck.dtypes import FloatFormat, correctly_rounded


@dataclass(frozen=True)
class Geometry:
    """The contract's M for one shape (what the probe measures against and the fits
    compare with): window bounds per spatial axis, weight per cell."""

    axes: tuple[str, ...]  # "H", "W" (or "D", "H", "W")
    outs: tuple[int, ...]  # sizes of the linear input's spatial axes
    ins: tuple[int, ...]  # sizes of the output's spatial axes
    starts: tuple[tuple[int, ...], ...]  # per axis, per index
    ends: tuple[tuple[int, ...], ...]
    weights: np.ndarray  # float64, shape `outs`
    planes: int  # planes (leading dims flattened)


class Quantity(StrEnum):
    """Which part of M differs."""

    START = "start"  # a window's first position along an axis
    END = "end"  # a window's end (exclusive) along an axis
    UNWRITTEN = "unwritten"  # an output index whose window reaches nothing
    WEIGHT = "weight"  # the value a cell's window positions get
    PLANES = "planes"  # which output plane an input plane lands in


@dataclass(frozen=True)
class Difference:
    """One way the kernel's M differs from the contract's: `differ` of `total` rows
    (cells, planes) along `axis` ("" for weights and planes); `measured`: the formula
    that fits every measured row ("": none fits; the measured table is the evidence);
    `contract`: the contract's formula."""

    quantity: Quantity
    axis: str
    differ: int
    total: int
    measured: str
    contract: str
    rows: tuple[int, ...] = ()  # the first differing rows (indices), for the report
    #: other formulas that fit as well on this shape (its sizes cannot tell them apart)
    others: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"quantity": self.quantity.value, "axis": self.axis, "differ": self.differ,
                "total": self.total, "measured": self.measured, "contract": self.contract,
                "rows": list(self.rows), "others": list(self.others)}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Difference:
        return cls(Quantity(str(data["quantity"])), str(data["axis"]),
                   int(data["differ"]), int(data["total"]),  # type: ignore[call-overload]
                   str(data["measured"]), str(data["contract"]),
                   tuple(int(r) for r in data.get("rows") or ()),  # type: ignore[attr-defined]
                   tuple(str(x) for x in data.get("others") or ()))  # type: ignore[attr-defined]


def describe_difference(d: Difference) -> str:
    """The words of a Difference (the report's; never read back)."""
    fit = f"measured {d.measured}" if d.measured else "no simple formula fits (see the table)"
    if d.others:
        fit += f" (this shape: equally {', '.join(d.others)})"
    rows = ", ".join(str(r) for r in d.rows) + (" ..." if d.differ > len(d.rows) else "")
    if d.quantity is Quantity.PLANES:
        return (f"measured: {d.differ} of {d.total} input planes land in another output "
                f"plane: {fit} (contract: {d.contract}; planes {rows})")
    if d.quantity is Quantity.WEIGHT:
        return (f"measured: weight differs on {d.differ} of {d.total} cells: {fit} "
                f"(contract: {d.contract})")
    if d.quantity is Quantity.UNWRITTEN:
        return (f"measured: {d.differ} of {d.total} {d.axis} indices reach nothing "
                f"(indices {rows})")
    return (f"measured: window {d.quantity.value} along {d.axis} differs for {d.differ} of "
            f"{d.total} indices ({rows}): {fit} (contract: {d.contract})")


Formula = Callable[[np.ndarray], np.ndarray]

#: the other fitting formulas a Difference keeps (the shape cannot tell them apart)
MAX_OTHERS = 3


def _bound_families(axis: str, geo: Geometry, a: int, shift_first: int
                    ) -> list[tuple[str, Formula]]:
    """(name, i -> bound) over this axis's sizes and every other axis's, the simplest
    first: this axis, no ±1, the contract's shift (`shift_first`: 0 for starts, 1 for
    ends), floor/ceil/round; then the divisible path's, then the other axes'."""
    ranked: list[tuple[tuple[int, int, int], str, Formula]] = []
    order = [a] + [b for b in range(len(geo.axes)) if b != a]
    for b in order:
        big, small = geo.ins[b], geo.outs[b]
        n_i, n_o = geo.axes[b], geo.axes[b] + "o"
        for shift, sh in ((0, "i"), (1, "(i+1)")):
            for rnd, fn in (("floor", lambda x, o: x // o), ("ceil", lambda x, o: -(-x // o)),
                            ("round", lambda x, o: (2 * x + o) // (2 * o))):
                for plus in (0, 1, -1):
                    name = f"{rnd}({sh}·{n_i}/{n_o})" + ("" if not plus else f"{plus:+d}")
                    rank = (b != a, plus != 0, shift != shift_first)

                    def f(i: np.ndarray, s: int = shift, fn: Callable[..., np.ndarray] = fn,
                          p: int = plus, big: int = big, small: int = small) -> np.ndarray:
                        return fn((i + s) * big, small) + p
                    ranked.append((rank, name, f))
        for shift, sh in ((0, "i"), (1, "(i+1)")):
            def g(i: np.ndarray, s: int = shift, big: int = big, small: int = small
                  ) -> np.ndarray:
                return (i + s) * max(big // small, 1)
            ranked.append(((b != a, True, True), f"{sh}·({n_i}//{n_o})", g))
    ranked.sort(key=lambda r: r[0])  # stable: floor, ceil, round within a rank
    return [(name, f) for _, name, f in ranked]


def _first(rows: np.ndarray) -> tuple[int, ...]:
    return tuple(int(r) for r in np.flatnonzero(rows)[:8])


def axis_differences(axis: str, o: int, i: int, c_start: Sequence[int], c_end: Sequence[int],
                     m_start: Sequence[int], m_end: Sequence[int], geo: Geometry, a: int
                     ) -> list[Difference]:
    """Start, end and unwritten rows of one axis that differ from the contract's."""
    cs, ce = np.asarray(c_start), np.asarray(c_end)
    ms, me = np.asarray(m_start), np.asarray(m_end)
    written = ms >= 0
    idx = np.arange(o, dtype=np.int64)
    out = []
    for quantity, c, m, contract in ((Quantity.START, cs, ms, f"floor(i·{axis}/{axis}o)"),
                                     (Quantity.END, ce, me, f"ceil((i+1)·{axis}/{axis}o)")):
        families = _bound_families(axis, geo, a, 0 if quantity is Quantity.START else 1)
        wrong = written & (c != m)
        if not wrong.any():
            continue
        fits = [name for name, f in families
                if np.array_equal(np.clip(f(idx), 0, i)[written], m[written])
                and (quantity is Quantity.START
                     or np.all(np.clip(f(idx), 0, i)[~written] <= cs[~written]))]
        fit = fits[0] if fits else ""
        if fit and quantity is Quantity.END:  # the fitted end empties the unwritten rows
            wrong |= ~written
            written = np.ones_like(written)
        out.append(Difference(quantity, axis, int(wrong.sum()), o, fit, contract,
                              _first(wrong), tuple(fits[1:MAX_OTHERS + 1])))
    if not written.all():
        out.append(Difference(Quantity.UNWRITTEN, axis, int((~written).sum()), o, "", "",
                              _first(~written)))
    return out


def _weight_families(geo: Geometry) -> list[tuple[str, np.ndarray]]:
    """(name, weight per cell) of the weight family over the contract's window sizes."""
    rank = len(geo.axes)
    k = [np.asarray(e) - np.asarray(s) for s, e in zip(geo.starts, geo.ends, strict=True)]
    sizes = []
    for a in range(rank):
        shape = [1] * rank
        shape[a] = geo.outs[a]
        sizes.append(np.broadcast_to(k[a].reshape(shape).astype(np.float64), geo.outs))
    names = ["k" + x.lower() for x in geo.axes]
    combos = [c for n in range(rank, 0, -1)
              for c in itertools.combinations_with_replacement(range(rank), n)]
    # distinct axes first (all of them, then fewer: an axis left out), then repeats;
    # the trailing axes first
    combos.sort(key=lambda c: (len(set(c)) != len(c), -len(c), [-b for b in c]))
    out: list[tuple[str, np.ndarray]] = []
    for combo in combos:
        prod = np.prod([sizes[b] for b in combo], axis=0)
        out.append(("1/(" + "·".join(names[b] for b in combo) + ")", 1.0 / prod))
    out.append(("1/(" + "+".join(names) + ")", 1.0 / np.sum(sizes, axis=0)))
    out.append(("1", np.ones(geo.outs)))
    whole = float(np.prod(geo.ins))
    out.append(("1/(" + "·".join(geo.axes) + ")", np.full(geo.outs, 1.0 / whole)))
    ratio = float(np.prod([i / o for i, o in zip(geo.ins, geo.outs, strict=True)]))
    out.append(("1/(" + "·".join(f"({x}/{x}o)" for x in geo.axes) + ")",
                np.full(geo.outs, 1.0 / ratio)))
    return out


def weight_difference(geo: Geometry, measured: np.ndarray, expected: np.ndarray,
                      fmt: FloatFormat) -> Difference | None:
    """The cells whose measured weight is not the contract's (rounded to the format)."""
    seen = ~np.isnan(measured)
    wrong = seen & (measured != expected)
    if not wrong.any():
        return None
    families = _weight_families(geo)
    fits = [name for name, w in families
            if np.array_equal(correctly_rounded(w, fmt)[seen], measured[seen])]
    return Difference(Quantity.WEIGHT, "", int(wrong.sum()), int(seen.sum()),
                      fits[0] if fits else "",
                      "1/(" + "·".join("k" + x.lower() for x in geo.axes) + ")",
                      _first(wrong.ravel()), tuple(fits[1:MAX_OTHERS + 1]))


def plane_difference(landing: Sequence[int]) -> Difference | None:
    """Input planes not landing in their own output plane (-1: nowhere; -2: several)."""
    land = np.asarray(landing, dtype=np.int64)
    n = len(land)
    wrong = land != np.arange(n)
    if not wrong.any():
        return None
    p = np.arange(n)
    fits = [("q = 0", np.zeros(n, dtype=np.int64))]
    fits += [(f"q = p{k:+d} (mod planes)", (p + k) % n) for k in (-1, 1, -2, 2)]
    fit = next((name for name, q in fits if np.array_equal(q, land)), "")
    return Difference(Quantity.PLANES, "", int(wrong.sum()), n, fit, "q = p", _first(wrong))
