"""`--impl module:function`: any Python callable `function(*inputs) -> out` (the
operator's input tensors, in call order: `aclcheck impls` shows them). A function whose
signature names `product` or `overflow_mode` is told the call's (a model that computes
one way on Atlas training/inference and another on A2/A3 is one function).

Arguments are numpy arrays of the case dtype (ml_dtypes.bfloat16 for bf16) and the case
layout: real strided views into read-only storage, never silently made contiguous.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from aclcheck.cases.call import Outcome
from aclcheck.dtypes import NUMPY_DTYPES
from aclcheck.errors import UnknownImplementation
from aclcheck.impls.base import (
    CallInputs,
    Implementation,
    numpy_view,
    overflow_mode_of,
    timed_call,
)


def load_callable(spec: str) -> Callable[..., object]:
    """Import `module:function` (module may be dotted; `path/to/file.py:function` works)."""
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise UnknownImplementation(f"expected module:function, got {spec!r}")
    if module_name.endswith(".py"):
        path = Path(module_name).resolve()
        if not path.is_file():
            raise UnknownImplementation(f"{spec}: no such file {path}")
        sys.path.insert(0, str(path.parent))
        module_name = path.stem
    elif "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: modules in the working directory
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownImplementation(f"{spec}: cannot import {module_name!r}: {exc}") from None
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UnknownImplementation(f"{spec}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UnknownImplementation(f"{spec}: {attr!r} is not callable")
    return obj  # type: ignore[return-value]


def source_file(spec: str) -> Path | None:
    """The file `module:function` would be imported from, found without importing
    anything (a top-level module or a .py path; None for dotted names or not found)."""
    from importlib.machinery import PathFinder

    module_name = spec.rpartition(":")[0]
    if module_name.endswith(".py"):
        return Path(module_name)
    if not module_name or "." in module_name:
        return None
    try:
        found = PathFinder.find_spec(module_name, [os.getcwd(), *sys.path])
    except (ImportError, ValueError, OSError):
        return None
    origin = found.origin if found is not None else None
    return Path(origin) if origin and os.path.isfile(origin) else None


class CallableImpl(Implementation):
    has_status_codes = False
    models_products = False
    fork_safe = True

    def __init__(self, spec: str, fn: Callable[..., object] | None = None) -> None:
        self.fn = fn if fn is not None else load_callable(spec)
        self.name = spec
        self.spec = spec
        self.description = f"Python callable {spec}({signature()}) -> out"
        # optional declarations on the function object itself
        self.dtypes = getattr(self.fn, "aclcheck_dtypes", None)
        self.products = getattr(self.fn, "aclcheck_products", None)
        self.takes_out = "out" in _keywords(self.fn)
        #: the context keywords its signature names (CONTEXT_KEYWORDS)
        self.told = tuple(k for k in CONTEXT_KEYWORDS if k in _keywords(self.fn))
        if self.takes_out:
            self.description += " (out= buffer pre-filled with NaN)"
        if self.told:
            self.description += f" (told {', '.join(k + '=' for k in self.told)})"

    def run(self, call: CallInputs) -> Outcome:
        args = [numpy_view(t) for t in call.inputs.values()]
        told = self._told(call)
        if not self.takes_out:
            result, seconds, raised = timed_call(lambda: self.fn(*args, **told))
            return Outcome(output=result, time_s=seconds, raised=raised,
                           unusable=self._unusable(raised, len(args), told))
        out = sentinel_output(call)
        result, seconds, raised = timed_call(lambda: self.fn(*args, out=out, **told))
        return Outcome(output=out if result is None else result, time_s=seconds,
                       raised=raised, unusable=self._unusable(raised, len(args),
                                                              {"out": None, **told}))

    def _told(self, call: CallInputs) -> dict[str, str]:
        """The call's context for a function whose signature asks for it: `product=`
        (the case's product id) and `overflow_mode=` ("inf-nan" or "saturation")."""
        context = {"product": call.case.product, "overflow_mode": overflow_mode_of(call)}
        return {name: context[name] for name in self.told}

    def _unusable(self, raised: str | None, n_args: int, kwargs: dict[str, object]
                  ) -> str | None:
        """Why the function cannot take the call at all (its signature does not bind the
        inputs), when it raised a TypeError; None when the call itself was fine."""
        if raised is None or not raised.startswith("TypeError"):
            return None
        try:
            sig = inspect.signature(self.fn)
        except (TypeError, ValueError):
            return None
        try:
            sig.bind(*range(n_args), **kwargs)
        except TypeError as exc:
            return (f"{self.name} cannot be called as {self.name.rpartition(':')[2]}"
                    f"({signature()}): its signature is {sig} ({exc})")
        return None


def signature() -> str:
    """The arguments a callable takes: the default operator's inputs, in call order."""
    from aclcheck import ops

    return ", ".join(r.name for r in ops.operator(ops.DEFAULT).case_type.inputs())


#: keywords a callable gets when its signature names them: the call's context
CONTEXT_KEYWORDS = ("product", "overflow_mode")


def _keywords(fn: Callable[..., object]) -> frozenset[str]:
    """The names `fn` takes by keyword (empty where its signature cannot be read)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(p.name for p in params
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def sentinel_output(call: CallInputs) -> np.ndarray:
    """The out tensor aclcheck allocates: contiguous, NaN-filled where the dtype has NaN,
    so elements the implementation never writes cannot pass for results."""
    desc = call.case.tensor_desc(call.case.output().name)
    dtype = np.dtype(NUMPY_DTYPES[desc.dtype])
    out = np.empty(tuple(desc.shape), dtype=dtype)
    if dtype.kind == "f" or desc.dtype == "bfloat16":
        out.fill(np.nan)
    else:
        out.fill(0)
    return out
