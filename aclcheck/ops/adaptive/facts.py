"""What the diagnosis reads of an adaptive-pooling case, for any number of spatial axes:
the facts a failure signature groups it by (judging.diagnosis.signature.CaseFacts: the kind of each
window axis), the window tables a printed case shows, and the family a smaller case is
named by (shrink). Both operators' diagnosis hooks call these with their axis names.
"""

from __future__ import annotations

from collections.abc import Sequence

from aclcheck.cases import Case
from aclcheck.judging.diagnosis.signature import AxisKind, CaseFacts, axis_kind
from aclcheck.ops.adaptive.windows import window_bounds

#: (axis, window starts, window ends) of one spatial axis
WindowTable = tuple[str, tuple[int, ...], tuple[int, ...]]


def _spatial(case: Case, axes: Sequence[str]
             ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(self's, gradOutput's) spatial sizes, None where a tensor has too few axes."""
    s = len(axes)
    self_shape = tuple(int(x) for x in case.tensor_desc("self").shape)
    grad_shape = tuple(int(x) for x in case.tensor_desc("grad_output").shape)
    if len(self_shape) < s or len(grad_shape) < s:
        return None
    return self_shape[-s:], grad_shape[-s:]


def case_facts(case: Case, verdict: str, axes: Sequence[str], accumulation: str) -> CaseFacts:
    """What a failure signature groups this case by; `square`: every axis has the same
    input size and the same output size (an axis mix-up cannot show otherwise)."""
    sizes = _spatial(case, axes)
    kinds: tuple = ()
    square = True
    if sizes is not None:
        ins, outs = sizes
        kinds = tuple((name, axis_kind(i, o)) for name, i, o in zip(axes, ins, outs,
                                                                      strict=True))
        square = len(set(ins)) == 1 and len(set(outs)) == 1
    return CaseFacts(case.id, verdict, case.family, case.layout,
                     len(case.tensor_desc("self").shape), case.product, case.dtype,
                     case.expectation.success, kinds, square, accumulation)


def window_tables(case: Case, axes: Sequence[str]) -> tuple[WindowTable, ...]:
    """(axis, window starts, window ends) of each spatial axis with windows."""
    sizes = _spatial(case, axes)
    if sizes is None:
        return ()
    out = []
    for name, i, o in zip(axes, *sizes, strict=True):
        if i > 0 and o > 0:
            start, end = window_bounds(o, i)
            out.append((name, tuple(int(x) for x in start), tuple(int(x) for x in end)))
    return tuple(out)


#: Families whose cases are defined by their window shapes: a smaller case of one of
#: them is named by what its shapes are now (shape_family).
SHAPE_FAMILIES = frozenset({"divisible", "nondivisible", "upsampling", "global", "identity",
                            "alignment", "index", "stress"})


def shape_family(kinds: Sequence[AxisKind]) -> str:
    """The shape family a set of window axes belongs to: upsampling or nondivisible if
    any axis is, global or identity if every axis is, else divisible (empty: empty)."""
    ks = set(kinds)
    if AxisKind.EMPTY in ks:
        return "empty"
    if AxisKind.UPSAMPLING in ks:
        return "upsampling"
    if AxisKind.NONDIVISIBLE in ks:
        return "nondivisible"
    if ks == {AxisKind.IDENTITY}:
        return "identity"
    if ks == {AxisKind.GLOBAL}:
        return "global"
    return "divisible"


def relabel(family: str, kinds: Sequence[AxisKind]) -> str:
    """The family label of a case whose shapes changed (shrink): shape families are
    named anew, families of values, layouts, ranks or rules keep their label."""
    return shape_family(kinds) if family in SHAPE_FAMILIES else family


def family_now(case: Case, axes: Sequence[str]) -> str:
    """The family label of a case named for its shapes now (shrink): see relabel."""
    return relabel(case.family, [kind for _, kind in case_facts(case, "", axes, "").axes])
