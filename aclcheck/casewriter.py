"""Write cases as case-file entries (TOML, the format `generate --cases-file` reads).

The inverse of `suite.load_case_file` for the keys a case file takes; every file is
written whole to a temporary file, read back with it and only then renamed into place,
so what is written is always a valid case file and a failure loses nothing.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aclcheck.cases import Case
from aclcheck.errors import AclcheckError, SuiteError, UsageError
from aclcheck.report.files import atomic_write
from aclcheck.report.safe_text import printable
from aclcheck.suite import CASE_FILE_KEYS, load_case_file

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
        folder = Path(os.path.realpath(p)).parent  # the new version is made beside it
    if not _writable(folder):
        raise UsageError(f"{p}: folder {folder} is not writable")


def _writable(p: Path) -> bool:
    return os.access(p, os.W_OK)


def write_case_file(path: str | Path, text: str, mode: int | None = None) -> None:
    """Write a case file atomically: a temporary file, read back as a case file, then
    renamed into place; a failure (a full disk, text that would not parse) leaves the
    old file as it was. `mode`: the new file's mode (default 0666 less the umask)."""

    def parses(tmp: Path) -> None:
        try:
            load_case_file(tmp)
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
    existing = {c.id for c in load_case_file(target).cases} if target.exists() else set()
    written, n = case, 2
    while written.id in existing:
        written = case.replace(id=f"{case.id}-{n}")
        n += 1
    old = target.read_text(encoding="utf-8") if target.exists() else ""
    sep = "" if not old or old.endswith("\n\n") else ("\n" if old.endswith("\n") else "\n\n")
    if target.exists():
        mode = stat.S_IMODE(target.stat().st_mode)
    write_case_file(target, old + sep + toml_entry(written, comment), mode)
    return written
