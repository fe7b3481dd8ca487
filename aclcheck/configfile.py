"""One reader for the files a person writes: case files, tolerance overrides, known-failure
lists (TOML or JSON), and the JSON documents aclcheck reads back (.bin manifests).

Everything comes out as plain data (dicts, lists, str, int, float, bool) after the same
guards: a regular file (a FIFO or device is never opened), at most `max_bytes`, UTF-8,
nesting at most MAX_DEPTH deep. Every error has one line in one style:

    FILE: entry N, field 'name': what is wrong

and the class the caller names (`error`: ConfigError by default; SuiteError for case
files, InputFileError for documents aclcheck wrote), so no caller re-raises it.
`Entry` gives typed access to one table of a list ([[cases]], [[xfail]]), naming the
entry and the field in its errors.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aclcheck.errors import AclcheckError, ConfigError

#: Largest config file read (bytes).
MAX_CONFIG_BYTES = 16 << 20
#: Deepest nesting of tables / lists accepted.
MAX_DEPTH = 32
_MISSING: Any = object()


#: The class of a reader's errors (anything with AclcheckError.at).
ErrorType = type[AclcheckError]


#: how content_digest writes a digest (and what reads one back checks)
DIGEST_PREFIX = "blake2b:"


def content_digest(flag: str, path: str) -> str:
    """'blake2b:<64 hex>' of a list file's bytes (at most MAX_CONFIG_BYTES read): what a
    run's --tolerances or --xfail was, by content rather than by name (a report's
    verdict_options, a campaign's record). ConfigError when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: cannot read: {exc.strerror or exc}") from None
    return DIGEST_PREFIX + hashlib.blake2b(data, digest_size=32).hexdigest()


def syntax_of(path: Path) -> str:
    """'json' for *.json (any case), otherwise 'toml'."""
    return "json" if path.suffix.lower() == ".json" else "toml"


