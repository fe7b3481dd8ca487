"""What a vendor-case importer yields, and the one way a vendor's call becomes an entry.

Both importers (ATK system-test cases, ops-nn op_api unit tests) describe a call as up to
three tensors (gradOutput, self, gradInput); `entry` turns them into a plain case-file
entry, so the two sources agree on every key (docs/case-files.md) and on which keys are
left out (a key is omitted rather than written as None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aclcheck.errors import SuiteError

#: The APIs the importers know the call order of (gradOutput, self -> gradInput).
APIS: tuple[str, ...] = ("aclnnAdaptiveAvgPool2dBackward", "aclnnAdaptiveAvgPool3dBackward")
#: Every format name an importer writes (the vendor's ACL_FORMAT_<name>).
FORMATS: tuple[str, ...] = ("ND", "NCHW", "NCL", "NHWC", "NCDHW", "NDHWC", "NC1HWC0",
                            "FRACTAL_NZ", "FRACTAL_Z", "NDC1HWC0", "FRACTAL_Z_3D")
#: Every dtype name an importer writes (aclcheck's names).
DTYPES: tuple[str, ...] = ("float16", "float32", "bfloat16", "float64", "int8", "int16",
                           "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
                           "complex64", "complex128")
#: Role key (entry key prefix) and role name (in `null`), in call order.
ROLES: tuple[tuple[str, str], ...] = (("grad", "grad_output"), ("self", "self"), ("out", "out"))
#: A tensor's view facts as stated by the vendor -> entry key suffix (k_view_strides, ...;
#: docs/case-files.md).
VIEW_KEYS: dict[str, str] = {"strides": "view_strides", "offset": "view_offset",
                             "storage": "storage_shape"}
#: How an input's values are given: entry key suffix (k_range, k_normal, k_fill, k_values).
VALUE_KINDS: tuple[str, ...] = ("range", "normal", "fill", "values")

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")
MAX_ID_LENGTH = 200  # as aclcheck.store.codec allows


@dataclass(frozen=True)
class Skipped:
    """A vendor test that yields no case, and why (it asserts nothing checkable)."""

    source: str  # same provenance text as an entry's "source"
    reason: str


@dataclass(frozen=True)
class Imported:
    """An importer's result: case-file entries and skipped tests, both in vendor order."""

    entries: tuple[dict[str, Any], ...]
    skipped: tuple[Skipped, ...]


@dataclass(frozen=True)
class Tensor:
    """One tensor of a vendor's call as the vendor states it.

    strides / offset / storage: None where the vendor leaves them to the default.
    value: (kind, spec) with kind in VALUE_KINDS, or None where no values are stated.
    """

    shape: tuple[int, ...]
    dtype: str
    format: str
    strides: tuple[int, ...] | None = None
    offset: int | None = None
    storage: tuple[int, ...] | None = None
    value: tuple[str, Any] | None = None


def error(path: str | Path, line: int, message: str) -> SuiteError:
    """The importers' one error style: 'FILE:LINE: message'."""
    return SuiteError.at(f"{path}:{line}", message)


def check_api(api: str) -> None:
    """SuiteError unless `api` is one whose call order the importers know."""
    if api not in APIS:
        raise SuiteError(f"unknown API {api!r}; the importers know: {', '.join(APIS)}")


def safe_id(text: str) -> str:
    """`text` as a case id: letters, digits, '_', '.', '-' (others become '_')."""
    cid = _UNSAFE_ID.sub("_", text)[:MAX_ID_LENGTH]
    return cid if cid not in ("", ".", "..") else cid.replace(".", "_") or "_"


def entry(*, cid: str, family: str, product: str, source: str, grad: Tensor | None,
          self_: Tensor | None, out: Tensor | None,
          vendor_status: int | None = None) -> dict[str, Any]:
    """The case-file entry of one call (None: that role is a null pointer).

    dtype / format are self's (gradOutput's if self is null, out's if both are); a
    role's own dtype / format key appears only where it differs. out_shape appears only
    where out's shape is not self's. ValueError if every tensor is null.
    """
    tensors = {"grad": grad, "self": self_, "out": out}
    main = self_ or grad or out
    if main is None:
        raise ValueError("every tensor of the call is null: nothing gives its dtype")
    e: dict[str, Any] = {"id": cid, "family": family, "product": product,
                         "dtype": main.dtype, "format": main.format}
    if self_ is not None:
        e["self_shape"] = list(self_.shape)
    if grad is not None:
        e["grad_shape"] = list(grad.shape)
    if out is not None and (self_ is None or out.shape != self_.shape):
        e["out_shape"] = list(out.shape)
    for fact in ("dtype", "format"):
        for key, _ in ROLES:
            t = tensors[key]
            if t is not None and getattr(t, fact) != e[fact]:
                e[f"{key}_{fact}"] = getattr(t, fact)
    null = [name for key, name in ROLES if tensors[key] is None]
    if null:
        e["null"] = null
    for fact, suffix in VIEW_KEYS.items():
        for key, _ in ROLES:
            t = tensors[key]
            v = None if t is None else getattr(t, fact)
            if v is not None:
                e[f"{key}_{suffix}"] = list(v) if isinstance(v, tuple) else v
    for key in ("grad", "self"):  # the output's values are the operator's, never stated
        t = tensors[key]
        if t is not None and t.value is not None:
            kind, spec = t.value
            e[f"{key}_{kind}"] = spec
    e["source"] = source
    if vendor_status is not None:
        e["vendor_status"] = vendor_status
    return e


def unique_ids(entries: list[dict[str, Any]], lines: list[int], path: str | Path) -> None:
    """SuiteError at the second of two entries with one id (a case file needs unique ids)."""
    seen: dict[str, int] = {}
    for e, line in zip(entries, lines, strict=True):
        if e["id"] in seen:
            raise error(path, line, f"case id {e['id']!r} repeats the one of line "
                                    f"{seen[e['id']]}")
        seen[e["id"]] = line
