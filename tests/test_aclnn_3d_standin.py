"""aclnnAdaptiveAvgPool3dBackward over ctypes against the CANN stand-in library
(tests/aclnn_standin/aclnn_standin.c, built with the system C compiler).

The stand-in's first phase is an independent C transcription of the vendor's op_api checks
(docs/contract-3d.md §5); these tests hold it and the Python contract's reading of the
implementation to the same status on every call of the 3D families, the expected statuses
to the contract wherever it decides, and the second phase's output to the float64
reference, through real aclTensor geometry (strides, storage offsets, 1-D storage).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from aclcheck.cases.acl import ACL_FORMAT_ENUM, PARAM_NULLPTR
from aclcheck.dtypes import ACL_DTYPE_ENUM, FLOAT_FORMATS, NUMPY_DTYPES, correctly_rounded, ulp
from aclcheck.impls import aclnn_abi as abi
from aclcheck.ops.adaptive_avg_pool3d_backward import contract, families
from aclcheck.ops.adaptive_avg_pool3d_backward.record import Case
from aclcheck.ops.adaptive_avg_pool3d_backward.reference import backward
from aclcheck.ops.adaptive_avg_pool3d_backward.values import tensor_values

SOCS = {"Ascend910B1": "atlas-a2", "Ascend910_9391": "atlas-a3",
        "Ascend910A": "atlas-training", "Ascend310P3": "atlas-inference"}
ENUM_FORMATS = ACL_FORMAT_ENUM
NO_KERNEL = 561103  # the stand-in's answer where the SoC has no non-global kernel


@pytest.fixture(scope="module")
def lib(standin: Path) -> Iterator[abi.Api]:
    """The stand-in built once per session (tests/conftest.py: one set of
    libraries per process, so the operator library's error messages land in the runtime
    library this test reads) loaded, runtime initialised, device 0 set, one stream."""
    out = standin
    api = abi.load(abi.find_libraries([str(out)]))
    ops = ctypes.CDLL(str(out / "libopapi.so"))
    first = ops.aclnnAdaptiveAvgPool3dBackwardGetWorkspaceSize
    first.restype = ctypes.c_int
    first.argtypes = [ctypes.c_void_p] * 3 + [ctypes.POINTER(ctypes.c_uint64),
                                              ctypes.POINTER(ctypes.c_void_p)]
    second = ops.aclnnAdaptiveAvgPool3dBackward
    second.restype = ctypes.c_int
    second.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p]
    api.functions["first3d"], api.functions["second3d"] = first, second
    rc = api.aclInit(None)
    assert rc in (0, abi.ACL_ERROR_REPEAT_INITIALIZE)
    assert api.aclrtSetDevice(0) == 0
    stream = ctypes.c_void_p()
    assert api.aclrtCreateStream(ctypes.byref(stream)) == 0
    api.functions["stream"] = stream.value
    yield api
    api.aclrtDestroyStream(stream.value)  # the device stays set: the Api is shared


def _layout(values: np.ndarray, kind: str) -> tuple[np.ndarray, tuple[int, ...], int]:
    """(storage, element strides, offset) of `values` laid out as `kind`."""
    shape = values.shape
    if kind == "contiguous":
        st = np.ascontiguousarray(values).reshape(-1)
        return st, tuple(s // values.itemsize for s in np.empty(shape, values.dtype).strides), 0
    if kind == "channels_last" and values.ndim == 5:  # NDHWC in memory
        phys = np.ascontiguousarray(np.moveaxis(values, 1, -1))
        n, d, h, w, c = phys.shape
        return phys.reshape(-1), (d * h * w * c, 1, h * w * c, w * c, c), 0
    if kind == "strided":  # every other element of a padded buffer, offset 3
        st = np.full(2 * values.size + 4, np.nan, dtype=values.dtype)
        st[3:3 + 2 * values.size:2] = values.reshape(-1)
        dense = tuple(s // values.itemsize for s in np.empty(shape, values.dtype).strides)
        return st, tuple(2 * s for s in dense), 3
    raise ValueError(kind)


class Call:
    """Device buffers and tensors of one call, released on exit."""

    def __init__(self, api: abi.Api) -> None:
        self.api, self.buffers, self.tensors = api, [], []

    def buffer(self, host: np.ndarray) -> int:
        ptr = ctypes.c_void_p()
        assert self.api.aclrtMalloc(ctypes.byref(ptr), max(host.nbytes, 1), 0) == 0
        self.buffers.append(ptr.value)
        if host.nbytes:
            host = np.ascontiguousarray(host)
            assert self.api.aclrtMemcpy(ptr.value, host.nbytes, host.ctypes.data, host.nbytes,
                                        1) == 0
        return ptr.value

    def tensor(self, storage: np.ndarray, shape, strides, offset, dtype: str, fmt: str,
               data: int | None = None) -> int:
        data = self.buffer(storage) if data is None else data
        handle = self.api.aclCreateTensor(
            abi.int64_array(shape), len(shape), ACL_DTYPE_ENUM[dtype],
            abi.int64_array(strides), offset, ENUM_FORMATS[fmt],
            abi.int64_array([storage.size]), 1, data)
        assert handle
        self.tensors.append(handle)
        return handle

    def close(self) -> None:
        for h in self.tensors:
            self.api.aclDestroyTensor(h)
        for p in self.buffers:
            self.api.aclrtFree(p)


def run(api: abi.Api, case: Case, layout: str = "contiguous"
        ) -> tuple[int, np.ndarray | None]:
    """Both phases of one case: (first-phase status, out as the host sees it)."""
    call = Call(api)
    try:
        handles: dict[str, int | None] = {}
        for role in ("grad_output", "self"):
            if role in case.null:
                handles[role] = None
                continue
            desc = case.tensor_desc(role)
            values = tensor_values(case, role)
            st, strides, off = _layout(values, layout)
            handles[role] = call.tensor(st, desc.shape, strides, off, desc.dtype, desc.format)
        out_host = None
        if "out" in case.null:
            handles["out"] = None
        else:
            desc = case.tensor_desc("out")
            out_host = np.full(desc.shape, np.nan, dtype=NUMPY_DTYPES[desc.dtype]) \
                if desc.dtype in FLOAT_FORMATS or desc.dtype == "float64" \
                else np.zeros(desc.shape, dtype=NUMPY_DTYPES[desc.dtype])
            out_dev = call.buffer(out_host)
            st, strides, off = _layout(out_host, "contiguous")
            handles["out"] = call.tensor(st, desc.shape, strides, off, desc.dtype, desc.format,
                                         out_dev)
        size, executor = ctypes.c_uint64(0), ctypes.c_void_p()
        status = api.first3d(handles["grad_output"], handles["self"], handles["out"],
                             ctypes.byref(size), ctypes.byref(executor))
        if status != 0:
            return status, None
        work = call.buffer(np.zeros(size.value, dtype=np.uint8))
        assert api.second3d(work, size.value, executor, api.stream) == 0
        assert api.aclrtSynchronizeStream(api.stream) == 0
        assert out_host is not None
        assert api.aclrtMemcpy(out_host.ctypes.data, out_host.nbytes, out_dev,
                               out_host.nbytes, 2) == 0
        return 0, out_host
    finally:
        call.close()


def suite(product: str) -> list[Case]:
    """Every default family of the 3D operator on one product (count 1)."""
    rules = contract.product(product)
    cases: list[Case] = []
    for family in families.DEFAULT_FAMILIES:
        if family == "invalid":
            dtypes = tuple(dict.fromkeys(rules.dtypes + contract.COMPUTE_DTYPES))
            cases += families.invalid_cases(product, dtypes, contract.FORMATS, 0, 3)
            continue
        for dtype in rules.dtypes:
            for fmt in contract.FORMATS:
                case = families.shape_case(family, product, dtype, fmt, 0, 3)
                if case is not None:
                    cases.append(case)
    return cases


def golden(case: Case) -> np.ndarray:
    return backward(tensor_values(case, "grad_output"), tuple(case.self_shape[-3:]))


#: Products computing in saturation mode (docs/contract.md section 10): an overflow is the
#: largest finite value of its sign, NaN is 0.
SATURATING = ("atlas-training", "atlas-inference")


def assert_once_rounded(case: Case, out: np.ndarray) -> None:
    """The stand-in accumulates in double and rounds once: within one ULP of the
    correctly rounded golden (double sums in another order may straddle a tie); on a
    saturating product, with the golden's NaN as 0 and its overflows as +-max."""
    g = golden(case)
    got = out.astype(np.float64)
    if case.product in SATURATING and case.dtype in FLOAT_FORMATS:
        fmt = FLOAT_FORMATS[case.dtype]
        g = np.nan_to_num(correctly_rounded(g, fmt), nan=0.0, posinf=fmt.max_value,
                          neginf=-fmt.max_value)
    assert np.array_equal(np.isnan(got), np.isnan(g)), case.id
    finite = np.isfinite(g) & np.isfinite(got)
    if case.dtype == "float64":
        assert np.allclose(got[finite], g[finite], rtol=1e-14, atol=0), case.id
        return
    fmt = FLOAT_FORMATS[case.dtype]
    want = correctly_rounded(g, fmt)
    assert np.array_equal(np.isinf(got), np.isinf(want)), case.id
    fin = np.isfinite(want) & finite
    assert np.all(np.abs(got[fin] - want[fin]) <= ulp(want[fin], fmt)), case.id


