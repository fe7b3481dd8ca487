"""From the evidence of a run's failing cases to a ranked diagnosis.

Evidence comes in three kinds (judging/diagnosis/codes.CodeKind): what-if models that
reproduce a case's output, signature rules over which cases fail, and clues about where
one case's wrong elements sit. `rank_evidence` turns them into entries ordered by strength
of evidence:

- a model counts the failing cases it reproduces; a model that only widens the error
  bound (accumulation in the input dtype) counts the cases it reproduces bit for bit plus
  those no value model explains, so a wider budget never outranks an exact account;
- entries that account for most of the failing cases (MOST) come first, models before
  findings before rules (a reproduced output is direct evidence, a finding about one
  case's wrong elements too, a pattern over cases circumstantial), then by the share
  they account for and by bit-exact reproductions; the rest follow by share;
- models that explain exactly the same cases equally well are one entry (the others
  are named as alternatives);
- a model or finding that accounts for less than MIN_SHARE of the failing cases is left
  out; nothing is said when nothing fails.

Pure over plain records; messages are rendered from the numbers by `DiagnosisEntry.message`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aclcheck.judging.case.magnitude import (
    ClassSummary,
    Magnitude,
    MagnitudeClass,
    magnitude_headline,
    summarize_magnitudes,
)
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.judging.diagnosis.codes import CodeKind, DiagnosisCode
from aclcheck.judging.diagnosis.probe_fit import Difference, Quantity, describe_difference
from aclcheck.judging.diagnosis.reproduce import CaseClues, ModelResult
from aclcheck.judging.diagnosis.signature import (
    CaseFacts,
    FactCounts,
    FailureSignature,
    GroupRow,
    HeldRule,
    differing,
    failure_signature,
    rules,
    tally,
)

#: Entries that account for fewer of the failing cases are not reported.
MIN_SHARE = 0.25
#: Entries that account for at least this share of the failing cases lead.
MOST = 0.75
#: A finding counts for a case when it accounts for at least this share of its wrong
#: elements.
FINDING_SHARE = 0.9


@dataclass(frozen=True)
class DiagnosisEntry:
    """One line of the diagnosis."""

    code: DiagnosisCode
    summary: str
    cases_explained: int
    cases_failing: int
    exact: int
    score: int  # what the ranking counted (see the module doc)
    accumulate: str | None = None  # a precision model's wider accumulation
    alternatives: tuple[DiagnosisCode, ...] = ()  # models that explain the same equally
    measured: Difference | None = None  # the probe's finding (CodeKind.MEASURED)
    calls: int = 0  # the probe calls it took (CodeKind.MEASURED)
    #: the memory layouts of the calls that measured it (CodeKind.MEASURED)
    layouts: tuple[str, ...] = ()

    @property
    def kind(self) -> CodeKind:
        return self.code.kind

    def message(self) -> str:
        n, f = self.cases_explained, self.cases_failing
        if self.kind is CodeKind.RULE:
            return self.summary
        if self.kind is CodeKind.MEASURED:
            where = f", layout {', '.join(self.layouts)}" if self.layouts else ""
            return (f"{self.summary} (in {n} of {f} failing shapes measured{where}, "
                    f"{self.calls} probe calls)")
        if self.kind is CodeKind.FINDING:
            return f"{self.summary} (in {n} of {f} failing cases)"
        if self.exact == n:
            how = "bit-exactly"
        elif self.accumulate is not None:
            how = (f"within the error bound of {self.accumulate} accumulation"
                   + (f", {self.exact} bit-exactly" if self.exact else ""))
        else:
            how = ("within the accumulation error bound"
                   + (f", {self.exact} bit-exactly" if self.exact else ""))
        also = (f" (so does {', '.join(c.value for c in self.alternatives)})"
                if self.alternatives else "")
        return f"{self.summary}: reproduces {n} of {f} failing cases {how}{also}"

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code.value, "kind": self.kind.value,
                "message": self.message(), "cases_explained": self.cases_explained,
                "cases_failing": self.cases_failing, "exact": self.exact,
                "alternatives": [c.value for c in self.alternatives],
                "summary": self.summary, "score": self.score,
                "accumulate": self.accumulate, "calls": self.calls,
                "layouts": list(self.layouts),
                "measured": None if self.measured is None else self.measured.to_json()}

    @classmethod
    def from_json(cls, data: object) -> DiagnosisEntry:
        """A report's entry (ValueError when it is not one aclcheck writes)."""
        if not isinstance(data, dict):
            raise ValueError("a diagnosis entry is not an object")
        try:
            counts = [int(data[k]) for k in ("cases_explained", "cases_failing", "exact",
                                             "score")]
            accumulate = data.get("accumulate")
            measured = data.get("measured")
            return cls(DiagnosisCode(data["code"]), str(data["summary"]), *counts,
                       None if accumulate is None else str(accumulate),
                       tuple(DiagnosisCode(c) for c in data.get("alternatives", ())),
                       None if measured is None else Difference.from_json(measured),
                       int(data.get("calls", 0)),
                       tuple(str(x) for x in data.get("layouts", ())))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a diagnosis entry: {exc}") from None


