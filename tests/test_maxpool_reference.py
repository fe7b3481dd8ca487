"""The float64 reference of aclnnAdaptiveMaxPool2dBackward (aclcheck/ops/
adaptive_max_pool2d_backward/reference.py) and the indices its families draw (values.py,
families.py).

The scatter-add against its own independent loop (reference.naive) and against PyTorch
float64 (torch.ops.aten.adaptive_max_pool2d_backward, INT64 indices) on random valid
cases of every geometry; shared positions really add; INT32 and INT64 indices give the
same golden; every index a valid family draws lies in its cell's window (first-max and
last-max pick the first and last maximum of self's window); every invalid choice of the
family `badindex` is invalid in the way its name says and makes the call unspecified,
isolated only.

Windows here come from integer floor/ceil of the spec (start = floor(i*H/Ho),
end = ceil((i+1)*H/Ho)), or from aclcheck.ops.adaptive.windows.window_bounds where a
family's draw is checked.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from aclcheck.cases.acl import SUCCESS, UNSPECIFIED
from aclcheck.ops.adaptive.windows import window_bounds
from aclcheck.ops.adaptive_max_pool2d_backward import contract, families, reference
from aclcheck.ops.adaptive_max_pool2d_backward.record import Case
from aclcheck.ops.adaptive_max_pool2d_backward.values import (
    INVALID_CHOICES,
    VALID_CHOICES,
    tensor_values,
)
from aclcheck.ops.materialize import make_tensors

PRODUCT = "atlas-a2"


def _window(i: int, out_size: int, in_size: int) -> tuple[int, int]:
    """[start, end) of window i: floor(i*in/out), ceil((i+1)*in/out) (the spec's)."""
    return (i * in_size) // out_size, -((-(i + 1) * in_size) // out_size)


def random_indices(rng: np.random.Generator, lead: tuple[int, ...], hw: tuple[int, int],
                   ohw: tuple[int, int]) -> np.ndarray:
    """INT64 flat positions h*W + w, each uniform in its cell's window."""
    h, w = hw
    ho, wo = ohw
    idx = np.empty(lead + ohw, dtype=np.int64)
    for plane in np.ndindex(*lead):
        for i in range(ho):
            r0, r1 = _window(i, ho, h)
            for j in range(wo):
                c0, c1 = _window(j, wo, w)
                idx[plane + (i, j)] = int(rng.integers(r0, r1)) * w + int(rng.integers(c0, c1))
    return idx


def random_case(seed: int, self_shape: tuple[int, ...], grad_shape: tuple[int, ...]
                ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    g = rng.normal(size=grad_shape)
    idx = random_indices(rng, tuple(grad_shape[:-2]), tuple(self_shape[-2:]),
                         tuple(grad_shape[-2:]))
    return g, idx


#: (self shape, gradOutput shape): every geometry the operator takes
GEOMETRIES = {
    "divisible": ((2, 3, 6, 4), (2, 3, 3, 2)),
    "nondivisible-h": ((1, 2, 7, 4), (1, 2, 3, 2)),
    "nondivisible-w": ((1, 2, 6, 5), (1, 2, 3, 3)),
    "nondivisible-both": ((2, 2, 7, 5), (2, 2, 3, 2)),
    "nondivisible-big": ((1, 3, 17, 13), (1, 3, 5, 4)),
    "upsampling": ((1, 2, 3, 2), (1, 2, 7, 5)),
    "upsampling-one-axis": ((2, 1, 3, 6), (2, 1, 8, 4)),
    "global": ((2, 3, 5, 7), (2, 3, 1, 1)),
    "identity": ((1, 2, 4, 3), (1, 2, 4, 3)),
    "rank3": ((3, 7, 5), (3, 4, 3)),
    "rank3-upsampling": ((2, 2, 3), (2, 5, 4)),
    "one-plane": ((1, 1, 1, 1), (1, 1, 1, 1)),
}


@pytest.mark.parametrize("geometry", list(GEOMETRIES))
@pytest.mark.parametrize("seed", [0, 1])
def test_scatter_equals_the_naive_loop(geometry: str, seed: int) -> None:
    self_shape, grad_shape = GEOMETRIES[geometry]
    g, idx = random_case(seed, self_shape, grad_shape)
    hw = (self_shape[-2], self_shape[-1])
    got = reference.scatter(g, idx, hw)
    want = reference.naive(g, idx, hw)
    assert got.shape == tuple(self_shape) and got.dtype == np.float64
    # the same terms added in the same row-major cell order: bit for bit
    np.testing.assert_array_equal(got, want)
    # the error budget's m: the scatter of |gradOutput|
    np.testing.assert_array_equal(reference.scatter(g, idx, hw, absolute=True),
                                  reference.naive(np.abs(g), idx, hw))
    # every term lands somewhere: the sums of the planes are kept (up to rounding)
    np.testing.assert_allclose(got.sum(axis=(-2, -1)), g.sum(axis=(-2, -1)), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("geometry", list(GEOMETRIES))
def test_scatter_equals_pytorch_float64(geometry: str) -> None:
    torch = pytest.importorskip("torch")
    self_shape, grad_shape = GEOMETRIES[geometry]
    g, idx = random_case(7, self_shape, grad_shape)
    hw = (self_shape[-2], self_shape[-1])
    want = torch.ops.aten.adaptive_max_pool2d_backward(
        torch.from_numpy(g), torch.zeros(self_shape, dtype=torch.float64),
        torch.from_numpy(idx)).numpy()
    # PyTorch CPU adds in the same row-major order in float64
    np.testing.assert_array_equal(reference.scatter(g, idx, hw), want)


def test_scatter_writes_into_out_and_clears_it_first() -> None:
    g, idx = random_case(3, (2, 2, 5, 4), (2, 2, 3, 3))
    out = np.full((2, 2, 5, 4), np.nan)
    got = reference.scatter(g, idx, (5, 4), out=out)
    assert got is out
    np.testing.assert_array_equal(out, reference.naive(g, idx, (5, 4)))


def test_unnamed_positions_are_positive_zero_and_self_is_never_read() -> None:
    g = np.array([[[-0.0, 2.0], [3.0, -0.0]]])  # (1, 2, 2) over a (1, 4, 4) plane
    idx = np.array([[[0, 2], [8, 10]]])  # the top-left of each 2x2 window
    got = reference.scatter(g, idx, (4, 4))
    assert got[0, 0, 2] == 2.0 and got[0, 2, 0] == 3.0
    zeros = np.ones((4, 4), dtype=bool)
    zeros[0, 2] = zeros[2, 0] = False
    assert np.all(got[0][zeros] == 0.0)
    # +0 added onto, so a lone -0 term gives +0 (signs of zero are not compared anyway)
    assert not np.any(np.signbit(got[0][zeros]))


def test_shared_positions_add() -> None:
    """H = W = 3 over Ho = Wo = 2: windows [0, 2) and [1, 3) on each axis; the centre
    (1, 1), flat 4, lies in all four windows. Every cell names it: the four add."""
    for i in range(2):
        for j in range(2):
            (r0, r1), (c0, c1) = _window(i, 2, 3), _window(j, 2, 3)
            assert r0 <= 1 < r1 and c0 <= 1 < c1
    g = np.array([[[[1.0, 2.0], [4.0, 8.0]], [[0.5, -0.5], [0.25, 16.0]]]])  # (1, 2, 2, 2)
    idx = np.full((1, 2, 2, 2), 4, dtype=np.int64)
    got = reference.scatter(g, idx, (3, 3))
    want = np.zeros((1, 2, 3, 3))
    want[0, 0, 1, 1], want[0, 1, 1, 1] = 15.0, 16.25
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(reference.naive(g, idx, (3, 3)), want)
    # two cells of one row naming one position, the others their own
    idx2 = np.array([[[[4, 4], [6, 8]]]])
    got2 = reference.scatter(g[:, :1], idx2, (3, 3))
    assert got2[0, 0, 1, 1] == 3.0 and got2[0, 0, 2, 0] == 4.0 and got2[0, 0, 2, 2] == 8.0
    assert np.count_nonzero(got2) == 3


def test_upsampling_many_cells_name_one_position() -> None:
    """A 1x1 plane under a 3x4 output: all twelve cells name position 0."""
    g = np.arange(1.0, 13.0).reshape(1, 3, 4)
    got = reference.scatter(g, np.zeros((1, 3, 4), dtype=np.int64), (1, 1))
    assert got.shape == (1, 1, 1) and got[0, 0, 0] == 78.0


def test_shared_sums_agree_with_pytorch() -> None:
    torch = pytest.importorskip("torch")
    g = np.array([[[[1.0, 2.0], [4.0, 8.0]]]])
    idx = np.full((1, 1, 2, 2), 4, dtype=np.int64)
    want = torch.ops.aten.adaptive_max_pool2d_backward(
        torch.from_numpy(g), torch.zeros((1, 1, 3, 3), dtype=torch.float64),
        torch.from_numpy(idx)).numpy()
    np.testing.assert_array_equal(reference.scatter(g, idx, (3, 3)), want)
    assert want[0, 0, 1, 1] == 15.0


# -- INT32 and INT64 indices -----------------------------------------------------------------

SAME_GOLDEN = [("nondivisible", "float16", "NCHW", 0), ("shared", "float32", "ND", 1),
               ("upsampling", "bfloat16", "NCL", 0), ("layout", "float32", "NCHW", 1),
               ("layout", "float16", "ND", 2), ("ties", "float32", "NCHW", 1),
               ("divisible", "bfloat16", "ND", 0), ("global", "float16", "NCHW", 2)]


@pytest.mark.parametrize(("family", "dtype", "fmt", "index"), SAME_GOLDEN)
def test_int32_and_int64_indices_give_identical_goldens(family: str, dtype: str, fmt: str,
                                                        index: int) -> None:
    case = families.shape_case(family, PRODUCT, dtype, fmt, index, 4)
    assert case is not None
    c64, c32 = (replace(case, indices_dtype=d) for d in ("int64", "int32"))
    d64, d32 = make_tensors(c64), make_tensors(c32)
    i64, i32 = d64.inputs["indices"].view(), d32.inputs["indices"].view()
    assert i64.dtype == np.int64 and i32.dtype == np.int32
    np.testing.assert_array_equal(i64, i32.astype(np.int64))
    assert d64.golden is not None and d32.golden is not None
    assert d64.golden.tobytes() == d32.golden.tobytes()
    assert c64.expectation.status == c32.expectation.status == SUCCESS


# -- the indices the valid families draw -----------------------------------------------------

VALID_FAMILIES = [f for f in families.FAMILIES if f != "badindex"]


def _family_cases(names: list[str], indices: range) -> list[Case]:
    cases = []
    for family in names:
        for dtype in contract.COMPUTE_DTYPES:
            for fmt in contract.FORMATS:
                for index in indices:
                    case = families.shape_case(family, PRODUCT, dtype, fmt, index, 2)
                    if case is not None:
                        cases.append(case)
    return cases


def _check_in_windows(case: Case, idx: np.ndarray) -> None:
    h, w = case.self_shape[-2:]
    ho, wo = case.grad_shape[-2:]
    (hs, he), (ws, we) = window_bounds(ho, h), window_bounds(wo, w)
    r, c = np.divmod(idx.astype(np.int64), w)
    assert np.all((idx >= 0) & (idx < h * w)), case.id
    assert np.all((r >= hs[:, None]) & (r < he[:, None])), case.id
    assert np.all((c >= ws[None, :]) & (c < we[None, :])), case.id


def _check_extreme(case: Case, idx: np.ndarray, selfv: np.ndarray) -> None:
    """first-max: the first maximum of self's window in row-major order; last-max: the
    last one."""
    h, w = case.self_shape[-2:]
    ho, wo = case.grad_shape[-2:]
    (hs, he), (ws, we) = window_bounds(ho, h), window_bounds(wo, w)
    planes = selfv.astype(np.float64).reshape(-1, h, w)
    flat_idx = idx.reshape(-1, ho, wo)
    for p in range(planes.shape[0]):
        for i in range(ho):
            for j in range(wo):
                win = planes[p, hs[i]:he[i], ws[j]:we[j]]
                hits = np.flatnonzero(win.reshape(-1) == win.max())
                k = hits[0] if case.index_choice == "first-max" else hits[-1]
                kr, kc = divmod(int(k), win.shape[1])
                want = (hs[i] + kr) * w + ws[j] + kc
                assert flat_idx[p, i, j] == want, (case.id, p, i, j)


@pytest.fixture(scope="module")
def valid_cases() -> list[Case]:
    return _family_cases(VALID_FAMILIES, range(3))


def test_every_valid_family_draws_indices_inside_their_windows(valid_cases) -> None:
    assert {c.family for c in valid_cases} == set(VALID_FAMILIES)
    assert {c.index_choice for c in valid_cases} == set(VALID_CHOICES)
    assert {c.indices_dtype for c in valid_cases} == {"int32", "int64"}
    for case in valid_cases:
        assert case.index_choice in VALID_CHOICES, case.id
        exp = case.expectation
        assert exp.status == SUCCESS and not exp.isolated_only, case.id
        idx = tensor_values(case, "indices")
        assert idx.dtype == np.dtype(case.indices_dtype), case.id
        assert idx.shape == tuple(case.grad_shape), case.id
        if idx.size == 0 or min(case.self_shape) == 0:
            assert exp.unwritten, case.id  # the empty family: nothing to name
            continue
        _check_in_windows(case, idx)


def test_first_max_and_last_max_pick_the_first_and_last_maximum(valid_cases) -> None:
    checked = {"first-max": 0, "last-max": 0}
    for case in valid_cases:
        if case.index_choice not in checked or case.family == "alignment" \
                or min(case.grad_shape + case.self_shape) == 0:
            continue  # alignment: thousands of planes, the same draw as the others
        idx = tensor_values(case, "indices")
        _check_extreme(case, idx, tensor_values(case, "self"))
        checked[case.index_choice] += 1
    assert min(checked.values()) >= 5, checked


def test_ties_draw_self_whose_windows_tie_and_unrelated_self_is_nan(valid_cases) -> None:
    """last-max and random draw small-integer planes (ties inside windows); unrelated
    draws self all NaN (self's values must not matter)."""
    ties = [c for c in valid_cases if c.family == "ties"]
    assert {c.index_choice for c in ties} == {"first-max", "last-max", "random", "unrelated"}
    for case in ties:
        s = tensor_values(case, "self").astype(np.float64)
        if case.index_choice == "unrelated":
            assert np.all(np.isnan(s)), case.id
        elif case.index_choice != "first-max":
            assert set(np.unique(s)) <= {0.0, 1.0, 2.0}, case.id


# -- the invalid index choices (family badindex) ---------------------------------------------


@pytest.fixture(scope="module")
def bad_cases() -> list[Case]:
    return _family_cases(["badindex"], range(5))


def _out_of_window(case: Case, idx: np.ndarray) -> np.ndarray:
    """(planes, Ho, Wo): True where the flat position is not in the cell's window (or not
    in the plane at all)."""
    h, w = case.self_shape[-2:]
    ho, wo = case.grad_shape[-2:]
    (hs, he), (ws, we) = window_bounds(ho, h), window_bounds(wo, w)
    flat = idx.astype(np.int64).reshape(-1, ho, wo)
    r, c = np.divmod(flat, w)
    inside = ((flat >= 0) & (flat < h * w) & (r >= hs[:, None]) & (r < he[:, None])
              & (c >= ws[None, :]) & (c < we[None, :]))
    return ~inside


def test_badindex_covers_every_invalid_choice(bad_cases) -> None:
    assert {c.index_choice for c in bad_cases} == set(INVALID_CHOICES)
    assert all(c.family == "badindex" for c in bad_cases)


def test_badindex_calls_are_unspecified_and_isolated_only(bad_cases) -> None:
    for case in bad_cases:
        exp = case.expectation
        assert exp.status == UNSPECIFIED and exp.unspecified, case.id
        assert exp.isolated_only and exp.kinds == ("index-values",), case.id
        assert case.index_choice in exp.reason, case.id
        # the call itself passes every check: only its index values make it unspecified
        assert case.expect(case.call()).status == SUCCESS, case.id
        assert not case.positive  # no golden is made: never judged numerically


def test_each_invalid_choice_is_invalid_in_the_way_named(bad_cases) -> None:
    seen = set()
    for case in bad_cases:
        idx = tensor_values(case, "indices").astype(np.int64)
        h, w = case.self_shape[-2:]
        ho, wo = case.grad_shape[-2:]
        planes = idx.reshape(-1, ho * wo)
        bad = _out_of_window(case, idx).reshape(planes.shape)
        choice = case.index_choice
        seen.add(choice)
        if choice == "out-of-plane":
            assert np.all((planes >= h * w).sum(axis=1) == 1), case.id
            assert np.all(planes[bad] >= h * w) and np.all(planes[bad] < h * w + 3), case.id
        elif choice == "negative":
            assert np.all((planes < 0).sum(axis=1) == 1), case.id
            assert np.all(planes[bad] < 0) and np.all(planes[bad] >= -3), case.id
        elif choice == "out-of-window":
            # in the plane, outside the cell's own window: one cell per plane
            assert np.all((planes >= 0) & (planes < h * w)), case.id
            assert np.all(bad.sum(axis=1) == 1), case.id
        elif choice == "duplicate":
            # a divisible call (no window overlap): two cells naming one position
            assert h % ho == 0 and w % wo == 0, case.id
            assert np.all((planes >= 0) & (planes < h * w)), case.id
            for row in planes:
                assert len(np.unique(row)) < row.size, case.id
            assert np.all(planes[:, 1] == planes[:, 0]), case.id  # cell (0, 1) or (1, 0)
        elif choice == "int64-overflow":
            assert case.indices_dtype == "int64" and idx.dtype == np.int64, case.id
            assert np.all((planes >= 2**31).sum(axis=1) == 1), case.id
            # a valid position plus 2^31: past INT32, back in the window minus 2^31
            fixed = np.where(planes >= 2**31, planes - 2**31, planes)
            assert not _out_of_window(case, fixed.reshape(idx.shape)).any(), case.id
        if choice != "duplicate":  # every other cell stays valid
            assert np.all(bad.sum(axis=1) == 1), case.id
    assert seen == set(INVALID_CHOICES)


def test_no_shape_family_is_drawn_on_products_without_the_operator() -> None:
    for product in ("atlas-training", "atlas-inference"):
        for family in families.FAMILIES:
            assert families.shape_case(family, product, "float32", "NCHW", 0, 1) is None
