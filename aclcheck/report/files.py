"""Report files: checked writable before a run, written atomically with the usual mode.

A long run must not end by losing its results: `check_writable` runs before any case,
and `write_all` writes each report on its own, so one failure (disk full) keeps the
others and names what was lost.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from aclcheck.errors import UsageError


def check_writable(outputs: Mapping[str, str]) -> None:
    """UsageError (exit 2) naming the first output path ({flag: path}) that cannot be
    written: a missing or read-only folder, a path that is a folder, a read-only file."""
    for flag, path in outputs.items():
        problem = _unwritable(Path(path))
        if problem:
            raise UsageError(f"{flag} {path}: {problem}")


def _unwritable(target: Path) -> str | None:
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        return "is a folder"
    if not folder.is_dir():
        return f"folder {folder} does not exist"
    if target.exists() and not os.access(target, os.W_OK):
        return "file is not writable"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"folder {folder} is not writable"
    try:  # access() answers for permissions only: root, read-only mounts, /proc
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".aclcheck-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"folder {folder} is not writable ({exc.strerror or exc})"
    return None


def file_mode() -> int:
    """0666 less the process umask (what open() gives a new file), read without changing
    it where /proc tells it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str | Path, write: Callable[[IO[str]], None], *,
                 mode: int | None = None, check: Callable[[Path], None] | None = None) -> None:
    """Call write(fh) on a temporary file in the target's folder, then rename it over
    the target: a reader never sees half a file, a failure (a full disk) leaves the old
    one. Text that UTF-8 cannot hold (a lone surrogate from data) is written as a
    backslash escape. `mode`: the new file's mode (default 0666 less the umask, read
    now; a run captures it before any in-process kernel can change it); `check(tmp)`
    reads the finished temporary file back and raises to keep the old file."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                               dir=target.parent if str(target.parent) else ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())  # on disk before the rename makes it the file
        if check is not None:
            check(Path(tmp))
        os.chmod(tmp, file_mode() if mode is None else mode)  # mkstemp makes 0600
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_all(writers: Mapping[str, Callable[[], None]]) -> dict[str, str]:
    """Run every report writer ({"--json": fn}); a failing one does not stop the others.
    Returns why each report that could not be written was lost ({"--json": reason})."""
    lost = {}
    for what, write in writers.items():
        try:
            write()
        except OSError as exc:
            lost[what] = str(exc.strerror or exc)
    return lost
