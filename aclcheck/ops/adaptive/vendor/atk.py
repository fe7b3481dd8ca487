"""Import the vendor's ATK system-test cases (ops-nn `tests/st/.../atk_*.json`).

A case file is a JSON list of case objects; each names the API (`aclnn_name`, without
the "aclnn" prefix), the executor class (`api_type`) and its inputs by name, with dtype,
shape and how ATK draws the values (`range_values`). One case object becomes one entry.

What a case does not state, the executor decides: `get_format` of the vendor's
executor_aclnnAdaptiveAvgPool{2,3}dBackward.py returns ACL_FORMAT_NCHW for every tensor
of every case, 5-D ones included, so every entry gets format NCHW unless the caller asks
for another (`fmt`). The output is ATK's own, shaped like self (no out keys), and ATK
cases state no expected status (no vendor_status).

Every field is read: those that carry no call fact (name, standard, is_boundary, ...) are
checked for their type or their one valid value, and any field the vendor's two files do
not use is an error naming its line, never a silent drop.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from pathlib import Path
from typing import Any

from aclcheck.errors import SuiteError
from aclcheck.ops.adaptive.vendor.imported import (
    DTYPES,
    FORMATS,
    Imported,
    Tensor,
    check_api,
    entry,
    error,
    unique_ids,
)

#: The executor class (`api_type`) of each API: the one whose get_format was checked.
API_TYPES: dict[str, str] = {
    "aclnnAdaptiveAvgPool2dBackward": "aclnn_adaptiveavgpool2dgrad",
    "aclnnAdaptiveAvgPool3dBackward": "aclnn_adaptiveavgpool3dgrad",
}
#: Every field of a case object in the vendor's files (is_boundary: not in all cases).
CASE_FIELDS: tuple[str, ...] = ("id", "name", "aclnn_name", "api_type", "standard", "inputs",
                                "is_boundary")
REQUIRED_CASE_FIELDS: tuple[str, ...] = ("id", "aclnn_name", "api_type", "inputs")
#: Every field of an input in the vendor's files (align_32B: not in all inputs).
INPUT_FIELDS: tuple[str, ...] = ("name", "type", "required", "dtype", "shape", "range_values",
                                 "backward", "align_32B")
REQUIRED_INPUT_FIELDS: tuple[str, ...] = ("name", "type", "dtype", "shape", "range_values")
#: Input name -> role key, in call order (the executor passes them in list order).
INPUT_ROLES: dict[str, str] = {"gradOutput": "grad", "Input": "self", "self": "self"}
#: ATK dtype names and aliases -> aclcheck's.
ATK_DTYPES: dict[str, str] = {
    **{name: name for name in DTYPES},
    "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32",
    "bf16": "bfloat16", "fp64": "float64", "double": "float64",
}
FILLS: tuple[str, ...] = ("inf", "-inf", "nan")

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _Doc:
    """A JSON text with line lookup: walks objects and lists to locate their members."""

    def __init__(self, path: str | Path, text: str) -> None:
        self.path, self.text = path, text
        self._newlines = [m.start() for m in re.finditer("\n", text)]

    def line(self, pos: int) -> int:
        return bisect.bisect_left(self._newlines, pos) + 1

    def fail(self, pos: int, message: str) -> SuiteError:
        return error(self.path, self.line(pos), message)

    def skip(self, pos: int) -> int:
        m = _WS.match(self.text, pos)
        return m.end() if m else pos

    def decode(self, pos: int) -> tuple[Any, int]:
        try:
            return _DECODER.raw_decode(self.text, pos)
        except json.JSONDecodeError as exc:
            raise self.fail(exc.pos, f"not valid JSON: {exc.msg}") from None

    def items(self, pos: int, what: str) -> list[tuple[int, Any]]:
        """(start, value) of each element of the list at `pos`."""
        if self.text[pos:pos + 1] != "[":
            raise self.fail(pos, f"{what} must be a JSON list")
        out: list[tuple[int, Any]] = []
        pos = self.skip(pos + 1)
        if self.text[pos:pos + 1] == "]":
            return out
        while True:
            start = pos
            value, pos = self.decode(pos)
            out.append((start, value))
            pos = self.skip(pos)
            sep = self.text[pos:pos + 1]
            if sep == "]":
                return out
            if sep != ",":
                raise self.fail(pos, f"expected ',' or ']' in {what}")
            pos = self.skip(pos + 1)

    def members(self, pos: int, what: str) -> dict[str, tuple[int, int, Any]]:
        """key -> (key start, value start, value) of the object at `pos`; a repeated key
        is an error (json would keep the last one silently)."""
        if self.text[pos:pos + 1] != "{":
            raise self.fail(pos, f"{what} must be a JSON object")
        out: dict[str, tuple[int, int, Any]] = {}
        pos = self.skip(pos + 1)
        if self.text[pos:pos + 1] == "}":
            return out
        while True:
            key_pos = pos
            key, pos = self.decode(pos)
            if not isinstance(key, str):
                raise self.fail(key_pos, f"expected a field name in {what}")
            pos = self.skip(pos)
            if self.text[pos:pos + 1] != ":":
                raise self.fail(pos, f"expected ':' after {key!r} in {what}")
            value_pos = self.skip(pos + 1)
            value, pos = self.decode(value_pos)
            if key in out:
                raise self.fail(key_pos, f"{what} repeats field {key!r}")
            out[key] = (key_pos, value_pos, value)
            pos = self.skip(pos)
            sep = self.text[pos:pos + 1]
            if sep == "}":
                return out
            if sep != ",":
                raise self.fail(pos, f"expected ',' or '}}' in {what}")
            pos = self.skip(pos + 1)


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _number_text(x: float) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def _finite_pair(x: object) -> bool:
    return (isinstance(x, list) and len(x) == 2 and all(_is_number(v) for v in x)
            and all(math.isfinite(v) for v in x))


def _value_spec(doc: _Doc, pos: int, rv: Any) -> tuple[str, Any]:
    """(kind, spec) of one input's range_values (see imported.VALUE_KINDS)."""
    if isinstance(rv, dict):
        m = doc.members(pos, "range_values")
        for key, (key_pos, _, _) in m.items():
            if key not in ("name", "mean", "std"):
                raise doc.fail(key_pos, f"unknown range_values field {key!r} (known: name, "
                                        "mean, std)")
        if rv.get("name") != "nd" or "mean" not in rv or "std" not in rv:
            raise doc.fail(pos, "range_values object must be {\"name\": \"nd\", \"mean\": "
                                f"[a, b], \"std\": [c, d]}}, got {json.dumps(rv)}")
        for key in ("mean", "std"):
            if not _finite_pair(rv[key]) or rv[key][0] > rv[key][1]:
                raise doc.fail(m[key][0], f"range_values {key} must be [low, high] with "
                                          f"finite low <= high, got {json.dumps(rv[key])}")
        return "normal", [*rv["mean"], *rv["std"]]
    if _is_number(rv):
        return "fill", _number_text(rv)
    if isinstance(rv, list) and len(rv) == 1:
        (v,) = rv
        if v in FILLS:
            return "fill", v
        if _is_number(v):
            return "fill", _number_text(v)
    if _finite_pair(rv) and rv[0] <= rv[1]:
        return "range", list(rv)
    raise doc.fail(pos, "range_values must be [low, high] (finite, low <= high), "
                        "{\"name\": \"nd\", ...}, [\"inf\"], [\"-inf\"], [\"nan\"] or one "
                        f"number, got {json.dumps(rv)}")


