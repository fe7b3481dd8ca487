"""Every correct kernel model of tests/, as `aclcheck verify` runs them
(tests/test_false_alarms.py): each told its overflow mode (the models compute in IEEE
arithmetic; a saturating product converts their results), and each declaring the
products whose path it is (`aclcheck_products`: the matmul models only where the matmul
path is taken). `m2_NAME` / `m3_NAME` are the 2-D / 3-D operator's models by name.

PyTorch is imported here, at module level, when it is installed: the workers are forked
from a zygote that imported this module, so no call pays for the import (a kernel that
imports a library on its first call in a fresh worker looks like a spinning call).
"""

from __future__ import annotations

import importlib.util

import ml_dtypes
import numpy as np

from tests import kernels_hardware as K
from tests.kernels_documented import MATMUL_PRODUCTS, _saturate

if importlib.util.find_spec("torch") is not None:
    import torch
else:  # the torch models are left out
    torch = None

ALL_PRODUCTS = ("atlas-training", "atlas-inference", "atlas-a2", "atlas-a3")


def _told(fn, products: tuple[str, ...] = ALL_PRODUCTS):  # noqa: ANN001, ANN202
    """A plain model `fn(grad_output, self)`, converted as the overflow mode it is told
    does (the models compute in IEEE arithmetic), for the products whose path it is."""

    def kernel(grad_output: np.ndarray, self: np.ndarray, *, overflow_mode: str
               ) -> np.ndarray:
        return _saturate(fn(grad_output, self), overflow_mode)

    kernel.__name__ = kernel.__qualname__ = getattr(fn, "__name__", "kernel")
    kernel.aclcheck_products = products  # type: ignore[attr-defined]
    return kernel


def _torch_float64(op_name: str):  # noqa: ANN202
    def kernel(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
        """PyTorch CPU in float64, correctly rounded to the case dtype."""
        from aclcheck.dtypes import FLOAT_FORMATS, correctly_rounded

        if any(d == 0 for d in (*grad_output.shape, *self.shape)):
            return np.zeros(self.shape, dtype=self.dtype)
        g = torch.from_numpy(np.asarray(grad_output, dtype=np.float64))
        op = getattr(torch.ops.aten, op_name)
        out = op(g, torch.empty(self.shape, dtype=torch.float64)).numpy()
        name = "bfloat16" if self.dtype == ml_dtypes.bfloat16 else np.dtype(self.dtype).name
        with np.errstate(over="ignore"):
            return correctly_rounded(out, FLOAT_FORMATS[name]).astype(self.dtype)

    kernel.__name__ = "torch_float64"
    return kernel


torch_float64 = _torch_float64("_adaptive_avg_pool2d_backward")
torch_float64_3d = _torch_float64("_adaptive_avg_pool3d_backward")


def _checked(fn, spatial: int = 2):  # noqa: ANN001, ANN202
    """A PyTorch model that first rejects what PyTorch does not check (it reads out of
    bounds when gradOutput's leading dims differ from self's), as a careful wrapper does."""

    def kernel(grad_output: np.ndarray, self: np.ndarray) -> np.ndarray:
        if (grad_output.ndim != self.ndim
                or grad_output.shape[:-spatial] != self.shape[:-spatial]):
            raise ValueError(f"gradOutput {grad_output.shape} does not match self {self.shape}")
        return fn(grad_output, self)

    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


def _models_2d() -> dict[str, object]:
    from tests import kernels, kernels_zoo

    training = MATMUL_PRODUCTS
    out: dict[str, object] = {name: _told(fn) for name, fn in kernels.CORRECT.items()}
    out.update({
        "reference_rounded": _told(kernels.reference_rounded),
        "global_path": _told(kernels.global_path),
        "matmul_path": _told(kernels.matmul_path, training),
        "a2_tiled": _told(K.a2_tiled),
        "a2_tiled_48": _told(K.a2_tiled_48),
        "a2_tiled_shuffled": _told(K.a2_tiled_shuffled),
        "window_sum_fp32": _told(K.window_sum_fp32),
        "global_fill": _told(K.global_fill),
        "matmul_fp16": _told(K.matmul_fp16, training),
    })
    if torch is not None:
        out["torch_cpu_float32"] = _told(_checked(kernels.torch_cpu_float32))
        out["torch_float64"] = _told(_checked(torch_float64))
    out.update({f"zoo_{name}": _told(kernels_zoo.make(name))
                for name in kernels_zoo.CONTROLS})
    return out


def _models_3d() -> dict[str, object]:
    from tests import kernels3d

    out: dict[str, object] = {"window_order": _told(kernels3d.window_order),
                              "reversed_order": _told(kernels3d.reversed_order),
                              "shuffled": _told(kernels3d.shuffled(11))}
    if torch is not None:
        out["torch_float64"] = _told(_checked(torch_float64_3d, spatial=3))
    return out


#: name -> kernel: every correct model of the 2-D operator in tests/ (told its mode; the
#: matmul models only for the products that take that path)
MODELS_2D = _models_2d()
#: the same for the 3-D operator
MODELS_3D = _models_3d()
globals().update({f"m2_{name}": fn for name, fn in MODELS_2D.items()})
globals().update({f"m3_{name}": fn for name, fn in MODELS_3D.items()})
