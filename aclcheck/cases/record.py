"""What a call is, as data: its tensors by role, the record of a case, what the contract
expects of it, and the data a case carries once materialised.

Generic over operators: an operator declares its roles (for pooling backward: the
incoming gradient, the forward's input, the output) and a
record class (a frozen dataclass subclass of `Case` with one flat field per role fact,
`{key}_shape`, `{key}_dtype`, `{key}_format`); everything here reads a case through its
roles, so the store, the runner and the reports never name a tensor.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache, cached_property
from typing import Any, ClassVar, Self

import numpy as np

from aclcheck.cases.acl import ALL_FORMATS, PRODUCTS, SUCCESS, UNSPECIFIED
from aclcheck.cases.layouts import (
    LAYOUTS,
    StridedTensor,
    contiguous_view,
    layout_geometry,
    stated_geometry,
)
from aclcheck.dtypes import NUMPY_DTYPES, dtype_tag


@dataclass(frozen=True)
class TensorDesc:
    """What the first phase sees of one tensor: shape, dtype, format, and where the call
    gives them, its element strides, storage offset and storage shape (None: the case's
    layout decides)."""

    shape: tuple[int, ...]
    dtype: str
    format: str
    strides: tuple[int, ...] | None = None
    offset: int | None = None
    storage: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Role:
    """One tensor of an operator's call."""

    name: str  # the key of every by-role mapping, the HDF5 dataset name
    key: str  # prefix of the record fields {key}_shape, {key}_dtype, {key}_format
    api: str  # the documentation's name, in messages
    output: bool = False  # written by the operator (out)
    shape_of: str | None = None  # the role whose shape this one takes by default
    #: its dtype is its own kind, not the call's compute dtype (integer indices)
    own_dtype: bool = False


class Check(StrEnum):
    """Which kind of first-phase check decides an expectation: what generic code may ask
    of it (the rule label itself is the operator's)."""

    VALID = "valid"
    NULL = "null"  # a null pointer
    SHAPE = "shape"  # ranks, leading dims, sizes
    DTYPE = "dtype"  # the tensors' dtypes disagree
    PRODUCT_DTYPE = "product-dtype"  # the product lacks this dtype
    PRODUCT = "product"  # another product rule
    FORMAT = "format"
    UNSPECIFIED = "unspecified"


@dataclass(frozen=True)
class Expectation:
    """The documented answer to a call: a status, the rule that decides it, and why.

    `status == UNSPECIFIED` means the documentation does not decide (or contradicts the
    implementation): any answer is acceptable and is reported, not judged. `rule`,
    `reason` and `notes` are the operator's words (stored in files); `check` is what
    generic code branches on.
    """

    status: int
    rule: str
    reason: str
    notes: tuple[str, ...] = ()
    check: Check = Check.VALID
    #: why out is not written, where the contract says so ("" where it is written)
    unwritten: str = ""
    #: UNSPECIFIED: a short code for each thing the documentation does not decide (the
    #: console groups divergent cases by them; `reason` says it in words)
    kinds: tuple[str, ...] = ()
    #: the call may write outside its buffers (values no check reads: invalid indices):
    #: made only in an isolated worker, never in aclcheck's own process
    isolated_only: bool = False

    @property
    def unspecified(self) -> bool:
        return self.status == UNSPECIFIED

    @property
    def success(self) -> bool:
        return self.status == SUCCESS


@dataclass(frozen=True)
class Call:
    """A call of the first phase: one description per role (None: a null pointer)."""

    product: str
    tensors: Mapping[str, TensorDesc | None]
    #: what the prediction follows where the documentation and the vendor's code part:
    #: "doc" (such calls are unspecified) or "code" (the code's answer)
    contract: str = "doc"

    def __getitem__(self, role: str) -> TensorDesc | None:
        return self.tensors[role]

    def __getattr__(self, name: str) -> TensorDesc | None:  # call.<role name>
        tensors = self.__dict__.get("tensors")
        if name.startswith("_") or tensors is None or name not in tensors:
            raise AttributeError(name)
        return tensors[name]


# -- the record ------------------------------------------------------------------------------

