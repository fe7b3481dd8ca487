"""The HTML report: structure (HTML parser), escaping of hostile text, `aclcheck report`
from a JSON report, bad output paths, and a real headless-browser rendering."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.report import html as html_report


@pytest.fixture(scope="module")
def golden(a2_fp32_golden: Path) -> Path:
    return a2_fp32_golden


@pytest.fixture(scope="module")
def broken_run(golden: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """verify with a kernel that drops each window's last element: HTML and JSON."""
    out = tmp_path_factory.mktemp("html-out")
    page, report = out / "report.html", out / "report.json"
    result = CliRunner().invoke(cli, ["verify", str(golden), "--impl",
                                      "kernels:off_by_one_end", "--html", str(page),
                                      "--json", str(report)], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "error/allowed, worst over" in result.output  # the terminal error map
    return page, report


class Page(HTMLParser):
    """Collects what the structure tests look at."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.title = ""
        self.details: list[dict] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        self.stack.append(tag)
        if tag == "details":
            self.details.append({"imgs": [], "svgs": 0, "text": []})
        elif self.details and "details" in self.stack:
            if tag == "img":
                self.details[-1]["imgs"].append(a.get("src") or "")
            elif tag == "svg":
                self.details[-1]["svgs"] += 1

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1] == "title":
            self.title += data
        self.text.append(data)
        if self.details and "details" in self.stack:
            self.details[-1]["text"].append(data)


def parse(path: Path) -> Page:
    p = Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_every_failing_case_has_its_section_and_pictures(broken_run: tuple[Path, Path]
                                                         ) -> None:
    page_path, report_path = broken_run
    cases = json.loads(report_path.read_text())["cases"]
    failing = [c for c in cases if c["verdict"] == "FAIL"]
    non_passing = [c for c in cases if c["verdict"] not in ("PASS", "SKIP")]
    assert len(failing) >= 2
    page = parse(page_path)
    assert page.title.startswith("aclcheck: kernels:off_by_one_end")
    assert len(page.details) == len(non_passing)  # no cap
    text = "".join(page.text)
    for c in failing:
        assert c["id"] in text
    with_pics = [d for d in page.details if "FAIL" in "".join(d["text"])]
    assert len(with_pics) == len(failing)
    for d in with_pics:
        assert len(d["imgs"]) == 3  # heat map, planes, histogram
        assert all(src.startswith("data:image/png;base64,") for src in d["imgs"])
    # summary table with every case, matrix, one script of our own, nothing remote
    rows = [a for t, a in page.tags if t == "tr" and "data-verdict" in a]
    assert len(rows) == len(cases)
    assert any(t == "table" and a.get("id") == "matrix" for t, a in page.tags)
    assert [t for t, _ in page.tags].count("script") == 1
    for tag, attrs in page.tags:
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            assert not value.startswith(("http:", "https:", "//")), (tag, value)
    assert text.count("--impl kernels:off_by_one_end --id") >= len(failing)  # repro lines


def test_report_command_redraws_the_same_sections(broken_run: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    page_path, report_path = broken_run
    again = tmp_path / "again.html"
    result = CliRunner().invoke(cli, ["report", str(report_path), "--html", str(again)])
    assert result.exit_code == 0, result.output
    first, second = parse(page_path), parse(again)
    assert len(second.details) == len(first.details)
    assert [len(d["imgs"]) for d in second.details] == [len(d["imgs"]) for d in first.details]


def test_report_without_picture_data_says_what_is_missing(broken_run: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    _, report_path = broken_run
    data = json.loads(report_path.read_text())
    data["tool_version"] = "0.0.1"
    for c in data["cases"]:
        c.pop("evidence", None)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    page = tmp_path / "old.html"
    result = CliRunner().invoke(cli, ["report", str(old), "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert "no picture data" in result.output
    text = " ".join(parse(page).text)
    assert "written by aclcheck 0.0.1" in text
    assert "no pictures: the report has no picture data" in text


HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)>"\'&'


def test_hostile_text_never_becomes_markup(tmp_path: Path) -> None:
    v = CaseVerdict(case_id=HOSTILE, verdict=Verdict.ERROR, message=HOSTILE, product=HOSTILE,
                    dtype="float32", format="ND", family=HOSTILE, detail=f"hint: {HOSTILE}",
                    notes=(HOSTILE,), repro=f"aclcheck verify x --id {HOSTILE}",
                    metrics={"max_ulp": HOSTILE})
    report = {"implementation": HOSTILE, "golden": HOSTILE, "standards": [HOSTILE],
              "tool_version": HOSTILE, "command": HOSTILE}
    path = tmp_path / "h.html"
    html_report.write(path, report, [v])
    page = parse(path)
    assert [t for t, _ in page.tags].count("script") == 1  # ours only
    assert not any(t == "img" and a.get("src") == "x" for t, a in page.tags)
    assert not any("onerror" in a for _, a in page.tags)
    assert HOSTILE in "".join(page.text)  # shown as text, intact
    assert page.title.count("<script>") == 1  # the title's text, not a tag


def test_unwritable_html_path_is_refused_before_any_work(golden: Path, tmp_path: Path
                                                         ) -> None:
    report = tmp_path / "r.json"
    result = CliRunner().invoke(cli, ["verify", str(golden), "--html",
                                      str(tmp_path / "missing" / "r.html"), "--json",
                                      str(report)])
    assert result.exit_code == 2
    assert "does not exist" in result.output
    assert not report.exists()  # nothing ran
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "nothing.json"), "--html",
                                      str(tmp_path)])
    assert result.exit_code == 2


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name) or (f"/usr/bin/{name}" if os.path.exists(f"/usr/bin/{name}")
                                      else None)
        if path:
            return path
    return None


def test_headless_browser_renders_pictures(broken_run: tuple[Path, Path],
                                           tmp_path: Path) -> None:
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium on this machine (.ci/run installs Debian's chromium)")
    page_path, _ = broken_run
    shot = tmp_path / "shot.png"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           "--window-size=1200,1800", "--hide-scrollbars", f"--screenshot={shot}",
           page_path.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert shot.exists(), proc.stderr[-2000:]
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)[..., :3]
    assert img.shape[0] >= 1000 and img.shape[1] >= 1000
    not_white = np.any(img < 0.9, axis=-1).mean()
    assert not_white > 0.05, f"screenshot nearly blank ({not_white:.1%} ink)"
    red = (img[..., 0] > 0.6) & (img[..., 1] < 0.35) & (img[..., 2] < 0.35)
    assert red.sum() > 2000, "no over-budget cells of a heat map visible"


def test_a_heat_map_of_one_colour_is_said_not_drawn() -> None:
    from aclcheck.judging.case.evidence import Evidence
    from aclcheck.report.pictures import case_pictures

    def evidence(worst: np.ndarray) -> Evidence:
        return Evidence((2, 4, 6), worst, np.ones(2, dtype=np.int64), 1,
                        np.zeros(4, dtype=np.int64))

    solid = case_pictures(evidence(np.full((4, 6), 1e6)))
    assert solid.uniform and solid.heatmap == "" and solid.over_cells == 24
    mixed = case_pictures(evidence(np.linspace(0.1, 1e6, 24).reshape(4, 6)))
    assert not mixed.uniform and mixed.heatmap.startswith("data:image/png")
