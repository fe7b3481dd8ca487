"""`--impl paddle[:cpu|gpu|npu|<custom device>]`: the operator's Paddle call (its glue).

The call is the one Paddle users make, in dynamic mode: for a backward operator, the
forward and then `paddle.grad` (each operator's glue says how; any rank it does not
adapt goes in unchanged and Paddle judges it).

Strided views stay strided: each tensor is a `paddle.as_strided` view of its storage
(Paddle copies it where a kernel needs contiguous input, as it would for a user's view).
Tensors are placed explicitly (`place=`), so the adapter never changes Paddle's default
device. A CPU child forked from a parent that imported, or even ran, Paddle works.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.call import Outcome
from aclcheck.cases.layouts import StridedTensor
from aclcheck.errors import ImplementationUnavailable
from aclcheck.impls.base import CallInputs, Implementation, timed_call
from aclcheck.impls.framework_common import (
    import_framework,
    is_bfloat16,
    narrow_to_bfloat16,
    parse_device,
    scalar_reason,
    widen_bfloat16,
)
from aclcheck.ops import default_operator, operator_of

#: device names known without asking Paddle; custom-device plugins add their own
DEVICES = ("cpu", "gpu", "npu")
#: Paddle's CPU pool2d kernel has no bfloat16; its GPU and custom-device kernels do
CPU_DTYPES = ("float16", "float32")
DEVICE_DTYPES = ("float16", "float32", "bfloat16")
TESTED_VERSION = "3.3.1"


def import_paddle() -> Any:
    """Import Paddle, or say in one line why it cannot be used."""
    return import_framework("paddle", "PaddlePaddle", "paddle",
                            f"paddlepaddle=={TESTED_VERSION}")


def custom_devices(paddle: Any) -> tuple[str, ...]:
    """Custom-device types registered by plugins (e.g. 'npu' from paddle-custom-npu)."""
    try:
        return tuple(paddle.device.get_all_custom_device_type() or ())
    except Exception:  # noqa: BLE001 - no plugin support compiled in
        return ()


class PaddleImpl(Implementation):
    has_status_codes = False
    models_products = False
    FORK_SAFE_DEVICES = ("cpu",)

    def __init__(self, suffix: str = "") -> None:
        name = (suffix or "cpu").partition(":")[0]
        if name in DEVICES:  # known names: a usage error needs no import
            self.device, self.index = parse_device("paddle", suffix, DEVICES)
            self._paddle = import_paddle()
        else:
            self._paddle = import_paddle()
            valid = DEVICES + tuple(d for d in custom_devices(self._paddle)
                                    if d not in DEVICES)
            self.device, self.index = parse_device("paddle", suffix, valid)
        self.name = f"paddle:{self.device}"
        self.spec = self.name if not self.index else f"{self.name}:{self.index}"
        self.dtypes = CPU_DTYPES if self.device == "cpu" else DEVICE_DTYPES
        self.fork_safe = self.device in self.FORK_SAFE_DEVICES
        self.version = str(getattr(self._paddle, "__version__", "?"))
        self._place = self._make_place()
        self._functional = importlib.import_module("paddle.nn.functional")
        self.description = (f"PaddlePaddle {self.version}: paddle.grad of "
                            f"{default_operator().glue.paddle_name} on {self.device}")

    def _make_place(self) -> Any:
        paddle = self._paddle
        if self.device == "cpu":
            return paddle.CPUPlace()
        if self.device == "gpu":
            if not paddle.is_compiled_with_cuda():
                raise ImplementationUnavailable("paddle:gpu: this Paddle build has no CUDA "
                                                "(install paddlepaddle-gpu)")
            if paddle.device.cuda.device_count() <= self.index:
                raise ImplementationUnavailable(f"paddle:gpu: no GPU {self.index} here")
            return paddle.CUDAPlace(self.index)
        if self.device not in custom_devices(paddle):
            raise ImplementationUnavailable(
                f"{self.name}: no {self.device} device plugin is registered with Paddle "
                "(e.g. paddle-custom-npu for npu)")
        return paddle.CustomPlace(self.device, self.index)

    def supports(self, case: Case) -> bool | str:
        base = super().supports(case)
        if base is not True:
            return base
        return scalar_reason(case) or True

    def set_deterministic(self, on: bool) -> str | None:
        self._paddle.set_flags({"FLAGS_cudnn_deterministic": on})
        return None

    def _to_paddle(self, tensor: StridedTensor) -> Any:
        """The tensor on the device with its real strides and storage offset."""
        paddle = self._paddle
        if tensor.contiguous:
            array = np.ascontiguousarray(tensor.view())
            flat = paddle.to_tensor(widen_bfloat16(array), place=self._place)
            return flat.astype("bfloat16") if is_bfloat16(array) else flat
        storage = tensor.storage
        flat = paddle.to_tensor(widen_bfloat16(storage), place=self._place)
        if is_bfloat16(storage):
            flat = flat.astype("bfloat16")
        # Paddle counts the storage offset in bytes, strides in elements
        return paddle.as_strided(flat, list(tensor.shape), list(tensor.strides),
                                 tensor.offset * storage.dtype.itemsize)

    def _to_numpy(self, result: Any) -> np.ndarray:
        if result.dtype == self._paddle.bfloat16:
            return narrow_to_bfloat16(result.astype("float32").numpy())
        return result.numpy()

    def run(self, call: CallInputs) -> Outcome:
        if any(t is None for t in call.inputs.values()):
            return Outcome(raised="null pointer cannot be passed to paddle")
        tensors = {name: self._to_paddle(t) for name, t in call.inputs.items()}
        call_op, notes = operator_of(call.case).glue.paddle(self._paddle, self._functional,
                                                            tensors)

        def compute() -> object:
            return self._to_numpy(call_op())  # numpy() waits for the device

        result, seconds, raised = timed_call(compute)
        if raised is not None:
            return Outcome(raised=raised, time_s=seconds, notes=notes)
        return Outcome(output=result, time_s=seconds, notes=notes)