def _model_entries(cases: Sequence[CaseClues], failing: int) -> list[DiagnosisEntry]:
    explained: dict[DiagnosisCode, set[str]] = {}
    exact: dict[DiagnosisCode, set[str]] = {}
    info: dict[DiagnosisCode, ModelResult] = {}
    for case in cases:
        for m in case.explained_by:
            info.setdefault(m.code, m)
            explained.setdefault(m.code, set()).add(case.case_id)
            if m.exact:
                exact.setdefault(m.code, set()).add(case.case_id)
    by_value: set[str] = set()
    for code, ids in explained.items():
        if not info[code].precision:
            by_value |= ids
    out: list[DiagnosisEntry] = []
    groups: dict[tuple[frozenset[str], frozenset[str]], list[DiagnosisCode]] = {}
    for code, ids in explained.items():
        groups.setdefault((frozenset(ids), frozenset(exact.get(code, set()))), []).append(code)
    for (ids, hits), codes in groups.items():
        codes.sort(key=lambda c: (info[c].precision, c.value))
        m = info[codes[0]]
        score = len(hits | (ids - by_value)) if m.precision else len(ids)
        out.append(DiagnosisEntry(m.code, m.summary, len(ids), failing, len(hits), score,
                                  m.accumulate if m.precision else None, tuple(codes[1:])))
    return out


def _finding_entries(cases: Sequence[CaseClues], failing: int) -> list[DiagnosisEntry]:
    counts: dict[DiagnosisCode, int] = {}
    texts: dict[DiagnosisCode, str] = {}
    for case in cases:
        for f in case.findings:
            if f.share >= FINDING_SHARE:
                counts[f.code] = counts.get(f.code, 0) + 1
                texts.setdefault(f.code, f.text)
    return [DiagnosisEntry(code, texts[code], n, failing, n if code in EXACT_FINDINGS else 0, n)
            for code, n in counts.items()]


#: findings that reproduce every element of a case bit for bit: ranked as models are
EXACT_FINDINGS = frozenset({DiagnosisCode.CAST_ROUNDING})


_TIER = {CodeKind.MEASURED: -1, CodeKind.MODEL: 0, CodeKind.FINDING: 1, CodeKind.RULE: 2}

#: the code of each measured quantity
MEASURED_CODES = {Quantity.START: DiagnosisCode.MEASURED_WINDOW_START,
                  Quantity.END: DiagnosisCode.MEASURED_WINDOW_END,
                  Quantity.UNWRITTEN: DiagnosisCode.MEASURED_UNWRITTEN,
                  Quantity.WEIGHT: DiagnosisCode.MEASURED_WEIGHT,
                  Quantity.PLANES: DiagnosisCode.MEASURED_PLANES}


def measured_entries(found: Sequence[tuple[Difference, int, tuple[str, ...]]], shapes: int,
                     calls: int, failing: int) -> tuple[DiagnosisEntry, ...]:
    """The probe's differences (each with the number of measured shapes showing it and
    the layouts they were called in) as the diagnosis's leading entries, in the probe's
    order."""
    return tuple(DiagnosisEntry(MEASURED_CODES[d.quantity], describe_difference(d), n, shapes,
                                0, failing, measured=d, calls=calls, layouts=layouts)
                 for d, n, layouts in found)


def rank_evidence(cases: Sequence[CaseClues], rules: Iterable[HeldRule] = (),
                  failing: int | None = None) -> tuple[DiagnosisEntry, ...]:
    """The diagnosis of a run: entries by strength of evidence (see the module doc).

    cases: evidence of the failing cases whose outputs were re-judged; rules: signature
    rules that hold; failing: the run's failing cases a rule speaks of (default: len(cases)).
    """
    total = len(cases)
    entries = _model_entries(cases, total) + _finding_entries(cases, total)
    entries = [e for e in entries if total and e.score >= MIN_SHARE * total]
    n_rule = failing if failing is not None else total
    entries += [DiagnosisEntry(r.code, r.message, r.failing, n_rule, 0, r.failing)
                for r in rules]
    if not any(e.cases_failing for e in entries):
        return ()
    return tuple(sorted(entries, key=_strength))


def _strength(e: DiagnosisEntry) -> tuple[bool, int, float, int, str]:
    """Sort key of the ranking (see the module doc)."""
    if e.kind is CodeKind.MEASURED:  # measured, not inferred: ahead of every model
        return (False, -1, 0.0, 0, "")
    share = e.score / e.cases_failing if e.cases_failing else 0.0
    lead = share >= MOST
    tier = 0 if e.code in EXACT_FINDINGS else _TIER[e.kind]
    return (not lead, tier if lead else 0, -share, -e.exact, e.code.value)


