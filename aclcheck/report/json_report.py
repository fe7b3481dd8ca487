"""The JSON report: machine-readable verdicts, the input of baselines, diffs and merges."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from aclcheck import __version__
from aclcheck.errors import InputFileError
from aclcheck.report.files import atomic_write
from aclcheck.verdicts import CaseVerdict, summarize

REPORT_FORMAT = "aclcheck-report"
REPORT_VERSION = 1


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
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputFileError(f"{p}: cannot read report: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputFileError(f"{p}: not a JSON report: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise InputFileError(f"{p}: not an aclcheck report (format key missing)")
    if int(data.get("version", 0)) > REPORT_VERSION:
        raise InputFileError(f"{p}: report version {data.get('version')} is newer than this "
                             f"aclcheck understands ({REPORT_VERSION})")
    try:
        verdicts = [CaseVerdict.from_json(c) for c in data.get("cases", [])]
    except (KeyError, ValueError, TypeError) as exc:
        raise InputFileError(f"{p}: malformed case entry: {exc}") from None
    return data, verdicts
