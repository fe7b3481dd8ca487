"""Case files: cases written by a person or by shrink/hunt, read and written here.

Reading: a TOML (`[[cases]]` tables) or JSON file -> Cases, every error naming the file,
the entry and the field (a SuiteError). Writing: cases as `[[cases]]` entries, the keys
the reader takes; a file is written whole to a temporary file, read back with the reader
and only then renamed into place, so what is written is always a valid case file and a
failure loses nothing.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aclcheck.cases import Case, derive_seed
from aclcheck.cases.acl import MAX_RANK, normalize_format
from aclcheck.cases.layouts import LAYOUTS, geometry_problem
from aclcheck.cases.record import FLOATS, INT, SHAPE, VALUE_FACTS
from aclcheck.cases.values import value_spec_problem
from aclcheck.configfile import Entry, read_document, top_level
from aclcheck.dtypes import normalize_dtype
from aclcheck.errors import AclcheckError, SuiteError, UsageError
from aclcheck.ops import DEFAULT, operator
from aclcheck.ops.operator import Operator
from aclcheck.report.files import atomic_write
from aclcheck.report.safe_text import printable
from aclcheck.store.codec import is_safe_id
from aclcheck.store.records import MAX_DIM

# -- reading ------------------------------------------------------------------------------

def case_file_keys(case_type: type[Case]) -> frozenset[str]:
    """The keys a case file takes: every field of the operator's record."""
    return frozenset(f.name for f in case_type.record_fields())


def _entry_to_case(value: Any, number: int, suite_seed: int, source: str,
                   op: Operator) -> Case:
    # JSON null = key absent, so Case.to_record() dumps load back as case files
    if isinstance(value, dict):
        value = {key: v for key, v in value.items() if v is not None}
    fields = op.case_type.record_fields()
    defaults = {f.name: f.default for f in dataclasses.fields(op.case_type)}
    entry = Entry.of(value, source, number, case_file_keys(op.case_type),
                     ("product", "dtype", "format"), SuiteError)
    kw: dict[str, Any] = {"product": entry.text("product", choices=tuple(op.products))}
    for fact, normalize in (("dtype", normalize_dtype), ("format", normalize_format)):
        for key in [fact] + [f.name for f in fields if f.role and f.name.endswith(fact)]:
            if key in entry:
                text = entry.text(key)
                try:
                    kw[key] = normalize(text)
                except ValueError as exc:
                    raise entry.error(key, str(exc)) from None
    kw["null"] = entry.text_list("null", [], choices=[r.name for r in op.roles],
                                 single_ok=True)
    keys = {r.name: r.key for r in op.roles}
    nulls = {keys[name] for name in kw["null"]}
    for f in fields:
        if f.kind == SHAPE and f.name in entry:  # a shape, strides, a storage shape
            kw[f.name] = entry.dims(f.name, MAX_RANK, MAX_DIM,
                                    negative=f.name == f"{f.role}_shape")
        elif f.kind == SHAPE and f.required:  # a null tensor needs no shape
            if f.role not in nulls:
                raise entry.error(f.name, "missing required key")
            kw[f.name] = ()
        elif f.kind == FLOATS and f.name in entry:
            kw[f.name] = entry.numbers(f.name)
        elif f.name in op.case_type.CHOICES and f.name in entry:  # the record's own
            kw[f.name] = entry.text(f.name, choices=f.choices)
        elif f.name in op.case_type.STATED and f.name in entry:
            kw[f.name] = entry.integer(f.name, lo=0) if f.kind == INT \
                else entry.text(f.name, choices=f.choices)
    kw["distribution"] = entry.text("distribution", defaults["distribution"],
                                    choices=op.case_type.DISTRIBUTIONS)
    kw["layout"] = entry.text("layout", defaults["layout"], choices=LAYOUTS)
    seed = entry.integer("seed", None, lo=0, hi=2**63 - 1) if "seed" in entry \
        else derive_seed(suite_seed, "file", number - 1)
    family = entry.text("family", "file")
    if "id" in entry:
        cid = entry.text("id")
        if not is_safe_id(cid):
            raise entry.error("id", "id must be a non-empty plain name without '/', '\\' or "
                              f"spaces (letters, digits, '_', '.', '-'): {cid!r}")
    case = op.case_type(id="", family=family, seed=int(seed), **kw)  # type: ignore[call-arg]
    _check_stated(case, entry)
    if "id" in entry:
        return case.replace(id=cid)
    return op.space.renamed(case, f"case{number - 1}")


def _check_stated(case: Case, entry: Entry) -> None:
    """Refuse what a case states but cannot be made: two value specs for one tensor, a
    spec that cannot be drawn, a view past its storage."""
    for role in case.ROLES:
        if role.name in case.null:
            continue
        desc = case.tensor_desc(role.name)
        problem = geometry_problem(desc.shape, desc.strides, desc.offset, desc.storage)
        if problem:
            raise entry.error(f"{role.key}_view_strides", problem)
        stated = [f"{role.key}_{fact}" for fact in VALUE_FACTS
                  if getattr(case, f"{role.key}_{fact}", None) is not None]
        if len(stated) > 1:
            raise entry.error(stated[1], f"one value spec per tensor, {stated[0]} is set")
        if stated:
            numel = math.prod(desc.shape) if min(desc.shape, default=0) >= 0 else None
            fact = stated[0].removeprefix(f"{role.key}_")
            problem = value_spec_problem(fact, getattr(case, stated[0]), numel)
            if problem:
                raise entry.error(stated[0], problem)