def read_document(path: str | Path, what: str, *, syntax: str | None = None,
                  max_bytes: int = MAX_CONFIG_BYTES, error: ErrorType = ConfigError) -> Any:
    """Parse a TOML or JSON file into plain data (`what` names it in errors, e.g.
    "case file"); `syntax` defaults to the file's suffix; errors are `error`s."""
    p = Path(path)
    source = str(p)
    kind = syntax or syntax_of(p)
    try:
        raw = _read_regular(p, max_bytes)
    except FileNotFoundError:
        raise error.at(source, f"cannot read {what}: no such file") from None
    except _NotRegular:
        raise error.at(source, f"cannot read {what}: not a regular file") from None
    except _TooLarge as exc:
        raise error.at(source, f"cannot read {what}: {exc.args[0]} bytes or more, over "
                               f"the {max_bytes}-byte limit") from None
    except OSError as exc:
        raise error.at(source, f"cannot read {what}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
        if kind == "json":
            data = json.loads(text)
        else:
            import tomllib  # a JSON file's reader never needs it

            data = tomllib.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        detail = " ".join(str(exc).split())
        raise error.at(source, f"not valid {kind.upper()}: {detail}") from None
    except RecursionError:
        raise error.at(source, f"not valid {kind.upper()}: nested too deeply") from None
    depth = nesting_depth(data)
    if depth > MAX_DEPTH:
        raise error.at(source, f"nested {depth} levels deep (at most {MAX_DEPTH})")
    return data


class _NotRegular(OSError):
    pass


class _TooLarge(OSError):
    pass


def _read_regular(path: Path, max_bytes: int) -> bytes:
    """A regular file's bytes, read from the file opened (never blocking on a FIFO,
    checked on the open file, so a swap after a check cannot slip past) and never past
    `max_bytes` (a file that grows while read included)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotRegular(str(path))
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise _TooLarge(size)
        return b"".join(chunks)
    finally:
        os.close(fd)


def nesting_depth(data: Any) -> int:
    """Levels of dicts / lists (iterative: no recursion on hostile input)."""
    deepest = 0
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        stack.extend((child, depth + 1) for child in children)
    return deepest


def top_level(data: Any, source: str, allowed: Collection[str], hint: str,
              error: ErrorType = ConfigError) -> dict[str, Any]:
    """The top-level table, refusing keys outside `allowed` (`hint` says what is valid)."""
    if not isinstance(data, dict):
        raise error.at(source, f"expected {hint}")
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise error.at(source, f"unknown top-level key {extra[0]!r} ({hint})")
    return data


@dataclass(frozen=True)
class Entry:
    """One entry (a table of a list) of a config file, 1-based `number` in errors."""

    data: Mapping[str, Any]
    source: str
    number: int
    error_type: ErrorType = ConfigError

    @classmethod
    def of(cls, value: Any, source: str, number: int, allowed: Collection[str],
           required: Collection[str] = (), error: ErrorType = ConfigError) -> Entry:
        """Check the entry's shape: a table with known keys and the required ones."""
        if not isinstance(value, dict):
            raise error.at(source, f"entry must be a table/object, got "
                              f"{type(value).__name__}", number, "-")
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise error.at(source, f"unknown key (valid: {', '.join(sorted(allowed))})",
                              number, unknown[0])
        for key in required:
            if key not in value:
                raise error.at(source, "missing required key", number, key)
        return cls(value, source, number, error)

    def error(self, field: str, message: str) -> AclcheckError:
        return self.error_type.at(self.source, message, self.number, field)

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def text(self, key: str, default: Any = _MISSING, *,
             choices: Collection[str] | None = None, nonempty: bool = False) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self.error(key, f"must be a string, got {type(value).__name__}")
        if nonempty and not value.strip():
            raise self.error(key, "must be a non-empty string")
        if choices is not None and value not in choices:
            raise self.error(key, f"unknown {key} {value!r}; valid: {', '.join(choices)}")
        return value

    def integer(self, key: str, default: Any = _MISSING, *, lo: int = -(2**63),
                hi: int = 2**63 - 1) -> int:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise self.error(key, f"must be an integer in [{_bound(lo)}, {_bound(hi + 1)})")
        return value

    def boolean(self, key: str, default: Any = _MISSING) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, "must be true or false")
        return value

    def text_list(self, key: str, default: Any = _MISSING, *,
                  choices: Collection[str] | None = None, single_ok: bool = False
                  ) -> tuple[str, ...]:
        value = self._get(key, default)
        if single_ok and isinstance(value, str):
            value = [value]
        valid = f" of {', '.join(choices)}" if choices is not None else " of strings"
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise self.error(key, f"must be a list{valid}")
        if choices is not None and any(v not in choices for v in value):
            raise self.error(key, f"must be a list{valid}")
        return tuple(value)

    def dims(self, key: str, max_rank: int, max_dim: int, *, negative: bool = False
             ) -> tuple[int, ...]:
        """A shape: 1..max_rank integers, each at most max_dim in size (non-negative
        unless `negative`: the dims of a call that must be refused)."""
        value = self._get(key, _MISSING)
        if not isinstance(value, list | tuple):
            raise self.error(key, f"must be a list of integers, got {type(value).__name__}")
        if not 1 <= len(value) <= max_rank:
            raise self.error(key, f"rank must be 1..{max_rank}, got {len(value)}")
        for d in value:
            if isinstance(d, bool) or not isinstance(d, int):
                raise self.error(key, f"dims must be integers, got {d!r}")
            if d < 0 and not negative:
                raise self.error(key, f"negative dim {d}")
            if abs(d) > max_dim:
                raise self.error(key, f"dim {d} is over the limit of {max_dim}")
        return tuple(value)

    def numbers(self, key: str) -> tuple[float, ...]:
        """A non-empty list of numbers (integers or floats, TOML's inf and nan too)."""
        value = self._get(key, _MISSING)
        if not isinstance(value, list | tuple) or not value or not all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            raise self.error(key, "must be a non-empty list of numbers")
        return tuple(float(v) for v in value)

    def _get(self, key: str, default: Any) -> Any:
        if key in self.data:
            return self.data[key]
        if default is _MISSING:
            raise self.error(key, "missing required key")
        return default


def _bound(value: int) -> str:
    """2**63 as '2**63' (what the messages have always said), small numbers as digits."""
    if abs(value) >= 2**32:
        exp = int(math.log2(abs(value)))
        return f"{'-' if value < 0 else ''}2**{exp}"
    return str(value)
