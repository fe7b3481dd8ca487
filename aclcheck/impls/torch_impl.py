"""`--impl torch[:cpu|:cuda|:npu]`: the operator's PyTorch call (its glue: for
aclnnAdaptiveAvgPool2dBackward torch.ops.aten._adaptive_avg_pool2d_backward).

Inputs keep their real strides and storage offset on the device (no silent .contiguous()),
so layout bugs of the framework's kernels surface. The npu device reaches the vendor's
aclnn kernel through torch_npu.
"""

from __future__ import annotations

import importlib
from typing import Any

import ml_dtypes
import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.call import Outcome
from aclcheck.cases.layouts import StridedTensor
from aclcheck.errors import ImplementationUnavailable, UnknownImplementation
from aclcheck.impls.base import CallInputs, Implementation, timed_call
from aclcheck.impls.framework_common import scalar_reason
from aclcheck.ops import default_operator, operator_of

DEVICES = ("cpu", "cuda", "npu")


def _torch() -> Any:
    try:
        return importlib.import_module("torch")
    except ImportError:
        raise ImplementationUnavailable("PyTorch is not installed (pip install "
                                        "torch==2.13.0)") from None


def _check_device(torch: Any, device: str) -> None:
    if device == "cuda" and not torch.cuda.is_available():
        raise ImplementationUnavailable("torch:cuda: no CUDA device is available")
    if device == "npu":
        try:
            importlib.import_module("torch_npu")
        except ImportError:
            raise ImplementationUnavailable("torch:npu: torch_npu is not installed") from None
        if not torch.npu.is_available():  # type: ignore[attr-defined]
            raise ImplementationUnavailable("torch:npu: no NPU device is available")


class TorchImpl(Implementation):
    has_status_codes = False
    models_products = False
    FORK_SAFE_DEVICES = ("cpu",)
    #: float64 too: PyTorch computes it natively (a DOUBLE call the 3D operator's code
    #: accepts is valid under contract code)
    dtypes = ("float16", "float32", "bfloat16", "float64")

    def __init__(self, device: str = "cpu") -> None:
        if device not in DEVICES:
            raise UnknownImplementation(f"unknown torch device {device!r}; valid: "
                                        f"{', '.join(DEVICES)}")
        self.device = device
        self.fork_safe = device in self.FORK_SAFE_DEVICES
        self.name = f"torch:{device}"
        self.spec = self.name
        self.description = f"{default_operator().glue.torch_name} on {device}"
        self._torch = _torch()
        _check_device(self._torch, device)

    def supports(self, case: Case) -> bool | str:
        base = super().supports(case)
        if base is not True:
            return base
        return scalar_reason(case) or True

    def set_deterministic(self, on: bool) -> str | None:
        self._torch.use_deterministic_algorithms(on)
        self._deterministic = on
        return None

    def set_threads(self, n: int) -> None:
        self._torch.set_num_threads(n)  # intra-op threads (OpenMP) of CPU kernels

    def _to_torch(self, tensor: StridedTensor) -> Any:
        torch = self._torch
        storage = tensor.storage
        if storage.dtype == ml_dtypes.bfloat16:
            flat = torch.from_numpy(storage.view(np.int16).copy()).view(torch.bfloat16)
        else:
            flat = torch.from_numpy(storage.copy())
        flat = flat.to(self.device)
        return flat.as_strided(tensor.shape, tensor.strides, tensor.offset)

    def _to_numpy(self, result: Any) -> np.ndarray:
        torch = self._torch
        result = result.detach().to("cpu")
        if result.dtype == torch.bfloat16:
            return result.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return result.numpy()

    def run(self, call: CallInputs) -> Outcome:
        if any(t is None for t in call.inputs.values()):
            return Outcome(raised="null pointer cannot be passed to torch")
        tensors = {name: self._to_torch(t) for name, t in call.inputs.items()}
        glue = operator_of(call.case).glue
        op, args = glue.torch(self._torch, tensors)
        changed = glue.torch_note(call.case) if glue.torch_note is not None else None

        def compute() -> object:
            out = op(*args)
            if self.device != "cpu":
                getattr(self._torch, self.device).synchronize()
            return out

        result, seconds, raised = timed_call(compute)
        notes: tuple[str, ...] = ()
        if raised is not None and getattr(self, "_deterministic", False) and (
                "deterministic" in raised):
            # e.g. CUDA: "does not have a deterministic implementation": say so, run anyway
            torch = self._torch
            torch.use_deterministic_algorithms(True, warn_only=True)
            try:
                result, seconds, raised = timed_call(compute)
            finally:
                torch.use_deterministic_algorithms(True)
            notes = (f"{self.name} refuses deterministic mode for this op; ran its "
                     "non-deterministic kernel",)
        if changed is not None:
            notes = (changed, *notes)
        if raised is not None:
            return Outcome(raised=raised, time_s=seconds, notes=notes)
        return Outcome(output=self._to_numpy(result), time_s=seconds, notes=notes,
                       deterministic_refused=bool(notes))
