"""The JSON report: machine-readable verdicts, the input of baselines, diffs and merges."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from aclcheck import __version__
from aclcheck.configfile import read_document
from aclcheck.errors import InputFileError
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict, summary_of
from aclcheck.judging.diagnosis.vendor import VendorAgreement
from aclcheck.report.files import atomic_write

REPORT_FORMAT = "aclcheck-report"
REPORT_VERSION = 1
#: Largest report read back (a 100 000-case report is about 60 MB).
MAX_REPORT_BYTES = 1 << 30


def build(verdicts: Sequence[CaseVerdict], *, implementation: str, standards: Sequence[str],
          golden: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report as a dict (see docs/verify.md for the shape)."""
    counts: Counter[Verdict] = Counter()
    agreement = VendorAgreement()
    for v in verdicts:  # one pass: the verdicts may be on disk
        counts[v.verdict] += 1
        agreement.add(v)
    data: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "tool_version": __version__,
        "implementation": implementation,
        "standard": standards[0] if standards else "aclcheck",
        "standards": list(standards),
        "golden": golden,
        "summary": summary_of(counts),
        "cases": CaseEntries(verdicts),
    }
    if agreement.stated:
        data["vendor"] = agreement.to_json()
    if extra:
        data.update(extra)
    return data


class CaseEntries:
    """The report's `cases`, each rendered as it is written (a run's verdicts may be
    on disk: judging.gate.spool); `write` streams them."""

    def __init__(self, verdicts: Sequence[CaseVerdict]) -> None:
        self.verdicts = verdicts

    def __len__(self) -> int:
        return len(self.verdicts)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (v.to_json() for v in self.verdicts)


#: stands for the cases in the report's head while it is written
_CASES_MARK = "\0aclcheck-cases\0"


def _dumps(data: object) -> str:
    return json.dumps(data, indent=1, allow_nan=False, default=str)


def write(path: str | Path, report: dict[str, Any], mode: int | None = None) -> None:
    """Write atomically, mode 0666 less the umask (see report.files.atomic_write); the
    cases (a list or CaseEntries) one at a time, the bytes those of one json.dump."""
    cases = report.get("cases")

    def dump(fh: IO[str]) -> None:
        if not cases:
            fh.write(_dumps(report if cases is None else {**report, "cases": []}) + "\n")
            return
        head, _, tail = _dumps({**report, "cases": [_CASES_MARK]}).partition(
            "  " + _dumps(_CASES_MARK))
        fh.write(head)
        for n, entry in enumerate(cases):  # one level down from the top: two spaces
            fh.write((",\n  " if n else "  ") + _dumps(entry).replace("\n", "\n  "))
        fh.write(tail + "\n")

    atomic_write(path, dump, mode=mode)


def read(path: str | Path) -> tuple[dict[str, Any], list[CaseVerdict]]:
    """A report and its verdicts; a damaged or foreign file is an InputFileError."""
    p = Path(path)
    data = read_document(p, "report", syntax="json", max_bytes=MAX_REPORT_BYTES,
                         error=InputFileError)
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise InputFileError.at(p, "not an aclcheck report (format key missing)")
    version = data.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise InputFileError.at(p, f"report 'version' must be an integer, got {version!r}")
    cases = data.get("cases", [])
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise InputFileError.at(p, "report 'cases' must be a list of objects")
    if version > REPORT_VERSION:
        raise InputFileError.at(p, f"report version {data.get('version')} is newer than this "
                                f"aclcheck understands ({REPORT_VERSION})")
    problem = _run_fields(data)
    if problem:
        raise InputFileError.at(p, f"report {problem}")
    verdicts = []
    for number, entry in enumerate(cases, 1):
        try:
            verdicts.append(CaseVerdict.from_json(entry))
        except (KeyError, ValueError, TypeError, OverflowError) as exc:
            raise InputFileError.at(p, f"case {number}: {exc}") from None
    return data, verdicts


#: report keys a reader relies on, and what each must be (None: may be absent or null)
_TEXTS = ("implementation", "golden", "standard", "command", "tool_version", "shard",
          "isolation")
_COUNTS = ("selected", "planned")
#: "golden_digest": aclcheck.store.digest.golden_digest's form
_DIGEST = re.compile(r"blake2b:[0-9a-f]{64}")
#: a verdict option's flag ("verdict_options" keys)
_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]{0,63}")


def _run_fields(data: dict[str, Any]) -> str | None:
    """Why the report's run fields are not what a report writes, or None."""
    for key in _TEXTS:
        if data.get(key) is not None and not isinstance(data[key], str):
            return f"{key!r} must be a text"
    for key in _COUNTS:
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 0 <= value < 2**62):
            return f"{key!r} must be a count"
    shard = data.get("shard")
    if shard is not None:
        k, _, n = shard.partition("/")
        if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n) < 2**31):
            return "'shard' must be K/N"
    if not isinstance(data.get("interrupted", False), bool):
        return "'interrupted' must be true or false"
    for key in ("standards", "merged_from", "commands"):
        value = data.get(key)
        if value is not None and (not isinstance(value, list) or not all(
                isinstance(x, str) or (x is None and key == "commands") for x in value)):
            return f"{key!r} must be a list of texts"
    selection = data.get("selection")
    if selection is not None and not isinstance(selection, dict):
        return "'selection' must be an object"
    digest = data.get("golden_digest")
    if digest is not None and not (isinstance(digest, str) and _DIGEST.fullmatch(digest)):
        return "'golden_digest' must be 'blake2b:' and 64 hex digits"
    return _options_problem(data.get("verdict_options"))


def _options_problem(options: object) -> str | None:
    """Why "verdict_options" is not what verify writes ({flag: value}: null, true/false,
    a finite number, a text or a list of texts), or None."""
    if options is None:
        return None
    if not isinstance(options, dict):
        return "'verdict_options' must be an object"
    for flag, value in options.items():
        if not _FLAG.fullmatch(flag):
            return f"'verdict_options' key {flag[:80]!r} is not an option flag"
        if isinstance(value, int) and not isinstance(value, bool):
            ok = -2**62 < value < 2**62
        elif isinstance(value, float):
            ok = math.isfinite(value)
        elif isinstance(value, list):
            ok = all(isinstance(x, str) for x in value)
        else:
            ok = value is None or isinstance(value, bool | str)
        if not ok:
            return (f"'verdict_options' {flag}: must be null, true, false, a finite number, "
                    "a text or a list of texts")
    return None
