"""The HTML report: one self-contained page (inline CSS, images and a little JS).

Drawn from the JSON report's dict and its verdicts, so `verify --html` and
`aclcheck report REPORT.json --html` give the same page. Jinja2 renders the page with
autoescaping on: every text from data (ids, messages, exception text) is escaped, and
nothing from data becomes an attribute that links or runs anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from aclcheck import __version__
from aclcheck.judging.case.verdicts import (
    FAILING,
    SUMMARY_KEYS,
    CaseVerdict,
    Verdict,
    detail_parts,
    summarize,
    summarize_by,
)
from aclcheck.judging.diagnosis.ranking import RunDiagnosis
from aclcheck.judging.diagnosis.signature import compact
from aclcheck.judging.diagnosis.vendor import agreement_line, shown_status, vendor_agreement
from aclcheck.report.files import atomic_write
from aclcheck.report.pictures import (
    BAR_W,
    HIST_ROWS,
    PICTURE_PX,
    CasePictures,
    case_pictures,
    legend,
)

#: Non-passing cases whose section starts open.
OPEN_FIRST = 3
#: Summary keys counted as bad (red) at the top of the page.
BAD_KEYS = frozenset({"failed", "wrong_status", "unimplemented", "nondeterministic", "error",
                      "xpassed"})
#: Metrics shown per case, in order (others stay in the JSON report).
SHOWN_METRICS = ("max_budget_ratio", "mismatches", "elements", "max_abs_err", "max_rel_err",
                 "max_ulp", "mere", "rmse", "cosine", "nan_mismatch", "inf_mismatch")


def repro_line(v: CaseVerdict) -> str:
    """The command that reruns one case (the runner's repro, today)."""
    return v.repro


def non_passing(v: CaseVerdict) -> bool:
    """Cases that get a section of their own: everything but PASS and SKIP."""
    return v.verdict not in (Verdict.PASS, Verdict.SKIP)


@dataclass(frozen=True)
class Detail:
    anchor: str
    id: str
    verdict: str
    message: str
    product: str
    dtype: str
    format: str
    family: str
    hints: tuple[str, ...]
    metrics: tuple[tuple[str, str], ...]
    worst: tuple[str, ...]
    detail: str
    notes: tuple[str, ...]
    repro: str
    pictures: CasePictures | None
    missing: str


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _detail(v: CaseVerdict, anchor: str) -> Detail:
    _, worst, rest = detail_parts(v.detail)
    hints = tuple(h.text for h in v.hints)
    pictures, missing = None, ""
    if v.evidence is not None:
        pictures = case_pictures(v.evidence)
    elif v.verdict == Verdict.FAIL:
        missing = ("the report has no picture data for this case (written by an older "
                   "aclcheck, or the data was damaged)")
    elif v.metrics:
        missing = "no element over its allowance: nothing to locate"
    else:
        missing = f"{v.verdict.value} is not a numeric comparison: nothing to locate"
    metrics = tuple((k, _fmt(v.metrics[k])) for k in SHOWN_METRICS if k in v.metrics)
    return Detail(anchor, v.case_id, v.verdict.value, v.message, v.product, v.dtype, v.format,
                  v.family, hints, metrics, worst, rest if rest != v.message else "",
                  tuple(v.notes), repro_line(v), pictures, missing)


def _cell_class(s: dict[str, int]) -> str:
    bad = sum(s[k] for k in ("failed", "wrong_status", "unimplemented", "nondeterministic",
                             "error", "xpassed"))
    if bad:
        return "bad"
    if s["xfailed"] or s["mistrusted"]:
        return "warn"
    if s["skipped"] == s["cases"]:
        return "skip"
    return "ok"


def _matrix(verdicts: Sequence[CaseVerdict]) -> dict[str, Any]:
    groups = summarize_by(verdicts, lambda v: (v.product, v.dtype, v.format))
    columns = sorted({(d, f) for _, d, f in groups})
    rows = []
    for product in sorted({p for p, _, _ in groups}):
        cells = []
        for d, f in columns:
            s = groups.get((product, d, f))
            if not s:
                cells.append({"text": "", "cls": "none", "title": ""})
                continue
            title = ", ".join(f"{k} {val}" for k, val in s.items() if val)
            cells.append({"text": f"{s['passed']}/{s['cases']}", "cls": _cell_class(s),
                          "title": title})
        rows.append({"product": product, "cells": cells})
    return {"columns": columns, "rows": rows}


def _row(n: int, v: CaseVerdict, anchor: str) -> dict[str, Any]:
    ratio = _number(v.metrics.get("max_budget_ratio"))
    ulp = _number(v.metrics.get("max_ulp"))
    return {"n": n, "id": v.case_id, "product": v.product, "dtype": v.dtype,
            "format": v.format, "family": v.family, "verdict": v.verdict.value,
            "anchor": anchor, "ratio": "" if ratio is None else f"{ratio:.3g}",
            "ratio_key": "" if ratio is None else repr(ratio),
            "ulp": "" if ulp is None else f"{ulp:.0f}", "ulp_key": "" if ulp is None else repr(ulp),
            "time": f"{v.time_s:.3f}", "time_key": repr(v.time_s)}


def _hist_px() -> tuple[int, int]:
    """Display size of the histogram pictures (same for every case)."""
    from aclcheck.judging.case.evidence import HIST_LOG2_EDGES

    cols = (len(HIST_LOG2_EDGES) + 1) * (BAR_W + 1)
    return PICTURE_PX, max(60, round(PICTURE_PX * HIST_ROWS / cols))


def page_warnings(report: dict[str, Any], verdicts: Sequence[CaseVerdict]) -> list[str]:
    """What the page cannot show or should qualify (another version, missing data)."""
    out = []
    version = str(report.get("tool_version", "unknown"))
    if version != __version__:
        out.append(f"This report was written by aclcheck {version}; this page is drawn by "
                   f"aclcheck {__version__}: what the report lacks is marked as missing.")
    if report.get("interrupted"):
        out.append("The run was interrupted: only the cases judged before are listed.")
    if report.get("isolation") == "in-process":
        out.append("The implementation ran in aclcheck's own process (--no-isolate, or a "
                   "device adapter without --isolate): for debugging. A kernel there can "
                   "change aclcheck itself; a gate needs isolated calls.")
    lacking = sum(1 for v in verdicts if v.verdict == Verdict.FAIL and v.evidence is None)
    if lacking:
        out.append(f"{lacking} failing case(s) have no picture data in the report; their "
                   "sections show the text only.")
    return out


class _Rows:
    """The page's table rows, each made as the page is written (a run's verdicts may be
    on disk: judging.gate.spool)."""

    def __init__(self, verdicts: Sequence[CaseVerdict]) -> None:
        self.verdicts = verdicts

    def __len__(self) -> int:
        return len(self.verdicts)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for n, v in enumerate(self.verdicts, 1):
            yield _row(n, v, _anchor(n, v))


def _anchor(n: int, v: CaseVerdict) -> str:
    return f"case-{n}" if non_passing(v) else ""


def render(report: dict[str, Any], verdicts: Sequence[CaseVerdict]) -> str:
    """The page as a string (see the module docstring)."""
    return "".join(_page(report, verdicts))


def _page(report: dict[str, Any], verdicts: Sequence[CaseVerdict]) -> Iterator[str]:
    """The page in pieces: one row per case, a section per non-passing case."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("aclcheck.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    details = [_detail(v, anchor) for n, v in enumerate(verdicts, 1)
               if (anchor := _anchor(n, v))]
    standards = report.get("standards") or [report.get("standard", "aclcheck")]
    golden = str(report.get("golden", "?"))
    meta = {"implementation": str(report.get("implementation", "?")), "golden": golden,
            "standards": [str(s) for s in standards],
            "tool_version": str(report.get("tool_version", "unknown")),
            "rendered_by": __version__, "command": str(report.get("command", "(not recorded)")),
            "shard": str(report.get("shard", "")),
            "isolation": str(report.get("isolation", ""))}
    summary = summarize(verdicts)
    counts = [(k, summary[k]) for k, verdict in SUMMARY_KEYS
              if summary[k] or verdict is None or verdict in FAILING or verdict == Verdict.PASS]
    title = f"aclcheck: {meta['implementation']} on {Path(golden).name}"
    return env.get_template("report.html.j2").generate(
        title=title, meta=meta, counts=counts, bad_keys=BAD_KEYS,
        warnings=page_warnings(report, verdicts), diagnosis=diagnosis_view(report),
        matrix=_matrix(verdicts), rows=_Rows(verdicts),
        details=details, legend=legend() if details else "", open_first=OPEN_FIRST,
        vendor=_vendor(verdicts),
        verdict_names=[v.value for v in Verdict], hist_px=_hist_px())


def _vendor(verdicts: Sequence[CaseVerdict]) -> dict[str, Any] | None:
    """The vendor's expected statuses beside aclcheck's and the implementation's (None:
    no case states one)."""
    a = vendor_agreement(verdicts)
    if not a.stated:
        return None
    return {"line": agreement_line(a),
            "rows": [(p.case_id, p.source, shown_status(p.vendor), shown_status(p.contract),
                      shown_status(p.implementation)) for p in a.parted]}


@dataclass(frozen=True)
class DiagnosisView:
    """The page's first section: the size of the errors, what explains them, the
    groupings whose groups differ (from the report's summary and diagnosis)."""

    size: str
    entries: tuple[tuple[str, str], ...]  # (code, message)
    signature: tuple[tuple[str, str, str], ...]  # (grouped by, failing, passing)


def diagnosis_view(report: dict[str, Any]) -> DiagnosisView | None:
    """What the report says about its failures (judging.diagnosis.ranking.RunDiagnosis)."""
    diagnosis = RunDiagnosis.from_report(report)
    if diagnosis is None:
        return None
    return DiagnosisView(diagnosis.headline or "",
                         tuple((e.code.value, e.message()) for e in diagnosis.entries),
                         compact(diagnosis.differing))


def write(path: str | Path, report: dict[str, Any], verdicts: Sequence[CaseVerdict],
          mode: int | None = None) -> None:
    """Render and write atomically, mode 0666 less the umask (report.files.atomic_write)."""
    page = _page(report, verdicts)  # made before the file is opened, written piecewise
    atomic_write(path, lambda fh: fh.writelines(page), mode=mode)

