"""The integrity check of a group-per-case golden file (`inspect --check` on schemas 1
and 2): every dataset read (checksums verified), schema and /index validated against the
case groups; problems collected, one line each."""

from __future__ import annotations

from pathlib import Path

from aclcheck.errors import InputFileError
from aclcheck.store.check_report import CheckReport
from aclcheck.store.codec import FORMAT_GOLDEN
from aclcheck.store.h5read import damage
from aclcheck.store.index import IndexEntry
from aclcheck.store.legacy.group_reader import EXPECT_ATTRS, GroupFile


def check_groups(path: str | Path) -> CheckReport:
    """Read every array (fletcher32 verified), validate schema and index against the
    records. Problems are collected; a file that cannot even be opened raises."""
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

