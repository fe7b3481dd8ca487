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
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aclcheck.errors import UsageError
from aclcheck.verdicts import FAILING, CaseVerdict, Verdict

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


def load(path: str | Path) -> XfailList:
    """Parse a known-failure file; errors name the file, the entry and the key."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{p}: cannot read known-failure list: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{p}: not valid TOML: {exc}") from None
    extra = sorted(set(data) - {"xfail"})
    if extra:
        raise UsageError(f"{p}: unknown top-level key {extra[0]!r} (expected [[xfail]] tables)")
    raw = data.get("xfail", [])
    if not isinstance(raw, list):
        raise UsageError(f"{p}: 'xfail' must be an array of tables ([[xfail]])")
    entries = []
    for i, item in enumerate(raw, 1):
        where = f"{p}: entry {i}"
        if not isinstance(item, dict):
            raise UsageError(f"{where}: must be a table")
        unknown = sorted(set(item) - ENTRY_KEYS)
        if unknown:
            raise UsageError(f"{where}: unknown key {unknown[0]!r} "
                             f"(valid: {', '.join(sorted(ENTRY_KEYS))})")
        for key in ("id", "reason"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise UsageError(f"{where}: {key!r} must be a non-empty string")
        impl = item.get("impl", "*")
        if not isinstance(impl, str):
            raise UsageError(f"{where}: 'impl' must be a string")
        verdicts = item.get("verdicts", [])
        if not isinstance(verdicts, list):
            raise UsageError(f"{where}: 'verdicts' must be a list")
        try:
            parsed = tuple(Verdict(v) for v in verdicts)
        except ValueError:
            raise UsageError(f"{where}: 'verdicts' must name verdicts among "
                             f"{', '.join(v.value for v in FAILING)}") from None
        may_pass = item.get("may_pass", False)
        if not isinstance(may_pass, bool):
            raise UsageError(f"{where}: 'may_pass' must be true or false")
        entries.append(XfailEntry(item["id"], item["reason"], impl, parsed, may_pass))
    return XfailList(tuple(entries), str(p))


def apply(verdicts: Sequence[CaseVerdict], xfails: XfailList,
          implementation: str) -> list[CaseVerdict]:
    """Listed failures become XFAIL (not gating); listed cases that pass become XPASS."""
    out = []
    for v in verdicts:
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
        out.append(v)
    return out


def gate_failed(verdicts: Sequence[CaseVerdict], strict: bool) -> bool:
    """Nonconformance decides; XPASS too when `strict`."""
    return any(v.failing or (strict and v.verdict == Verdict.XPASS) for v in verdicts)
