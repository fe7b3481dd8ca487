"""Verdicts: the closed set of answers a case can get, and the per-case record of one.

Plain data only; the runner decides verdicts, the reports render them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from aclcheck.evidence import Evidence


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
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseVerdict:
        return cls(
            case_id=data["id"],
            verdict=Verdict(data["verdict"]),
            message=data.get("message", ""),
            product=data.get("product", ""),
            dtype=data.get("dtype", ""),
            format=data.get("format", ""),
            family=data.get("family", ""),
            detail=data.get("detail", ""),
            metrics=dict(data.get("metrics", {})),
            standards=dict(data.get("standards", {})),
            notes=tuple(data.get("notes", ())),
            expected_status=data.get("expected_status"),
            actual_status=data.get("actual_status"),
            time_s=float(data.get("time_s", 0.0)),
            repro=data.get("repro", ""),
            index=int(data.get("index", -1)),
            evidence=Evidence.from_json(data.get("evidence")),
        )


def summarize(verdicts: Iterable[CaseVerdict]) -> dict[str, int]:
    """Counts per summary key ("cases", "passed", "failed", ...)."""
    items = list(verdicts)
    counts = Counter(v.verdict for v in items)
    return {key: (len(items) if verdict is None else counts.get(verdict, 0))
            for key, verdict in SUMMARY_KEYS}


def summary_line(summary: dict[str, int]) -> str:
    """`cases: 412 passed: 398 failed: 3 ...` (zero counts after `skipped` are left out)."""
    parts = []
    for key, _ in SUMMARY_KEYS:
        value = summary.get(key, 0)
        if key in ("mistrusted", "xfailed", "xpassed") and not value:
            continue
        parts.append(f"{key}: {value}")
    return " ".join(parts)
