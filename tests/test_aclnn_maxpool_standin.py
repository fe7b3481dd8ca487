"""aclnnAdaptiveMaxPool2dBackward in the CANN stand-in (tests/aclnn_standin/aclnn_standin.c),
called directly over ctypes: statuses in the spec's order, the divisible copy and the
non-divisible FLOAT32 scatter-add against numpy, the empty call that writes nothing.

Self-contained on purpose: it needs only the `standin` fixture of tests/conftest.py, not
the operator's Python package.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

FLOAT32, FLOAT16, INT16, INT32, INT64 = 0, 1, 6, 3, 9  # aclDataType
NCHW = 0  # aclFormat
CODES = {np.dtype(np.float32): FLOAT32, np.dtype(np.float16): FLOAT16,
         np.dtype(np.int16): INT16, np.dtype(np.int32): INT32, np.dtype(np.int64): INT64}
NULLPTR, INVALID = 161001, 161002
_p, _i64p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)


class Lib:
    """The three stand-in libraries loaded RTLD_GLOBAL in CANN's order, one stream."""

    def __init__(self, folder: Path) -> None:
        acl, nnop, ops = (ctypes.CDLL(str(folder / name), mode=ctypes.RTLD_GLOBAL)
                          for name in ("libascendcl.so", "libnnopbase.so", "libopapi.so"))
        self.acl, self.nnop = acl, nnop
        acl.aclrtMalloc.argtypes = [ctypes.POINTER(_p), ctypes.c_size_t, ctypes.c_int]
        acl.aclrtMemcpy.argtypes = [_p, ctypes.c_size_t, _p, ctypes.c_size_t, ctypes.c_int]
        acl.aclrtFree.argtypes = [_p]
        acl.aclrtSynchronizeStream.argtypes = [_p]
        acl.aclGetRecentErrMsg.restype = ctypes.c_char_p
        nnop.aclCreateTensor.restype = _p
        nnop.aclCreateTensor.argtypes = [_i64p, ctypes.c_uint64, ctypes.c_int, _i64p,
                                         ctypes.c_int64, ctypes.c_int, _i64p, ctypes.c_uint64,
                                         _p]
        nnop.aclDestroyTensor.argtypes = [_p]
        self.first = ops.aclnnAdaptiveMaxPool2dBackwardGetWorkspaceSize
        self.first.argtypes = [_p] * 4 + [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(_p)]
        self.second = ops.aclnnAdaptiveMaxPool2dBackward
        self.second.argtypes = [_p, ctypes.c_uint64, _p, _p]
        assert acl.aclInit(None) in (0, 100002)
        assert acl.aclrtSetDevice(0) == 0
        stream = _p()
        assert acl.aclrtCreateStream(ctypes.byref(stream)) == 0
        self.stream = stream.value


@pytest.fixture(scope="module")
def lib(standin: Path) -> Iterator[Lib]:
    api = Lib(standin)
    yield api
    api.acl.aclrtDestroyStream(_p(api.stream))  # the device stays set: other modules share it


@pytest.fixture(autouse=True)
def a2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACLCHECK_STANDIN_SOC", "Ascend910B1")
    monkeypatch.delenv("ACLCHECK_STANDIN_BUG", raising=False)


def _i64(values) -> ctypes.Array:
    return (ctypes.c_int64 * max(len(values), 1))(*values)


class Call:
    """Device buffers and tensors of one call, released by close()."""

    def __init__(self, lib: Lib) -> None:
        self.lib, self.buffers, self.tensors = lib, [], []

    def buffer(self, host: np.ndarray) -> int:
        ptr = _p()
        assert self.lib.acl.aclrtMalloc(ctypes.byref(ptr), max(host.nbytes, 1), 0) == 0
        self.buffers.append(ptr.value)
        if host.nbytes:
            host = np.ascontiguousarray(host)
            assert self.lib.acl.aclrtMemcpy(ptr.value, host.nbytes, host.ctypes.data,
                                            host.nbytes, 1) == 0
        return ptr.value

    def tensor(self, values: np.ndarray, strided: bool = False, code: int | None = None,
               shape: tuple[int, ...] | None = None) -> tuple[int, int]:
        """(handle, device pointer); strided: every other element from offset 3."""
        shape = values.shape if shape is None else shape
        dense = [int(np.prod(shape[k + 1:])) for k in range(len(shape))]
        storage, strides, offset = values.reshape(-1), dense, 0
        if strided:
            storage = np.zeros(2 * values.size + 4, values.dtype)
            storage[3:3 + 2 * values.size:2] = values.reshape(-1)
            strides, offset = [2 * s for s in dense], 3
        data = self.buffer(storage)
        handle = self.lib.nnop.aclCreateTensor(
            _i64(shape), len(shape), CODES[values.dtype] if code is None else code,
            _i64(strides), offset, NCHW, _i64([storage.size]), 1, data)
        assert handle
        self.tensors.append(handle)
        return handle, data

    def close(self) -> None:
        for h in self.tensors:
            self.lib.nnop.aclDestroyTensor(h)
        for p in self.buffers:
            self.lib.acl.aclrtFree(p)


