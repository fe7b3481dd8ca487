"""The sequence stage (issue 39): a deterministic sample of a run's valid cases, each
called again right after a deliberately chosen predecessor in the same worker, and that
answer judged beside the case's answer alone.

The stale-state check (aclcheck.running.recall) calls every case after its twin: the same
shapes and dtype. State keyed on too little shows there only when the suite's order
happens to line up: a plan cached by shape but not dtype, by gradOutput's shape but not
self's, a workspace sized by a larger call and cleared in part, a mode a FLOAT16 call
with subnormals leaves set. So the stage makes those calls on purpose (the kinds of
`Predecessor`): where exactly one of the two answers passes, the case gets the failing
one's verdict with DEPENDS_ON_EARLIER_CALLS (recall.merged), `metrics["sequence"]` names
the predecessor and the repro line makes the same sequence (--after KIND).

Predecessors are the case's record changed (Case.replace) with the operator's own values
(ops.materialize.make_inputs), valid calls per the contract, or none. Isolated runs of
fork-safe adapters make each sequence in a fresh worker (a fork), so the repro meets the
same state; --after makes its sequences before the run, in a runner of their own, so
nothing of the case comes first. In one process every earlier call's state stays.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import overload

import numpy as np

from aclcheck.cases import Case, CaseData
from aclcheck.cases.acl import SUCCESS
from aclcheck.cases.call import Capabilities, Outcome
from aclcheck.dtypes import FLOAT_FORMATS
from aclcheck.impls.base import Implementation
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.ops import operator_of
from aclcheck.ops.materialize import make_inputs
from aclcheck.options import Predecessor
from aclcheck.running import recall
from aclcheck.running.calls import CaseRunner, RunOptions
from aclcheck.running.clue_pool import case_evidence
from aclcheck.running.config import VerifyConfig
from aclcheck.running.runner import judge_first, prepare

#: the largest case (input elements) the stage calls: its `larger` predecessor has
#: 2^(spatial rank) times as many output elements
MAX_ELEMENTS = 1 << 16
#: record facts the sample spreads over: every value of the first, then of the next...
FACETS = ("dtype", "distribution", "layout", "format")
#: the value distribution of the FLOAT16 subnormal predecessor
SUBNORMAL = "subnormal"
#: the dtype of the subnormal predecessor
HALF = "float16"
#: verdicts of a case alone the stage compares with, and of its answer after a predecessor
ALONE = frozenset({Verdict.PASS, Verdict.FAIL})
AFTER = frozenset({Verdict.PASS, Verdict.FAIL, Verdict.ERROR})
#: what `repro(case_id, after)` is: VerifyConfig.repro
Repro = Callable[[str, str | None], str]


# -- which cases -----------------------------------------------------------------------------


def fits(case: Case) -> bool:
    """Whether a case can have predecessors: a valid, non-empty float call of at most
    MAX_ELEMENTS input elements, no null pointer, every tensor in the case's dtype and
    the output shaped by an input (the record's own defaults)."""
    if not case.positive or case.dtype not in FLOAT_FORMATS or case.null:
        return False
    out = case.output()
    if out.shape_of is None or getattr(case, f"{out.key}_shape"):
        return False
    descs = [case.tensor_desc(r.name) for r in case.ROLES]
    return (all(d.dtype == case.dtype and math.prod(d.shape) > 0 for d in descs)
            and case.numel <= MAX_ELEMENTS)


def rank(case_id: str) -> int:
    """A case's place in the sample's order: a hash of its id (no clock, no order)."""
    digest = hashlib.blake2b(case_id.encode(), digest_size=8, person=b"aclcheck-seq")
    return int.from_bytes(digest.digest(), "little")


@dataclass(frozen=True)
class Candidate:
    """A case the stage may call: its rank, record and its verdict's position in the run."""

    rank: int
    case: Case
    at: int


def spread(candidates: Iterable[Candidate], count: int) -> list[Candidate]:
    """Up to `count` candidates, best-ranked first among those that bring a value of a
    FACET none chosen has (every dtype first, then every distribution, ...), then by
    rank; in the run's order."""
    ordered = sorted(candidates, key=lambda c: c.rank)
    chosen: dict[int, Candidate] = {}
    seen: dict[str, set[str]] = {f: set() for f in FACETS}
    for facet in (*FACETS, None):
        for c in ordered:
            if len(chosen) >= count:
                break
            if c.at not in chosen and (facet is None or getattr(c.case, facet)
                                       not in seen[facet]):
                chosen[c.at] = c
                for f in FACETS:
                    seen[f].add(getattr(c.case, f))
    return sorted(chosen.values(), key=lambda c: c.at)


class Sample:
    """The cases the stage calls, offered as a run's verdicts come: the best-ranked case
    of each combination of FACETS values and the `count` best-ranked are kept (memory
    bounded by those values and `count`, not the case count), `spread` picks `count` of
    them. count None: every case offered whose id is in `only` (--after)."""

    def __init__(self, count: int | None, only: AbstractSet[str] | None = None) -> None:
        self.count, self.only = count, only
        self._best: dict[tuple[str, ...], Candidate] = {}
        self._top: list[tuple[int, int, Candidate]] = []  # (-rank, at, c): a heap
        self._every: list[Candidate] = []

    @classmethod
    def of(cls, config: VerifyConfig, early: Mapping[str, Sequenced]) -> Sample:
        """The sample of a run: none for stored results, --after's cases (`early`), or
        --sequences N."""
        if config.results is not None:
            return cls(0)
        if config.after is not None:
            return cls(None, frozenset(early))
        return cls(config.sequences)

    def offer(self, case: Case, at: int, alone: CaseVerdict) -> None:
        """A judged case (`at`: its verdict's position in the run's verdicts)."""
        if self.count == 0 or alone.verdict not in ALONE or (
                self.only is not None and case.id not in self.only) \
                or alone.metrics.get("recall") == recall.Recall.DEPENDS.value \
                or not fits(case):
            return
        c = Candidate(rank(case.id), case, at)
        if self.count is None:
            self._every.append(c)
            return
        key = tuple(str(getattr(case, f)) for f in FACETS)
        best = self._best.get(key)
        if best is None or c.rank < best.rank:
            self._best[key] = c
        item = (-c.rank, at, c)
        if len(self._top) < self.count:
            heapq.heappush(self._top, item)
        elif item > self._top[0]:
            heapq.heapreplace(self._top, item)

    @property
    def due(self) -> bool:
        """Whether the stage has calls to make (--after made its own before the run)."""
        return bool(self.count) and bool(self._best)

    def chosen(self) -> list[Candidate]:
        """The cases the stage calls, in the run's order."""
        if self.count is None:
            return list(self._every)
        kept = {c.at: c for c in self._best.values()}
        kept.update((c.at, c) for _, _, c in self._top)
        return spread(kept.values(), self.count)


# -- the predecessors ------------------------------------------------------------------------


def predecessor(case: Case, kind: Predecessor) -> Case | None:
    """The valid call of `kind` made right before `case` (its id: the case's and the
    kind), or None where the operator and product allow none."""
    for candidate in _candidates(case, kind):
        candidate = candidate.replace(id=f"{case.id}~{kind.value}")
        if candidate.expected_status == SUCCESS and candidate.numel > 0:
            return candidate
    return None


def _candidates(case: Case, kind: Predecessor) -> Iterator[Case]:
    rules = operator_of(case).products.get(case.product)
    floats = [d for d in (rules.dtypes if rules is not None else ()) if d in FLOAT_FORMATS]
    if kind is Predecessor.OTHER_DTYPE:  # the narrowest: its plan or buffer shows most
        others = sorted((d for d in floats if d != case.dtype),
                        key=lambda d: FLOAT_FORMATS[d].precision)
        yield from (case.reshaped(dtype=d) for d in others)
    elif kind is Predecessor.FP16_SUBNORMALS:
        if HALF in floats and case.dtype != HALF and SUBNORMAL in case.DISTRIBUTIONS:
            yield case.reshaped(all_values=True, dtype=HALF, distribution=SUBNORMAL)
    else:
        spatial = _spatial(case)
        if kind is Predecessor.OTHER_SELF:  # smaller (growth is `larger`'s), else larger
            steps = [tuple(s - 1 if s > 1 else s + 1 for s in spatial),
                     tuple(s + 1 for s in spatial)]
        else:
            steps = [tuple(2 * s for s in spatial), tuple(3 * s for s in spatial)]
        yield from (_resized(case, sizes) for sizes in steps if sizes != spatial)


def _shaping(case: Case) -> str:
    """The input role whose shape the output takes (the forward's input)."""
    role = case.output().shape_of
    assert role is not None  # fits() saw to it
    return role


def _spatial(case: Case) -> tuple[int, ...]:
    rank_ = operator_of(case).spatial_rank
    return tuple(case.tensor_desc(_shaping(case)).shape[-rank_:])


def _resized(case: Case, spatial: tuple[int, ...]) -> Case:
    """The case with the shaping input's spatial sizes replaced (the others kept)."""
    role = case.role(_shaping(case))
    shape = case.tensor_desc(role.name).shape
    return case.reshaped(**{f"{role.key}_shape": shape[:len(shape) - len(spatial)] + spatial})


# -- the calls ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sequenced:
    """A case's answer after its `kind` predecessor, judged."""

    kind: Predecessor
    verdict: CaseVerdict


def answered(outcome: Outcome) -> bool:
    """Whether a call came back with an array (the sequence took place)."""
    return (outcome.crashed is None and outcome.raised is None and outcome.skipped is None
            and outcome.status in (None, SUCCESS) and isinstance(outcome.output, np.ndarray))


def after(runner: CaseRunner, data: CaseData, kind: Predecessor, caps: Capabilities
          ) -> Sequenced | None:
    """The case called right after its `kind` predecessor, one worker (a fresh fork where
    one is a fork away), its answer judged (a FAIL with its diagnosis evidence). None:
    no such predecessor, the adapter runs neither call, or the predecessor did not
    answer with an array (what followed it is not that sequence)."""
    pred = predecessor(data.case, kind)
    if pred is None:
        return None
    inputs = dict(zip((r.name for r in pred.inputs()), make_inputs(pred), strict=True))
    before = prepare(runner, CaseData(pred, inputs, None), caps)
    prepared = prepare(runner, data, caps)
    if isinstance(before, CaseVerdict) or isinstance(prepared, CaseVerdict):
        return None
    if runner.isolate and runner.impl.fork_safe:
        runner.isolated().recycle()  # nothing but the predecessor comes first
    if not answered(runner.call(before.call)):
        return None
    outcome = runner.call(prepared.call)
    verdict = judge_first(runner, prepared, outcome, caps)
    if verdict.verdict not in AFTER:
        return None
    if verdict.verdict is Verdict.FAIL and isinstance(outcome.output, np.ndarray):
        verdict = replace(verdict, clues=case_evidence(data, outcome.output))
    return Sequenced(kind, verdict)


def first(config: VerifyConfig, adapter: Implementation, opts: RunOptions,
          cases: Iterable[Case], load: Callable[[Case], CaseData]) -> dict[str, Sequenced]:
    """--after KIND: each selected case that fits, called right after its predecessor of
    that kind before the run (so nothing of its own comes first; isolated: in a worker
    of its own), judged; by case id. Empty without --after."""
    if config.after is None or config.results is not None:
        return {}
    kind = Predecessor(config.after)
    found: dict[str, Sequenced] = {}
    with CaseRunner(adapter, opts) as runner:
        caps = Capabilities.of(adapter)
        for case in cases:
            if fits(case) and (seq := after(runner, load(case), kind, caps)) is not None:
                found[case.id] = seq
    return found


def merged(alone: CaseVerdict, seq: Sequenced, repro: Repro) -> CaseVerdict | None:
    """The case's verdict where exactly one of its answers (alone, after the predecessor)
    passes: recall.merged's (the failing one, DEPENDS_ON_EARLIER_CALLS), the kind in
    `metrics["sequence"]` and, where the answer after it fails, a repro that makes the
    sequence. None where both pass or both fail."""
    if recall.classify(alone, seq.verdict) is not recall.Recall.DEPENDS:
        return None
    verdict = recall.merged(alone, seq.verdict)
    line = repro(alone.case_id, seq.kind.value) if alone.verdict is Verdict.PASS \
        else alone.repro
    return replace(verdict, index=alone.index, repro=line,
                   metrics=dict(verdict.metrics, sequence=seq.kind.value))


def stage(runner: CaseRunner | None, sample: Sample, verdicts: Sequence[CaseVerdict],
          load: Callable[[Case], CaseData], repro: Repro,
          early: Mapping[str, Sequenced]) -> dict[int, CaseVerdict]:
    """The verdicts the stage changes, by position in `verdicts`: each chosen case after
    each kind of predecessor until one answer differs in passing from its answer alone
    (`early`: --after's answers, made before the run; `runner`: None when no call is
    due). Kind by kind over the cases, so a case's own call (a plan it cached) never
    comes right before its next predecessor, even in one process."""
    changes: dict[int, CaseVerdict] = {}
    chosen = sample.chosen()
    for c in chosen:
        if c.case.id in early and (v := merged(verdicts[c.at], early[c.case.id], repro)):
            changes[c.at] = v
    if runner is None:
        return changes
    caps = Capabilities.of(runner.impl)
    pending = [c for c in chosen if c.case.id not in early]
    for kind in Predecessor:
        for c in pending:
            if c.at in changes or (seq := after(runner, load(c.case), kind, caps)) is None:
                continue
            if (v := merged(verdicts[c.at], seq, repro)) is not None:
                changes[c.at] = v
    return changes


class Changed(Sequence[CaseVerdict]):
    """A run's verdicts with the stage's changes (by position) in place: a view, so an
    on-disk spool stays on disk."""

    def __init__(self, base: Sequence[CaseVerdict], changes: Mapping[int, CaseVerdict]
                 ) -> None:
        self.base, self.changes = base, changes

    def __len__(self) -> int:
        return len(self.base)

    @overload
    def __getitem__(self, i: int) -> CaseVerdict: ...

    @overload
    def __getitem__(self, i: slice) -> list[CaseVerdict]: ...

    def __getitem__(self, i: int | slice) -> CaseVerdict | list[CaseVerdict]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        k = i + len(self) if i < 0 else i
        return self.changes.get(k) or self.base[i]

    def __iter__(self) -> Iterator[CaseVerdict]:
        for k, v in enumerate(self.base):
            yield self.changes.get(k, v)


def with_changes(verdicts: Sequence[CaseVerdict], changes: Mapping[int, CaseVerdict]
                 ) -> Sequence[CaseVerdict]:
    """`verdicts`, or a view of them with the stage's changes."""
    return Changed(verdicts, changes) if changes else verdicts
