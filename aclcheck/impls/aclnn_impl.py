"""`--impl aclnn`: the vendor kernel itself, called through ctypes like the CANN example.

Per case (docs/contract.md §2): device buffers for the storage of each input tensor, one
aclTensor each with the case's real view shape, element strides, storage offset, dtype and
format enums and a 1-D storage shape (the storage length: the form the vendor examples use
for views); a contiguous out buffer pre-filled with NaN; both phases; stream sync; copy
back; then every tensor destroyed and every buffer freed, on every path. Tensors named in
`case.null` are passed as NULL pointers. The first phase's status is reported as is, with
aclGetRecentErrMsg's text; a runtime failure (malloc, copy, sync) is reported as ERROR.

Runtime set-up (aclInit once per process, aclrtSetDevice, one stream) happens when the
adapter is built; the product is the one named by ACLCHECK_ACLNN_PRODUCT (`verify
--product`) or the one the SoC name maps to. Options travel in environment variables so
an isolated worker, which rebuilds the adapter from its spec, sees them too.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.acl import ACL_FORMAT_ENUM, SUCCESS, status_name
from aclcheck.cases.call import Outcome
from aclcheck.cases.layouts import StridedTensor, contiguous_view, gap_fill
from aclcheck.dtypes import ACL_DTYPE_ENUM, NUMPY_DTYPES
from aclcheck.errors import (
    ImplementationUnavailable,
    UnknownImplementation,
)
from aclcheck.impls import aclnn_abi as abi
from aclcheck.impls.aclnn_options import ENV_DEVICE, ENV_PRODUCT, product_rules
from aclcheck.impls.base import CallInputs, Implementation
from aclcheck.ops import default_operator, operator_of

#: SoC name prefixes (aclrtGetSocName) -> product id; the first match wins.
SOC_PRODUCTS: tuple[tuple[str, str], ...] = (
    ("Ascend910_93", "atlas-a3"),
    ("Ascend910B", "atlas-a2"),
    ("Ascend910", "atlas-training"),
    ("Ascend310P", "atlas-inference"),
)


class _RuntimeFailure(Exception):
    """A runtime call (not the operator) failed during a case."""


def product_for_soc(soc: str) -> str | None:
    """The product id a SoC name belongs to (None when unknown)."""
    for prefix, product in SOC_PRODUCTS:
        if soc.startswith(prefix):
            return product
    return None


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", "replace").strip() if raw else ""


_INITIALIZED: set[int] = set()


def _init_runtime(api: abi.Api) -> None:
    """aclInit once per process and library set; aclFinalize at exit."""
    if id(api) in _INITIALIZED:
        return
    rc = api.aclInit(None)
    if rc not in (abi.ACL_SUCCESS, abi.ACL_ERROR_REPEAT_INITIALIZE):
        raise ImplementationUnavailable(f"aclInit returned {rc}{_recent(api)}")
    _INITIALIZED.add(id(api))
    if rc == abi.ACL_SUCCESS:
        atexit.register(api.aclFinalize)


def _recent(api: abi.Api) -> str:
    fn = api.aclGetRecentErrMsg
    msg = _text(fn()) if fn is not None else ""
    return f": {msg}" if msg else ""


class _Resources:
    """Device buffers and tensors of one call, released in reverse order on every path."""

    def __init__(self, api: abi.Api) -> None:
        self.api = api
        self.buffers: list[int] = []
        self.tensors: list[int] = []

    def malloc(self, nbytes: int) -> int:
        ptr = ctypes.c_void_p()
        # aclrtMalloc refuses 0 bytes: empty tensors still get a (1-byte) buffer
        rc = self.api.aclrtMalloc(ctypes.byref(ptr), max(int(nbytes), 1),
                                  abi.ACL_MEM_MALLOC_HUGE_FIRST)
        if rc != abi.ACL_SUCCESS or not ptr.value:
            raise _RuntimeFailure(f"aclrtMalloc({nbytes}) returned {rc}{_recent(self.api)}")
        self.buffers.append(ptr.value)
        return ptr.value

    def upload(self, host: np.ndarray) -> int:
        host = np.ascontiguousarray(host)
        dev = self.malloc(host.nbytes)
        if host.nbytes:
            rc = self.api.aclrtMemcpy(dev, host.nbytes, host.ctypes.data, host.nbytes,
                                      abi.ACL_MEMCPY_HOST_TO_DEVICE)
            if rc != abi.ACL_SUCCESS:
                raise _RuntimeFailure(f"aclrtMemcpy (host to device, {host.nbytes} bytes) "
                                      f"returned {rc}{_recent(self.api)}")
        return dev

    def download(self, host: np.ndarray, dev: int) -> None:
        if not host.nbytes:
            return
        rc = self.api.aclrtMemcpy(host.ctypes.data, host.nbytes, dev, host.nbytes,
                                  abi.ACL_MEMCPY_DEVICE_TO_HOST)
        if rc != abi.ACL_SUCCESS:
            raise _RuntimeFailure(f"aclrtMemcpy (device to host, {host.nbytes} bytes) "
                                  f"returned {rc}{_recent(self.api)}")

    def tensor(self, name: str, shape: Sequence[int], dtype: str, strides: Sequence[int],
               offset: int, fmt: str, storage_dims: Sequence[int], data: int) -> int:
        """aclCreateTensor with the case's geometry; storage shape: what the case states,
        else (storage length,)."""
        dims = abi.int64_array(shape)
        strd = abi.int64_array(strides)
        storage = abi.int64_array(storage_dims)
        handle = self.api.aclCreateTensor(dims, len(shape), ACL_DTYPE_ENUM[dtype],
                                          strd, int(offset), ACL_FORMAT_ENUM[fmt],
                                          storage, len(storage_dims), data)
        if not handle:
            raise _RuntimeFailure(f"aclCreateTensor returned NULL for {name} (shape "
                                  f"{tuple(shape)}, dtype {dtype}, format {fmt})"
                                  f"{_recent(self.api)}")
        self.tensors.append(handle)
        return int(handle)

    def release(self) -> list[str]:
        """Destroy tensors, free buffers; the failures, as text (never raises)."""
        problems = []
        for handle in reversed(self.tensors):
            rc = self.api.aclDestroyTensor(handle)
            if rc != abi.ACL_SUCCESS:
                problems.append(f"aclDestroyTensor returned {rc}")
        for ptr in reversed(self.buffers):
            rc = self.api.aclrtFree(ptr)
            if rc != abi.ACL_SUCCESS:
                problems.append(f"aclrtFree returned {rc}")
        self.tensors.clear()
        self.buffers.clear()
        return problems


class AclnnImpl(Implementation):
    """The operator's aclnn function from libopapi, on one device, judged on status codes."""

    name = "aclnn"
    spec = "aclnn"
    has_status_codes = True
    models_products = True

    def __init__(self, lib_dirs: Sequence[str] | None = None, device: int = 0,
                 product: str | None = None, env: Mapping[str, str] | None = None) -> None:
        if product is not None:
            product_rules(product, UnknownImplementation)
        self.paths = abi.find_libraries(lib_dirs, env)
        self.api = abi.load(self.paths)
        _init_runtime(self.api)
        self.device = int(device)
        rc = self.api.aclrtSetDevice(self.device)
        if rc != abi.ACL_SUCCESS:
            raise ImplementationUnavailable(f"aclrtSetDevice({self.device}) returned {rc}"
                                            f"{_recent(self.api)}")
        stream = ctypes.c_void_p()
        rc = self.api.aclrtCreateStream(ctypes.byref(stream))
        if rc != abi.ACL_SUCCESS:
            self.api.aclrtResetDevice(self.device)
            raise ImplementationUnavailable(f"aclrtCreateStream returned {rc}{_recent(self.api)}")
        self.stream: int | None = stream.value
        get_soc = self.api.aclrtGetSocName
        self.soc = _text(get_soc()) if get_soc is not None else ""
        self.soc_product = product_for_soc(self.soc)
        self.product = product or self.soc_product
        self.products = (self.product,) if self.product else None
        origin = "--product" if product else "SoC"
        self.description = (f"{default_operator().api} from {self.paths['operator']}, "
                            f"device {self.device}, SoC {self.soc or '?'}, product "
                            f"{self.product or '?'} (from {origin})")

    def supports(self, case: Case) -> bool | str:
        if self.product is None:
            return (f"SoC {self.soc or '(unnamed)'} maps to no known product: name it with "
                    "--product")
        if case.product != self.product:
            return (f"this device runs {self.product} (SoC {self.soc or '?'}); the case is "
                    f"for {case.product}")
        return True

    def set_deterministic(self, on: bool) -> str | None:
        fn = self.api.aclrtCtxSetSysParamOpt
        if fn is None:
            return "aclrtCtxSetSysParamOpt is missing: cannot switch deterministic mode"
        rc = fn(abi.ACL_OPT_DETERMINISTIC, 1 if on else 0)
        if rc != abi.ACL_SUCCESS:
            return f"aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC) returned {rc}"
        return None

    def run(self, call: CallInputs) -> Outcome:
        res = _Resources(self.api)
        try:
            outcome = self._run(call, res)
        except _RuntimeFailure as exc:
            outcome = Outcome(crashed=f"runtime failure: {exc}")
        finally:
            problems = res.release()
        if problems:
            outcome = replace(outcome, notes=outcome.notes + ("cleanup: " + "; ".join(problems),))
        return outcome

    def _run(self, call: CallInputs, res: _Resources) -> Outcome:
        case = call.case
        signature = operator_of(case).glue.aclnn
        handles: dict[str, int | None] = {}
        for name, tensor in call.inputs.items():
            if name in case.null or tensor is None:
                handles[name] = None
                continue
            desc = case.tensor_desc(name)
            dev = res.upload(tensor.storage)
            handles[name] = res.tensor(name, tensor.shape, desc.dtype, tensor.strides,
                                       tensor.offset, desc.format,
                                       desc.storage or (int(tensor.storage.size),), dev)
        out_host: np.ndarray | None = None
        out_view: StridedTensor | None = None
        out_dev = 0
        out = case.output().name
        if out in case.null:
            handles[out] = None
        else:
            desc = case.tensor_desc(out)
            np_dtype = np.dtype(NUMPY_DTYPES[desc.dtype])
            # out is contiguous unless the case states its view (a vendor case)
            stated = (desc.strides, desc.offset, desc.storage) != (None, None, None)
            strides, offset, size = case.view_geometry(out) if stated \
                else contiguous_view(tuple(desc.shape))
            out_host = np.full(size, gap_fill(np_dtype), dtype=np_dtype)
            out_view = StridedTensor(out_host, tuple(desc.shape), strides, offset)
            out_dev = res.upload(out_host)
            handles[out] = res.tensor(out, desc.shape, desc.dtype, strides, offset,
                                      desc.format, desc.storage or (size,), out_dev)
        size = ctypes.c_uint64(0)
        executor = ctypes.c_void_p()
        start = time.perf_counter()
        status = getattr(self.api, f"{signature.name}GetWorkspaceSize")(
            *(handles[name] for name in signature.tensors), ctypes.byref(size),
            ctypes.byref(executor))
        if status != SUCCESS:
            return self._rejected(status, "first phase", start)
        workspace = res.malloc(size.value) if size.value else None
        status = getattr(self.api, signature.name)(workspace, size.value, executor, self.stream)
        if status != SUCCESS:
            return self._rejected(status, "second phase", start)
        rc = self.api.aclrtSynchronizeStream(self.stream)
        if rc != abi.ACL_SUCCESS:
            raise _RuntimeFailure(f"aclrtSynchronizeStream returned {rc}{_recent(self.api)}")
        elapsed = time.perf_counter() - start
        if out_host is None or out_view is None:
            return Outcome(status=SUCCESS, output=None, time_s=elapsed)
        res.download(out_host, out_dev)
        output = out_host.reshape(out_view.shape) if out_view.contiguous \
            else np.array(out_view.view())
        return Outcome(status=SUCCESS, output=output, time_s=elapsed)

    def _rejected(self, status: int, phase: str, start: float) -> Outcome:
        elapsed = time.perf_counter() - start
        msg = _recent(self.api).removeprefix(": ")
        text = msg or f"{phase} returned {status} {status_name(status)}"
        notes = () if phase == "first phase" else (f"the {phase} returned {status}",)
        return Outcome(status=int(status), raised=text, time_s=elapsed, notes=notes)

    def close(self) -> None:
        if self.stream is not None:
            self.api.aclrtDestroyStream(self.stream)
            self.api.aclrtResetDevice(self.device)
            self.stream = None


def from_environment(env: Mapping[str, str] | None = None) -> AclnnImpl:
    """The adapter as `--impl aclnn` builds it: options from ACLCHECK_ACLNN_* variables."""
    env = os.environ if env is None else env
    device_text = env.get(ENV_DEVICE, "").strip() or "0"
    try:
        device = int(device_text)
    except ValueError:
        raise UnknownImplementation(f"{ENV_DEVICE}={device_text!r} is not a device "
                                    "number") from None
    return AclnnImpl(None, device, env.get(ENV_PRODUCT) or None, env)
