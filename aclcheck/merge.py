"""Join shard outputs: verify reports (JSON) into one report equal to an unsharded run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aclcheck.errors import UsageError
from aclcheck.verdicts import CaseVerdict, summarize

#: Report keys that must agree between shards of one run.
SAME_KEYS = ("implementation", "standards", "golden")


def merge_reports(reports: Sequence[tuple[str, dict[str, Any], list[CaseVerdict]]]
                  ) -> tuple[dict[str, Any], list[CaseVerdict]]:
    """(path, report, verdicts) of each shard -> the merged report and its verdicts, in
    golden-file order; duplicate case ids or disagreeing runs are a usage error."""
    if not reports:
        raise UsageError("nothing to merge")
    first_path, first, _ = reports[0]
    seen: dict[str, str] = {}
    verdicts: list[CaseVerdict] = []
    for path, report, items in reports:
        for key in SAME_KEYS:
            if report.get(key) != first.get(key):
                raise UsageError(f"{path}: {key} {report.get(key)!r} differs from "
                                 f"{first_path}'s {first.get(key)!r}")
        for v in items:
            if v.case_id in seen:
                raise UsageError(f"case {v.case_id} is in both {seen[v.case_id]} and {path}")
            seen[v.case_id] = path
            verdicts.append(v)
    verdicts.sort(key=lambda v: (v.index, v.case_id))
    merged = {k: v for k, v in first.items() if k not in ("cases", "summary", "shard")}
    merged["merged_from"] = [p for p, _, _ in reports]
    merged["summary"] = summarize(verdicts)
    merged["cases"] = [v.to_json() for v in verdicts]
    return merged, verdicts