@pytest.mark.parametrize("soc", list(SOCS))
def test_statuses_match_the_contract_on_every_family(lib: abi.Api, soc: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACLCHECK_STANDIN_SOC", soc)
    product = SOCS[soc]
    seen: set[int] = set()
    computed = 0
    for case in suite(product):
        status, out = run(lib, case)
        exp = case.expectation
        tensors = {n: None if n in case.null else case.tensor_desc(n)
                   for n in ("grad_output", "self", "out")}
        if None in tensors.values():
            impl_status: int | None = PARAM_NULLPTR
        else:
            impl_status = contract.implementation(product, tensors["grad_output"],
                                                  tensors["self"], tensors["out"]).status
        # the C transcription and the Python reading of the vendor's checks agree
        assert status == (NO_KERNEL if impl_status is None else impl_status), case.id
        if not exp.unspecified:
            assert status == exp.status, (case.id, exp.reason)
        seen.add(status)
        if status == 0 and case.dtype in FLOAT_FORMATS | {"float64": None}:
            assert out is not None
            assert_once_rounded(case, out)
            computed += 1
    assert {0, 161001, 161002} <= seen and computed > 10
    if product == "atlas-inference":
        assert NO_KERNEL in seen  # the non-global probe reaches the missing kernel


@pytest.mark.parametrize("layout", ["channels_last", "strided"])
def test_strides_and_offsets_reach_the_kernel(lib: abi.Api, layout: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACLCHECK_STANDIN_SOC", "Ascend910B1")
    case = Case("x", "layout", "atlas-a2", "float32", "NCDHW", (2, 3, 5, 4, 6), (2, 3, 3, 2, 4),
                11)
    status, out = run(lib, case, layout)
    assert status == 0 and out is not None
    assert_once_rounded(case, out)
    monkeypatch.setenv("ACLCHECK_STANDIN_BUG", "ignore_strides")
    status, out = run(lib, case, layout)
    assert status == 0 and out is not None
    got, want = out.astype(np.float64), golden(case)
    assert not np.allclose(got, want, equal_nan=True)  # the bug shows


def test_a_library_accepting_nc_mismatch_accepts_the_leading_dims_probes(
        lib: abi.Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACLCHECK_STANDIN_SOC", "Ascend910B1")
    probes = [c for c in suite("atlas-a2") if c.id.split("_", 1)[-1].startswith(("n_grad",
                                                                                  "c_grad"))]
    assert probes and all(c.expected_status == 161002 for c in probes)
    monkeypatch.setenv("ACLCHECK_STANDIN_BUG", "accept_nc_mismatch")
    assert all(run(lib, c)[0] == 0 for c in probes)


def test_null_workspace_size_pointer_comes_first_and_executors_are_per_operator(
        lib: abi.Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACLCHECK_STANDIN_SOC", "Ascend910B1")
    executor = ctypes.c_void_p()
    assert lib.first3d(None, None, None, None, ctypes.byref(executor)) == 161001
    msg = lib.aclGetRecentErrMsg()
    assert msg is not None and b"workspaceSize or executor" in msg
    # a 3D executor is refused by the 2D second phase (and not freed by it)
    case = Case("x", "global", "atlas-a2", "float32", "ND", (1, 2, 3, 3, 3), (1, 2, 1, 1, 1), 5)
    call = Call(lib)
    try:
        hs = [call.tensor(np.zeros(math.prod(s), np.float32), s,
                          _layout(np.zeros(s, np.float32), "contiguous")[1], 0, "float32", "ND")
              for s in (case.grad_shape, case.self_shape, case.self_shape)]
        size = ctypes.c_uint64(0)
        assert lib.first3d(*hs, ctypes.byref(size), ctypes.byref(executor)) == 0
        work = call.buffer(np.zeros(size.value, np.uint8))
        assert lib.aclnnAdaptiveAvgPool2dBackward(work, size.value, executor,
                                                  lib.stream) == 161002
        assert lib.second3d(work, size.value, executor, lib.stream) == 0
    finally:
        call.close()
