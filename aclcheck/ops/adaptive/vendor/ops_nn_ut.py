"""Import the vendor's op_api unit tests (ops-nn `tests/ut/op_api/test_aclnn_*.cpp`).

Each `TEST_F(fixture, name) { ... }` builds TensorDescs, hands them to
`OP_API_UT(aclnnX, INPUT(gradOutput, self), OUTPUT(out))` and, in the tests that assert
something, checks the status of the first phase:
`EXPECT_EQ(ut.TestGetWorkspaceSize(&ws), ACLNN_ERR_PARAM_INVALID)` through a variable. One
checked call becomes one entry with that status as vendor_status. `ut.TestPrecision()` is
empty in the public harness (op_api_ut.h: `void TestPrecision() {}`) and `.Precision(...)`
tolerances are never read, so a test whose only assertion is TestPrecision asserts
nothing: it is listed as skipped, not turned into a case. The harness's stub SoC is
Ascend910B (Atlas A2), whence the default product.

The test bodies are read by a small interpreter of exactly the statements these files
use (dtype variables, `vector<aclDataType>` lists and range-for loops over them, one call
per loop turn); any other statement is an error naming its line, never a silent drop.
Comments are blanked first, keeping line numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aclcheck.errors import SuiteError
from aclcheck.ops.adaptive.vendor.cpp_syntax import (
    Expr,
    Parser,
    Stmt,
    Tok,
    strip_comments,
    tokens,
)
from aclcheck.ops.adaptive.vendor.imported import (
    Imported,
    Skipped,
    Tensor,
    check_api,
    entry,
    error,
    safe_id,
    unique_ids,
)

#: aclDataType enum names -> aclcheck's dtype names.
ACL_DTYPES: dict[str, str] = {
    "ACL_FLOAT": "float32", "ACL_FLOAT16": "float16", "ACL_BF16": "bfloat16",
    "ACL_DOUBLE": "float64", "ACL_INT8": "int8", "ACL_INT16": "int16", "ACL_INT32": "int32",
    "ACL_INT64": "int64", "ACL_UINT8": "uint8", "ACL_UINT16": "uint16",
    "ACL_UINT32": "uint32", "ACL_UINT64": "uint64", "ACL_BOOL": "bool",
    "ACL_COMPLEX64": "complex64", "ACL_COMPLEX128": "complex128",
}
#: aclFormat enum names -> aclcheck's format names.
ACL_FORMATS: dict[str, str] = {f"ACL_FORMAT_{name}": name for name in (
    "ND", "NCHW", "NCL", "NHWC", "NCDHW", "NDHWC", "NC1HWC0", "FRACTAL_NZ", "FRACTAL_Z",
    "NDC1HWC0", "FRACTAL_Z_3D")}
#: aclnnStatus names -> values (the status codes of the first phase).
ACL_STATUSES: dict[str, int] = {"ACL_SUCCESS": 0, "ACLNN_SUCCESS": 0,
                                "ACLNN_ERR_PARAM_NULLPTR": 161001,
                                "ACLNN_ERR_PARAM_INVALID": 161002}
#: Element types a `.Value(vector<T>{...})` may use.
VALUE_TYPES: tuple[str, ...] = (
    "float", "double", "int", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
    "uint16_t", "uint32_t", "uint64_t", "bool")
#: Gtest macros that define a test: only TEST_F is understood.
OTHER_TEST_MACROS: tuple[str, ...] = ("TEST", "TEST_P", "TYPED_TEST", "TYPED_TEST_P")

REASON_PRECISION = "asserts nothing (TestPrecision() is empty in the public harness, no EXPECT_EQ)"
REASON_UNCHECKED = "asserts nothing (the status of TestGetWorkspaceSize is not checked)"
REASON_NOTHING = "asserts nothing (no EXPECT_EQ on the status, no TestPrecision())"
REASON_NO_CALL = "makes no OP_API_UT call"


# -- statements -> calls ----------------------------------------------------------------------

@dataclass(frozen=True)
class _DType:
    acl: str  # the aclDataType name


@dataclass(frozen=True)
class _DTypes:
    items: tuple[_DType, ...]


@dataclass(frozen=True)
class _Format:
    name: str


@dataclass(frozen=True)
class _Const:
    status: int


class _Null:
    """nullptr."""


class _Workspace:
    """A `uint64_t` workspace size variable."""


@dataclass(eq=False)
class _Call:
    """One OP_API_UT call as one run of a test body builds it."""

    grad: Tensor | None
    self_: Tensor | None
    out: Tensor | None
    loops: tuple[str, ...]  # the loop variables' values ("ACL_INT64") where it was built
    status_taken: bool = False  # TestGetWorkspaceSize was called
    precision: bool = False  # TestPrecision was called
    status: int | None = None  # what EXPECT_EQ / ASSERT_EQ checks it against


@dataclass(frozen=True)
class _Status:
    call: _Call


@dataclass(frozen=True)
class _Values:
    values: tuple[float, ...]


class _Runner:
    """Runs one test body, collecting its calls."""

    def __init__(self, path: str | Path, api: str) -> None:
        self.path, self.api = path, api
        self.calls: list[_Call] = []

    def fail(self, line: int, message: str) -> SuiteError:
        return error(self.path, line, message)

    # statements
    def run(self, stmts: tuple[Stmt, ...], env: dict[str, Any], loops: tuple[str, ...]) -> None:
        env = dict(env)  # a block's names end with it
        for s in stmts:
            self.stmt(s, env, loops)

    def stmt(self, s: Stmt, env: dict[str, Any], loops: tuple[str, ...]) -> None:
        if s.kind == "block":
            self.run(s.body, env, loops)
        elif s.kind == "for":
            over = self.eval(s.exprs[0], env, loops)
            if not isinstance(over, _DTypes):
                raise self.fail(s.line, "a for loop over anything but a vector<aclDataType> "
                                        "is not understood")
            for item in over.items:
                self.run(s.body, {**env, s.type: item}, (*loops, item.acl))
        elif s.kind == "decl":
            env[s.name] = self.declared(s, self.eval(s.exprs[0], env, loops))
        elif s.kind == "check":
            self.check(s, *(self.eval(e, env, loops) for e in s.exprs))
        else:  # expr: a method call of the ut object whose result is dropped
            e = s.exprs[0]
            obj = self.eval(e.args[0], env, loops) \
                if e.kind == "method" and e.args[0].kind == "name" else None
            if not isinstance(obj, _Call):
                raise self.fail(s.line, "statement not understood (only ut.TestPrecision() and "
                                        "ut.TestGetWorkspaceSize(&ws) are)")
            self.eval(e, env, loops)

    def declared(self, s: Stmt, value: Any) -> Any:
        ok = {"auto": (Tensor, _Null, _Call, _DType, _Status), "aclDataType": (_DType,),
              "uint64_t": (int,), "aclnnStatus": (_Status,),
              "vector<aclDataType>": (list,)}[s.type]
        if not isinstance(value, ok) or isinstance(value, bool):
            raise self.fail(s.line, f"{s.type} {s.name} = ... not understood")
        if s.type == "uint64_t":
            return _Workspace()
        if s.type == "vector<aclDataType>":
            if not all(isinstance(v, _DType) for v in value):
                raise self.fail(s.line, f"{s.name} must list ACL_* dtypes")
            return _DTypes(tuple(value))
        return value

    def check(self, s: Stmt, a: Any, b: Any) -> None:
        status, expected = (a, b) if isinstance(a, _Status) else (b, a)
        if not isinstance(status, _Status):
            raise self.fail(s.line, f"{s.type} of anything but the status of "
                                    "TestGetWorkspaceSize is not understood")
        if isinstance(expected, _Const):
            value = expected.status
        elif isinstance(expected, int) and not isinstance(expected, bool) and expected >= 0:
            value = expected
        else:
            raise self.fail(s.line, f"{s.type} against a value not understood (known: "
                                    f"{', '.join(ACL_STATUSES)} or a status number)")
        if status.call.status is not None:
            raise self.fail(s.line, "the status of one call is checked twice")
        status.call.status = value

    # expressions
    def eval(self, e: Expr, env: dict[str, Any], loops: tuple[str, ...]) -> Any:
        if e.kind == "num":
            return e.value
        if e.kind == "null":
            return _Null()
        if e.kind == "list":
            return [self.eval(x, env, loops) for x in e.args]
        if e.kind == "typed_list":
            if e.text not in VALUE_TYPES:
                raise self.fail(e.line, f"vector<{e.text}> values not understood")
            return _Values(tuple(float(self.number(x, env, loops)) for x in e.args))
        if e.kind == "name":
            return self.name(e, env)
        if e.kind == "call":
            if e.text == "TensorDesc":
                return self.tensor_desc(e, env, loops)
            if e.text == "OP_API_UT":
                return self.op_api_ut(e, env, loops)
            raise self.fail(e.line, f"call of {e.text} not understood")
        if e.kind == "method":
            return self.method(e, env, loops)
        raise self.fail(e.line, "'&' outside TestGetWorkspaceSize(&ws) not understood")

    def name(self, e: Expr, env: dict[str, Any]) -> Any:
        if e.text in env:
            return env[e.text]
        if e.text in ACL_DTYPES:
            return _DType(e.text)
        if e.text in ACL_FORMATS:
            return _Format(ACL_FORMATS[e.text])
        if e.text in ACL_STATUSES:
            return _Const(ACL_STATUSES[e.text])
        what = "format" if e.text.startswith("ACL_FORMAT_") else "dtype" \
            if e.text.startswith("ACL_") else "name"
        raise self.fail(e.line, f"unknown {what} {e.text}")

    def number(self, e: Expr, env: dict[str, Any], loops: tuple[str, ...]) -> float | int:
        v = self.eval(e, env, loops)
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise self.fail(e.line, "expected a number")
        return v

    def ints(self, e: Expr, env: dict[str, Any], loops: tuple[str, ...],
             what: str) -> tuple[int, ...]:
        v = self.eval(e, env, loops) if e.kind == "list" else None
        if not isinstance(v, list) or not all(isinstance(d, int) and not isinstance(d, bool)
                                              for d in v):
            raise self.fail(e.line, f"{what} must be a {{...}} list of integers")
        return tuple(v)

    def tensor_desc(self, e: Expr, env: dict[str, Any], loops: tuple[str, ...]) -> Tensor:
        args = e.args
        if not 3 <= len(args) <= 6:
            raise self.fail(e.line, "TensorDesc takes (dims, dtype, format[, strides, offset, "
                                    f"storage dims]), got {len(args)} arguments")
        shape = self.ints(args[0], env, loops, "TensorDesc dims")
        dtype, fmt = (self.eval(a, env, loops) for a in args[1:3])
        if not isinstance(dtype, _DType):
            raise self.fail(args[1].line, "TensorDesc's dtype must be an ACL_* dtype")
        if not isinstance(fmt, _Format):
            raise self.fail(args[2].line, "TensorDesc's format must be an ACL_FORMAT_*")
        strides = self.ints(args[3], env, loops, "strides") if len(args) > 3 else None
        offset = self.number(args[4], env, loops) if len(args) > 4 else None
        if offset is not None and not isinstance(offset, int):
            raise self.fail(args[4].line, "the storage offset must be an integer")
        storage = self.ints(args[5], env, loops, "storage dims") if len(args) > 5 else None
        return Tensor(shape, ACL_DTYPES[dtype.acl], fmt.name, strides or None, offset,
                      storage or None)

    def op_api_ut(self, e: Expr, env: dict[str, Any], loops: tuple[str, ...]) -> _Call:
        if len(e.args) != 3 or e.args[0].kind != "name":
            raise self.fail(e.line, "OP_API_UT takes (aclnnX, INPUT(...), OUTPUT(...)) here")
        api, inputs, outputs = e.args
        if api.text != self.api:
            raise self.fail(api.line, f"the test calls {api.text}, not {self.api}")
        tensors: list[Tensor | None] = []
        for arg, macro, count in ((inputs, "INPUT", 2), (outputs, "OUTPUT", 1)):
            if arg.kind != "call" or arg.text != macro or len(arg.args) != count:
                raise self.fail(arg.line, f"expected {macro}( with {count} tensor(s) )")
            for x in arg.args:
                v = self.eval(x, env, loops)
                if not isinstance(v, Tensor | _Null):
                    raise self.fail(x.line, f"{macro} takes TensorDescs or nullptr")
                tensors.append(v if isinstance(v, Tensor) else None)
        call = _Call(*tensors, loops=loops)
        self.calls.append(call)
        return call

    def method(self, e: Expr, env: dict[str, Any], loops: tuple[str, ...]) -> Any:
        obj, args = self.eval(e.args[0], env, loops), e.args[1:]
        if isinstance(obj, Tensor) and e.text == "ValueRange" and len(args) == 2:
            lo, hi = (self.number(a, env, loops) for a in args)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                raise self.fail(e.line, f"ValueRange({lo}, {hi}): need finite low <= high")
            return self.valued(e, obj, ("range", [lo, hi]))
        if isinstance(obj, Tensor) and e.text == "Value" and len(args) == 1:
            v = self.eval(args[0], env, loops)
            if not isinstance(v, _Values):
                raise self.fail(e.line, "Value takes a vector<T>{...}")
            count = math.prod(obj.shape)
            if min(obj.shape, default=0) >= 0 and len(v.values) != count:
                raise self.fail(e.line, f"Value gives {len(v.values)} values for dims "
                                        f"{list(obj.shape)} ({count} elements)")
            return self.valued(e, obj, ("values", list(v.values)))
        if isinstance(obj, Tensor) and e.text == "Precision" and len(args) in (2, 3):
            for a in args:  # tolerances the public harness never checks
                self.number(a, env, loops)
            return obj
        if isinstance(obj, _Call) and e.text == "TestGetWorkspaceSize" and len(args) == 1:
            ws = args[0]
            if ws.kind != "addr" or not isinstance(env.get(ws.args[0].text), _Workspace):
                raise self.fail(e.line, "TestGetWorkspaceSize takes &<a uint64_t variable>")
            obj.status_taken = True
            return _Status(obj)
        if isinstance(obj, _Call) and e.text == "TestPrecision" and not args:
            obj.precision = True
            return None
        raise self.fail(e.line, f".{e.text}({len(args)} arguments) not understood")

    def valued(self, e: Expr, t: Tensor, value: tuple[str, Any]) -> Tensor:
        if t.value is not None:
            raise self.fail(e.line, "a tensor with both ValueRange and Value (or either twice) "
                                    "is not understood")
        return replace(t, value=value)


# -- the file ---------------------------------------------------------------------------------

@dataclass
class _Test:
    name: str
    line: int
    body: list[Tok] = field(default_factory=list)
    end_line: int = 0


def _tests(path: str | Path, toks: list[Tok]) -> Iterator[_Test]:
    """Each TEST_F block of the file, its body's tokens without the outer braces."""
    i = 0
    while i < len(toks):
        t = toks[i]
        is_macro = t.kind == "name" and i + 1 < len(toks) and toks[i + 1].text == "("
        if is_macro and t.text in OTHER_TEST_MACROS:
            raise error(path, t.line, f"{t.text}(...) tests are not understood (only TEST_F)")
        if not (is_macro and t.text == "TEST_F"):
            i += 1
            continue
        head = toks[i + 1:i + 7]
        if len(head) < 6 or [x.text for x in head[::2]] != ["(", ",", ")"] \
                or head[1].kind != "name" or head[3].kind != "name" or head[5].text != "{":
            raise error(path, t.line, "expected TEST_F(fixture, name) { ... }")
        test = _Test(head[3].text, t.line)
        depth, j = 1, i + 7
        while j < len(toks) and depth:
            depth += {"{": 1, "}": -1}.get(toks[j].text, 0) if toks[j].kind == "punct" else 0
            j += 1
        if depth:
            raise error(path, t.line, f"TEST_F {test.name} has no closing '}}'")
        test.body, test.end_line = toks[i + 7:j - 1], toks[j - 1].line
        yield test
        i = j


