"""Evidence of a failing comparison (map, per-plane counts, histogram) and its terminal
picture: computed over plain arrays, carried through compare, verdicts and JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rich.console import Console

from aclcheck.judging.case import evidence
from aclcheck.judging.case.evidence import (
    HIST_LOG2_EDGES,
    JSON_INF,
    MAP_CELLS,
    Evidence,
    EvidenceBuilder,
)
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.ops.adaptive_avg_pool2d_backward.compare import Context, compare
from aclcheck.ops.adaptive_avg_pool2d_backward.record import Case
from aclcheck.ops.materialize import make_tensors
from aclcheck.report.errormap import error_map, shrink_map
from tests import kernels


def _ratios(shape: tuple[int, ...], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ratio = 10.0 ** rng.uniform(-5, 5, shape)
    ratio.reshape(-1)[7 % ratio.size] = np.inf  # a special-value mismatch
    return ratio, ratio > 1.0


def _expected_map(ratio: np.ndarray) -> np.ndarray:
    """Worst over planes, then over each cell, by brute force."""
    h, w = ratio.shape[-2:]
    worst = ratio.reshape(-1, h, w).max(axis=0)
    gh, gw = min(h, MAP_CELLS), min(w, MAP_CELLS)
    out = np.zeros((gh, gw))
    for i in range(h):
        for j in range(w):
            ci, cj = i * gh // h, j * gw // w
            out[ci, cj] = max(out[ci, cj], worst[i, j])
    return out


@pytest.mark.parametrize("full_map", [True, False])  # full-resolution map, or cells per chunk
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (3, 40, 70), (1, 1, 1, 1), (2, 1, 33, 1)])
def test_builder_matches_brute_force_for_any_chunking(shape: tuple[int, ...], full_map: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    if not full_map:
        monkeypatch.setattr(evidence, "FULL_MAP_LIMIT", 0)
    ratio, fail = _ratios(shape)
    flat, flat_fail = ratio.reshape(-1), fail.reshape(-1)
    plane = shape[-2] * shape[-1]
    pieces = {
        "whole": [(0, flat.size)],
        "planes": [(s, min(s + plane, flat.size)) for s in range(0, flat.size, plane)],
        "odd": [(s, min(s + 5, flat.size)) for s in range(0, flat.size, 5)],  # row pieces
    }
    expected = _expected_map(ratio)
    planes = fail.reshape(-1, plane).sum(axis=1)
    for name, ranges in pieces.items():
        b = EvidenceBuilder(shape, "aclcheck")
        for lo, hi in ranges:
            b.add(flat[lo:hi], flat_fail[lo:hi] if flat_fail[lo:hi].any() else None, lo)
        ev = b.result()
        np.testing.assert_array_equal(ev.worst_map, expected, err_msg=name)
        np.testing.assert_array_equal(ev.plane_fails, planes, err_msg=name)
        assert ev.hist.sum() == flat.size, name
        assert ev.hist[-1] >= 1  # the inf went to the top bin


def test_histogram_bins_are_powers_of_two() -> None:
    b = EvidenceBuilder((1, 1, 1, 6))
    values = np.array([0.0, 2.0 ** -20, 0.75, 1.0, 3.0, 2.0 ** 20])
    b.add(values, values > 1, 0)
    hist = b.result().hist

    def bin_of(k: int) -> int:  # the bin of [2^k, 2^(k+1))
        return k - HIST_LOG2_EDGES[0] + 1

    assert hist[0] == 2  # 0 and 2^-20: below 2^-14
    assert hist[bin_of(-1)] == 1  # 0.75
    assert hist[bin_of(0)] == 1  # 1.0
    assert hist[bin_of(1)] == 1  # 3.0
    assert hist[-1] == 1  # 2^20: top bin
    assert hist.sum() == 6


def test_many_planes_are_grouped() -> None:
    shape = (10, 100, 2, 2)
    fail = np.zeros(shape, dtype=bool)
    fail[9, 99, 1, 1] = True
    b = EvidenceBuilder(shape)
    b.add(fail.reshape(-1).astype(float) * 5, fail.reshape(-1), 0)
    ev = b.result()
    assert ev.plane_group > 1 and ev.plane_fails.size <= 256
    assert ev.plane_fails.sum() == 1 and ev.plane_fails[-1] == 1


def _failing_case(kernel=kernels.off_by_one_end) -> tuple[Case, np.ndarray, np.ndarray, Context]:
    case = Case(id="c", family="f", product="atlas-a2", dtype="float32", format="NCHW",
                self_shape=(2, 3, 17, 9), grad_shape=(2, 3, 5, 4), seed=3)
    t = make_tensors(case)
    grad = t.grad_output.view()
    out = kernel(grad, np.zeros(case.self_shape, np.float32))
    return case, t.golden, out, Context("atlas-a2", "float32", grad, (17, 9))


def test_compare_attaches_evidence_only_to_failures() -> None:
    case, golden, out, ctx = _failing_case()
    failed = compare(golden, out, ctx)
    assert not failed.passed and failed.evidence is not None
    ev = failed.evidence
    assert ev.shape == (2, 3, 17, 9) and ev.worst_map.shape == (17, 9)
    assert ev.plane_fails.sum() == failed.metrics["mismatches"]
    assert np.nanmax(ev.worst_map) == pytest.approx(failed.metrics["max_budget_ratio"])
    _, _, good, _ = _failing_case(kernels.window_sum)
    assert compare(golden, good, ctx).evidence is None


def test_dropped_last_row_shows_in_the_map() -> None:
    case, golden, out, ctx = _failing_case(kernels.dropped_last)
    ev = compare(golden, out, ctx).evidence
    assert ev is not None
    assert np.all(ev.worst_map[-1, :] > 1) and np.all(ev.worst_map[:, -1] > 1)
    assert np.all(ev.worst_map[:-1, :-1] <= 1)


def test_json_round_trip_through_the_verdict() -> None:
    _, golden, out, ctx = _failing_case()
    ev = compare(golden, out, ctx).evidence
    assert ev is not None
    ev.worst_map[0, 0] = np.inf
    v = CaseVerdict("c", Verdict.FAIL, "m", evidence=ev)
    data = json.loads(json.dumps(v.to_json(), allow_nan=False))
    assert data["evidence"]["map"][0][0] == JSON_INF
    back = CaseVerdict.from_json(data).evidence
    assert back is not None and np.isinf(back.worst_map[0, 0])
    np.testing.assert_allclose(back.worst_map[1:], ev.worst_map[1:], rtol=5e-3)
    np.testing.assert_array_equal(back.hist, ev.hist)
    assert "evidence" not in CaseVerdict("p", Verdict.PASS, "ok").to_json()


@pytest.mark.parametrize("bad", [None, "x", {"map": "nope"}, {"map": [[1.0]], "hist": [1]}])
def test_malformed_evidence_reads_as_missing(bad: object) -> None:
    assert Evidence.from_json(bad) is None


def test_terminal_map_fits_the_width_and_marks_failures() -> None:
    _, golden, out, ctx = _failing_case(kernels.dropped_last)
    ev = compare(golden, out, ctx).evidence
    assert ev is not None
    console = Console(width=30, record=True, color_system=None)
    console.print(error_map(ev, 30))
    text = console.export_text()
    rows = [line for line in text.splitlines() if line and line[0] in "·░▒▓█X"]
    assert rows and all(len(line) <= 30 for line in rows)
    assert rows[-1].strip("·░") != ""  # the last row is over budget
    assert set(rows[0][:-2]) <= {"·", "░"}  # the first row's inner cells are not


def test_shrink_map_takes_the_worst_of_each_block() -> None:
    grid = np.arange(16, dtype=float).reshape(4, 4)
    np.testing.assert_array_equal(shrink_map(grid, 2, 2), [[5, 7], [13, 15]])


def test_a_map_of_one_level_is_said_not_drawn() -> None:
    """Every cell far over budget: a solid block shows nothing, one line says so."""
    ev = Evidence((3, 4, 6), np.full((4, 6), 1e6), np.ones(3, dtype=np.int64), 1,
                  np.zeros(4, dtype=np.int64))
    text = error_map(ev, 40).plain
    assert "every cell >256 (no pattern to draw)" in text and "█" not in text
