"""The measuring probe inside `aclcheck verify` (issue 38): every probe-zoo kernel's
leading diagnosis is the probe's measured difference (or, for a rounding bug, the cast's
rounding named), read from the JSON report's data; correct kernels trigger no probe;
--no-probe leaves the verdicts and the exit code as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from tests.kernels_probe_zoo import ZOO, Entry

FAMILIES_2D = ("nondivisible", "divisible", "upsampling", "layout", "rounding")
FAMILIES_3D = ("nondivisible", "divisible", "global", "layout")


def generate(path: Path, op: str, families: tuple[str, ...]) -> Path:
    args = ["generate", "-o", str(path), "--op", op, "--product", "atlas-a2"]
    for family in families:
        args += ["--family", family]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture(scope="module")
def goldens(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("probe")
    return {"2d": generate(folder / "p2.h5", "aapool2d-bwd", FAMILIES_2D),
            "3d": generate(folder / "p3.h5", "aapool3d-bwd", FAMILIES_3D)}


def verify(golden: Path, tmp_path: Path, impl: str, *extra: str) -> tuple[int, str, dict]:
    report = tmp_path / "report.json"
    args = ["verify", str(golden), "--impl", impl, "--json", str(report), "--width", "250",
            "--no-isolate", *extra]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.output, json.loads(report.read_text())


@pytest.mark.parametrize("entry", ZOO, ids=lambda e: e.name)
def test_leading_diagnosis_names_the_cause(goldens: dict[str, Path], tmp_path: Path,
                                           entry: Entry) -> None:
    code, out, report = verify(goldens[entry.op], tmp_path,
                               f"tests/kernels_probe_zoo.py:{entry.name}")
    assert code == 1
    first = report["diagnosis"][0]
    assert entry.judged(first) == (True, True), (entry.name, first)
    if first["kind"] == "measured":
        assert 0 < first["calls"] <= 200
        if entry.layout:
            assert first["layouts"] == [entry.layout], first
    assert f"explained by: {first['message']}" in " ".join(out.split())


@pytest.mark.parametrize("impl", ["reference", "tests/kernels_probe_zoo.py:correct_2d",
                                  "tests/kernels_documented.py:documented"])
def test_correct_kernels_trigger_no_probe(goldens: dict[str, Path], tmp_path: Path,
                                          impl: str) -> None:
    code, _, report = verify(goldens["2d"], tmp_path, impl)
    assert code == 0 and not report.get("diagnosis")


def test_no_probe_changes_no_verdict(goldens: dict[str, Path], tmp_path: Path) -> None:
    impl = "tests/kernels_probe_zoo.py:w_end_floor"
    code, _, on = verify(goldens["2d"], tmp_path, impl)
    code_off, _, off = verify(goldens["2d"], tmp_path, impl, "--no-probe")
    assert code == code_off == 1
    assert [c["verdict"] for c in on["cases"]] == [c["verdict"] for c in off["cases"]]
    assert on["diagnosis"][0]["kind"] == "measured"
    assert all(e["kind"] != "measured" for e in off["diagnosis"])
    _, _, none = verify(goldens["2d"], tmp_path, impl, "--probe-budget", "0")
    assert all(e["kind"] != "measured" for e in none["diagnosis"])
