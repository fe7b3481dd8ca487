"""The integrity check behind `inspect --check`: every dataset read (checksums verified),
schema and /index validated against the case groups; problems collected, one line each."""

from __future__ import annotations

from pathlib import Path

import h5py

from aclcheck.errors import InputFileError
from aclcheck.store.check_report import CheckReport
from aclcheck.store.codec import (
    EXPECT_ATTRS,
    FORMAT_GOLDEN,
    FORMAT_RESULTS,
    plain_value,
)
from aclcheck.store.h5read import H5_ERRORS, damage, default_read_limit, open_h5
from aclcheck.store.index import IndexEntry
from aclcheck.store.packed import PACKED_SCHEMA_VERSION
from aclcheck.store.packed_check import check_packed
from aclcheck.store.reader import GroupFile, golden_schema
from aclcheck.store.results import iter_results, result_index


def check_golden(path: str | Path) -> CheckReport:
    """Read every array (fletcher32 verified), validate schema and index against the
    records. Problems are collected; a file that cannot even be opened raises."""
    if golden_schema(path) >= PACKED_SCHEMA_VERSION:
        return check_packed(path)
    report = CheckReport(Path(path), FORMAT_GOLDEN)
    with GroupFile(path) as gf:
        p = gf.path
        ids = gf.ids()
        report.cases = len(ids)
        for entry in gf.index:
            try:
                with damage(p, f"case {entry.id}"):
                    _check_case(gf, entry, report)
            except InputFileError as exc:
                report.add(exc.detail(p))
    return report


def _check_case(gf: GroupFile, entry: IndexEntry, report: CheckReport) -> None:
    """Everything the reader checks (record, /index row, layouts, sizes, checksums by
    reading every dataset), plus the stored expectation and byte count."""
    cid = entry.id
    attrs = gf.attrs(cid)
    required = tuple(f.name for f in gf.case_type.record_fields() if f.required)
    missing = [k for k in required + EXPECT_ATTRS if k not in attrs]
    if missing:
        report.add(f"case {cid}: missing attribute {missing[0]!r}")
        return
    gf.case(cid)
    if bool(attrs["has_golden"]) != entry.has_golden:
        report.add(f"case {cid}: /index has_golden {entry.has_golden!r} != record "
                   f"{bool(attrs['has_golden'])!r}")
    if attrs["expected_status"] != entry.expected_status:
        report.add(f"case {cid}: /index expected_status {entry.expected_status} != "
                   f"attribute {attrs['expected_status']}")
    nbytes = 0
    for role in gf.case_type.inputs():
        t = gf.tensor(cid, role.name)
        if t is not None:
            report.datasets += 1
            nbytes += t.storage.nbytes
    golden = gf.golden(cid)
    if golden is not None:
        report.datasets += 1
        nbytes += golden.nbytes
    report.bytes_read += nbytes
    if nbytes != entry.nbytes:
        report.add(f"case {cid}: /index nbytes {entry.nbytes} != stored {nbytes}")


def check_file(path: str | Path) -> CheckReport:
    """Integrity check of a golden or a results file (dispatch on the format attribute)."""
    p = Path(path)
    fmt = peek_format(p)
    if fmt == FORMAT_RESULTS:
        return check_results(p)
    return check_golden(p)


def peek_format(path: str | Path) -> str | None:
    """The root `format` attribute of an HDF5 file, or None (no file, not HDF5, none)."""
    p = Path(path)
    try:
        if not p.is_file() or not h5py.is_hdf5(p):
            return None
        with h5py.File(p, "r") as f:
            fmt = f.attrs.get("format")
    except H5_ERRORS:
        return None
    return plain_value(fmt) if fmt is not None else None


def is_golden(path: str | Path) -> bool:
    """Whether `path` is an aclcheck golden file (by its root attribute, not its name)."""
    return peek_format(path) == FORMAT_GOLDEN


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
