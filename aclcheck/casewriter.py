"""Write cases as case-file entries (TOML, the format `generate --cases-file` reads).

The inverse of `suite.load_case_file` for the keys a case file takes; every written file
is read back with it, so what is written is always a valid case file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aclcheck.cases import Case
from aclcheck.errors import UsageError
from aclcheck.suite import CASE_FILE_KEYS, SuiteError, load_case_file

#: Keys in writing order; optional ones are left out when unset.
ORDER = ("id", "family", "product", "dtype", "format", "self_shape", "grad_shape",
         "distribution", "layout", "seed", "out_shape", "grad_dtype", "self_dtype", "out_dtype",
         "grad_format", "self_format", "out_format", "null")


def entry(case: Case) -> dict[str, Any]:
    """The case-file entry of a case (unset overrides left out)."""
    rec = case.to_record()
    out = {k: rec[k] for k in ORDER if k in CASE_FILE_KEYS and rec.get(k) not in (None, [])}
    return out


def _value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to a case file")


def toml_entry(case: Case, comment: str = "") -> str:
    """One `[[cases]]` table (with an optional comment line above it)."""
    lines = [f"# {line}" for line in comment.splitlines()] if comment else []
    lines.append("[[cases]]")
    lines.extend(f"{key} = {_value(value)}" for key, value in entry(case).items())
    return "\n".join(lines) + "\n"


def toml_file(cases: Sequence[Case], suite: str, comments: Sequence[str] = ()) -> str:
    """A whole case file."""
    parts = [f"suite = {_value(suite)}\n"]
    for i, case in enumerate(cases):
        parts.append("\n" + toml_entry(case, comments[i] if i < len(comments) else ""))
    return "".join(parts)


def check_appendable(path: str | Path) -> None:
    """Refuse --append targets before any work: not TOML, unreadable, or unwritable."""
    p = Path(path)
    if p.suffix.lower() != ".toml":
        raise UsageError(f"{p}: --append writes TOML case files (*.toml)")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{p}: folder {folder} does not exist")
    if p.exists():
        try:
            load_case_file(p)
        except SuiteError as exc:
            raise UsageError(f"--append: {exc}") from None
        if not p.is_file() or not _writable(p):
            raise UsageError(f"{p}: not writable")
    elif not _writable(folder):
        raise UsageError(f"{p}: folder {folder} is not writable")


def _writable(p: Path) -> bool:
    import os

    return os.access(p, os.W_OK)


def append(path: str | Path, case: Case, comment: str = "") -> Case:
    """Add a case to a TOML case file (created if missing); an id already in the file
    gets a numeric suffix. Returns the case as written; the file is read back."""
    p = Path(path)
    existing = {c.id for c in load_case_file(p).cases} if p.exists() else set()
    written, n = case, 2
    while written.id in existing:
        written = case.replace(id=f"{case.id}-{n}")
        n += 1
    old = p.read_text(encoding="utf-8") if p.exists() else ""
    sep = "" if not old or old.endswith("\n\n") else ("\n" if old.endswith("\n") else "\n\n")
    p.write_text(old + sep + toml_entry(written, comment), encoding="utf-8")
    load_case_file(p)  # proves the file still parses
    return written
