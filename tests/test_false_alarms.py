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
documented path on the default suites and the stress families' cases up to 2^21
elements; `-m slow` (.ci/run) runs every model, and the documented paths on the whole
stress families (1x1 planes of 2^24 and 2^25 included).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.store.codec import run_meta
from aclcheck.suite.generate import generate
from aclcheck.suite.selection import Selection, build_suite
from tests import kernels_audit

FALSE_ALARMS = ("FAIL", "ERROR", "NONDETERMINISTIC", "UNIMPLEMENTED")
AUDIT = "tests/kernels_audit.py"
DOCUMENTED = "tests/kernels_documented.py"
OP_3D = "adaptive_avg_pool3d_backward"


#: the stress family's cases up to this many elements: its small edges (i·in, N·C
#: slices, UB passes) in the fast set; the whole family (1x1 planes of 2^24 and 2^25,
#: about 1 GB at --count 1) in the slow set
SMALL = 1 << 21
SELECTIONS = {"2d": Selection(), "2d-stress": Selection(families=("stress",)),
              "3d": Selection(op=OP_3D),
              "3d-stress": Selection(op=OP_3D, families=("stress",))}


class Suites:
    """Each operator's default suite and its stress family (count 1; `-small`: its cases
    up to SMALL elements), each generated on first use."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory, self.made = factory, {}

    def __getitem__(self, name: str) -> Path:
        if name not in self.made:
            base = name.removesuffix("-small")
            cases = build_suite(SELECTIONS[base])
            if name.endswith("-small"):
                cases = [c for c in cases if c.numel <= SMALL]
            path = self.factory.mktemp(name) / "suite.h5"
            generate(path, cases, run_meta("test", name))
            self.made[name] = path
        return self.made[name]


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> Suites:
    return Suites(tmp_path_factory)


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


FAST = [("2d", "reference"), ("2d-stress-small", "reference"),
        ("2d", f"{DOCUMENTED}:documented"), ("2d-stress-small", f"{DOCUMENTED}:documented"),
        ("3d", "reference"), ("3d-stress-small", "reference"),
        ("3d", f"{DOCUMENTED}:documented_3d"),
        ("3d-stress-small", f"{DOCUMENTED}:documented_3d")]


@pytest.mark.parametrize(("suite", "impl"), FAST, ids=[f"{s}-{i.rpartition(':')[2]}"
                                                       for s, i in FAST])
def test_the_documented_paths_raise_no_false_alarm(suites: Suites, suite: str,
                                                    impl: str, tmp_path: Path) -> None:
    judged, alarms = audit(suites[suite], impl, tmp_path)
    assert judged > 0
    assert alarms == []


SLOW = ([(s, f"{AUDIT}:m2_{name}") for name in kernels_audit.MODELS_2D
         for s in ("2d", "2d-stress-small")]
        + [(s, f"{AUDIT}:m3_{name}") for name in kernels_audit.MODELS_3D
           for s in ("3d", "3d-stress-small")]
        + [(s, f"{DOCUMENTED}:documented_slow") for s in ("2d", "2d-stress-small")]
        # the whole stress families, big planes included: the documented paths
        + [("2d-stress", "reference"), ("2d-stress", f"{DOCUMENTED}:documented"),
           ("3d-stress", "reference"), ("3d-stress", f"{DOCUMENTED}:documented_3d")])


@pytest.mark.slow
@pytest.mark.parametrize(("suite", "impl"), SLOW, ids=[f"{s}-{i.rpartition(':')[2]}"
                                                       for s, i in SLOW])
def test_every_correct_model_raises_no_false_alarm(suites: Suites, suite: str,
                                                   impl: str, tmp_path: Path) -> None:
    judged, alarms = audit(suites[suite], impl, tmp_path)
    assert judged > 0
    assert alarms == []