def parse_case_entries(entries: Any, source: str, suite_seed: int = 0,
                       op: str = DEFAULT) -> list[Case]:
    """Cases of operator `op` from decoded case-file content (a list, or a mapping with a
    `cases` list). A case file names no operator: the command that reads it does."""
    operator_ = operator(op)
    if isinstance(entries, dict):
        entries = top_level(entries, source, ("cases", "suite", "seed"),
                            "valid: cases, suite, seed", SuiteError).get("cases")
    if not isinstance(entries, list):
        raise SuiteError.at(source, "expected a list of cases (or a 'cases' list)")
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for number, value in enumerate(entries, 1):
        case = _entry_to_case(value, number, suite_seed, source, operator_)
        if case.id in seen:
            raise SuiteError.at(source, f"duplicate id {case.id!r} (first in entry "
                                f"{seen[case.id]})", number, "id")
        seen[case.id] = number
        cases.append(case)
    return cases


@dataclass(frozen=True)
class CaseFile:
    """A decoded case file: its cases and optional suite name / seed."""

    cases: list[Case]
    name: str | None = None
    seed: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


def load_case_file(path: str | Path, suite_seed: int | None = None,
                   op: str = DEFAULT) -> CaseFile:
    """Read a TOML (`[[cases]]` tables) or JSON (list, or object with `cases`) case file
    of operator `op`."""
    p = Path(path)
    data = read_document(p, "case file", error=SuiteError)
    name = data.get("suite") if isinstance(data, dict) else None
    file_seed = data.get("seed", 0) if isinstance(data, dict) else 0
    if isinstance(file_seed, bool) or not isinstance(file_seed, int) or file_seed < 0:
        raise SuiteError(f"{p}: top-level 'seed' must be a non-negative integer")
    seed = file_seed if suite_seed is None else suite_seed
    if seed < 0:
        raise SuiteError(f"seed must be >= 0, got {seed}")
    if name is not None and not isinstance(name, str):
        raise SuiteError(f"{p}: top-level 'suite' must be a string")
    return CaseFile(parse_case_entries(data, str(p), seed, op), name, seed)


# -- writing ------------------------------------------------------------------------------

def entry(case: Case) -> dict[str, Any]:
    """The case-file entry of a case, in the record's file order (unset overrides left
    out)."""
    rec = case.to_record()
    return {k: rec[k] for k in case.FILE_ORDER if rec.get(k) not in (None, [])}


def _value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):  # TOML floats: inf, -inf and nan are words there too
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to a case file")


def toml_entry(case: Case, comment: str = "") -> str:
    """One `[[cases]]` table (with optional comment lines above it). The comment may hold
    a kernel's text: control characters (which TOML forbids in comments), bidirectional
    overrides and lone surrogates are written as visible escapes."""
    lines = [f"# {line}" for line in printable(comment).split("\n")] if comment else []
    lines.append("[[cases]]")
    lines.extend(f"{key} = {_value(value)}" for key, value in entry(case).items())
    return "\n".join(lines) + "\n"


def toml_file(cases: Sequence[Case], suite: str, comments: Sequence[str] = ()) -> str:
    """A whole case file."""
    parts = [f"suite = {_value(suite)}\n"]
    for i, case in enumerate(cases):
        parts.append("\n" + toml_entry(case, comments[i] if i < len(comments) else ""))
    return "".join(parts)


def check_appendable(path: str | Path, op: str = DEFAULT) -> None:
    """Refuse --append targets before any work: not TOML, unreadable (as a case file of
    operator `op`), or unwritable."""
    p = Path(path)
    if p.suffix.lower() != ".toml":
        raise UsageError(f"{p}: --append writes TOML case files (*.toml)")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{p}: folder {folder} does not exist")
    if p.exists():
        try:
            load_case_file(p, op=op)
        except SuiteError as exc:
            raise UsageError(f"--append: {exc}") from None
        if not p.is_file() or not _writable(p):
            raise UsageError(f"{p}: not writable")
        folder = Path(os.path.realpath(p)).parent  # the new version is made beside it
    if not _writable(folder):
        raise UsageError(f"{p}: folder {folder} is not writable")


def _writable(p: Path) -> bool:
    return os.access(p, os.W_OK)


def write_case_file(path: str | Path, text: str, mode: int | None = None,
                    op: str = DEFAULT) -> None:
    """Write a case file atomically: a temporary file, read back as a case file (of
    operator `op`), then renamed into place; a failure (a full disk, text that would not
    parse) leaves the old file as it was. `mode`: the new file's mode (default 0666 less
    the umask)."""

    def parses(tmp: Path) -> None:
        try:
            load_case_file(tmp, op=op)
        except SuiteError as exc:
            raise AclcheckError(f"{path}: the case file would not read back ({exc}); "
                                "left unchanged") from None

    atomic_write(path, lambda fh: fh.write(text), mode=mode, check=parses)


def append(path: str | Path, case: Case, comment: str = "", mode: int | None = None
           ) -> Case:
    """Add a case to a TOML case file (created if missing, with `mode`); an id already in
    the file gets a numeric suffix. The file is rewritten whole (write_case_file: never
    in place; through a link, the file it names, keeping its mode). Returns the case as
    written."""
    p = Path(path)
    target = Path(os.path.realpath(p)) if p.is_symlink() else p
    op = case.OPERATOR
    existing = {c.id for c in load_case_file(target, op=op).cases} if target.exists() \
        else set()
    written, n = case, 2
    while written.id in existing:
        written = case.replace(id=f"{case.id}-{n}")
        n += 1
    old = target.read_text(encoding="utf-8") if target.exists() else ""
    sep = "" if not old or old.endswith("\n\n") else ("\n" if old.endswith("\n") else "\n\n")
    if target.exists():
        mode = stat.S_IMODE(target.stat().st_mode)
    write_case_file(target, old + sep + toml_entry(written, comment), mode, op)
    return written
