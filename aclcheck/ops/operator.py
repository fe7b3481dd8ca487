"""What an operator is to aclcheck: one record of everything specific to it, assembled
in its folder under aclcheck/ops/ (docs/adding-an-operator.md says what each field holds,
in the order a newcomer writes them). Generic code reaches an operator through
aclcheck.ops.operator(name) or aclcheck.ops.operator_of(case); judging never does (it
reads the operator's CaseModel).

Hooks that only some commands call (the numeric model, diagnosis, coverage) are given as
`Hook("module", "name")`: the module is imported on the first call, so a command that
never calls them (generate) does not import them, nor what they import (judging).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from aclcheck.cases.acl import PRODUCTS
from aclcheck.cases.record import Call, Case, CaseData, Expectation, Role
from aclcheck.errors import SuiteError

if TYPE_CHECKING:
    from aclcheck.cases.coverage import Coverage
    from aclcheck.judging.case.model import CaseModel, NumericPath
    from aclcheck.judging.diagnosis.reproduce import CaseClues
    from aclcheck.judging.diagnosis.signature import CaseFacts


@dataclass(frozen=True)
class Hook:
    """A function of an operator's folder imported on its first call: `module`'s `name`
    (a dotted module path). Stateless and picklable (it is its two names); once imported,
    a call costs a dictionary look-up more than the function itself."""

    module: str
    name: str

    def target(self) -> Callable[..., Any]:
        """The function itself (its module imported now, if not yet)."""
        module = sys.modules.get(self.module) or importlib.import_module(self.module)
        return getattr(module, self.name)  # type: ignore[no-any-return]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.target()(*args, **kwargs)


@dataclass(frozen=True)
class ProductRules:
    """What one hardware product accepts of this operator (docs/contract.md §3, §6)."""

    id: str
    dtypes: tuple[str, ...]
    #: dtype the product accumulates in: "float32", or "input" (the input dtype)
    accumulate: str

    @property
    def tag(self) -> str:
        return PRODUCTS[self.id].tag

    @property
    def doc_name(self) -> str:
        return PRODUCTS[self.id].doc_name


@dataclass(frozen=True)
class AclnnSignature:
    """The operator's two aclnn functions: `{name}GetWorkspaceSize(tensors..., uint64_t
    *workspaceSize, aclOpExecutor **executor)` and `{name}(workspace, workspaceSize,
    executor, stream)`; `tensors`: the role of each tensor argument, in order."""

    name: str
    tensors: tuple[str, ...]


@dataclass(frozen=True)
class Glue:
    """How each framework and the aclnn library make this operator's call. Each function
    gets the framework module and the tensors by role, already on the device with their
    strides, and returns the result tensor (PyTorch: the op and its arguments; Paddle: the
    call to time, and notes)."""

    torch: Callable[[Any, Mapping[str, Any]], tuple[Callable[..., Any], tuple[Any, ...]]]
    torch_name: str  # what the adapter's description names
    mindspore: Callable[[Any, Any, Mapping[str, Any]], Any]  # (mindspore, mindspore.ops, t)
    mindspore_name: str
    #: (paddle, paddle.nn.functional, t) -> (the call to time, notes about the call)
    paddle: Callable[[Any, Any, Mapping[str, Any]], tuple[Callable[[], Any], tuple[str, ...]]]
    paddle_name: str
    aclnn: AclnnSignature
    #: what the PyTorch call changes of a case, said in its notes (None: nothing)
    torch_note: Callable[[Case], str | None] | None = None


@dataclass(frozen=True)
class Display:
    """How the operator's cases are shown."""

    axis_names: Callable[[int], tuple[str, ...]]  # names of an output's axes by rank
    map_axes: tuple[str, str]  # the error map's two axes ("H", "W")
    shapes_text: Callable[[Case], str]  # "[2, 3, 8, 6] <- [2, 3, 4, 3]" (shrink, hunt)
    magnitude_source: str  # "|gradOutput|": what m of aclcheck's standard sums
    products_note: str  # the caption of `aclcheck products`: what the table leaves out
    #: the document whose sections the family notes cite
    contract_doc: str = "docs/contract.md"


@dataclass(frozen=True)
class Diagnosis:
    """How a run's failures are diagnosed (aclcheck.judging.diagnosis.ranking): what a failure
    signature groups a case by (case, verdict value), the evidence of one failing case
    from the implementation's output (what-if models re-judged, per-case findings), and
    the window tables a minimal case is printed with."""

    facts: Callable[[Case, str], CaseFacts]
    evidence: Callable[[CaseData, np.ndarray], CaseClues]
    #: (axis, window starts, window ends) per window axis: shown beside a printed case
    windows: Callable[[Case], tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...]]
    #: the family label of a case named for its shapes now (a shrunk case)
    family: Callable[[Case], str]


@dataclass(frozen=True)
class Probe:
    """How the measuring probe (aclcheck.judging.diagnosis.probe) reaches this operator: the input
    role the operator is linear in (one-hot values go there; the case's other inputs,
    shapes, dtype and layout stay), and the contract's M of a case (its windows per
    spatial axis and weight per cell: a judging.diagnosis.probe.Geometry)."""

    linear_role: str
    geometry: Callable[[Case], Any]


class CaseSpace(Protocol):
    """The operator's space of calls, for shrink and hunt (aclcheck.triage)."""

    simple_values: tuple[str, ...]  # value distributions shrink tries, simplest first

    def proposals(self, case: Case) -> Iterator[Case]:
        """Smaller calls, dimension by dimension, the smallest sizes first."""
        ...

    def random_case(self, rng: np.random.Generator, products: Sequence[str],
                    dtypes: Sequence[str], index: int) -> Case | None:
        """One random valid call of the products and dtypes (None: no such pair)."""
        ...

    def renamed(self, case: Case, label: str) -> Case:
        """The case under an id that says what it is now."""
        ...


@dataclass(frozen=True)
class FamilyNote:
    """What one case family aims at (what `aclcheck families` lists)."""

    aims: str  # the fact or bug class it exercises, one line
    section: str = ""  # the docs/contract.md section stating the fact ("" where none)
    products: str = "every product"  # the products the fact belongs to


@dataclass(frozen=True)
class Operator:
    """Everything specific to one operator, in the order a newcomer writes it."""

    # -- who it is
    name: str  # --op, the golden file's root attribute
    aliases: tuple[str, ...]  # short names --op also takes
    api: str  # the aclnn name: titles, docs, tables
    # -- its tensors
    roles: tuple[Role, ...]  # call order, inputs first
    spatial_rank: int  # trailing axes that are spatial; the leading ones are batch
    case_type: type[Case]  # its record class
    # -- its contract (docs/contract.md)
    products: Mapping[str, ProductRules]
    dtypes: tuple[str, ...]  # compute dtypes some product accepts
    formats: tuple[str, ...]  # documented formats
    format_rank: Mapping[str, int | None]  # rank a format implies (None: any)
    ranks: tuple[int, ...]  # valid ranks of the forward input
    expected_status: Callable[[Call], Expectation]  # in the implementation's check order
    # -- its cases
    families: tuple[str, ...]  # every family
    default_families: tuple[str, ...]
    shape_case: Callable[[str, str, str, str, int, int], Case | None]
    invalid_cases: Callable[[str, tuple[str, ...], tuple[str, ...], int, int], list[Case]]
    values: Callable[[Case, str], np.ndarray]  # logical values of one input role
    space: CaseSpace  # dims, smaller calls, random valid calls (shrink, hunt)
    # -- its reference and numeric paths
    golden: Callable[[Case, Mapping[str, np.ndarray], np.ndarray | None], np.ndarray]
    model: Callable[[Case, str | None], CaseModel]  # what judging reads, once per case
    #: (product, dtype, accumulate) -> its windowed path (None: the product has none) and
    #: its global path (`tolerances`)
    paths: Callable[[str, str, str | None], tuple[NumericPath | None, NumericPath]]
    case_bytes: Callable[[Case], int]  # memory to materialise a case (generate's limit)
    # -- its glue and how it is shown
    glue: Glue
    display: Display
    # -- how its failures are diagnosed (None: by magnitude and signature counts only)
    diagnosis: Diagnosis | None = None
    #: how the measuring probe calls it (None: not linear in an input; no probe)
    probe: Probe | None = None
    #: family -> what it aims at (`aclcheck families`); every family has one
    family_notes: Mapping[str, FamilyNote] = field(default_factory=dict)
    #: which edges a file's cases reach (`aclcheck inspect --coverage`; None: no report)
    coverage: Callable[[Iterable[Case]], Coverage] | None = None
    #: the vendor's test cases of it as case-file entries (`aclcheck import-cases`):
    #: (format, path, api, product, ATK format or None) -> an Imported; None: none known
    vendor_cases: Callable[..., Any] | None = None

    def product(self, name: str) -> ProductRules:
        """The product's rules (SuiteError listing the valid ones otherwise)."""
        try:
            return self.products[name]
        except KeyError:
            raise SuiteError(f"unknown product {name!r}; valid: "
                             f"{', '.join(self.products)}") from None
