"""The C++ the vendor's op_api unit tests are written in, read as far as they use it:
comments blanked (line numbers kept), tokens, and the statements of a test body as
expressions (calls, braced lists, names, numbers). Anything else is an error naming its
line (aclcheck.ops.adaptive.vendor.ops_nn_ut interprets the statements)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from aclcheck.errors import SuiteError
from aclcheck.ops.adaptive.vendor.imported import error

# -- text -> tokens ---------------------------------------------------------------------------

def strip_comments(text: str) -> str:
    """`text` with // and /* */ comments blanked (newlines kept, so lines keep their
    numbers); string and character literals are left whole."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+) | (?P<nl>\n)
  | (?P<pp>\#[^\n]*)
  | (?P<num>(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[fFlLuU]*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<punct>::|.)
""", re.VERBOSE)


@dataclass(frozen=True)
class Tok:
    kind: str  # num, name, str, pp, punct
    text: str
    line: int


def tokens(text: str) -> list[Tok]:
    """The C++ tokens of comment-free `text`, each with its line."""
    out: list[Tok] = []
    line = 1
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "punct"
        if kind == "nl":
            line += 1
        elif kind != "ws":
            out.append(Tok(kind, m.group(), line))
    return out


# -- tokens -> statements ---------------------------------------------------------------------

@dataclass(frozen=True)
class Expr:
    """An expression: kind name | num | null | list | typed_list | call | method | addr."""

    kind: str
    line: int
    text: str = ""  # name, number text, called function, method name, list element type
    args: tuple[Expr, ...] = ()  # call / method arguments, list items; method: args[0] = obj
    value: float | int | None = None  # num


@dataclass(frozen=True)
class Stmt:
    """A statement: decl (type, name, expr) | check (macro, a, b) | expr | for | block."""

    kind: str
    line: int
    type: str = ""  # decl: declared type; check: the macro; for: the loop variable
    name: str = ""
    exprs: tuple[Expr, ...] = ()
    body: tuple[Stmt, ...] = ()


class Parser:
    """Recursive descent over one test body's tokens."""

    DECL_TYPES = ("auto", "aclDataType", "uint64_t", "aclnnStatus")

    def __init__(self, path: str | Path, toks: list[Tok], end_line: int) -> None:
        self.path, self.toks, self.pos, self.end_line = path, toks, 0, end_line

    # helpers
    def peek(self, k: int = 0) -> Tok | None:
        i = self.pos + k
        return self.toks[i] if i < len(self.toks) else None

    def line(self) -> int:
        t = self.peek()
        return t.line if t else self.end_line

    def fail(self, message: str, line: int | None = None) -> SuiteError:
        return error(self.path, self.line() if line is None else line, message)

    def next(self) -> Tok:
        t = self.peek()
        if t is None:
            raise self.fail("unexpected end of the test body")
        self.pos += 1
        return t

    def at(self, text: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.text == text and t.kind != "str"

    def expect(self, text: str) -> Tok:
        t = self.peek()
        if t is None or t.text != text:
            raise self.fail(f"expected {text!r}, found {t.text if t else 'the end'!r}")
        self.pos += 1
        return t

    def ident(self) -> Tok:
        t = self.next()
        if t.kind != "name":
            raise self.fail(f"expected a name, found {t.text!r}", t.line)
        return t

    def unknown(self) -> SuiteError:
        start = self.line()
        text = " ".join(t.text for t in self.toks[self.pos:self.pos + 8] if t.line == start)
        return self.fail(f"statement not understood: {text!r}")

    # statements
    def statements(self) -> tuple[Stmt, ...]:
        out = []
        while self.peek() is not None:
            out.append(self.statement())
        return tuple(out)

    def statement(self) -> Stmt:
        t = self.peek()
        assert t is not None
        if t.kind == "pp":
            raise self.fail(f"preprocessor line in a test body not understood: {t.text!r}")
        if self.at(";"):
            self.next()
            return Stmt("block", t.line)
        if self.at("{"):
            self.next()
            body = []
            while not self.at("}"):
                if self.peek() is None:
                    raise self.fail("unclosed '{'", t.line)
                body.append(self.statement())
            self.next()
            return Stmt("block", t.line, body=tuple(body))
        if self.at("for"):
            return self.for_loop()
        if self.at("EXPECT_EQ") or self.at("ASSERT_EQ"):
            macro = self.next().text
            self.expect("(")
            a = self.expr()
            self.expect(",")
            b = self.expr()
            self.expect(")")
            self.expect(";")
            return Stmt("check", t.line, type=macro, exprs=(a, b))
        nxt = self.peek(1)
        if t.kind == "name" and t.text in self.DECL_TYPES and nxt is not None \
                and nxt.kind == "name" and self.at("=", 2):
            self.pos += 3
            value = self.expr()
            self.expect(";")
            return Stmt("decl", t.line, type=t.text, name=nxt.text, exprs=(value,))
        if self.vector_decl_ahead():
            return self.vector_decl()
        if t.kind == "name" and self.at(".", 1):
            value = self.expr()
            self.expect(";")
            return Stmt("expr", t.line, exprs=(value,))
        raise self.unknown()

    def vector_decl_ahead(self) -> bool:
        k = 2 if self.at("std") and self.at("::", 1) else 0
        return self.at("vector", k) and self.at("<", k + 1)

    def vector_decl(self) -> Stmt:
        line = self.line()
        if self.at("std"):
            self.pos += 2
        self.expect("vector")
        self.expect("<")
        elem = self.ident().text
        self.expect(">")
        name = self.ident().text
        if elem != "aclDataType":
            raise self.fail(f"a vector<{elem}> variable is not understood", line)
        if self.at("="):
            self.next()
        if not self.at("{"):
            raise self.unknown()
        items = self.brace_list()
        self.expect(";")
        return Stmt("decl", line, type="vector<aclDataType>", name=name,
                    exprs=(Expr("list", line, args=items),))

    def for_loop(self) -> Stmt:
        line = self.next().line
        self.expect("(")
        if self.at("const"):
            self.next()
        kind = self.ident().text
        if kind not in ("auto", "aclDataType"):
            raise self.fail(f"a for loop over {kind} is not understood", line)
        if self.at("&"):
            self.next()
        var = self.ident().text
        if not self.at(":"):
            raise self.fail("only range-for loops (for (auto x : list)) are understood", line)
        self.next()
        over = self.expr()
        self.expect(")")
        body = self.statement()
        return Stmt("for", line, type=var, exprs=(over,), body=(body,))

    # expressions
    def brace_list(self) -> tuple[Expr, ...]:
        self.expect("{")
        items: list[Expr] = []
        while not self.at("}"):
            items.append(self.expr())
            if not self.at("}"):
                self.expect(",")
        self.next()
        return tuple(items)

    def args(self) -> tuple[Expr, ...]:
        self.expect("(")
        items: list[Expr] = []
        while not self.at(")"):
            items.append(self.expr())
            if not self.at(")"):
                self.expect(",")
        self.next()
        return tuple(items)

    def expr(self) -> Expr:
        e = self.primary()
        while self.at("."):
            self.next()
            method = self.ident()
            e = Expr("method", method.line, method.text, (e, *self.args()))
        return e

    def primary(self) -> Expr:
        t = self.peek()
        if t is None:
            raise self.fail("expected an expression")
        if t.text in ("-", "+") and self.peek(1) is not None \
                and self.peek(1).kind == "num":  # type: ignore[union-attr]
            self.next()
            num = self.number(self.next())
            sign = -1 if t.text == "-" else 1
            assert num.value is not None
            return Expr("num", t.line, t.text + num.text, value=sign * num.value)
        if t.kind == "num":
            return self.number(self.next())
        if self.at("{"):
            return Expr("list", t.line, args=self.brace_list())
        if self.at("&"):
            self.next()
            return Expr("addr", t.line, args=(Expr("name", t.line, self.ident().text),))
        if t.kind != "name":
            raise self.fail(f"expression not understood at {t.text!r}")
        if t.text == "nullptr":
            self.next()
            return Expr("null", t.line)
        if t.text in ("true", "false"):
            self.next()
            return Expr("num", t.line, t.text, value=int(t.text == "true"))
        if self.vector_decl_ahead():
            if self.at("std"):
                self.pos += 2
            self.pos += 2
            elem = self.ident().text
            self.expect(">")
            return Expr("typed_list", t.line, elem, self.brace_list())
        self.next()
        if self.at("("):
            return Expr("call", t.line, t.text, self.args())
        return Expr("name", t.line, t.text)

    def number(self, t: Tok) -> Expr:
        text = t.text
        try:
            if text[:2] in ("0x", "0X"):
                value: float | int = int(text.rstrip("lLuU"), 16)
            elif re.fullmatch(r"\d+[lLuU]*", text):
                if len(text.rstrip("lLuU")) > 1 and text.startswith("0"):
                    raise ValueError("octal")
                value = int(text.rstrip("lLuU"))
            else:
                value = float(text.rstrip("fFlL"))
        except ValueError:
            raise self.fail(f"number not understood: {text!r}", t.line) from None
        return Expr("num", t.line, text, value=value)