def merge_entries(shards: Sequence[Sequence[DiagnosisEntry]], failed: int, failing: int
                  ) -> tuple[DiagnosisEntry, ...]:
    """The diagnosis of shards merged: a model's or finding's counts summed over the
    shards, against the merged run's FAIL cases (`failed`); a rule only when it held in
    every shard that had a diagnosis (rules are all-or-none), against every failing case
    (`failing`); ranked again."""
    shards = [s for s in shards if s]
    merged: dict[tuple[DiagnosisCode, str], DiagnosisEntry] = {}
    shapes: dict[tuple[DiagnosisCode, str], int] = {}
    for entries in shards:
        for e in entries:
            key = (e.code, e.measured.axis if e.measured is not None else "")
            shapes[key] = shapes.get(key, 0) + e.cases_failing
            was = merged.get(key)
            if was is None:
                merged[key] = e
            else:
                merged[key] = replace(
                    was, cases_explained=was.cases_explained + e.cases_explained,
                    exact=was.exact + e.exact, score=was.score + e.score,
                    calls=was.calls + e.calls,
                    layouts=tuple(sorted({*was.layouts, *e.layouts})))
    out = []
    for (code, axis), e in merged.items():
        if code.kind is CodeKind.MEASURED:  # each shard probed its own failing shapes
            out.append(replace(e, cases_failing=shapes[code, axis]))
        elif code.kind is CodeKind.RULE:
            if all(any(x.code is code for x in entries) for entries in shards):
                out.append(replace(e, cases_explained=failing, cases_failing=failing,
                                   score=failing))
        elif failed and e.score >= MIN_SHARE * failed:
            out.append(replace(e, cases_failing=failed))
    return tuple(sorted(out, key=_strength))


# -- a run's diagnosis ----------------------------------------------------------------------


@dataclass(frozen=True)
class RunDiagnosis:
    """What a run's failures say: the size of the errors, which groups fail, what
    explains them. Empty (and silent) when nothing fails."""

    magnitude: tuple[ClassSummary, ...]
    signature: FailureSignature
    differing: tuple[GroupRow, ...]
    entries: tuple[DiagnosisEntry, ...]

    @property
    def headline(self) -> str | None:
        """`gross: median 900 ULP (758x budget) on 94 % of elements of 97 cases`."""
        return magnitude_headline(self.magnitude)

    def summary_json(self) -> dict[str, Any]:
        """The JSON summary's by_* tables and magnitude classes."""
        return {**self.signature.to_json(), "magnitude": _classes_json(self.magnitude)}

    def entries_json(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.entries]

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> RunDiagnosis | None:
        """What a JSON report says about its failures (None: nothing, or a report of an
        older aclcheck or one edited past reading: not guessed at)."""
        summary = report.get("summary") or {}
        try:
            magnitude = tuple(
                ClassSummary(MagnitudeClass(c["class"]), int(c["cases"]), int(c["wrong"]),
                             int(c["elements"]), float(c["median_ulp"]),
                             float(c["median_ratio"]), float(c.get("max_ulp", 0.0)),
                             float(c.get("max_ratio", 0.0)))
                for c in summary.get("magnitude") or [])
            sig = FailureSignature(**{k: dict(summary.get(k) or {}) for k in (
                "by_family", "by_layout", "by_rank", "by_product_dtype", "by_axis_kind")})
            rows = differing(sig)
            entries = tuple(DiagnosisEntry.from_json(e) for e in report.get("diagnosis") or [])
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        if not (magnitude or rows or entries):
            return None
        return cls(magnitude, sig, rows, entries)


def _classes_json(classes: Iterable[ClassSummary]) -> list[dict[str, Any]]:
    return [{"class": s.cls.value, "cases": s.cases, "wrong": s.wrong,
             "elements": s.elements, "median_ulp": s.median_ulp,
             "median_ratio": s.median_ratio, "max_ulp": s.max_ulp,
             "max_ratio": s.max_ratio} for s in classes]


def magnitude_json(magnitudes: Iterable[Magnitude]) -> list[dict[str, Any]]:
    """The JSON summary's magnitude classes of the FAIL cases' magnitudes."""
    return _classes_json(summarize_magnitudes(magnitudes))


def diagnose(verdicts: Sequence[CaseVerdict], facts: Iterable[CaseFacts] | FactCounts,
             measured: tuple[DiagnosisEntry, ...] = ()) -> RunDiagnosis:
    """The diagnosis of a run from its verdicts (FAILs carry their evidence) and the
    signature facts of its cases (any order, or counted: a FactCounts; cases without facts
    are not grouped)."""
    magnitudes: list[Magnitude] = []
    evidence: list[CaseClues] = []
    failing = 0
    for v in verdicts:  # one pass: the verdicts may be on disk (a VerdictSpool)
        failing += v.failing
        if v.verdict is Verdict.FAIL:
            if v.magnitude is not None:
                magnitudes.append(v.magnitude)
            evidence.append(v.clues if isinstance(v.clues, CaseClues)
                            else CaseClues(v.case_id, judged=False))
    magnitude = summarize_magnitudes(magnitudes)
    counted = tally(facts)
    sig = failure_signature(counted)
    entries = rank_evidence(evidence, rules(counted), failing=failing) if failing else ()
    return RunDiagnosis(magnitude, sig, differing(sig), measured + entries)