def _input(doc: _Doc, pos: int, fmt: str) -> tuple[str, Tensor]:
    """(role key, tensor) of one input object."""
    m = doc.members(pos, "an input")
    for key, (key_pos, _, _) in m.items():
        if key not in INPUT_FIELDS:
            raise doc.fail(key_pos, f"unknown input field {key!r} (known: "
                                    f"{', '.join(INPUT_FIELDS)})")
    for key in REQUIRED_INPUT_FIELDS:
        if key not in m:
            raise doc.fail(pos, f"input has no {key!r}")

    def at(key: str) -> int:
        return m[key][0]

    def value(key: str) -> Any:
        return m[key][2]

    name = value("name")
    if name not in INPUT_ROLES:
        raise doc.fail(at("name"), f"unknown input name {name!r} (known: "
                                   f"{', '.join(INPUT_ROLES)})")
    if value("type") != "tensor":
        raise doc.fail(at("type"), f"input {name!r} has type {value('type')!r}, not 'tensor'")
    if "required" in m and value("required") is not True:
        raise doc.fail(at("required"), f"input {name!r} must have required: true "
                                       "(an optional input would change the call)")
    if "backward" in m and value("backward") is not False:
        raise doc.fail(at("backward"), f"input {name!r} must have backward: false")
    if "align_32B" in m and value("align_32B") not in (None, False):
        raise doc.fail(at("align_32B"), f"input {name!r} must have align_32B: null or false "
                                        "(an aligned buffer would change the call)")
    dtype = value("dtype")
    if not isinstance(dtype, str) or dtype.lower() not in ATK_DTYPES:
        raise doc.fail(at("dtype"), f"unknown dtype {dtype!r} of input {name!r}")
    shape = value("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool)
                                              for d in shape):
        raise doc.fail(at("shape"), f"shape of input {name!r} must be a list of integers")
    spec = _value_spec(doc, m["range_values"][1], value("range_values"))
    return INPUT_ROLES[name], Tensor(tuple(shape), ATK_DTYPES[dtype.lower()], fmt, value=spec)


