"""The checkpoint folder of a hunt campaign: `campaign.json` (what the campaign is),
`journal.jsonl` (one line per batch judged, appended and fsynced as each batch comes
back) and, once its found cases are written, `outcome.json` (where). Reopened with the
same campaign, the journal gives back every batch judged so far, so a restart continues
where the last run stopped and judges no recorded call again; a run killed mid-write
leaves at most a torn last line, which is dropped (its batch runs again: it was never
recorded). One campaign at a time holds the folder (a lock file).

Everything in the folder is untrusted input (docs/campaign.md, "What a checkpoint may
claim"): each file is opened without following a link, must be a regular file (a FIFO
is opened non-blocking, then refused), is read up to a size limit, and every field is
checked before use. A damaged file is an InputFileError naming it (exit 3); a folder of
another campaign a UsageError naming the difference and the command that made it
(exit 2); both before any call.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from aclcheck.errors import InputFileError, UsageError
from aclcheck.triage.campaign import BatchResult, Campaign, Tally

SPEC_NAME = "campaign.json"
JOURNAL_NAME = "journal.jsonl"
OUTCOME_NAME = "outcome.json"
LOCK_NAME = ".lock"
#: campaign.json and outcome.json are read only up to this size (they are a few hundred
#: bytes).
MAX_SPEC_BYTES = 64 << 10
#: journal.jsonl is read only up to this size: ~1 KB per distinct failure of a batch.
MAX_JOURNAL_BYTES = 256 << 20
OUTCOME_VERSION = 1

_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
          (stat.S_ISSOCK, "a socket"))


def _not_regular(path: Path, mode: int) -> InputFileError:
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return InputFileError.at(path, f"not a regular file ({kind}): a checkpoint's files are "
                                   "never read through links, FIFOs or devices; use another "
                                   "folder")


def _unusable(folder: Path, exc: OSError) -> UsageError:
    """A checkpoint folder the file system refuses (no such parent, read-only, full)."""
    return UsageError(f"--checkpoint {folder}: cannot use it ({exc.strerror or exc})")


class Checkpoint:
    """An open checkpoint folder: `campaign` is the campaign it holds (the command's, a
    larger --budget extending it: `extended_from`), `tally` what earlier runs recorded
    (`resumed` says whether there were any), `record` appends a batch. Use as a context
    manager."""

    def __init__(self, folder: str | Path, campaign: Campaign) -> None:
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise UsageError(f"--checkpoint {self.folder}: not a folder")
        self._dir = self._lock = self._journal = -1
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._dir = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            if not os.access(self.folder, os.W_OK | os.X_OK):
                raise PermissionError(13, "not writable")
            self._lock = self._open(LOCK_NAME, os.O_RDWR | os.O_CREAT)
            _flock(self._lock, self.folder)
            self._open_campaign(campaign)
        except OSError as exc:
            self.close()
            raise _unusable(self.folder, exc) from None
        except BaseException:
            self.close()
            raise

    # -- opening

    def _open(self, name: str, flags: int, *, in_place: bool = False) -> int:
        """A file of the folder, opened without following a link and without blocking
        on a FIFO: a regular file (`in_place`, written in place: with no other name, as a
        hard link would have aclcheck write into another file), or an InputFileError
        (FileNotFoundError when absent)."""
        path = self.folder / name
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666,
                         dir_fd=self._dir)
        except FileNotFoundError:
            raise
        except OSError as exc:  # a link (ELOOP), a FIFO without reader (ENXIO), a folder
            try:
                mode = os.lstat(name, dir_fd=self._dir).st_mode
            except OSError:
                raise exc from None  # not there to create: the folder's trouble
            if stat.S_ISREG(mode):
                raise InputFileError.at(path, f"cannot open it ({exc.strerror or exc})"
                                        ) from None
            raise _not_regular(path, mode) from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (in_place and st.st_nlink > 1):
            os.close(fd)
            if stat.S_ISREG(st.st_mode):
                raise InputFileError.at(path, f"has {st.st_nlink} names (hard links): a "
                                              "checkpoint's files are its own; use another "
                                              "folder")
            raise _not_regular(path, st.st_mode)
        os.set_blocking(fd, True)
        return fd

    def _read(self, name: str, limit: int, fd: int | None = None) -> bytes | None:
        """The whole file (None when absent), refused past `limit` bytes."""
        path = self.folder / name
        own = fd is None
        if fd is None:
            try:
                fd = self._open(name, os.O_RDONLY)
            except FileNotFoundError:
                return None
        try:
            chunks: list[bytes] = []
            size = 0
            while size <= limit:
                chunk = os.pread(fd, min(1 << 20, limit + 1 - size), size)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
                size += len(chunk)
            raise InputFileError.at(path, f"larger than its {limit}-byte limit: not a file "
                                          "of a campaign this aclcheck ran; use another "
                                          "folder")
        finally:
            if own:
                os.close(fd)

    def _document(self, name: str) -> Any:
        """A JSON file of the folder, parsed (None when absent)."""
        raw = self._read(name, MAX_SPEC_BYTES)
        if raw is None:
            return None
        try:
            return json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise InputFileError.at(self.folder / name, f"not JSON ({exc})") from None

    def _open_campaign(self, command: Campaign) -> None:
        """Read and check the campaign record and the journal against the command."""
        data = self._document(SPEC_NAME)
        try:
            self._journal = self._open(JOURNAL_NAME, os.O_RDWR | os.O_APPEND, in_place=True)
        except FileNotFoundError:
            self._journal = -1
        self.extended_from: int | None = None
        self.outcome: dict[str, Any] | None = None
        self._unsaved = False
        if data is None:
            self._new(command)
            return
        path = self.folder / SPEC_NAME
        try:
            stored = Campaign.from_json(data)
        except (ValueError, KeyError, TypeError) as exc:
            raise InputFileError.at(path, f"not a campaign definition this aclcheck "
                                          f"wrote ({exc})") from None
        diff = replace(command, budget=stored.budget, earlier=stored.earlier
                       ).differences(stored)
        if diff:
            raise UsageError(f"--checkpoint {self.folder} holds another campaign "
                             f"({'; '.join(diff)}): use another folder, or the command that "
                             f"made it: {stored.command(self.folder)} -o OUTPUT")
        if self._journal < 0:  # killed between the two files: nothing was recorded
            self._journal = self._open(JOURNAL_NAME, os.O_RDWR | os.O_APPEND | os.O_CREAT,
                                       in_place=True)
        self.campaign = stored
        self.tally = Tally()
        self.torn = self._replay()
        self.resumed = bool(self.tally.done)
        if command.budget < stored.budget:
            raise UsageError(
                f"--budget {command.budget}: the campaign in {self.folder} has "
                f"{stored.budget} calls ({self.tally.calls} judged already), and a campaign "
                f"cannot shrink: rerun with --budget {stored.budget} (a larger one extends "
                "it), or use another folder")
        self.outcome = self._outcome()
        if command.budget > stored.budget:  # recorded with the first batch it judges
            self.campaign = stored.extended(command.budget)
            self.extended_from, self._unsaved = stored.budget, True

    def _new(self, campaign: Campaign) -> None:
        """A folder with no campaign record: a new campaign, unless it holds a journal
        or an outcome (they would belong to a campaign nobody can name)."""
        for name in (JOURNAL_NAME, OUTCOME_NAME):
            try:
                os.lstat(name, dir_fd=self._dir)
            except FileNotFoundError:
                continue
            raise InputFileError.at(
                self.folder / name, f"a campaign file without its campaign record "
                f"({SPEC_NAME} is missing): no command can tell which campaign it belongs "
                "to; use another folder")
        self._write_json(SPEC_NAME, campaign.to_json())
        self._journal = self._open(JOURNAL_NAME, os.O_RDWR | os.O_APPEND | os.O_CREAT,
                                   in_place=True)
        self.campaign, self.tally, self.torn, self.resumed = campaign, Tally(), False, False
        self._size = 0

    def _replay(self) -> bool:
        """Count every complete journal line, each checked as a batch of this campaign;
        drop a torn last line (True if there was one). A damaged complete line, or a
        batch recorded twice, is an InputFileError naming the line."""
        path = self.folder / JOURNAL_NAME
        data = self._read(JOURNAL_NAME, MAX_JOURNAL_BYTES, self._journal) or b""
        end = data.rfind(b"\n") + 1
        lines: dict[int, int] = {}
        for number, raw in enumerate(data[:end].splitlines(), 1):
            try:
                result = BatchResult.from_json(json.loads(raw), self.campaign)
            except (ValueError, KeyError, TypeError, RecursionError) as exc:
                raise InputFileError.at(path, f"line {number}: not a batch record of this "
                                              f"campaign ({exc})") from None
            if not self.tally.add(result):
                raise InputFileError.at(path, f"line {number}: batch {result.batch} again "
                                              f"(line {lines[result.batch]} has it)")
            lines[result.batch] = number
        self._size = end
        if end < len(data):
            os.ftruncate(self._journal, end)
            return True
        return False

    def _outcome(self) -> dict[str, Any] | None:
        """outcome.json checked: {"version", "budget", "files": {path: [size, mtime_ns]}}."""
        data = self._document(OUTCOME_NAME)
        if data is None:
            return None
        files = data.get("files") if isinstance(data, dict) else None
        if not (isinstance(data, dict) and set(data) == {"version", "budget", "files"}
                and data["version"] == OUTCOME_VERSION and type(data["budget"]) is int
                and isinstance(files, dict) and len(files) <= 16
                and all(isinstance(v, list) and len(v) == 2
                        and all(type(n) is int and n >= 0 for n in v) for v in files.values())):
            raise InputFileError.at(self.folder / OUTCOME_NAME,
                                    "not an outcome record this aclcheck wrote; use another "
                                    "folder")
        return data

    # -- state

    @property
    def complete(self) -> bool:
        """Every batch of the campaign is recorded."""
        return len(self.tally.done) == self.campaign.batches

    def wrote(self, paths: Sequence[Path], *, this_budget: bool = False) -> bool:
        """Whether the outcome record says this campaign wrote exactly these files, and
        they are still as it left them (size, modification time; `this_budget`: written
        for the campaign's current budget)."""
        if self.outcome is None or (this_budget
                                    and self.outcome["budget"] != self.campaign.budget):
            return False
        files = self.outcome["files"]
        if sorted(files) != sorted(str(p) for p in paths):
            return False
        return all(_identity(p) == tuple(files[str(p)]) for p in paths)

    # -- writing

    def _write_json(self, name: str, data: dict[str, Any]) -> None:
        """Replace a JSON file of the folder atomically (a new file, fsynced, renamed)."""
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o666, dir_fd=self._dir)
        try:
            _write_all(fd, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
            os.fsync(fd)
            os.close(fd)
            fd = -1
            os.replace(tmp, name, src_dir_fd=self._dir, dst_dir_fd=self._dir)
            _sync(self._dir)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            try:
                os.unlink(tmp, dir_fd=self._dir)
            except OSError:
                pass
            raise

    def record_outcome(self, paths: Sequence[Path]) -> None:
        """Say in the folder that the found cases were written to `paths` (absolute)."""
        files = {str(p): list(_identity(p) or (0, 0)) for p in paths}
        self.outcome = {"version": OUTCOME_VERSION, "budget": self.campaign.budget,
                        "files": files}
        self._write_json(OUTCOME_NAME, self.outcome)

    def record(self, result: BatchResult) -> None:
        """Count a batch and append it to the journal (compacted), durably (flushed and
        fsynced) before returning; a batch counted already is not written twice. What a
        worker sent is checked as a journal line would be (ValueError: the campaign
        stops, its recorded batches kept)."""
        if result.batch in self.tally.done:
            return
        result = result.compact()
        line = (result.line() + "\n").encode()
        try:
            BatchResult.from_json(json.loads(line), self.campaign)
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise ValueError(f"batch {result.batch} came back as no batch record of this "
                             f"campaign ({exc})") from None
        if self._size + len(line) > MAX_JOURNAL_BYTES:
            raise UsageError(f"{self.folder / JOURNAL_NAME}: would grow past its "
                             f"{MAX_JOURNAL_BYTES}-byte limit ({len(self.tally.first)} "
                             "distinct failures so far): split the campaign (another --seed, "
                             "another folder)")
        if self._unsaved:  # a larger budget, recorded before its first batch
            self._write_json(SPEC_NAME, self.campaign.to_json())
            self._unsaved = False
        self.tally.add(result)
        _write_all(self._journal, line)
        os.fsync(self._journal)
        self._size += len(line)

    def close(self) -> None:
        for fd in (self._journal, self._lock, self._dir):
            if fd >= 0:
                os.close(fd)
        self._dir = self._lock = self._journal = -1

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _flock(fd: int, folder: Path) -> None:
    import fcntl  # POSIX, as the workers are

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise UsageError(f"{folder}: another campaign is running on this checkpoint") from None


def _sync(folder: int) -> None:
    """The folder's entries on disk (the rename), where the system can say so."""
    try:
        os.fsync(folder)
    except OSError:
        pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _identity(path: Path) -> tuple[int, int] | None:
    """(size, modification time) of a regular file, not through a link; None otherwise."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None
