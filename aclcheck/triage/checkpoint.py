"""The checkpoint folder of a hunt campaign: `campaign.json` (what the campaign is) and
`journal.jsonl` (one line per batch judged, appended and fsynced as each batch comes
back). Reopened with the same campaign, the journal gives back every batch judged so far,
so a restart continues where the last run stopped and judges no recorded call again; a
run killed mid-write leaves at most a torn last line, which is dropped (its batch runs
again: it was never recorded). One campaign at a time holds the folder (a lock file).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from aclcheck.errors import InputFileError, UsageError
from aclcheck.report.files import atomic_write
from aclcheck.triage.campaign import BatchResult, Campaign, Tally

SPEC_NAME = "campaign.json"
JOURNAL_NAME = "journal.jsonl"
LOCK_NAME = ".lock"
#: campaign.json is read only up to this size (it is a few hundred bytes).
MAX_SPEC_BYTES = 1 << 20


def _lock(folder: Path) -> IO[bytes]:
    import fcntl  # POSIX, as the workers are

    fh = open(folder / LOCK_NAME, "ab")  # noqa: SIM115 - held until close()
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise UsageError(f"{folder}: another campaign is running on this checkpoint") from None
    return fh


def _unusable(folder: Path, exc: OSError) -> UsageError:
    """A checkpoint folder the file system refuses (no such parent, read-only, full)."""
    return UsageError(f"--checkpoint {folder}: cannot use it ({exc.strerror or exc})")


class Checkpoint:
    """An open checkpoint folder: `tally` holds what earlier runs recorded (`resumed`
    says whether there were any), `record` appends a batch. Use as a context manager."""

    def __init__(self, folder: str | Path, campaign: Campaign) -> None:
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise UsageError(f"--checkpoint {self.folder}: not a folder")
        self.campaign = campaign
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock = _lock(self.folder)
        except OSError as exc:
            raise _unusable(self.folder, exc) from None
        try:
            self._check_spec()
            self.tally = Tally()
            self.torn = self._replay()
            self.resumed = bool(self.tally.done)
            self._journal = open(self.folder / JOURNAL_NAME, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            self._lock.close()
            raise _unusable(self.folder, exc) from None
        except BaseException:
            self._lock.close()
            raise

    def _check_spec(self) -> None:
        path = self.folder / SPEC_NAME
        if not path.exists():
            text = json.dumps(self.campaign.to_json(), indent=1, sort_keys=True) + "\n"
            atomic_write(path, lambda fh: fh.write(text))
            return
        if path.stat().st_size > MAX_SPEC_BYTES or not path.is_file():
            raise InputFileError(f"{path}: not a campaign definition this aclcheck wrote")
        try:
            stored = Campaign.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, AttributeError) as exc:
            raise InputFileError(f"{path}: not a campaign definition this aclcheck wrote "
                                 f"({exc})") from None
        diff = self.campaign.differences(stored)
        if diff:
            raise UsageError(f"--checkpoint {self.folder} holds another campaign "
                             f"({'; '.join(diff)}): use a new folder, or the same options")

    def _replay(self) -> bool:
        """Count every complete journal line; drop a torn last line (True if there was
        one). A damaged complete line is an InputFileError naming it."""
        path = self.folder / JOURNAL_NAME
        if not path.exists():
            return False
        data = path.read_bytes()
        end = data.rfind(b"\n") + 1
        for number, raw in enumerate(data[:end].splitlines(), 1):
            try:
                result = BatchResult.from_json(json.loads(raw))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise InputFileError(f"{path}: line {number}: not a batch record ({exc})") \
                    from None
            if not 0 <= result.batch < self.campaign.batches:
                raise InputFileError(f"{path}: line {number}: batch {result.batch} is not "
                                     f"one of this campaign's {self.campaign.batches}")
            self.tally.add(result)
        if end < len(data):
            with open(path, "r+b") as fh:
                fh.truncate(end)
            return True
        return False

    def record(self, result: BatchResult) -> None:
        """Count a batch and append it to the journal, durably (flushed and fsynced)
        before returning; a batch counted already is not written twice."""
        if not self.tally.add(result):
            return
        self._journal.write(result.line() + "\n")
        self._journal.flush()
        os.fsync(self._journal.fileno())

    def close(self) -> None:
        try:
            self._journal.close()
        finally:
            self._lock.close()

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
