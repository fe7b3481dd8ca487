"""Merging: the one home of joining shard outputs into what an unsharded run makes.

  * verify reports (JSON) -> one report (`merge_reports`), in golden-file order;
  * golden files (`generate --shard K/N`, all N) -> one golden file (`merge_golden`),
    equal to an unsharded run case for case; other golden files are concatenated;
  * what shows that reports belong to one run: the golden file's digest
    (aclcheck.store.digest, written by verify) and the verdict options (`same_run`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aclcheck.errors import InputFileError, UsageError
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict, summarize
from aclcheck.judging.diagnosis.ranking import DiagnosisEntry, magnitude_json, merge_entries
from aclcheck.store.codec import VOLATILE_ROOT_ATTRS, run_meta
from aclcheck.store.dispatch import GoldenFile, open_golden
from aclcheck.store.golden_writer import GoldenWriter
from aclcheck.suite import sharding

#: Report keys that must agree between shards of one run: the golden file by name and by
#: content (golden_digest: aclcheck.store.digest), and every option that can change a verdict
#: (verdict_options, compared flag by flag: same_run).
SAME_KEYS = ("implementation", "standards", "golden", "golden_digest")
#: Report keys a report must have to be merged (verify writes both; a report of an
#: aclcheck before them cannot show it belongs with the others).
PROOF_KEYS = ("golden_digest", "verdict_options")


Report = tuple[str, dict[str, Any], list[CaseVerdict]]


def same_run(reports: Sequence[Report]) -> None:
    """Refuse reports that cannot show they belong to one run: a report without the
    golden file's digest or the run's verdict options (written before reports recorded
    them), or one whose SAME_KEYS or any verdict option differ from the first report's.
    The message names the field and both files."""
    first_path, first, _ = reports[0]
    for path, report, _ in reports:
        for key in PROOF_KEYS:
            if report.get(key) is None:
                command = str(report.get("command") or "aclcheck verify ... --json ...")[:300]
                raise UsageError(
                    f"{path}: no {key!r} (a report of an aclcheck from before reports "
                    f"recorded it, or an edited one), so it cannot show it belongs with "
                    f"the others: rerun its command with this aclcheck to merge it: "
                    f"{command}")
        for key in SAME_KEYS:
            if report.get(key) != first.get(key):
                raise UsageError(f"{path}: {key} {report.get(key)!r} differs from "
                                 f"{first_path}'s {first.get(key)!r}" + _WHY.get(key, ""))
        mine, theirs = report["verdict_options"], first["verdict_options"]
        for flag in sorted(mine.keys() | theirs.keys()):
            if flag not in mine or flag not in theirs or mine[flag] != theirs[flag]:
                raise UsageError(
                    f"{path}: verdict option {flag} {_option(mine, flag)} differs from "
                    f"{first_path}'s {_option(theirs, flag)}: shards of another command")


#: what a difference in a SAME_KEYS field means, after the message
_WHY = {"golden_digest": ": shards of another golden file (by content, whatever its name)"}


def _option(options: dict[str, Any], flag: str) -> str:
    return repr(options[flag]) if flag in options else "(not recorded)"


def check_complete(reports: Sequence[Report]) -> None:
    """Refuse a set that is not a whole run: a report of an interrupted run or one that
    holds fewer cases than its run was to judge; shard reports (`--shard K/N`) of other
    selections, of different N, given twice or missing; a mix of shards and whole runs."""
    for path, report, items in reports:
        if report.get("interrupted"):
            raise UsageError(f"{path}: a report of an interrupted run ({len(items)} cases): "
                             "rerun it; merge joins whole runs only")
        planned = report.get("planned")
        if planned is not None and planned != len(items):
            raise UsageError(f"{path}: holds {len(items)} of the {planned} cases its run "
                             "was to judge")
    sharded = [(p, r) for p, r, _ in reports if r.get("shard") is not None]
    if not sharded:
        return
    if len(sharded) != len(reports):
        raise UsageError("merge joins the shard reports of one run (--shard K/N, all N), "
                         "or whole runs: these mix both")
    first_path, first = sharded[0]
    by_k: dict[int, str] = {}
    n = sharding.parse_shard(first["shard"])[1]
    for path, report in sharded:
        for key in ("selection", "selected"):
            if report.get(key) != first.get(key):
                raise UsageError(f"{path}: {key} {report.get(key)!r} differs from "
                                 f"{first_path}'s {first.get(key)!r}: shards of another run")
        k, nn = sharding.parse_shard(report["shard"])
        if nn != n:
            raise UsageError(f"{path}: shard {k}/{nn} of another split than {first_path}'s "
                             f"{first['shard']}")
        if k in by_k:
            raise UsageError(f"{path}: shard {k}/{n} given twice (also {by_k[k]})")
        by_k[k] = path
    missing = [sharding.shard_text(k, n) for k in range(1, n + 1) if k not in by_k]
    if missing:
        raise UsageError(f"shards {', '.join(missing)} missing: merge needs all {n}")
    selected = first.get("selected")
    total = sum(len(items) for _, _, items in reports)
    if selected is not None and total != selected:
        raise UsageError(f"the shards hold {total} cases, their selection {selected}")


def merge_reports(reports: Sequence[Report]) -> tuple[dict[str, Any], list[CaseVerdict]]:
    """(path, report, verdicts) of each shard -> the merged report and its verdicts, in
    golden-file order; reports of other runs (same_run), an incomplete set
    (check_complete) or duplicate case ids are a usage error."""
    if not reports:
        raise UsageError("nothing to merge")
    first = reports[0][1]
    seen: dict[str, str] = {}
    verdicts: list[CaseVerdict] = []
    same_run(reports)
    check_complete(reports)
    for path, _, items in reports:
        for v in items:
            if v.case_id in seen:
                raise UsageError(f"case {v.case_id} is in both {seen[v.case_id]} and {path}")
            seen[v.case_id] = path
            verdicts.append(v)
    verdicts.sort(key=lambda v: (v.index, v.case_id))
    merged = {k: v for k, v in first.items() if k not in ("cases", "summary", "shard")}
    merged["merged_from"] = [p for p, _, _ in reports]
    if first.get("planned") is not None:
        merged["planned"] = len(verdicts)
    merged["summary"] = summarize(verdicts)
    merged["summary"].update(merged_signature(verdicts, [r for _, r, _ in reports]))
    merged["diagnosis"] = [e.to_json() for e in merged_diagnosis(verdicts, reports)]
    merged["commands"] = [r.get("command") for _, r, _ in reports]
    merged["cases"] = [v.to_json() for v in verdicts]
    return merged, verdicts


def _add_counts(into: dict[str, Any], more: dict[str, Any]) -> None:
    """Nested count tables summed (the by_* tables of a summary)."""
    for key, value in more.items():
        if isinstance(value, dict):
            _add_counts(into.setdefault(key, {}), value)
        elif isinstance(value, int) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value


def merged_signature(verdicts: Sequence[CaseVerdict], reports: Sequence[dict[str, Any]]
                     ) -> dict[str, Any]:
    """The merged summary's by_* tables (the shards' counts summed) and magnitude
    classes (from the verdicts' magnitudes)."""
    out: dict[str, Any] = {}
    for report in reports:
        summary = report.get("summary")
        if isinstance(summary, dict):
            _add_counts(out, {k: v for k, v in summary.items()
                              if k.startswith("by_") and isinstance(v, dict)})
    if not out:  # reports of an aclcheck without signatures
        return {}
    tables = {k: dict(sorted(out[k].items())) for k in sorted(out)}
    return {**tables, "magnitude": magnitude_json(v.magnitude for v in verdicts
                                                  if v.verdict is Verdict.FAIL
                                                  and v.magnitude is not None)}


def merged_diagnosis(verdicts: Sequence[CaseVerdict], reports: Sequence[Report]
                     ) -> tuple[DiagnosisEntry, ...]:
    """The shards' diagnoses merged (judging.diagnosis.ranking.merge_entries)."""
    shards = []
    for path, report, _ in reports:
        try:
            shards.append([DiagnosisEntry.from_json(e) for e in report.get("diagnosis") or []])
        except ValueError as exc:
            raise InputFileError.at(Path(path), str(exc)) from None
    failed = sum(v.verdict is Verdict.FAIL for v in verdicts)
    return merge_entries(shards, failed, sum(v.failing for v in verdicts))


# -- golden files -------------------------------------------------------------------------

_Shard = tuple[dict[str, Any], tuple[int, int] | None]


def _shard_of(gf: GoldenFile) -> _Shard:
    try:
        return sharding.split_selection(gf.meta.get("selection"))
    except UsageError as exc:
        raise InputFileError.at(gf.path, f"root attribute 'selection': {exc}") from None


def merge_golden(inputs: list[str | Path], output: str | Path, *, force: bool = False,
                 compress: str | None = None) -> int:
    """Join golden files into one; returns the number of cases.

    Shards of one suite (`generate --shard K/N`, all N of them) are interleaved back into
    the unsharded order, so the result equals an unsharded run case for case. Other files
    are concatenated in the given order. Duplicate ids are refused. The compression of
    the first input is kept unless `compress` says otherwise. Inputs of any schema this
    aclcheck reads; the output is always the current one (merging one file converts it).
    """
    if not inputs:
        raise UsageError("merge needs at least one input file")
    files: list[GoldenFile] = []
    try:
        for p in inputs:
            files.append(open_golden(p))
        for gf in files[1:]:  # one file holds the cases of one operator
            if gf.op is not files[0].op:
                raise UsageError(f"{gf.path} holds {gf.op.name} cases, {files[0].path} "
                                 f"{files[0].op.name} cases: merge files of one operator")
        shards = [_shard_of(gf) for gf in files]
        if all(k_n is not None for _, k_n in shards):
            order = _interleave_shards(files, shards)
        else:
            order = [(gf, cid) for gf in files for cid in gf.ids()]
        seen: dict[str, Path] = {}
        for gf, cid in order:
            if cid in seen:
                raise UsageError(f"case {cid!r} is in both {seen[cid]} and {gf.path}")
            seen[cid] = gf.path
        first = files[0]
        if compress is None:
            compress = first.compression()
        meta = {k: v for k, v in first.meta.items() if k not in VOLATILE_ROOT_ATTRS}
        sel, k_n = shards[0]
        if k_n is not None:
            meta["selection"] = json.dumps(sel, sort_keys=True)
        names = " ".join(str(p) for p in inputs)
        meta = run_meta(f"aclcheck merge -o {output} {names}", str(meta.get("suite", "")),
                        **{k: v for k, v in meta.items() if k != "suite"})
        with GoldenWriter(output, meta, force=force, compress=compress,
                          case_type=first.case_type) as writer:
            for gf, cid in order:
                writer.add(gf.case(cid), gf.data(cid))
        return len(order)
    finally:
        for gf in files:
            gf.close()


def _interleave_shards(files: list[GoldenFile], shards: list[_Shard]
                       ) -> list[tuple[GoldenFile, str]]:
    """Cases of shards 1..N of one suite in the unsharded (round-robin) order."""
    sel0, first = shards[0]
    assert first is not None
    n = first[1]
    by_k: dict[int, GoldenFile] = {}
    for gf, (sel, k_n) in zip(files, shards, strict=True):
        assert k_n is not None
        k, nn = k_n
        if nn != n or sel != sel0:
            raise UsageError(f"{gf.path}: shard {k}/{nn} of another suite than "
                             f"{files[0].path}")
        if k in by_k:
            raise UsageError(f"{gf.path}: shard {k}/{n} given twice (also {by_k[k].path})")
        by_k[k] = gf
    missing = [sharding.shard_text(k, n) for k in range(1, n + 1) if k not in by_k]
    if missing:
        raise UsageError(f"shards {', '.join(missing)} missing: merge needs all {n}")
    parts = [[(by_k[k], cid) for cid in by_k[k].ids()] for k in range(1, n + 1)]
    try:
        return sharding.interleave(parts)
    except ValueError as exc:
        raise UsageError(f"shard sizes do not fit one suite ({exc})") from None