def _case(doc: _Doc, pos: int, api: str, product: str, fmt: str) -> dict[str, Any]:
    """The entry of one case object."""
    m = doc.members(pos, "a case")
    for key, (key_pos, _, _) in m.items():
        if key not in CASE_FIELDS:
            raise doc.fail(key_pos, f"unknown case field {key!r} (known: "
                                    f"{', '.join(CASE_FIELDS)})")
    for key in REQUIRED_CASE_FIELDS:
        if key not in m:
            raise doc.fail(pos, f"case has no {key!r}")

    def at(key: str) -> int:
        return m[key][0]

    def value(key: str) -> Any:
        return m[key][2]

    cid = value("id")
    if not isinstance(cid, int) or isinstance(cid, bool) or cid < 0:
        raise doc.fail(at("id"), f"case id must be a non-negative integer, got {cid!r}")
    if value("aclnn_name") != api.removeprefix("aclnn"):
        raise doc.fail(at("aclnn_name"), f"case {cid} tests aclnn{value('aclnn_name')}, "
                                         f"not {api}")
    if value("api_type") != API_TYPES[api]:
        raise doc.fail(at("api_type"), f"case {cid} runs executor {value('api_type')!r}, not "
                                       f"{API_TYPES[api]!r} (the one whose formats are known)")
    for key, kind in (("name", str), ("standard", dict), ("is_boundary", bool)):
        if key in m and not isinstance(value(key), kind):
            raise doc.fail(at(key), f"{key} must be a {kind.__name__}, got "
                                    f"{json.dumps(value(key))}")
    items = doc.items(m["inputs"][1], "inputs")
    tensors: dict[str, Tensor] = {}
    for ipos, _ in items:
        role, tensor = _input(doc, ipos, fmt)
        if role in tensors:
            raise doc.fail(ipos, f"case {cid} gives {role} twice")
        if role == "grad" and tensors:
            raise doc.fail(ipos, f"case {cid} gives gradOutput after the forward input "
                                 "(the executor passes inputs in list order)")
        tensors[role] = tensor
    if set(tensors) != {"grad", "self"}:
        raise doc.fail(at("inputs"), f"case {cid} must give gradOutput and Input, gives "
                                     f"{len(tensors)} of them")
    grad, self_ = tensors["grad"], tensors["self"]
    out = Tensor(self_.shape, self_.dtype, fmt)  # ATK allocates it like self: no out keys
    return entry(cid=f"atk-{cid}", family="atk", product=product,
                 source=f"atk:{Path(doc.path).name}#{cid}", grad=grad, self_=self_, out=out)


def read_atk(path: str | Path, api: str, product: str, fmt: str | None = None) -> Imported:
    """Entries of every case of an ATK case file for `api`, in file order.

    fmt: the format of every tensor (default NCHW, what the vendor's executor passes).
    SuiteError 'FILE:LINE: ...' for anything not understood (the line of the field).
    """
    check_api(api)
    fmt = "NCHW" if fmt is None else fmt
    if fmt not in FORMATS:
        raise SuiteError(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path}: cannot read: {exc}") from None
    doc = _Doc(path, text)
    start = doc.skip(0)
    items = doc.items(start, "an ATK case file")
    end = doc.skip(doc.decode(start)[1])
    if end != len(text):
        raise doc.fail(end, "text after the list of cases")
    if not items:
        raise doc.fail(start, "no cases")
    entries = [_case(doc, pos, api, product, fmt) for pos, _ in items]
    unique_ids(entries, [doc.line(pos) for pos, _ in items], path)
    return Imported(tuple(entries), ())
