"""Implementation adapters: reference, torch (cpu/cuda/npu), mindspore, paddle, aclnn,
Python callables, plugins, and stored results."""

from aclcheck.cases.call import Outcome
from aclcheck.errors import ImplementationUnavailable, UnknownImplementation
from aclcheck.impls.base import CallInputs, Implementation
from aclcheck.impls.registry import available, create

__all__ = [
    "CallInputs",
    "Implementation",
    "ImplementationUnavailable",
    "Outcome",
    "UnknownImplementation",
    "available",
    "create",
]
