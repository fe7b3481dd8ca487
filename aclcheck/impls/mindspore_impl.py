"""`--impl mindspore[:cpu|gpu|ascend]`: the operator's MindSpore call (its glue).

The call is the one MindSpore users make, in PyNative mode: for a backward operator,
`mindspore.vjp` of the public forward (each operator's glue says how), not the raw grad
primitive, which skips the shape checks the public path makes.

Strided views arrive as contiguous copies: MindSpore's `as_strided` is not public API
(and fails under NumPy 2 in 2.10), so each non-contiguous input gets a note saying so.
MindSpore's device is process-wide (`mindspore.set_device`), so one process serves one
MindSpore device. Importing is fork-safe on CPU; running is not (a child forked after the
parent ran an op hangs), which is exactly the rule the isolation layer follows.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import numpy as np

from aclcheck.cases import Case
from aclcheck.cases.call import Outcome
from aclcheck.cases.layouts import StridedTensor
from aclcheck.errors import ImplementationUnavailable
from aclcheck.impls.base import CallInputs, Implementation, timed_call
from aclcheck.impls.framework_common import (
    first_line,
    import_framework,
    is_bfloat16,
    narrow_to_bfloat16,
    parse_device,
    scalar_reason,
    widen_bfloat16,
)
from aclcheck.ops import default_operator, operator_of

DEVICES = ("cpu", "gpu", "ascend")
#: MindSpore's device_target names
TARGETS = {"cpu": "CPU", "gpu": "GPU", "ascend": "Ascend"}
#: dtypes per device. CPU (measured): float16/32/64 only, bfloat16 is refused by the
#: primitive's type check; GPU is taken to be the same. Ascend's kernel (aclnn) has
#: bfloat16 on A2/A3, so it is declared there; not verified on a board (if MindSpore
#: refuses it there too, the bfloat16 cases show that as ERROR, a finding).
DTYPES = {
    "cpu": ("float16", "float32"),
    "gpu": ("float16", "float32"),
    "ascend": ("float16", "float32", "bfloat16"),
}
TESTED_VERSION = "2.10.0"


def import_mindspore() -> Any:
    """Import MindSpore quietly, or say in one line why it cannot be used."""
    # MindSpore's C++ log at WARNING prints device probes. GLOG_v is read once, at import;
    # Paddle reads the same variable with the opposite meaning (verbosity), so it is set
    # only while MindSpore imports. A user's own value wins.
    previous = os.environ.get("GLOG_v")
    os.environ["GLOG_v"] = previous or "3"
    try:
        return import_framework("mindspore", "MindSpore", "mindspore",
                                f"mindspore=={TESTED_VERSION}")
    finally:
        if previous is None:
            os.environ.pop("GLOG_v", None)


class MindSporeImpl(Implementation):
    has_status_codes = False
    models_products = False
    FORK_SAFE_DEVICES = ("cpu",)

    def __init__(self, suffix: str = "") -> None:
        self.device, self.index = parse_device("mindspore", suffix, DEVICES)
        self.name = f"mindspore:{self.device}"
        self.spec = self.name if not self.index else f"{self.name}:{self.index}"
        self.dtypes = DTYPES[self.device]
        self.fork_safe = self.device in self.FORK_SAFE_DEVICES
        self._ms = import_mindspore()
        self.version = str(getattr(self._ms, "__version__", "?"))
        self._select_device()
        self._ops = importlib.import_module("mindspore.ops")
        self.description = (f"MindSpore {self.version}: mindspore.vjp of "
                            f"{default_operator().glue.mindspore_name} on "
                            f"{TARGETS[self.device]}")

    def _select_device(self) -> None:
        ms, target = self._ms, TARGETS[self.device]
        try:
            if self.device != "cpu" and not ms.hal.is_available(target):
                raise ImplementationUnavailable(
                    f"{self.name}: no {target} device or MindSpore build for it here")
            ms.set_device(target, self.index)
        except ImplementationUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. the process already uses another
            raise ImplementationUnavailable(f"{self.name}: {first_line(exc)}") from None

    def supports(self, case: Case) -> bool | str:
        base = super().supports(case)
        if base is not True:
            return base
        return scalar_reason(case) or True

    def set_deterministic(self, on: bool) -> str | None:
        self._ms.set_deterministic(on)
        return None

    def _to_mindspore(self, tensor: StridedTensor) -> Any:
        ms = self._ms
        array = np.ascontiguousarray(tensor.view())
        if is_bfloat16(array):
            return ms.Tensor(widen_bfloat16(array)).astype(ms.bfloat16)
        return ms.Tensor(array)

    def _to_numpy(self, result: Any) -> np.ndarray:
        ms = self._ms
        if result.dtype == ms.bfloat16:
            return narrow_to_bfloat16(result.astype(ms.float32).asnumpy())
        return result.asnumpy()

    def run(self, call: CallInputs) -> Outcome:
        if any(t is None for t in call.inputs.values()):
            return Outcome(raised="null pointer cannot be passed to mindspore")
        notes = tuple(f"{call.case.role(name).api}: MindSpore has no public strided view; "
                      "passed as a contiguous copy" for name, t in call.inputs.items()
                      if t is not None and not t.contiguous)
        tensors = {name: self._to_mindspore(t) for name, t in call.inputs.items()}
        glue = operator_of(call.case).glue

        def compute() -> object:
            result = glue.mindspore(self._ms, self._ops, tensors)
            return self._to_numpy(result)  # asnumpy() waits for the device

        result, seconds, raised = timed_call(compute)
        if raised is not None:
            return Outcome(raised=raised, time_s=seconds, notes=notes)
        return Outcome(output=result, time_s=seconds, notes=notes)
