"""Failure signatures: pass/fail counted by family, layout, rank, product x dtype and the
kind of each window axis, and the rules that read the pattern.

A bug shows in *which* cases fail as much as in how they fail: only non-contiguous cases
(a stride bug), only rank 3 (the rank-3 path), only H != W or Ho != Wo (an axis mix-up),
everything but divisible, global and identity windows (window bounds or divisor), only
FP16/BF16 where FP32 accumulation is promised (accumulation precision). Everything here
is pure over CaseFacts records, which the operator makes from its case records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from aclcheck.judging.diagnosis.codes import DiagnosisCode


class AxisKind(StrEnum):
    """How an adaptive window axis maps its input size I onto its output size O."""

    EMPTY = "empty"  # I or O is 0
    IDENTITY = "identity"  # O == I: windows of one element
    GLOBAL = "global"  # O == 1 < I: one window over the whole axis
    DIVISIBLE = "divisible"  # O < I, I % O == 0: equal windows that tile the axis
    NONDIVISIBLE = "nondivisible"  # O < I, I % O != 0: overlapping windows of two sizes
    UPSAMPLING = "upsampling"  # O > I: windows of one or two elements, overlapping


#: Kinds whose windows are all equal and never overlap: simple index arithmetic.
PLAIN_KINDS = frozenset({AxisKind.IDENTITY, AxisKind.GLOBAL, AxisKind.DIVISIBLE})


def axis_kind(in_size: int, out_size: int) -> AxisKind:
    if in_size <= 0 or out_size <= 0:
        return AxisKind.EMPTY
    if out_size == in_size:
        return AxisKind.IDENTITY
    if out_size == 1:
        return AxisKind.GLOBAL
    if out_size > in_size:
        return AxisKind.UPSAMPLING
    return AxisKind.DIVISIBLE if in_size % out_size == 0 else AxisKind.NONDIVISIBLE


#: Verdict values (judging.case.verdicts.Verdict) as a signature counts them.
FAILING_VALUES = frozenset({"FAIL", "WRONG_STATUS", "UNIMPLEMENTED", "NONDETERMINISTIC", "ERROR"})
PASSING = frozenset({"PASS"})
#: Count keys per verdict (the JSON summary's names).
COUNT_KEYS: dict[str, str] = {
    "PASS": "passed", "FAIL": "failed", "WRONG_STATUS": "wrong_status",
    "UNIMPLEMENTED": "unimplemented", "NONDETERMINISTIC": "nondeterministic",
    "ERROR": "error", "SKIP": "skipped", "MISTRUSTED": "mistrusted", "XFAIL": "xfailed",
    "XPASS": "xpassed",
}


@dataclass(frozen=True)
class CaseFacts:
    """What a signature groups one judged case by."""

    case_id: str
    verdict: str  # a Verdict value
    family: str
    layout: str
    rank: int
    product: str
    dtype: str
    valid: bool  # the contract says the call succeeds (numbers are judged)
    axes: tuple[tuple[str, AxisKind], ...] = ()  # (axis name, kind) per window axis
    square: bool = True  # every window axis has the same input size and output size
    accumulation: str = ""  # the accumulation the product promises for the dtype

    @property
    def failing(self) -> bool:
        return self.verdict in FAILING_VALUES

    @property
    def passing(self) -> bool:
        return self.verdict in PASSING


Counts = dict[str, int]
#: Facts with how many judged cases have them: what signatures and rules read. A run
#: keeps each distinct facts once (memory independent of the case count); a plain
#: sequence of facts (a case each) reads as facts counted once each.
FactCounts = Mapping[CaseFacts, int]


def tally(facts: Iterable[CaseFacts] | FactCounts) -> FactCounts:
    """Facts counted (a FactCounts as it is), in the order each first appears."""
    return facts if isinstance(facts, Mapping) else Counter(facts)


def _where(facts: FactCounts, keep: Callable[[CaseFacts], bool]) -> FactCounts:
    return {f: n for f, n in facts.items() if keep(f)}


def _total(facts: FactCounts) -> int:
    return sum(facts.values())


def _group(facts: FactCounts, key) -> dict[str, Counts]:  # noqa: ANN001
    groups: dict[str, Counter[str]] = {}
    for f, n in facts.items():
        groups.setdefault(str(key(f)), Counter())[
            COUNT_KEYS.get(f.verdict, f.verdict.lower())] += n
    return {name: {"cases": sum(c.values()), **dict(sorted(c.items()))}
            for name, c in sorted(groups.items())}


@dataclass(frozen=True)
class FailureSignature:
    """Counts per verdict by each grouping (the JSON report's summary.by_* tables)."""

    by_family: dict[str, Counts]
    by_layout: dict[str, Counts]
    by_rank: dict[str, Counts]
    by_product_dtype: dict[str, Counts]
    by_axis_kind: dict[str, dict[str, Counts]]  # axis name (and "square") -> kind -> counts

    def to_json(self) -> dict[str, object]:
        return {"by_family": self.by_family, "by_layout": self.by_layout,
                "by_rank": self.by_rank, "by_product_dtype": self.by_product_dtype,
                "by_axis_kind": self.by_axis_kind}

    def tables(self) -> dict[str, dict[str, Counts]]:
        """Every grouping as one flat table name -> group -> counts."""
        out = {"family": self.by_family, "layout": self.by_layout, "rank": self.by_rank,
               "product x dtype": self.by_product_dtype}
        for axis, kinds in self.by_axis_kind.items():
            out[axis if axis == "square" else f"axis {axis}"] = kinds
        return out


def failure_signature(facts: Iterable[CaseFacts] | FactCounts) -> FailureSignature:
    """The grouped counts of a run: by family every case; the other groupings count the
    valid calls (invalid calls are judged on their status, in their own family)."""
    counted = tally(facts)
    valid = _where(counted, lambda f: f.valid)
    axes: dict[str, dict[str, Counts]] = {}
    names = list(dict.fromkeys(name for f in valid for name, _ in f.axes))
    for i, name in enumerate(names):
        axes[name] = _group(_where(valid, lambda f, i=i: len(f.axes) > i),
                            lambda f, i=i: f.axes[i][1].value)
    if valid:
        axes["square"] = _group(valid, lambda f: "square" if f.square else "non-square")
    return FailureSignature(
        by_family=_group(counted, lambda f: f.family),
        by_layout=_group(valid, lambda f: f.layout),
        by_rank=_group(valid, lambda f: f.rank),
        by_product_dtype=_group(valid, lambda f: f"{f.product} x {f.dtype}"),
        by_axis_kind=axes,
    )


@dataclass(frozen=True)
class GroupRow:
    """One group of a table whose groups differ: some of them fail, some never do."""

    table: str
    group: str
    cases: int
    failing: int


def differing(sig: FailureSignature) -> tuple[GroupRow, ...]:
    """The rows worth showing: groups of the tables in which at least one group has
    failing cases and another has cases but none failing."""
    rows = []
    for table, groups in sig.tables().items():
        fails = {g: sum(c.get(COUNT_KEYS[v], 0) for v in FAILING_VALUES) for g, c in groups.items()}
        if not any(fails.values()) or all(fails.values()):
            continue
        for group, counts in groups.items():
            rows.append(GroupRow(table, group, counts["cases"], fails[group]))
    return tuple(rows)


def compact(rows: Sequence[GroupRow]) -> tuple[tuple[str, str, str], ...]:
    """One line per grouping of `differing` rows: (grouped by, the groups with failures
    as `group failing/cases`, the groups without as `group cases`)."""
    tables: dict[str, list[GroupRow]] = {}
    for row in rows:
        tables.setdefault(row.table, []).append(row)
    return tuple(
        (name, ", ".join(f"{g.group} {g.failing}/{g.cases}" for g in groups if g.failing),
         ", ".join(f"{g.group} {g.cases}" for g in groups if not g.failing))
        for name, groups in tables.items())


# -- rules ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeldRule:
    """A rule that read the signature: its code, what it says, the cases it covers."""

    code: DiagnosisCode
    message: str
    failing: int  # failing valid cases it accounts for (all of them: rules are all-or-none)


def _share(items: FactCounts) -> str:
    fails = sum(n for f, n in items.items() if f.failing)
    return f"{fails} of {_total(items)} fail"


#: A rule "only the cases in G fail" holds when, were failures spread over the judged
#: cases at G's own failure rate, the chance that none of the cases outside G fails is
#: below this: a pattern, not a coincidence of a few cases.
CHANCE = 1e-3


def _only(failing: FactCounts, passing: FactCounts, inside,  # noqa: ANN001
          ) -> bool:
    """Every failing case is inside the predicate, and the passing cases outside it are
    too many to pass by chance (CHANCE)."""
    if not all(inside(f) for f in failing):
        return False
    n_fail = _total(failing)
    n_in = n_fail + sum(n for f, n in passing.items() if inside(f))
    n_out = sum(n for f, n in passing.items() if not inside(f))
    if not n_out or not n_in:
        return False
    rate = n_fail / n_in
    return rate >= 1.0 or (1.0 - rate) ** n_out < CHANCE


def rules(facts: Iterable[CaseFacts] | FactCounts) -> tuple[HeldRule, ...]:
    """The signature rules that hold for a run (none when nothing or everything fails)."""
    valid = _where(tally(facts), lambda f: f.valid)
    failing = _where(valid, lambda f: f.failing)
    passing = _where(valid, lambda f: f.passing)
    if not failing:
        return ()
    n = _total(failing)
    if not passing:
        return (HeldRule(DiagnosisCode.EVERY_CASE, f"every judged valid call fails "
                         f"({n} cases): the computation itself, not one path", n),)
    out: list[HeldRule] = []

    def noncontiguous(f: CaseFacts) -> bool:
        return f.layout != "contiguous"

    if _only(failing, passing, noncontiguous):
        layouts = sorted({f.layout for f in failing})
        contiguous = _where(valid, lambda f: not noncontiguous(f))
        out.append(HeldRule(DiagnosisCode.LAYOUT_STRIDE, (
            f"only non-contiguous cases fail ({', '.join(layouts)}: "
            f"{_share(_where(valid, lambda f: f.layout in layouts))}) while contiguous ones "
            f"pass ({_share(contiguous)}): strides or layout handling"), n))
    ranks = sorted({f.rank for f in failing})
    if len(ranks) == 1 and _only(failing, passing, lambda f: f.rank == ranks[0]):
        r = ranks[0]
        out.append(HeldRule(DiagnosisCode.RANK_PATH, (
            f"only rank-{r} cases fail ({_share(_where(valid, lambda f: f.rank == r))}; other "
            f"ranks: {_share(_where(valid, lambda f: f.rank != r))}): the rank-{r} path"), n))
    if _only(failing, passing, lambda f: not f.square):
        names = sorted({a for f in failing for a, _ in f.axes}, key="DHW".find)
        axes = (", ".join(names[:-1]) + " and " + names[-1]) if len(names) > 1 else "the axes"
        out.append(HeldRule(DiagnosisCode.AXIS_MIXUP, (
            f"only cases whose {axes} differ in size fail ("
            f"{_share(_where(valid, lambda f: not f.square))}; alike: "
            f"{_share(_where(valid, lambda f: f.square))}): {axes} mixed up"), n))

    def upsampling(f: CaseFacts) -> bool:
        return any(k is AxisKind.UPSAMPLING for _, k in f.axes)

    def irregular(f: CaseFacts) -> bool:
        return any(k not in PLAIN_KINDS and k is not AxisKind.EMPTY for _, k in f.axes)

    if _only(failing, passing, upsampling):
        out.append(HeldRule(DiagnosisCode.UPSAMPLING_WINDOWS, (
            f"only cases with an upsampling axis (O > I) fail "
            f"({_share(_where(valid, upsampling))}; others: "
            f"{_share(_where(valid, lambda f: not upsampling(f)))}): windows of upsampling "
            "axes"), n))
    elif _only(failing, passing, irregular):
        plain = _where(valid, lambda f: not irregular(f))
        out.append(HeldRule(DiagnosisCode.WINDOW_BOUNDS_OR_DIVISOR, (
            f"divisible, global and identity windows pass ({_share(plain)}); only "
            f"nondivisible or upsampling axes fail "
            f"({_share(_where(valid, irregular))}): window bounds or divisor"), n))

    def low_with_fp32(f: CaseFacts) -> bool:
        return f.dtype in ("float16", "bfloat16") and f.accumulation == "float32"

    if _only(failing, passing, low_with_fp32):
        pairs = sorted({f"{f.product} x {f.dtype}" for f in failing})
        out.append(HeldRule(DiagnosisCode.ACCUMULATION_PRECISION, (
            f"only FP16/BF16 on products that promise FP32 accumulation fail "
            f"({', '.join(pairs)}); float32 and the other products pass: accumulation "
            "precision"), n))
    families = sorted({f.family for f in failing})
    all_families = {f.family for f in valid}
    if len(families) <= 2 < len(all_families) and _only(
            failing, passing, lambda f: f.family in families):
        out.append(HeldRule(DiagnosisCode.FAMILY_ONLY, (
            f"only the {', '.join(families)} famil{'y' if len(families) == 1 else 'ies'} "
            f"fail{'s' if len(families) == 1 else ''} "
            f"({_share(_where(valid, lambda f: f.family in families))}); the other families "
            "pass: what those cases have in common (values, sizes)"), n))
    return tuple(out)
