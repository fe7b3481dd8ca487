"""The gate: exit 0 only when a correct kernel was actually judged.

`decide` turns a run's verdicts (and what else the command found) into a `Gate`: pass
or fail, and the findings behind it as records (`GateFinding`), which the CLI words at the
edge. A run passes when something was judged and nothing nonconforming was:

  * nonconformance (FAIL, WRONG_STATUS, UNIMPLEMENTED, NONDETERMINISTIC, ERROR), or an
    XPASS under --strict-xfail; against a baseline only what got worse;
  * no case judged: every case SKIP (or MISTRUSTED: it cannot discriminate; an
    undocumented call never fails, so it judges nothing either); or, when the run holds
    calls that must succeed, none of those judged (a kernel that computes nothing must
    not pass on its rejections alone);
  * a known-failure entry that matches every case of the run (it cannot tell a known
    failure from a new one): a warning, failing under --strict-xfail;
  * whatever the command itself saw go wrong (an input that changed during the run, an
    in-process kernel that changed aclcheck): `problems`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from aclcheck.cases.acl import SUCCESS, UNSPECIFIED
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.judging.gate.xfail import XfailEntry

#: verdicts that say nothing about the kernel
UNJUDGED = frozenset({Verdict.SKIP, Verdict.MISTRUSTED})


class GateKind(StrEnum):
    NONCONFORMANT = "nonconformant"  # count: failing cases
    NOTHING_JUDGED = "nothing-judged"  # count: cases, detail: the first SKIP reason
    XFAIL_MATCHES_ALL = "xfail-matches-all"  # detail: the entry's id pattern
    INPUT_CHANGED = "input-changed"  # detail: the file
    TAMPERED = "tampered"  # detail: what the in-process kernel changed


@dataclass(frozen=True)
class GateFinding:
    kind: GateKind
    count: int = 0
    detail: str = ""
    valid_only: bool = False  # NOTHING_JUDGED: of the calls that must succeed


@dataclass(frozen=True)
class Gate:
    failed: bool
    findings: tuple[GateFinding, ...] = ()  # why it failed
    warnings: tuple[GateFinding, ...] = field(default=())  # said, not failing


def judged(verdicts: Sequence[CaseVerdict]) -> int:
    """Cases whose verdict says something about the kernel (not SKIP or MISTRUSTED, not
    an undocumented call: those never fail)."""
    return sum(map(_judges, verdicts))


def _judges(v: CaseVerdict) -> bool:
    return v.verdict not in UNJUDGED and v.expected_status != UNSPECIFIED


def _unjudged(verdicts: Sequence[CaseVerdict]) -> GateFinding | None:
    """NOTHING_JUDGED when no case was judged, or none of the calls that must succeed
    where the run has some (count: the cases concerned; detail: a SKIP reason)."""
    if not judged(verdicts):
        return GateFinding(GateKind.NOTHING_JUDGED, len(verdicts), _skip_reason(verdicts))
    valid = judged_valid = 0  # counted: a run's verdicts may be on disk
    for v in verdicts:
        if v.expected_status == SUCCESS:
            valid += 1
            judged_valid += _judges(v)
    if valid and not judged_valid:
        return GateFinding(GateKind.NOTHING_JUDGED, valid, _skip_reason(
            v for v in verdicts if v.expected_status == SUCCESS), valid_only=True)
    return None


def _skip_reason(verdicts: Iterable[CaseVerdict]) -> str:
    return next((v.message for v in verdicts if v.verdict == Verdict.SKIP), "")


def catch_all(entries: Sequence[XfailEntry], verdicts: Sequence[CaseVerdict],
              implementation: str) -> list[XfailEntry]:
    """Known-failure entries that match every case of a run of two or more cases."""
    if len(verdicts) < 2:
        return []
    return [e for e in entries
            if all(e.matches(v.case_id, implementation) for v in verdicts)]


def decide(verdicts: Sequence[CaseVerdict], *, strict_xfail: bool = False,
           failing: Sequence[CaseVerdict] | None = None,
           catch_all_entries: Sequence[XfailEntry] = (),
           problems: Sequence[GateFinding] = ()) -> Gate:
    """The gate of a run. `failing`: the cases that fail it, when not all nonconforming
    ones do (a baseline gate passes what was already failing)."""
    bad = len(failing) if failing is not None else sum(  # counted: verdicts may be on disk
        v.failing or (strict_xfail and v.verdict == Verdict.XPASS) for v in verdicts)
    findings: list[GateFinding] = list(problems)
    if bad:
        findings.append(GateFinding(GateKind.NONCONFORMANT, bad))
    unjudged = _unjudged(verdicts)
    if unjudged is not None:
        findings.append(unjudged)
    loose = [GateFinding(GateKind.XFAIL_MATCHES_ALL, len(verdicts), e.pattern)
             for e in catch_all_entries]
    if strict_xfail:
        findings += loose
        loose = []
    return Gate(bool(findings), tuple(findings), tuple(loose))
