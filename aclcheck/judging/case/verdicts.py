"""Verdicts: the closed set of answers a case can get, and the per-case record of one.

Plain data only; the runner decides verdicts, the reports render them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from aclcheck.judging.case.evidence import Evidence
from aclcheck.judging.case.hints import Hint
from aclcheck.judging.case.magnitude import Magnitude

K = TypeVar("K", bound=Hashable)


class Clues(Protocol):
    """One failing case's diagnosis clues as its verdict carries them: made by the later
    stage (judging.diagnosis.reproduce.CaseClues), only written out here."""

    case_id: str

    def to_json(self) -> dict[str, Any]: ...


class Verdict(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"  # numbers out of tolerance
    WRONG_STATUS = "WRONG_STATUS"  # accepted an invalid call, or rejected with the wrong code
    UNIMPLEMENTED = "UNIMPLEMENTED"  # rejected a call the contract says must work
    NONDETERMINISTIC = "NONDETERMINISTIC"  # repeats differ bitwise where determinism was on
    ERROR = "ERROR"  # crashed, raised, hung, or returned the wrong shape/dtype/type
    SKIP = "SKIP"  # the implementation does not support this case
    MISTRUSTED = "MISTRUSTED"  # passed, but the case cannot discriminate (golden all zeros)
    XFAIL = "XFAIL"  # a known failure listed in an xfail file
    XPASS = "XPASS"  # listed as a known failure, but passed


#: Verdicts that make the gate fail (exit code 1).
FAILING: frozenset[Verdict] = frozenset(
    {Verdict.FAIL, Verdict.WRONG_STATUS, Verdict.UNIMPLEMENTED, Verdict.NONDETERMINISTIC,
     Verdict.ERROR}
)

#: Summary keys of the JSON report, in display order.
SUMMARY_KEYS: tuple[tuple[str, Verdict | None], ...] = (
    ("cases", None),
    ("passed", Verdict.PASS),
    ("failed", Verdict.FAIL),
    ("wrong_status", Verdict.WRONG_STATUS),
    ("unimplemented", Verdict.UNIMPLEMENTED),
    ("nondeterministic", Verdict.NONDETERMINISTIC),
    ("error", Verdict.ERROR),
    ("skipped", Verdict.SKIP),
    ("mistrusted", Verdict.MISTRUSTED),
    ("xfailed", Verdict.XFAIL),
    ("xpassed", Verdict.XPASS),
)


@dataclass(frozen=True)
class CaseVerdict:
    """Everything the reports say about one case."""

    case_id: str
    verdict: Verdict
    message: str  # one line: why
    product: str = ""
    dtype: str = ""
    format: str = ""
    family: str = ""
    detail: str = ""  # multi-line mismatch detail (worst elements, statuses)
    metrics: dict[str, Any] = field(default_factory=dict)
    standards: dict[str, bool] = field(default_factory=dict)  # shown-beside standards
    notes: tuple[str, ...] = ()
    expected_status: int | None = None
    actual_status: int | None = None
    time_s: float = 0.0
    repro: str = ""
    index: int = -1  # position in the golden file's index (orders merged shard reports)
    evidence: Evidence | None = field(default=None, compare=False)  # where errors sit (FAIL)
    #: hints at the likely bug (in `detail` as text too; codes None when read back from a
    #: report, which holds only the text)
    hints: tuple[Hint, ...] = field(default=(), compare=False)
    #: what the documentation does not decide about this call and what the implementation
    #: did (in `notes` too, as divergence_note(divergence))
    divergence: str | None = field(default=None, compare=False)
    #: its kind: the contract's codes and what the implementation did (the console's
    #: groups; not in the report: a verdict read back from one has "")
    divergence_kind: str = field(default="", compare=False)
    #: how large the errors of a FAIL are (judging.case.magnitude), in the JSON report
    magnitude: Magnitude | None = None
    #: the diagnosis evidence of a FAIL (what-if models re-judged, findings; the run's
    #: diagnosis ranks it: aclcheck.judging.diagnosis.ranking), not in the report per case
    clues: Clues | None = field(default=None, compare=False)
    #: an imported vendor case: the status its test expects, and where it comes from
    vendor_status: int | None = None
    source: str = ""

    @property
    def failing(self) -> bool:
        return self.verdict in FAILING

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.case_id,
            "verdict": self.verdict.value,
            "message": self.message,
            "product": self.product,
            "dtype": self.dtype,
            "format": self.format,
            "family": self.family,
            "expected_status": self.expected_status,
            "actual_status": self.actual_status,
            "metrics": self.metrics,
            "standards": self.standards,
            "notes": list(self.notes),
            "detail": self.detail,
            "time_s": self.time_s,
            "repro": self.repro,
            "index": self.index,
            **({"evidence": self.evidence.to_json()} if self.evidence is not None else {}),
            **({"magnitude": self.magnitude.to_json()} if self.magnitude is not None
               else {}),
            **({"diagnosis": self.clues.to_json()} if self.clues is not None else {}),
            **({"vendor_status": self.vendor_status} if self.vendor_status is not None
               else {}),
            **({"source": self.source} if self.source else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseVerdict:
        """A report entry, every field checked (reports are files anyone can edit):
        ValueError naming the first field that is not what a report writes."""
        if "id" not in data or "verdict" not in data:
            raise ValueError("'id' and 'verdict' are required")
        verdict = data["verdict"]
        if not isinstance(verdict, str) or verdict not in Verdict.__members__:
            raise ValueError(f"'verdict': not a verdict: {_shown(verdict)}")
        return cls(
            case_id=_text(data, "id", None),
            verdict=Verdict(verdict),
            message=_text(data, "message"),
            product=_text(data, "product"),
            dtype=_text(data, "dtype"),
            format=_text(data, "format"),
            family=_text(data, "family"),
            detail=_text(data, "detail"),
            metrics=_metrics(data.get("metrics", {})),
            standards=_standards(data.get("standards", {})),
            notes=_notes(data.get("notes", [])),
            expected_status=_status(data, "expected_status"),
            actual_status=_status(data, "actual_status"),
            time_s=_time(data.get("time_s", 0.0)),
            repro=_text(data, "repro"),
            index=_integer(data.get("index", -1), "index", -1, 2**62),
            evidence=Evidence.from_json(data.get("evidence")),
            magnitude=Magnitude.from_json(data.get("magnitude")),
            vendor_status=_status(data, "vendor_status"),
            source=_text(data, "source"),
            **_legacy_signals(_text(data, "detail"), _notes(data.get("notes", []))),
        )


# -- reading report format version 1 back --------------------------------------------------

#: what a documentation divergence's note starts with
DIVERGENCE = "documentation divergence: "


def divergence_note(divergence: str) -> str:
    """The note a divergence is reported with (the JSON report keeps it among the notes)."""
    return DIVERGENCE + divergence


def detail_parts(detail: str) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """(hints, worst-element lines, the rest) of a verdict's multi-line detail text.

    The one reader of aclcheck's rendered text: a report (format version 1) holds only
    the text, so reading one back and drawing its page start here. Nothing decides
    anything on it; live verdicts carry their hints as values."""
    hints, worst, rest = [], [], []
    for line in detail.splitlines():
        if line.startswith("hint: "):
            hints.append(line.removeprefix("hint: "))
        elif line.startswith("  [") or line.startswith("worst elements under"):
            if line.startswith("  ["):
                worst.append(line.strip())
        elif not line.startswith("note: "):
            rest.append(line)
    return tuple(hints), tuple(worst), "\n".join(rest)


def _legacy_signals(detail: str, notes: tuple[str, ...]) -> dict[str, Any]:
    """The signals a version-1 report keeps only as text (see detail_parts)."""
    divergence = next((n.removeprefix(DIVERGENCE) for n in notes if n.startswith(DIVERGENCE)),
                      None)
    return {"hints": tuple(Hint(None, h) for h in detail_parts(detail)[0]),
            "divergence": divergence}


# -- checks of report entries (CaseVerdict.from_json) ----------------------------------------

#: a metric value may be this large (a float beyond it is not a measurement)
_MAX_METRIC = 1e300


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def _text(data: dict[str, Any], key: str, default: str | None = "") -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise ValueError(f"{key!r}: not a text: {_shown(value)}")
    return value


def _integer(value: object, key: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{key!r}: not an integer in [{low}, {high}]: {_shown(value)}")
    return value


def _status(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    return None if value is None else _integer(value, key, -2**63, 2**63 - 1)


def _time(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0 <= float(value) <= _MAX_METRIC:
        raise ValueError(f"'time_s': not a time in seconds: {_shown(value)}")
    return float(value)


def _metrics(value: object) -> dict[str, Any]:
    """Numbers (finite), texts ("inf", "nan": how reports write them), flags or null."""
    if not isinstance(value, dict):
        raise ValueError(f"'metrics': not an object: {_shown(value)}")
    for key, item in value.items():
        number = isinstance(item, int | float) and not isinstance(item, bool)
        if number and not abs(float(item)) <= _MAX_METRIC:
            raise ValueError(f"'metrics.{key}': not a finite number: {_shown(item)}")
        if not (number or item is None or isinstance(item, str | bool)):
            raise ValueError(f"'metrics.{key}': not a number: {_shown(item)}")
    return dict(value)


def _standards(value: object) -> dict[str, bool]:
    if not isinstance(value, dict) or not all(isinstance(v, bool) for v in value.values()):
        raise ValueError(f"'standards': not an object of true/false: {_shown(value)}")
    return dict(value)


def _notes(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise ValueError(f"'notes': not a list of texts: {_shown(value)}")
    return tuple(value)


def summarize(verdicts: Iterable[CaseVerdict]) -> dict[str, int]:
    """Counts per summary key ("cases", "passed", "failed", ...)."""
    return summary_of(Counter(v.verdict for v in verdicts))  # one pass (may be on disk)


def summarize_by(verdicts: Iterable[CaseVerdict], group: Callable[[CaseVerdict], K]
                 ) -> dict[K, dict[str, int]]:
    """`summarize` of each group of verdicts (group(v): its key), in one pass that keeps
    counts only, groups in the order first seen."""
    counts: dict[K, Counter[Verdict]] = {}
    for v in verdicts:
        counts.setdefault(group(v), Counter())[v.verdict] += 1
    return {key: summary_of(c) for key, c in counts.items()}


def summary_of(counts: Counter[Verdict]) -> dict[str, int]:
    """`summarize` of verdicts already counted."""
    return {key: (counts.total() if verdict is None else counts.get(verdict, 0))
            for key, verdict in SUMMARY_KEYS}


def summary_text(summary: dict[str, int]) -> str:
    """`cases: 412 passed: 398 failed: 3 ...` (zero counts after `skipped` are left out)."""
    parts = []
    for key, _ in SUMMARY_KEYS:
        value = summary.get(key, 0)
        if key in ("mistrusted", "xfailed", "xpassed") and not value:
            continue
        parts.append(f"{key}: {value}")
    return " ".join(parts)
