"""The false-alarm audit: every correct kernel model in tests/ (and the reference, and
PyTorch in float64) passes both operators' default suites and their stress families,
run as a user runs them: `aclcheck verify` with default options (isolated workers, the
stale-state check, each product's overflow mode).

A plain callable cannot return a status, so it accepts the calls the contract rejects
(WRONG_STATUS) and SKIPs the ones it cannot be handed (null pointers); those are not
false alarms. A FAIL, an ERROR, a NONDETERMINISTIC or a "depends on earlier calls" on a
correct kernel is one. The models (tests/kernels_audit.py, tests/kernels_documented.py):
each product's documented path (A2/A3 FLOAT32 atomics, the 1x1 fill, the
training/inference matmuls fed FLOAT16), FLOAT32 accumulation in several orders, the
tiled A2/A3 kernel on 40 and 48 cores, the correctly rounded reference, PyTorch, and a
correct kernel written as plain loops (slow is not hung).

The fast set (README command 2) runs the reference and the one-function model of every
documented path; `-m slow` (.ci/run) runs every model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.suite.selection import Selection
from tests import kernels_audit

FALSE_ALARMS = ("FAIL", "ERROR", "NONDETERMINISTIC", "UNIMPLEMENTED")
AUDIT = "tests/kernels_audit.py"
DOCUMENTED = "tests/kernels_documented.py"
OP_3D = "adaptive_avg_pool3d_backward"


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory, write_golden) -> dict[str, Path]:  # noqa: ANN001
    """Each operator's default suite and its stress family (count 1)."""
    selections = {"2d": Selection(), "2d-stress": Selection(families=("stress",)),
                  "3d": Selection(op=OP_3D),
                  "3d-stress": Selection(op=OP_3D, families=("stress",))}
    return {name: write_golden(tmp_path_factory.mktemp(name), selection, name)
            for name, selection in selections.items()}


def audit(golden: Path, impl: str, tmp_path: Path) -> tuple[int, list[str]]:
    """Cases judged (a verdict other than SKIP) and the false alarms, `id: verdict`."""
    report = tmp_path / "audit.json"
    res = CliRunner().invoke(cli, ["verify", str(golden), "--impl", impl, "--json",
                                   str(report)])
    assert report.exists(), res.output[-3000:]
    cases = json.loads(report.read_text())["cases"]
    alarms = [f"{c['id']}: {c['verdict']} {c.get('message', '')[:200]}" for c in cases
              if c["verdict"] in FALSE_ALARMS]  # "depends on earlier calls" is a FAIL
    judged = sum(c["verdict"] != "SKIP" for c in cases)
    return judged, alarms


FAST = [("2d", "reference"), ("2d-stress", "reference"),
        ("2d", f"{DOCUMENTED}:documented"), ("2d-stress", f"{DOCUMENTED}:documented"),
        ("3d", "reference"), ("3d-stress", "reference"),
        ("3d", f"{DOCUMENTED}:documented_3d"), ("3d-stress", f"{DOCUMENTED}:documented_3d")]


@pytest.mark.parametrize(("suite", "impl"), FAST, ids=[f"{s}-{i.rpartition(':')[2]}"
                                                       for s, i in FAST])
def test_the_documented_paths_raise_no_false_alarm(suites: dict[str, Path], suite: str,
                                                    impl: str, tmp_path: Path) -> None:
    judged, alarms = audit(suites[suite], impl, tmp_path)
    assert judged > 0
    assert alarms == []


SLOW = ([(s, f"{AUDIT}:m2_{name}") for name in kernels_audit.MODELS_2D
         for s in ("2d", "2d-stress")]
        + [(s, f"{AUDIT}:m3_{name}") for name in kernels_audit.MODELS_3D
           for s in ("3d", "3d-stress")]
        + [(s, f"{DOCUMENTED}:documented_slow") for s in ("2d", "2d-stress")])


@pytest.mark.slow
@pytest.mark.parametrize(("suite", "impl"), SLOW, ids=[f"{s}-{i.rpartition(':')[2]}"
                                                       for s, i in SLOW])
def test_every_correct_model_raises_no_false_alarm(suites: dict[str, Path], suite: str,
                                                   impl: str, tmp_path: Path) -> None:
    judged, alarms = audit(suites[suite], impl, tmp_path)
    assert judged > 0
    assert alarms == []
