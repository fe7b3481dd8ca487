"""`aclcheck inspect FILE --coverage` on the 3D operator: the edges its families aim at,
counted exactly on hand-built rows and end to end on a small generated suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from aclcheck.cli import cli
from aclcheck.ops import operator
from aclcheck.ops.adaptive.coverage_rows import CaseShape, window_sizes
from aclcheck.ops.adaptive.windows import window_bounds
from aclcheck.ops.adaptive_avg_pool3d_backward.coverage import coverage, lane_width
from aclcheck.store.dispatch import open_golden

#: A2 and Atlas training, FLOAT16 and FLOAT32: index boundaries, layouts, the 1x1x1 fill,
#: overlapping windows, lane alignment, and the invalid calls (not counted).
SUITE_ARGS = ("--op", "aapool3d-bwd", "--product", "atlas-a2", "--product",
              "atlas-training", "--dtype", "float16", "--dtype", "float32",
              "--family", "index", "--family", "layout", "--family", "global",
              "--family", "nondivisible", "--family", "alignment", "--family", "invalid",
              "--count", "1", "--seed", "3")


def row(cid: str, self_shape: tuple[int, ...], grad_shape: tuple[int, ...],
        dtype: str = "float32", layout: str = "contiguous", dist: str = "normal",
        product: str = "atlas-a2") -> CaseShape:
    return CaseShape(cid, product, dtype, layout, dist, self_shape, grad_shape, 3)


def edges_of(rows: list[CaseShape]) -> dict[str, tuple[int, str]]:
    return {e.label: (e.cases, e.example) for e in coverage(rows).edges}


@pytest.fixture(scope="module")
def suite3d(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cov3d") / "s3.h5"
    res = CliRunner().invoke(cli, ["generate", "-o", str(path), *SUITE_ARGS])
    assert res.exit_code == 0, res.output
    return path


def inspect_edges(path: Path, *args: str) -> dict:
    res = CliRunner().invoke(cli, ["inspect", str(path), "--coverage", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["coverage"]


# -- hand-built rows ---------------------------------------------------------------------------


def test_window_sizes_match_the_window_bounds() -> None:
    for i in range(1, 41):
        for o in range(1, 41):
            start, end = window_bounds(o, i)
            assert window_sizes(i, o) == tuple(sorted({int(x) for x in end - start})), (i, o)
    assert window_sizes(0, 3) == ()


def test_axis_kinds_and_window_sizes_per_axis() -> None:
    rows = [row("a", (1, 2, 6, 5, 3), (1, 2, 3, 3, 3)),  # D 2 | H 2, 3 | W 1
            row("b", (2, 7, 1, 4), (2, 3, 1, 6)),  # rank 4: D 3 (7 -> 3) | H 1 | W 1, 2
            row("c", (1, 1, 7, 4, 9), (1, 1, 2, 1, 9))]  # D 4 (7 -> 2) | H 4 | W 1
    e = edges_of(rows)
    assert e["D divisible (1 < Do < D, D % Do = 0)"] == (1, "a")
    assert e["D nondivisible (Do < D, D % Do != 0)"] == (2, "b")
    assert e["H nondivisible (Ho < H, H % Ho != 0)"] == (1, "a")
    assert e["H identity (Ho = H)"] == (1, "b") and e["H global (Ho = 1 < H)"] == (1, "c")
    assert e["W upsampling (Wo > W)"] == (1, "b")
    assert e["W identity (Wo = W)"] == (2, "a")
    # nondivisible is not enough: 7 -> 3 and 7 -> 2 have windows of one size
    assert e["D windows of unequal sizes"] == (0, "")
    assert e["H windows of unequal sizes"] == (1, "a")
    assert e["W windows of unequal sizes"] == (1, "b")
    assert e["largest windows differ on D, H and W"] == (2, "a")  # c: 4, 4, 1
    assert e["rank 4 (C, D, H, W)"] == (1, "b") and e["rank 5 (N, C, D, H, W)"][0] == 2


def test_distinct_windows_and_the_atomic_path() -> None:
    rows = [row("direct", (1, 1, 4, 6, 9), (1, 1, 2, 3, 3)),  # windows 2, 2, 3
            row("mixed", (1, 1, 8, 5, 3), (1, 1, 2, 3, 3)),  # 4, 2 or 3, 1: D divides
            row("over", (1, 1, 5, 7, 4), (1, 1, 3, 2, 3))]  # 2 or 3, 4, 2: none divides
    e = edges_of(rows)
    assert e["every axis divides: direct writes"] == (1, "direct")
    assert e["some axis does not divide: atomic adds"] == (2, "mixed")
    assert e["atomic adds with an axis that divides"] == (1, "mixed")
    assert e["no axis divides (overlaps on D, H and W)"] == (1, "over")
    assert e["largest windows differ on D, H and W"] == (2, "mixed")


def test_global_fill_index_crossings_and_lanes() -> None:
    rows = [row("g1", (1, 1, 3, 5, 7), (1, 1, 1, 1, 1)),  # one plane: N·C = 1
            row("g2", (2, 3, 4, 4, 4), (2, 3, 1, 1, 1)),  # 64: factor exact
            row("g3", (1, 1, 64, 64, 5), (1, 1, 1, 1, 1), dtype="float16"),  # 20 480
            row("tall", (1, 1, 1, 4099, 1), (1, 1, 1, 4098, 1)),  # i·in 16 797 702 on H
            row("wide", (1, 1, 1, 1, 46341), (1, 1, 1, 1, 46342)),  # past 2^31 on W
            row("lanes", (2, 8, 2, 3, 2), (2, 8, 1, 2, 1), dtype="float16"),  # N·C = 16
            row("tail", (1, 9, 2, 3, 2), (1, 9, 1, 2, 1))]  # FLOAT32: 9 = 8 + 1
    e = edges_of(rows)
    assert e["1x1x1 output (global fill)"] == (3, "g1")
    assert e["1x1x1 output, N·C > 1"] == (1, "g2")
    assert e["1x1x1, D·H·W not a power of two (factor rounded)"] == (2, "g1")
    assert e["1x1x1, D·H·W >= 16393 in FLOAT16 (subnormal factor)"] == (1, "g3")
    assert e["1x1x1, D·H·W >= 2^25 in FLOAT16 (factor 0)"] == (0, "")
    assert e["i·in > 2^24 on H"] == (1, "tall")
    assert e["i·in > 2^24 on W"] == (1, "wide") and e["i·in > 2^31 on W"] == (1, "wide")
    assert e["i·in > 2^24 on D"] == (0, "") and e["i·in > 2^31 on H"] == (0, "")
    assert e["N·C·D·H·W > 2^24 (flat input index)"] == (0, "")
    assert e["N·C whole lane blocks (windowed)"] == (1, "lanes")
    assert e["N·C one lane past a lane block (windowed)"] == (1, "tail")
    assert lane_width("float32") == 8 and lane_width("bfloat16") == 16


def test_layouts_slices_values_and_products() -> None:
    rows = [row("cl16", (2, 8, 2, 2, 2), (2, 8, 1, 1, 2), "float16", "channels_last"),
            row("cl12", (2, 6, 2, 2, 2), (2, 6, 1, 1, 2), "float16", "channels_last"),
            row("cl8", (2, 4, 2, 2, 2), (2, 4, 1, 1, 2), "float32", "channels_last"),
            row("cl4d", (16, 2, 2, 2), (16, 1, 1, 2), "float16", "channels_last"),
            row("slice", (1, 15873, 3, 2, 1), (1, 15873, 2, 1, 1), "float16", dist="uniform"),
            row("ties", (1, 3, 1, 3, 8), (1, 3, 1, 2, 8), "bfloat16", dist="ties"),
            row("nan", (1, 1, 2, 2, 2), (1, 1, 3, 3, 3), dist="nan-fill"),
            row("ones", (1, 1, 2, 2, 2), (1, 1, 1, 1, 1), dist="ones", product="atlas-inference"),
            row("empty", (1, 0, 2, 2, 2), (1, 0, 1, 1, 1))]  # invalid in 3D: not counted
    cov = coverage(rows)
    e = {x.label: (x.cases, x.example) for x in cov.edges}
    assert cov.valid_cases == 8
    assert e["channels_last (NDHWC), N > 1, N·C a multiple of 16, float16"] == (1, "cl16")
    assert e["channels_last (NDHWC), N > 1 and C > 1, float16"] == (2, "cl16")
    assert e["channels_last (NDHWC), N > 1, N·C a multiple of 8, float32"] == (1, "cl8")
    assert e["channels_last (NDHWC), N > 1, N·C a multiple of 16, bfloat16"] == (0, "")
    assert e["N·C sliced (lanes past one UB pass)"] == (1, "slice")
    assert e["N·C sliced, short last slice"] == (1, "slice")  # 3 slices of 7 936, tail 1
    assert e["ties, bfloat16"] == (1, "ties") and e["ties, float16"] == (0, "")
    assert e["special values where windows overlap (atomic)"] == (1, "nan")
    assert e["ones"] == (1, "ones")  # drawn by no family: listed where a file has it
    assert e["atlas-inference float32"] == (1, "ones") and e["atlas-a3 bfloat16"] == (0, "")
    assert "ones" not in edges_of(rows[:1])
    assert dict(cov.extremes)["largest N·C"] == 15873


def test_every_edge_is_listed_even_when_no_row_reaches_it() -> None:
    cov = coverage([])
    assert cov.valid_cases == 0 and cov.edges and not any(e.covered for e in cov.edges)
    products = {e.label for e in cov.edges if e.group == "dtype"}
    assert products == {f"{p} {d}" for p, r in operator("aapool3d-bwd").products.items()
                        for d in r.dtypes}


# -- end to end --------------------------------------------------------------------------------


def test_the_suite_reaches_its_families_edges(suite3d: Path) -> None:
    cov = inspect_edges(suite3d)
    edges = {e["label"]: e for e in cov["edges"]}
    with open_golden(suite3d) as gf:
        valid = [c for c in (gf.case(i) for i in gf.ids()) if c.positive]
    fills = [c.id for c in valid if tuple(c.grad_shape[-3:]) == (1, 1, 1)]
    assert cov["valid_cases"] == len(valid) and fills
    assert edges["1x1x1 output (global fill)"]["cases"] == len(fills)
    assert edges["1x1x1 output (global fill)"]["example"] in fills
    for axis in "DHW":  # the index family rotates its long axis over the combinations
        assert edges[f"i·in > 2^24 on {axis}"]["cases"] > 0, axis
    assert edges["N·C whole lane blocks (windowed)"]["cases"] > 0
    assert edges["some axis does not divide: atomic adds"]["cases"] > 0
    # no family draws these: listed, reached by none
    for label in ("i·in > 2^31 on D", "N·C·D·H·W > 2^31 (flat input index)",
                  "channels_last (NDHWC), N > 1, N·C a multiple of 16, float16"):
        assert edges[label]["cases"] == 0 and edges[label]["example"] == "", label


def test_a_trimmed_suite_and_the_table(suite3d: Path) -> None:
    edges = {e["label"]: e for e in inspect_edges(suite3d, "--family", "!index")["edges"]}
    assert all(edges[f"i·in > 2^24 on {a}"]["cases"] == 0 for a in "DHW")
    res = CliRunner().invoke(cli, ["inspect", str(suite3d), "--coverage"],
                             env={"COLUMNS": "220"})
    assert res.exit_code == 0, res.output
    assert "i·in > 2^31 on D" in res.output and "none" in res.output
    assert "edges not reached" in res.output


def test_the_committed_3d_suite_lost_no_edge_and_stress_reaches_the_rest() -> None:
    """golden/ci-suite-3d.h5 reaches every hardware edge but the on-request ones (the CI
    gate), and the stress family's --count 1 draws reach each of those but the flat index
    past 2^31 (about 8 GB a case: drawn nowhere)."""
    from aclcheck.ops.adaptive_avg_pool3d_backward import contract
    from aclcheck.ops.adaptive_avg_pool3d_backward import coverage as cov3d
    from aclcheck.ops.adaptive_avg_pool3d_backward.families import shape_case

    golden = Path(__file__).parent.parent / "golden" / "ci-suite-3d.h5"
    res = CliRunner().invoke(cli, ["inspect", str(golden), "--coverage", "--json",
                                   "--require-edges"])
    assert res.exit_code == 0, res.output
    edges = json.loads(res.output)["coverage"]["edges"]
    assert {e["label"] for e in edges if e["on_request"]} == cov3d.ON_REQUEST
    stress = [c for p, rules in contract.PRODUCTS.items() for d in rules.dtypes
              for f in contract.FORMATS if (c := shape_case("stress", p, d, f, 0, 0))]
    reached = {e.label for e in cov3d.case_coverage(stress).edges if e.covered}
    assert cov3d.ON_REQUEST - reached == {"N·C·D·H·W > 2^31 (flat input index)"}
    # the table says so, not "(stress)": only a case file of one's own reaches it
    drawn = {e["label"]: e["drawn_by"] for e in edges if e["on_request"]}
    assert drawn.pop("N·C·D·H·W > 2^31 (flat input index)").startswith("a case file")
    assert set(drawn.values()) == {"stress"}