TEXT, INT, SHAPE, NAMES, FLOATS = "text", "int", "shape", "names", "floats"
#: How a call's predictions follow the sources where the documentation and the vendor's
#: code part (Call.contract).
CONTRACTS: tuple[str, ...] = ("doc", "code")
#: Per-tensor facts of a vendor's call beyond shape, dtype and format: element strides,
#: storage offset and storage shape (any role), the values of an input (one of a uniform
#: range, a normal law, a constant fill or the values themselves).
TENSOR_FACTS: tuple[str, ...] = ("view_strides", "view_offset", "storage_shape")
VALUE_FACTS: tuple[str, ...] = ("range", "normal", "fill", "values")


@dataclass(frozen=True)
class RecordField:
    """One field of a case record, as stores and case files see it."""

    name: str
    kind: str  # TEXT, INT, SHAPE (tuple of ints), NAMES (tuple of texts), FLOATS
    required: bool  # no default: the record cannot be made without it
    nullable: bool = False  # None allowed (the default of an optional per-role fact)
    choices: tuple[str, ...] | None = None  # for TEXT and NAMES: the valid values
    role: str | None = None  # the role key of a per-role field ({key}_shape: key)


class Case:
    """Base of every operator's case record: one call of the operator, fully described.

    A subclass is a frozen dataclass with the base fields (id, family, product, dtype,
    format, seed, distribution, layout, null) and, per role, `{key}_shape` (None allowed
    where the role's shape follows another's), `{key}_dtype` and `{key}_format` (None:
    the case's own dtype / format). `null` lists the roles passed as null pointers.
    """

    OPERATOR: ClassVar[str]  # the operator's registry name
    ROLES: ClassVar[tuple[Role, ...]]  # call order
    SPATIAL_RANK: ClassVar[int]  # trailing axes that are spatial (the layouts need it)
    DISTRIBUTIONS: ClassVar[tuple[str, ...]]  # value distributions its values know
    #: case-file keys in writing order (every field, exactly once)
    FILE_ORDER: ClassVar[tuple[str, ...]]
    #: the optional fields of what a vendor case states ({key}_{fact} of TENSOR_FACTS
    #: and VALUE_FACTS, `contract`, `source`, `vendor_status`): stored only where set
    STATED: ClassVar[tuple[str, ...]] = ()
    #: the valid values of a record's own text fields (an index choice), by field name
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {}

    id: str
    family: str
    product: str
    dtype: str
    format: str
    seed: int
    distribution: str
    layout: str
    null: tuple[str, ...]

    # -- the role view (what generic code uses)

    @classmethod
    def role(cls, name: str) -> Role:
        for role in cls.ROLES:
            if role.name == name:
                return role
        raise KeyError(name)

    @classmethod
    def inputs(cls) -> tuple[Role, ...]:
        """The roles the caller passes values in (not written by the operator)."""
        return _inputs(cls)

    @classmethod
    def output(cls) -> Role:
        return _output(cls)

    def tensor_desc(self, name: str) -> TensorDesc:
        """The (shape, dtype, format) of one role's tensor as the call passes it."""
        try:
            return self._descs[name]
        except KeyError:
            raise KeyError(name) from None

    @cached_property
    def _descs(self) -> dict[str, TensorDesc]:
        """Every role's description, made once per case (generate, the store and the
        judge ask for them many times a case)."""
        descs: dict[str, TensorDesc] = {}
        for role in sorted(self.ROLES, key=lambda r: r.shape_of is not None):
            shape = getattr(self, f"{role.key}_shape")
            if role.shape_of is not None and not shape:  # unset: the other role's shape
                shape = descs[role.shape_of].shape
            descs[role.name] = TensorDesc(
                tuple(shape), getattr(self, f"{role.key}_dtype") or self.dtype,
                getattr(self, f"{role.key}_format") or self.format,
                *(getattr(self, f"{role.key}_{fact}", None) for fact in TENSOR_FACTS))
        return descs

    def view_geometry(self, name: str) -> tuple[tuple[int, ...], int, int]:
        """(element strides, storage offset, storage elements) of one role's tensor: what
        the case states (vendor cases) or else what its layout makes."""
        desc = self.tensor_desc(name)
        if min(desc.shape, default=0) < 0:  # a refused call's tensor: nothing laid out
            return contiguous_view(desc.shape)
        if desc.strides is None and desc.offset is None and desc.storage is None:
            return layout_geometry(desc.shape, self.layout, self.SPATIAL_RANK)
        return stated_geometry(desc.shape, desc.strides, desc.offset, desc.storage)

    def __getstate__(self) -> dict[str, Any]:
        """The record's fields only: what is computed from them (descriptions, the
        expectation) is made again where the case lands, not shipped with it."""
        return {f.name: getattr(self, f.name)
                for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def tensors(self) -> dict[str, TensorDesc | None]:
        """Every role's description, None for a null pointer."""
        return {r.name: None if r.name in self.null else self.tensor_desc(r.name)
                for r in self.ROLES}

    def call(self) -> Call:
        return Call(self.product, self.tensors(), getattr(self, "contract", None) or "doc")

    @cached_property
    def expectation(self) -> Expectation:
        """What the operator's contract expects of this call (computed once per case)."""
        return self.expect(self.call())

    @classmethod
    def expect(cls, call: Call) -> Expectation:
        """The operator's contract on a call (the subclass asks its contract)."""
        raise NotImplementedError

    @property
    def expected_status(self) -> int:
        return self.expectation.status

    @property
    def positive(self) -> bool:
        """A call the contract says must succeed (and so has a golden)."""
        return self.expectation.success

    @property
    def out_written(self) -> bool:
        """False where the contract says out is not written."""
        return not self.expectation.unwritten

    @property
    def numel(self) -> int:
        """Elements of the input tensors."""
        return sum(math.prod(self.tensor_desc(r.name).shape) for r in self.inputs())

    def expected_output(self) -> tuple[np.dtype, tuple[int, ...]]:
        """The dtype and shape of the output a call must return: the judge accepts no
        other, and an isolated worker sends the bytes of no other array."""
        desc = self.tensor_desc(self.output().name)
        return np.dtype(NUMPY_DTYPES[self.dtype]), tuple(int(d) for d in desc.shape)

    # -- the record view (store, case files, the operator's own code)

    @classmethod
    def record_fields(cls) -> tuple[RecordField, ...]:
        """Every field of the record, in declaration order, with what it may hold
        (computed once per class: stores ask for it case by case)."""
        return _record_fields(cls)

    def to_record(self) -> dict[str, Any]:
        """Plain JSON-able dict of every field: enough to regenerate the case."""
        rec = dataclasses.asdict(self)  # type: ignore[call-overload]
        for key, value in rec.items():
            if isinstance(value, tuple):
                rec[key] = list(value)
        return rec

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> Self:
        kinds = {f.name: f.kind for f in cls.record_fields()}
        kwargs: dict[str, Any] = {}
        for key, value in rec.items():
            if key not in kinds:
                continue
            if kinds[key] == SHAPE and value is not None:
                value = tuple(int(v) for v in value)
            elif kinds[key] == FLOATS and value is not None:
                value = tuple(float(v) for v in value)
            elif kinds[key] == NAMES and value is not None:
                value = tuple(str(v) for v in value)
            kwargs[key] = value
        kwargs["seed"] = int(kwargs["seed"])
        return cls(**kwargs)

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def following(self, contract: str) -> Self:
        """This case following `contract` where it names none itself (its own wins;
        "doc", the default, stays unset: files of default cases keep their bytes)."""
        if contract == "doc" or getattr(self, "contract", None) is not None:
            return self
        return self.replace(contract=contract)

    def reshaped(self, *, all_values: bool = False, **changes: Any) -> Self:
        """Another call derived from this one (other shapes or dtype: shrink, a
        predecessor): what the case stated for its own shapes (views, the values
        themselves) is dropped; `all_values` drops every value spec too."""
        facts = TENSOR_FACTS + (VALUE_FACTS if all_values else ("values",))
        names = {f.name for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        drop = {f"{r.key}_{fact}": None for r in self.ROLES for fact in facts} \
            .keys() & names
        return self.replace(**dict.fromkeys(drop), **changes)


def derive_seed(suite_seed: int, *key: object) -> int:
    """A 63-bit case seed from the suite seed and a key naming the case's place in the
    suite (family, product, dtype, format, index): independent of order and sharding."""
    digest = hashlib.blake2b("|".join(map(str, key)).encode(), digest_size=8).digest()
    h = int.from_bytes(digest, "little")
    seq = np.random.SeedSequence(entropy=int(suite_seed), spawn_key=(h & 0xFFFFFFFF, h >> 32))
    lo, hi = seq.generate_state(2, dtype=np.uint32)
    return (int(hi) << 32 | int(lo)) & (2**63 - 1)


def join_id(product: str, dtype: str, fmt: str, label: str, shapes: str, distribution: str,
            layout_tag: str = "") -> str:
    """A readable, stable case id: a2-bf16-NCHW-nondiv0-n2c3h17w9-o5x4-normal[-cl]
    (product tag, dtype tag, format, family label, the operator's shape text,
    distribution, layout tag)."""
    tag = PRODUCTS[product].tag if product in PRODUCTS else product
    parts = [tag, dtype_tag(dtype), fmt, label, shapes, distribution]
    if layout_tag:
        parts.append(layout_tag)
    return "-".join(parts)


@dataclass(frozen=True)
class CaseData:
    """A materialised case: its input tensors by role as laid out in memory (None: a
    null pointer) and the float64 golden (None where the call must be rejected).
    `data.<role name>`: an input by its role name."""

    case: Case
    inputs: Mapping[str, StridedTensor | None]
    golden: np.ndarray | None

    def __getattr__(self, name: str) -> StridedTensor | None:
        inputs = self.__dict__.get("inputs")
        if name.startswith("_") or inputs is None or name not in inputs:
            raise AttributeError(name)
        return inputs[name]

    def values(self) -> dict[str, np.ndarray | None]:
        """The logical input values by role (numpy views, no copy)."""
        return {n: None if t is None else t.view() for n, t in self.inputs.items()}


@cache
def _inputs(cls: type[Case]) -> tuple[Role, ...]:
    return tuple(r for r in cls.ROLES if not r.output)


@cache
def _output(cls: type[Case]) -> Role:
    return next(r for r in cls.ROLES if r.output)


@cache
def _record_fields(cls: type[Case]) -> tuple[RecordField, ...]:
    """Case.record_fields of one record class."""
    keys = {r.key: r for r in cls.ROLES}
    names = tuple(NUMPY_DTYPES)
    out = []
    every = dataclasses.fields(cls)  # type: ignore[arg-type]
    # the stated facts (a mixin's fields, which dataclasses put first) after the record's own
    for f in sorted(every, key=lambda f: f.name in cls.STATED):
        required = f.default is dataclasses.MISSING \
            and f.default_factory is dataclasses.MISSING
        nullable = not required and f.default is None
        role = next((k for k in keys if f.name.startswith(k + "_")), None)
        fact = f.name[len(role) + 1:] if role is not None else ""
        if role is not None and fact in ("shape", "view_strides", "storage_shape"):
            out.append(RecordField(f.name, SHAPE, required, nullable, role=role))
        elif role is not None and fact == "view_offset" or f.name == "vendor_status":
            out.append(RecordField(f.name, INT, required, nullable, role=role))
        elif role is not None and fact in ("range", "normal", "values"):
            out.append(RecordField(f.name, FLOATS, required, nullable, role=role))
        elif role is not None and fact in ("dtype", "format"):
            out.append(RecordField(f.name, TEXT, required, nullable,
                                   names if fact == "dtype" else ALL_FORMATS, role))
        elif f.name == "seed":
            out.append(RecordField(f.name, INT, required))
        elif f.name == "null":
            out.append(RecordField(f.name, NAMES, required, False,
                                   tuple(r.name for r in cls.ROLES)))
        else:
            choices = {"product": tuple(PRODUCTS), "dtype": names,
                       "format": ALL_FORMATS, "distribution": cls.DISTRIBUTIONS,
                       "layout": LAYOUTS, "contract": CONTRACTS}.get(f.name,
                                                                      cls.CHOICES.get(f.name))
            out.append(RecordField(f.name, TEXT, required, nullable, choices))
    return tuple(out)
