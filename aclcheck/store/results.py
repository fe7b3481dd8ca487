"""Results files: an implementation's outputs, keyed by the golden's case ids (written
by `aclcheck import`, judged by `verify --results`): writing, reading, and their
integrity check (`inspect --check`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from aclcheck.errors import InputFileError, UsageError
from aclcheck.store.atomic import AtomicH5, write_dataset, write_root_attrs
from aclcheck.store.check_report import CheckReport
from aclcheck.store.codec import (
    COMPRESSIONS,
    FORMAT_RESULTS,
    check_id,
    index_dtype_problem,
    is_safe_id,
    plain_value,
    rows_array,
    run_meta,
    set_attrs,
    shape_text,
    text_attr,
)
from aclcheck.store.dtype_codec import decode_array, encode_array, storage_dtype
from aclcheck.store.h5read import (
    check_layout,
    damage,
    default_read_limit,
    member,
    open_h5,
    read_dataset,
)

RESULT_INDEX_COLUMNS: tuple[tuple[str, str], ...] = (
    ("case_id", "s"), ("status", "<i8"), ("time_s", "<f8"), ("has_output", "u1"),
    ("dtype", "s"), ("shape", "s"),
)


@dataclass(frozen=True)
class ResultRow:
    """What an implementation did with one case: status, output (None if none), time."""

    case_id: str
    status: int
    output: np.ndarray | None
    time_s: float
    message: str = ""


def write_results(path: str | Path, implementation: str, rows: Iterable[ResultRow],
                  meta: Mapping[str, Any] | None = None, *, force: bool = False,
                  compress: str = "none") -> int:
    """Write a results file atomically (same filters and checks as golden files).

    Layout: /results/<case_id>/output (bf16 as uint16 bits, dtype attribute) with
    attributes status, time_s, message; /index one row per case. Returns the file size.
    """
    if compress not in COMPRESSIONS:
        raise UsageError(f"unknown compression {compress!r}; valid: {', '.join(COMPRESSIONS)}")
    full = dict(meta or run_meta())
    full["implementation"] = implementation
    out = AtomicH5(path, force)
    try:
        root = out.file.create_group("results")
        index: list[dict[str, Any]] = []
        seen: set[str] = set()
        with out.writing():
            for row in rows:
                check_id(row.case_id)
                if row.case_id in seen:
                    raise UsageError(f"duplicate result for case {row.case_id!r}")
                seen.add(row.case_id)
                group = root.create_group(row.case_id)
                set_attrs(group, {"status": np.int64(row.status), "time_s": np.float64(row.time_s),
                                  "message": text_attr(row.message)})
                dname, shape = "", ""
                if row.output is not None:
                    out_arr = np.ascontiguousarray(row.output)
                    stored, dname = encode_array(out_arr)
                    shape = shape_text(out_arr.shape)
                    write_dataset(group, "output", stored, compress, {"dtype": text_attr(dname)})
                index.append({"case_id": row.case_id, "status": row.status, "time_s": row.time_s,
                              "has_output": row.output is not None, "dtype": dname,
                              "shape": shape})
            write_dataset(out.file, "index", rows_array(index, RESULT_INDEX_COLUMNS), "none", {})
            write_root_attrs(out.file, FORMAT_RESULTS, full, len(index))
        return out.commit()
    except BaseException:
        out.abort()
        raise


def result_index(p: Path, f: h5py.File, meta: Mapping[str, Any], limit: int) -> np.ndarray:
    """/index of a results file: a 1-D table of the schema's columns, case_count rows,
    case ids unique and safe as path components."""
    with damage(p, "/index"):
        index, results = member(p, f, "index", "/index"), member(p, f, "results", "/results")
        if index is None or results is None:
            raise InputFileError.at(p, "missing /index or /results")
        if not isinstance(results, h5py.Group):
            raise InputFileError.at(p, "/results is not a group")
        ds = check_layout(p, index, "/index", limit)
        if ds.ndim != 1:
            raise InputFileError.at(p, f"/index must be a 1-D table, has shape {ds.shape}")
        problem = index_dtype_problem(ds.dtype, RESULT_INDEX_COLUMNS)
        if problem:
            raise InputFileError.at(p, f"/index {problem}")
        if ds.shape[0] != meta["case_count"]:
            raise InputFileError.at(p, f"/index has {ds.shape[0]} rows, case_count says "
                                    f"{meta['case_count']}")
        arr = read_dataset(p, ds, "/index")
    seen: set[str] = set()
    for raw in arr["case_id"].tolist():
        cid = raw.decode("utf-8", errors="replace")
        if not is_safe_id(cid):
            raise InputFileError.at(p, f"/index: case id {cid!r} is not a plain name")
        if cid in seen:
            raise InputFileError.at(p, f"/index: case {cid} is listed twice")
        seen.add(cid)
    return arr


def iter_results(path: str | Path, *, read_limit: int | None = None) -> Iterator[ResultRow]:
    """Result rows in file order, one case read at a time."""
    p = Path(path)
    limit = default_read_limit() if read_limit is None else read_limit
    f, meta = open_h5(p, FORMAT_RESULTS)
    with f:
        arr = result_index(p, f, meta, limit)
        for rec in arr:
            cid = rec["case_id"].decode("utf-8")
            with damage(p, f"result {cid}"):
                row = _result_row(p, f, rec, cid, limit)
            yield row


def _result_row(p: Path, f: h5py.File, rec: np.void, cid: str, limit: int) -> ResultRow:
    where = f"result {cid}"
    group = member(p, f["results"], cid, f"result {cid}")
    if group is None:
        raise InputFileError.at(p, f"{where}: group is missing")
    if not isinstance(group, h5py.Group):
        raise InputFileError.at(p, f"{where}: /results/{cid} is not a group")
    output = None
    what = f"result {cid}: dataset output"
    stored = member(p, group, "output", what)
    if stored is not None:
        ds = check_layout(p, stored, what, limit)
        name = plain_value(ds.attrs.get("dtype", ""))
        try:
            want = storage_dtype(str(name))
        except KeyError:
            raise InputFileError.at(p, f"{where}: unknown dtype {name!r}") from None
        if ds.dtype != want:
            raise InputFileError.at(p, f"{where}: output stored as {ds.dtype}, "
                                    f"dtype {name!r} needs {want}")
        index_shape = rec["shape"].decode("utf-8", errors="replace")
        if shape_text(ds.shape) != index_shape or rec["dtype"].decode("utf-8") != name:
            raise InputFileError.at(p, f"{where}: output {name} {shape_text(ds.shape)} != /index "
                                    f"{rec['dtype'].decode('utf-8', errors='replace')} "
                                    f"{index_shape}")
        output = decode_array(read_dataset(p, ds, what), str(name))
    elif rec["has_output"]:
        raise InputFileError.at(p, f"{where}: dataset 'output' is missing")
    message = plain_value(group.attrs.get("message", ""))
    return ResultRow(cid, int(rec["status"]), output, float(rec["time_s"]),
                     message if isinstance(message, str) else str(message))


def read_results(path: str | Path) -> dict[str, ResultRow]:
    """All result rows of a results file, by case id."""
    return {row.case_id: row for row in iter_results(path)}


def results_meta(path: str | Path) -> dict[str, Any]:
    """Root attributes of a results file (validated)."""
    f, meta = open_h5(Path(path), FORMAT_RESULTS)
    f.close()
    return meta


def check_results(path: str | Path) -> CheckReport:
    """Read every dataset of a results file and validate it against its index."""
    p = Path(path)
    report = CheckReport(p, FORMAT_RESULTS)
    f, meta = open_h5(p, FORMAT_RESULTS)
    with f, damage(p, "/results"):
        arr = result_index(p, f, meta, default_read_limit())
        groups = set(f["results"].keys())
        ids = [b.decode("utf-8") for b in arr["case_id"].tolist()]
        report.cases = len(ids)
        for extra in sorted(groups - set(ids))[:5]:
            report.add(f"/results/{extra}: group not listed in /index")
    try:
        for row in iter_results(p):
            if row.output is not None:
                report.datasets += 1
                report.bytes_read += row.output.nbytes
    except InputFileError as exc:
        report.add(exc.detail(p))
    return report
