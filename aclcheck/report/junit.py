"""JUnit XML: one testcase per case, valid XML even when messages hold control chars."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from aclcheck.judging.case.verdicts import CaseVerdict, Verdict, summarize
from aclcheck.report.files import atomic_write
from aclcheck.report.safe_text import printable

# XML 1.0 allows tab, newline, carriage return and the ranges below; nothing else.
_INVALID_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def clean(text: str) -> str:
    """Data as XML text: control characters, bidirectional overrides and lone surrogates
    shown as escapes (report.safe_text), anything else XML 1.0 forbids as '?'."""
    return _INVALID_XML.sub("?", printable(text))


def suite_element(verdicts: Sequence[CaseVerdict], suite_name: str,
                  properties: dict[str, str] | None = None) -> ET.Element:
    """The <testsuite> with its counts and properties, without its test cases."""
    s = summarize(verdicts)
    failures = s["failed"] + s["wrong_status"] + s["unimplemented"] + s["nondeterministic"]
    suite = ET.Element("testsuite", {
        "name": clean(suite_name),
        "tests": str(s["cases"]),
        "failures": str(failures),
        "errors": str(s["error"]),
        "skipped": str(s["skipped"] + s["xfailed"]),
        "time": f"{sum(v.time_s for v in verdicts):.6f}",
    })
    if properties:
        props = ET.SubElement(suite, "properties")
        for name, value in properties.items():
            ET.SubElement(props, "property", {"name": clean(name), "value": clean(value)})
    return suite


def case_element(v: CaseVerdict) -> ET.Element:
    """One <testcase>."""
    case = ET.Element("testcase", {
        "classname": clean(f"aclcheck.{v.product}.{v.dtype}.{v.format}"),
        "name": clean(v.case_id),
        "time": f"{v.time_s:.6f}",
    })
    body = "\n".join(x for x in (v.message, v.detail, *v.notes, v.repro) if x)
    if v.verdict in (Verdict.SKIP, Verdict.XFAIL):
        ET.SubElement(case, "skipped", {"message": clean(v.message)}).text = clean(body)
    elif v.verdict == Verdict.ERROR:
        ET.SubElement(case, "error", {"message": clean(v.message), "type": "ERROR"}
                      ).text = clean(body)
    elif v.failing:
        ET.SubElement(case, "failure", {"message": clean(v.message),
                                        "type": v.verdict.value}).text = clean(body)
    elif body:
        ET.SubElement(case, "system-out").text = clean(body)
    return case


def _indented(elem: ET.Element, level: int) -> str:
    """An element as ET.indent(space="  ") lays it out at `level` of the document."""
    ET.indent(elem, level=level)
    return ET.tostring(elem, encoding="unicode")


def write(path: str | Path, verdicts: Sequence[CaseVerdict], suite_name: str,
          properties: dict[str, str] | None = None, mode: int | None = None) -> None:
    """Write atomically, mode 0666 less the umask (see report.files.atomic_write): the
    document of one <testsuite> in <testsuites>, indented, written a case at a time
    (a run's verdicts may be on disk: judging.gate.spool)."""
    suite = suite_element(verdicts, suite_name, properties)
    head = list(suite)

    def dump(fh: IO[str]) -> None:
        fh.write("<?xml version='1.0' encoding='utf-8'?>\n<testsuites>\n  ")
        if not head and not verdicts:
            fh.write(_indented(suite, 1) + "\n</testsuites>\n")
            return
        opening = ET.tostring(ET.Element("testsuite", suite.attrib), encoding="unicode")
        fh.write(opening.removesuffix(" />") + ">")
        for child in head:
            fh.write("\n    " + _indented(child, 2))
        for v in verdicts:
            fh.write("\n    " + _indented(case_element(v), 2))
        fh.write("\n  </testsuite>\n</testsuites>\n")

    atomic_write(path, dump, mode=mode)
