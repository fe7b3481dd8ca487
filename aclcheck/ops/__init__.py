"""The operators aclcheck checks, one folder each, and the one place that names them.

    operator                         what an operator is: the Operator record of hooks
    adaptive/                        what the adaptive-pooling operators share: window
                                     bounds and tables, their case space
    adaptive_avg_pool2d_backward/    aclnnAdaptiveAvgPool2dBackward
    adaptive_avg_pool3d_backward/    aclnnAdaptiveAvgPool3dBackward
    materialize                      a case's tensors and golden, from its record

Everything else reaches an operator through `operator(name)` or `operator_of(case)`;
docs/adding-an-operator.md says what a new folder provides.
"""

from __future__ import annotations

from aclcheck.cases import Case
from aclcheck.errors import SuiteError
from aclcheck.ops import adaptive_avg_pool2d_backward, adaptive_avg_pool3d_backward
from aclcheck.ops.operator import Operator
from aclcheck.options import DEFAULT_OPERATOR

#: Every operator by name, the default first.
OPERATORS: dict[str, Operator] = {
    op.name: op for op in (adaptive_avg_pool2d_backward.OPERATOR,
                           adaptive_avg_pool3d_backward.OPERATOR)
}
DEFAULT = DEFAULT_OPERATOR


def operator(name: str) -> Operator:
    """The operator called `name` or one of its aliases (SuiteError listing the known)."""
    for op in OPERATORS.values():
        if name == op.name or name in op.aliases:
            return op
    raise SuiteError(f"unknown operator {name!r}; known: {', '.join(OPERATORS)} "
                     "(`aclcheck ops` lists them)")


def default_operator() -> Operator:
    """The operator of a command that names none (every command line of before --op)."""
    return OPERATORS[DEFAULT]


def operator_of(case: Case) -> Operator:
    """The operator a case record belongs to."""
    return OPERATORS[type(case).OPERATOR]