def _reason(call: _Call) -> str:
    if call.precision:
        return REASON_PRECISION
    return REASON_UNCHECKED if call.status_taken else REASON_NOTHING


def read_ops_nn_ut(path: str | Path, api: str, product: str = "atlas-a2") -> Imported:
    """Entries of every status-checked call of an ops-nn op_api UT file for `api`, and
    the tests that assert nothing, both in file order.

    A test makes one entry per call: two or more (a loop over dtypes) get the loop's
    dtype, or the call's number, after the test name in id and source.
    SuiteError 'FILE:LINE: ...' for anything not understood.
    """
    check_api(api)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path}: cannot read: {exc}") from None
    base = Path(path).name
    entries: list[dict[str, Any]] = []
    lines: list[int] = []
    skipped: list[Skipped] = []
    tests = list(_tests(path, tokens(strip_comments(text))))
    if not tests:
        raise error(path, 1, "no TEST_F block")
    for test in tests:
        runner = _Runner(path, api)
        parser = Parser(path, test.body, test.end_line)
        runner.run(parser.statements(), {}, ())
        source = f"ut:{base}:{test.line} {test.name}"
        calls = runner.calls
        if not calls:
            skipped.append(Skipped(source, REASON_NO_CALL))
            continue
        by_loop = len({c.loops for c in calls}) == len(calls)
        for k, call in enumerate(calls, 1):
            cid, where = safe_id(test.name), source
            if len(calls) > 1:
                names = [ACL_DTYPES[v] for v in call.loops]
                tag = "-".join(names) if by_loop else str(k)
                cid = safe_id(f"{test.name}-{tag}")
                where += f" [{', '.join(call.loops)}]" if by_loop else f" [call {k}]"
            if call.status is None:
                skipped.append(Skipped(where, _reason(call)))
                continue
            try:
                entries.append(entry(cid=cid, family="ut", product=product, source=where,
                                     grad=call.grad, self_=call.self_, out=call.out,
                                     vendor_status=call.status))
            except ValueError as exc:
                raise error(path, test.line, str(exc)) from None
            lines.append(test.line)
    unique_ids(entries, lines, path)
    return Imported(tuple(entries), tuple(skipped))
