"""Known-failure lists: case-id patterns with a reason, so a gate tells new failures from
known ones.

TOML format:

    [[xfail]]
    id = "a2-bf16-*"                 # glob over case ids (required)
    reason = "PyTorch CPU accumulates BF16 in BF16"   # required
    impl = "torch*"                  # optional glob over implementation names
    verdicts = ["FAIL"]              # optional: only these verdicts are expected
    may_pass = true                  # optional: a pattern over cases of which only some
                                     # fail; passing matches stay PASS instead of XPASS
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aclcheck.configfile import Entry, read_document, top_level
from aclcheck.errors import ConfigError
from aclcheck.judging.case.verdicts import FAILING, CaseVerdict, Verdict
from aclcheck.judging.gate.spool import Mapped

ENTRY_KEYS = frozenset({"id", "reason", "impl", "verdicts", "may_pass"})


@dataclass(frozen=True)
class XfailEntry:
    pattern: str
    reason: str
    impl: str = "*"
    verdicts: tuple[Verdict, ...] = ()
    may_pass: bool = False

    def matches(self, case_id: str, implementation: str) -> bool:
        return fnmatch.fnmatchcase(case_id, self.pattern) and fnmatch.fnmatchcase(
            implementation, self.impl)


@dataclass(frozen=True)
class XfailList:
    entries: tuple[XfailEntry, ...] = ()
    source: str = ""

    def matching(self, case_id: str, implementation: str) -> list[XfailEntry]:
        return [e for e in self.entries if e.matches(case_id, implementation)]

    def find(self, case_id: str, implementation: str,
             verdict: Verdict | None = None) -> XfailEntry | None:
        """The first entry listing this case (and this verdict, when one is given)."""
        for entry in self.matching(case_id, implementation):
            if verdict is None or not entry.verdicts or verdict in entry.verdicts:
                return entry
        return None

    def combined(self, case_id: str, implementation: str) -> XfailEntry | None:
        """All entries listing a case as one: any of their verdicts is expected, and the
        case may pass only if every entry allows it (for marking before it runs)."""
        found = self.matching(case_id, implementation)
        if not found:
            return None
        unrestricted = any(not e.verdicts for e in found)
        verdicts = () if unrestricted else tuple(dict.fromkeys(
            v for e in found for v in e.verdicts))
        reason = "; ".join(dict.fromkeys(e.reason for e in found))
        return XfailEntry(found[0].pattern, reason, found[0].impl, verdicts,
                          all(e.may_pass for e in found))


def load_xfails(path: str | Path) -> XfailList:
    """Parse a known-failure file; errors name the file, the entry and the key."""
    p = Path(path)
    return XfailList(_entries(read_document(p, "known-failure list", syntax="toml"), str(p)),
                     str(p))


def _entries(data: object, source: str) -> tuple[XfailEntry, ...]:
    raw = top_level(data, source, ("xfail",), "expected [[xfail]] tables").get("xfail", [])
    if not isinstance(raw, list):
        raise ConfigError.at(source, "'xfail' must be an array of tables ([[xfail]])")
    entries = []
    for number, item in enumerate(raw, 1):
        entry = Entry.of(item, source, number, ENTRY_KEYS, ("id", "reason"))
        verdicts = entry.text_list("verdicts", [], choices=[v.value for v in FAILING])
        entries.append(XfailEntry(entry.text("id", nonempty=True),
                                  entry.text("reason", nonempty=True),
                                  entry.text("impl", "*"),
                                  tuple(Verdict(v) for v in verdicts),
                                  entry.boolean("may_pass", False)))
    return tuple(entries)


def apply(verdicts: Sequence[CaseVerdict], xfails: XfailList,
          implementation: str) -> list[CaseVerdict]:
    """Listed failures become XFAIL (not gating); listed cases that pass become XPASS."""
    return [marked(v, xfails, implementation) for v in verdicts]


def applied(verdicts: Sequence[CaseVerdict], xfails: XfailList,
            implementation: str) -> Sequence[CaseVerdict]:
    """`apply` as a lazy view: each verdict is rewritten when read (a spooled run's
    verdicts stay on disk)."""
    return Mapped(verdicts, lambda v: marked(v, xfails, implementation))


def marked(v: CaseVerdict, xfails: XfailList, implementation: str) -> CaseVerdict:
    """One verdict with the known failures applied (see `apply`)."""
    if v.failing:
        entry = xfails.find(v.case_id, implementation, v.verdict)
        if entry is not None:
            v = replace(v, verdict=Verdict.XFAIL,
                        message=f"known failure ({entry.reason}): was "
                                f"{v.verdict.value}: {v.message}",
                        notes=v.notes + (f"xfail: {entry.reason}",))
    elif v.verdict in (Verdict.PASS, Verdict.MISTRUSTED):
        entry = xfails.combined(v.case_id, implementation)
        if entry is not None and not entry.may_pass:
            v = replace(v, verdict=Verdict.XPASS,
                        message=f"listed as a known failure ({entry.reason}) but "
                                "passed: remove it from the list",
                        notes=v.notes + (f"xfail: {entry.reason}",))
    return v
