"""JUnit XML: one testcase per case, valid XML even when messages hold control chars."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from aclcheck.judging.verdicts import CaseVerdict, Verdict, summarize
from aclcheck.report.files import atomic_write
from aclcheck.report.safe_text import printable

# XML 1.0 allows tab, newline, carriage return and the ranges below; nothing else.
_INVALID_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def clean(text: str) -> str:
    """Data as XML text: control characters, bidirectional overrides and lone surrogates
    shown as escapes (report.safe_text), anything else XML 1.0 forbids as '?'."""
    return _INVALID_XML.sub("?", printable(text))


def build(verdicts: Sequence[CaseVerdict], suite_name: str,
          properties: dict[str, str] | None = None) -> ET.ElementTree:
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
    for v in verdicts:
        case = ET.SubElement(suite, "testcase", {
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
    return ET.ElementTree(_wrap(suite))


def _wrap(suite: ET.Element) -> ET.Element:
    root = ET.Element("testsuites")
    root.append(suite)
    return root


def write(path: str | Path, verdicts: Sequence[CaseVerdict], suite_name: str,
          properties: dict[str, str] | None = None, mode: int | None = None) -> None:
    """Write atomically, mode 0666 less the umask (see report.files.atomic_write)."""
    tree = build(verdicts, suite_name, properties)
    ET.indent(tree)
    text = ET.tostring(tree.getroot(), encoding="unicode")
    atomic_write(path, lambda fh: fh.write(f"<?xml version='1.0' encoding='utf-8'?>\n{text}\n"),
                 mode=mode)
