"""The JSON report: machine-readable verdicts, the input of baselines, diffs and merges."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from aclcheck import __version__
from aclcheck.configfile import ConfigError, read_document
from aclcheck.errors import InputFileError
from aclcheck.report.files import atomic_write
from aclcheck.verdicts import CaseVerdict, summarize

REPORT_FORMAT = "aclcheck-report"
REPORT_VERSION = 1
#: Largest report read back (a 100 000-case report is about 60 MB).
MAX_REPORT_BYTES = 1 << 30


def build(verdicts: Sequence[CaseVerdict], *, implementation: str, standards: Sequence[str],
          golden: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report as a dict (see docs/verify.md for the shape)."""
    data: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "tool_version": __version__,
        "implementation": implementation,
        "standard": standards[0] if standards else "aclcheck",
        "standards": list(standards),
        "golden": golden,
        "summary": summarize(verdicts),
        "cases": [v.to_json() for v in verdicts],
    }
    if extra:
        data.update(extra)
    return data


def write(path: str | Path, report: dict[str, Any]) -> None:
    """Write atomically, mode 0666 less the umask (see report.files.atomic_write)."""

    def dump(fh: IO[str]) -> None:
        json.dump(report, fh, indent=1, allow_nan=False, default=str)
        fh.write("\n")

    atomic_write(path, dump)


def read(path: str | Path) -> tuple[dict[str, Any], list[CaseVerdict]]:
    """A report and its verdicts; a damaged or foreign file is an InputFileError."""
    p = Path(path)
    try:
        data = read_document(p, "report", syntax="json", max_bytes=MAX_REPORT_BYTES)
    except ConfigError as exc:
        raise InputFileError(str(exc)) from None
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise InputFileError(f"{p}: not an aclcheck report (format key missing)")
    version = data.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise InputFileError(f"{p}: report 'version' must be an integer, got {version!r}")
    cases = data.get("cases", [])
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise InputFileError(f"{p}: report 'cases' must be a list of objects")
    if version > REPORT_VERSION:
        raise InputFileError(f"{p}: report version {data.get('version')} is newer than this "
                             f"aclcheck understands ({REPORT_VERSION})")
    try:
        verdicts = [CaseVerdict.from_json(c) for c in data.get("cases", [])]
    except (KeyError, ValueError, TypeError) as exc:
        raise InputFileError(f"{p}: malformed case entry: {exc}") from None
    return data, verdicts
