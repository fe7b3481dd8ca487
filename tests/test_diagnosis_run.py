"""The run's diagnosis end to end (issue 21): every zoo kernel's first diagnosis names its
real cause, correct kernels get none, the JSON report carries the signature tables and
the diagnosis list, the console reads top-down.

One small suite (atlas-a2, the families where the zoo's bugs show) judged in-process;
benchmarks/bench_diagnosis.py prints the same table on the default suite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from tests.kernels_zoo import CONTROLS, ZOO, Entry

FAMILIES = ("nondivisible", "divisible", "upsampling", "identity", "global", "index",
            "layout", "rank3", "rounding", "special")


@pytest.fixture(scope="module")
def zoo_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("zoo") / "zoo.h5"
    args = ["generate", "-o", str(path), "--product", "atlas-a2"]
    for family in FAMILIES:
        args += ["--family", family]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return path


def verify(golden: Path, tmp_path: Path, impl: str, *extra: str) -> tuple[int, str, dict]:
    report = tmp_path / f"{impl.replace(':', '_').replace('/', '_')}.json"
    args = ["verify", str(golden), "--impl", impl, "--json", str(report), "--width", "160",
            "--no-probe", *extra]  # the what-if models' ranking (the probe: test_probe_run)
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.output, json.loads(report.read_text())


#: every third zoo kernel in the default run, the rest in .ci/run's slow step (-m slow)
ZOO_PARAMS = [e if i % 3 == 0 else pytest.param(e, marks=pytest.mark.slow)
              for i, e in enumerate(ZOO)]


@pytest.mark.parametrize("entry", ZOO_PARAMS, ids=lambda e: e.name)
def test_first_diagnosis_names_the_real_cause(zoo_golden: Path, tmp_path: Path,
                                              entry: Entry) -> None:
    code, out, report = verify(zoo_golden, tmp_path, f"tests/kernels_zoo.py:{entry.name}",
                               "--no-isolate")
    assert code == 1
    first = report["diagnosis"][0]
    assert first["code"] in entry.codes, (entry.name, first)
    assert set(first) >= {"code", "message", "cases_explained", "cases_failing", "exact"}
    assert f"explained by: {first['message']}" in " ".join(out.split())


@pytest.mark.parametrize("impl", [f"tests/kernels_zoo.py:{c}" for c in CONTROLS]
                         + ["reference"])
def test_correct_kernels_get_no_diagnosis(zoo_golden: Path, tmp_path: Path,
                                          impl: str) -> None:
    page = tmp_path / "page.html"
    code, out, report = verify(zoo_golden, tmp_path, impl, "--no-isolate", "--html",
                               str(page))
    assert code == 0
    assert report["diagnosis"] == []
    assert 'id="diagnosis"' not in page.read_text()
    assert "explained by" not in out and "size:" not in out
    summary = report["summary"]
    assert summary["by_family"]["nondivisible"]["passed"] > 0
    assert set(summary) >= {"by_family", "by_layout", "by_rank", "by_product_dtype",
                            "by_axis_kind"}


def test_torch_gets_no_diagnosis(zoo_golden: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is not installed")
    # float32: torch's CPU kernel accumulates FP16/BF16 in the input dtype, which the
    # A2 contract does not allow (its diagnosis then says so: accumulate-input-dtype)
    code, _, report = verify(zoo_golden, tmp_path, "torch", "--family", "nondivisible",
                             "--family", "rank3", "--dtype", "float32")
    assert code == 0 and report["diagnosis"] == []


def test_report_and_console_read_top_down(zoo_golden: Path, tmp_path: Path) -> None:
    """Magnitude first, the signature tables, one case per signature group."""
    page = tmp_path / "page.html"
    _, out, report = verify(zoo_golden, tmp_path, "tests/kernels_zoo.py:rank3_first_plane",
                            "--no-isolate", "--html", str(page))
    html = page.read_text()
    assert html.index('<h2 id="diagnosis">') < html.index("<h2>By product")
    assert "explained by:" in html and "only-plane-0" in html and 'id="signature"' in html
    # the page drawn again from the JSON report says the same
    again = tmp_path / "again.html"
    json_path = tmp_path / "tests_kernels_zoo.py_rank3_first_plane.json"
    result = CliRunner().invoke(cli, ["report", str(json_path), "--html", str(again)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    redrawn = again.read_text()
    def section(page: str) -> str:
        return page[page.index('<h2 id="diagnosis">'):page.index("<h2>By product")]

    assert section(redrawn) == section(html)
    text = " ".join(out.split())
    assert "aclcheck: tests/kernels_zoo.py:rank3_first_plane: 33 of 84 cases " \
        "nonconforming" in text
    assert text.index("nonconforming size: gross:") < text.index("explained by:") \
        < text.index("nonconforming cases by signature")
    by_rank = report["summary"]["by_rank"]
    assert by_rank["4"].get("failed", 0) == 0 and by_rank["3"]["failed"] > 0
    failing = [c for c in report["cases"] if c["verdict"] == "FAIL"]
    assert all(c["message"].startswith(c["magnitude"]["class"] + ":") for c in failing)
    assert sum(c["magnitude"]["class"] == "gross" for c in failing) > 0.9 * len(failing)
    # one detail per group: fewer detail rules than failing cases
    assert out.count("repro: ") < len(failing)


def test_merged_shards_keep_the_diagnosis(zoo_golden: Path, tmp_path: Path) -> None:
    impl = "tests/kernels_zoo.py:end_floor"
    _, _, full = verify(zoo_golden, tmp_path, impl, "--no-isolate")
    shards = []
    for k in (1, 2):
        path = tmp_path / f"shard{k}.json"
        result = CliRunner().invoke(cli, ["verify", str(zoo_golden), "--impl", impl,
                                          "--no-isolate", "--no-probe", "--shard", f"{k}/2",
                                          "--json",
                                          str(path)], catch_exceptions=False)
        assert result.exit_code == 1, result.output
        shards.append(str(path))
    merged_path = tmp_path / "merged.json"
    result = CliRunner().invoke(cli, ["merge", "-o", str(merged_path), *shards],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    merged = json.loads(merged_path.read_text())
    assert merged["summary"] == full["summary"]  # by_* tables summed, magnitudes again
    first = merged["diagnosis"][0]
    assert first["code"] == "window-end-floor"
    assert first["cases_explained"] == first["cases_failing"] == full["summary"]["failed"]
    assert len(merged["commands"]) == 2  # every shard's command line