def call(lib: Lib, grad: np.ndarray, self_shape: tuple[int, ...], indices: np.ndarray,
         fill: float = np.nan, strided: bool = False) -> tuple[int, int, np.ndarray]:
    """Both phases: (status, workspace size, gradInput as the host sees it afterwards)."""
    c = Call(lib)
    try:
        g, _ = c.tensor(grad)
        s, _ = c.tensor(np.full(self_shape, np.nan, grad.dtype))  # values never read
        ix, _ = c.tensor(indices, strided=strided)
        out = np.full(self_shape, fill, grad.dtype)
        o, out_dev = c.tensor(out)
        size, ex = ctypes.c_uint64(0), _p()
        status = lib.first(g, s, ix, o, ctypes.byref(size), ctypes.byref(ex))
        if status == 0:
            work = c.buffer(np.zeros(size.value, np.uint8)) if size.value else None
            assert lib.second(work, size.value, ex, lib.stream) == 0
            assert lib.acl.aclrtSynchronizeStream(_p(lib.stream)) == 0
            assert lib.acl.aclrtMemcpy(out.ctypes.data, out.nbytes, out_dev, out.nbytes, 2) == 0
        return status, size.value, out
    finally:
        c.close()


def windows(n: int, m: int) -> list[tuple[int, int]]:
    """Adaptive windows [floor(i*n/m), ceil((i+1)*n/m)) of m cells over n."""
    return [(i * n // m, -(-(i + 1) * n // m)) for i in range(m)]


def random_indices(rng: np.random.Generator, lead: tuple[int, ...], hw: tuple[int, int],
                   out_hw: tuple[int, int]) -> np.ndarray:
    """A flat in-window position for every output cell."""
    (h, w), (ho, wo) = hw, out_hw
    idx = np.empty(lead + out_hw, np.int64)
    for k in np.ndindex(*lead):
        for i, (hs, he) in enumerate(windows(h, ho)):
            for j, (ws, we) in enumerate(windows(w, wo)):
                idx[k + (i, j)] = rng.integers(hs, he) * w + rng.integers(ws, we)
    return idx


def scatter_add(grad: np.ndarray, indices: np.ndarray, hw: tuple[int, int]) -> np.ndarray:
    """numpy's scatter-add in FLOAT32, cells in row-major order, from +0."""
    lead = grad.shape[:-2]
    out = np.zeros(lead + (hw[0] * hw[1],), np.float32)
    for k in np.ndindex(*lead):
        np.add.at(out[k], indices[k].reshape(-1), grad[k].reshape(-1).astype(np.float32))
    return out.reshape(lead + hw)


def _valid(dtype=np.float32) -> tuple[np.ndarray, tuple[int, ...], np.ndarray]:
    return np.ones((1, 2, 2, 2), dtype), (1, 2, 4, 4), np.zeros((1, 2, 2, 2), np.int32)


@pytest.mark.parametrize("null", range(4))
def test_a_null_tensor_is_161001(lib: Lib, null: int) -> None:
    c = Call(lib)
    try:
        grad, shape, idx = _valid()
        handles = [c.tensor(grad)[0], c.tensor(np.zeros(shape, np.float32))[0],
                   c.tensor(idx)[0], c.tensor(np.zeros(shape, np.float32))[0]]
        handles[null] = None
        size, ex = ctypes.c_uint64(0), _p()
        assert lib.first(*handles, ctypes.byref(size), ctypes.byref(ex)) == NULLPTR
        assert b"null pointer" in lib.acl.aclGetRecentErrMsg()
    finally:
        c.close()


def test_bad_index_dtype_product_and_plane_size_are_161002(
        lib: Lib, monkeypatch: pytest.MonkeyPatch) -> None:
    grad, shape, idx = _valid()
    assert call(lib, grad, shape, idx.astype(np.int16))[0] == INVALID
    assert call(lib, grad, shape, idx.astype(np.int64))[0] == 0
    c = Call(lib)
    try:  # H*W = 2^31: status only, nothing is read
        big = (1, 1, 2 ** 16, 2 ** 15)
        hs = [c.tensor(np.zeros(1, np.float32), shape=(1, 1, 1, 1))[0],
              c.tensor(np.zeros(1, np.float32), shape=big)[0],
              c.tensor(np.zeros(1, np.int32), shape=(1, 1, 1, 1))[0],
              c.tensor(np.zeros(1, np.float32), shape=big)[0]]
        size, ex = ctypes.c_uint64(0), _p()
        assert lib.first(*hs, ctypes.byref(size), ctypes.byref(ex)) == INVALID
        assert b"2^31" in lib.acl.aclGetRecentErrMsg()
    finally:
        c.close()
    monkeypatch.setenv("ACLCHECK_STANDIN_SOC", "Ascend910A")  # empty dtype list
    assert call(lib, grad, shape, idx)[0] == INVALID


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_divisible_fp32_matches_numpy(lib: Lib, index_dtype) -> None:
    rng = np.random.default_rng(1)
    grad = rng.standard_normal((2, 3, 2, 3)).astype(np.float32)
    idx = random_indices(rng, (2, 3), (4, 6), (2, 3)).astype(index_dtype)
    status, size, out = call(lib, grad, (2, 3, 4, 6), idx, strided=True)
    assert status == 0 and size > 0
    assert np.array_equal(out, scatter_add(grad, idx, (4, 6)))
    idx[0, 0, 0, 0] = 5  # (0, 5): in the plane, outside cell (0, 0)'s window: dropped
    cut = grad.copy()
    cut[0, 0, 0, 0] = 0
    assert np.array_equal(call(lib, grad, (2, 3, 4, 6), idx)[2], scatter_add(cut, idx, (4, 6)))


def test_non_divisible_fp32_matches_numpy_and_drops_out_of_plane_indices(lib: Lib) -> None:
    rng = np.random.default_rng(2)
    grad = rng.standard_normal((3, 3, 4)).astype(np.float32)  # a 3-D call: (C, Ho, Wo)
    idx = random_indices(rng, (3,), (5, 7), (3, 4)).astype(np.int32)
    status, _, out = call(lib, grad, (3, 5, 7), idx, strided=True)
    assert status == 0
    assert np.array_equal(out, scatter_add(grad, idx, (5, 7)))
    bad = idx.copy()
    bad[0, 0, 0], bad[1, 2, 3] = -1, 35  # outside the 5x7 plane: dropped
    keep = bad.copy()
    keep[0, 0, 0], keep[1, 2, 3] = 0, 0
    cut = grad.copy()
    cut[0, 0, 0] = cut[1, 2, 3] = 0
    assert np.array_equal(call(lib, grad, (3, 5, 7), bad)[2], scatter_add(cut, keep, (5, 7)))


def test_fp16_overlap_adds_in_fp32(lib: Lib, monkeypatch: pytest.MonkeyPatch) -> None:
    # 3x3 -> 2x2: the centre (1, 1) = position 4 lies in all four windows
    grad = np.array([[[[2048, 1], [1, 0]]]], np.float16)
    idx = np.full((1, 1, 2, 2), 4, np.int64)
    status, size, out = call(lib, grad, (1, 1, 3, 3), idx)
    assert status == 0 and size >= 9 * 4  # a FLOAT32 workspace for the sums
    want = np.zeros((1, 1, 3, 3), np.float16)
    want[0, 0, 1, 1] = 2050  # FLOAT16 accumulation would give 2048
    assert np.array_equal(out, want)
    monkeypatch.setenv("ACLCHECK_STANDIN_BUG", "narrow_accumulate")
    assert call(lib, grad, (1, 1, 3, 3), idx)[2][0, 0, 1, 1] == 2048


@pytest.mark.parametrize("grad_shape", [(1, 2, 0, 2), (0, 2, 2, 2)])
def test_an_empty_call_succeeds_and_writes_nothing(lib: Lib, grad_shape) -> None:
    grad = np.zeros(grad_shape, np.float32)
    self_shape = (1, 2, 4, 4) if grad_shape[0] else (0, 2, 4, 4)
    status, size, out = call(lib, grad, self_shape, np.zeros(grad_shape, np.int32), fill=7.0)
    assert (status, size) == (0, 0)
    assert np.all(out == 7.0)  # Ho = 0 with a non-empty self: still not written
