"""The operators aclcheck checks, one folder each, and the one place that names them.

    operator                         what an operator is: the Operator record of hooks
    adaptive/                        what the adaptive-pooling operators share: window
                                     bounds and tables, their case space
    adaptive_avg_pool2d_backward/    aclnnAdaptiveAvgPool2dBackward
    adaptive_avg_pool3d_backward/    aclnnAdaptiveAvgPool3dBackward
    adaptive_max_pool2d_backward/    aclnnAdaptiveMaxPool2dBackward
    materialize                      a case's tensors and golden, from its record

Everything else reaches an operator through `operator(name)` or `operator_of(case)`;
docs/adding-an-operator.md says what a new folder provides. A folder is imported on its
operator's first look-up (its name is known before), so `generate` of one operator
imports no other.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from aclcheck.cases import Case
from aclcheck.errors import SuiteError
from aclcheck.ops.operator import Operator
from aclcheck.options import DEFAULT_OPERATOR

#: Every operator's name, the default first: its folder here, which exports OPERATOR.
NAMES: tuple[str, ...] = ("adaptive_avg_pool2d_backward", "adaptive_avg_pool3d_backward",
                          "adaptive_max_pool2d_backward")


class Registry(Mapping[str, Operator]):
    """The operators by name, each folder imported on its first look-up: its names are
    known without importing it (`in`, listing), so a command imports only the operators
    it uses. The one cache is of loaded operators; assigning replaces a loaded one (a
    benchmark's stripped copy)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self._names = names
        self._loaded: dict[str, Operator] = {}

    def __getitem__(self, name: str) -> Operator:
        op = self._loaded.get(name)
        if op is None:
            if name not in self._names:
                raise KeyError(name)
            op = self._loaded[name] = importlib.import_module(f"{__name__}.{name}").OPERATOR
        return op

    def __setitem__(self, name: str, op: Operator) -> None:
        if name not in self._names:
            raise KeyError(name)
        self._loaded[name] = op

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


#: Every operator by name, the default first (loaded on first look-up).
OPERATORS = Registry(NAMES)
DEFAULT = DEFAULT_OPERATOR


def operator(name: str) -> Operator:
    """The operator called `name` or one of its aliases (SuiteError listing the known).
    A name loads its operator only; an alias loads them all (aliases live in the records)."""
    if name in OPERATORS:
        return OPERATORS[name]
    for op in OPERATORS.values():
        if name in op.aliases:
            return op
    raise SuiteError(f"unknown operator {name!r}; known: {', '.join(OPERATORS)} "
                     "(`aclcheck ops` lists them)")


def default_operator() -> Operator:
    """The operator of a command that names none (every command line of before --op)."""
    return OPERATORS[DEFAULT]


def operator_of(case: Case) -> Operator:
    """The operator a case record belongs to."""
    return OPERATORS[type(case).OPERATOR]
