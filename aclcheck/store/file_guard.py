"""A command's files: no output may replace an input, and an input must not change while
the command reads it.

Before any work, `check_apart` compares every output path of a command with every input
(the same file, through symbolic or hard links too: same device and inode; a path inside
a folder the other side reads or replaces), and two outputs with each other: a clash is
a usage error (exit 2) naming both. `Snapshot` records the identity of the inputs read
while the command runs (device, inode, size, modification and change times: the change
time moves on any write and cannot be set back); `changed` names those that differ at
the end, so a run whose golden file was rewritten meanwhile (by a kernel, or anyone)
does not pass.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aclcheck.errors import UsageError


@dataclass(frozen=True)
class Role:
    """A path a command reads or writes. `tree`: a folder, everything under it included."""

    flag: str  # how the user named it: "--json", "GOLDEN", "-o"
    path: str | Path
    tree: bool = False

    def real(self) -> Path:
        return Path(os.path.realpath(os.path.abspath(self.path)))

    def identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except (OSError, ValueError):
            return None
        return st.st_dev, st.st_ino


def _clash(a: Role, b: Role) -> bool:
    ida, idb = a.identity(), b.identity()
    if ida is not None and ida == idb:
        return True
    ra, rb = a.real(), b.real()
    if ra == rb:
        return True
    return (a.tree and rb.is_relative_to(ra)) or (b.tree and ra.is_relative_to(rb))


def _named(role: Role) -> str:
    return f"{role.flag} {role.path}" if role.flag != str(role.path) else str(role.path)


def check_apart(inputs: Sequence[Role], outputs: Sequence[Role]) -> None:
    """UsageError when an output is (or would replace, or lies in) an input, or two
    outputs are one file."""
    for i, out in enumerate(outputs):
        for other in outputs[:i]:
            if _clash(out, other):
                raise UsageError(f"{_named(out)}: the same file as {_named(other)}: "
                                 "one would replace the other")
        for src in inputs:
            if _clash(out, src):
                raise UsageError(f"{_named(out)}: the same file as the input "
                                 f"{_named(src)} (or inside it): an output never replaces "
                                 "an input; write it elsewhere")


_Identity = tuple[int, int, int, int, int]


def _identity(path: str | Path) -> _Identity | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class Snapshot:
    """The identity of some input files now; `changed` later."""

    def __init__(self, roles: Sequence[Role]) -> None:
        self._before = [(role, _identity(role.path)) for role in roles if not role.tree]

    def changed(self) -> list[Role]:
        """The inputs that are no longer the files they were (rewritten, replaced,
        removed)."""
        return [role for role, before in self._before if _identity(role.path) != before]
