"""A run's verdicts kept on disk as they come, read back as a sequence.

A verify run of 100 000 cases must not hold 100 000 verdicts (each a few KB with its
metrics, detail and evidence) in memory: `VerdictSpool` appends each one, pickled, to an
unlinked temporary file (its length, then the pickle) and keeps the file offset of
every STRIDE-th record only (8 bytes per 256 cases: random access skips the records
between by their lengths). It is a read-only `Sequence[CaseVerdict]`, so the consumers
(known failures, the gate, the diagnosis, the reports) iterate it as they would a list;
each pass reads the file through once. The caller owns it (`with VerdictSpool() as
spool:`); closing it frees the file. `Mapped` is a lazy per-item view of a sequence
(known failures applied on the fly).
"""

from __future__ import annotations

import os
import pickle
import struct
import tempfile
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

from aclcheck.judging.case.verdicts import CaseVerdict

T = TypeVar("T")
U = TypeVar("U")

#: bytes read from the spool at a time when iterating it
_CHUNK = 1 << 20
#: the file offset of every STRIDE-th record is kept (random access skips the rest)
STRIDE = 256
_HEAD = struct.Struct("<Q")  # each record: its length, then the pickle


class VerdictSpool(Sequence[CaseVerdict]):
    """Verdicts in the order appended, in an unlinked temporary file (`folder`: where;
    default the system's temporary folder)."""

    def __init__(self, folder: str | None = None) -> None:
        self._file = tempfile.TemporaryFile(dir=folder)  # unlinked: nothing left behind
        self._marks = array("Q")  # file offset of records 0, STRIDE, 2 * STRIDE, ...
        self._count = 0
        self._end = 0

    def append(self, verdict: CaseVerdict) -> None:
        data = pickle.dumps(verdict, protocol=pickle.HIGHEST_PROTOCOL)
        if self._count % STRIDE == 0:
            self._marks.append(self._end)
        self._file.write(_HEAD.pack(len(data)))
        self._file.write(data)
        self._end += _HEAD.size + len(data)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> CaseVerdict: ...

    @overload
    def __getitem__(self, i: slice) -> list[CaseVerdict]: ...

    def __getitem__(self, i: int | slice) -> CaseVerdict | list[CaseVerdict]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("verdict index out of range")
        self._file.flush()
        fd, at = self._file.fileno(), self._marks[i // STRIDE]
        for _ in range(i % STRIDE):  # skip to record i by the lengths
            at += _HEAD.size + _HEAD.unpack(os.pread(fd, _HEAD.size, at))[0]
        (size,) = _HEAD.unpack(os.pread(fd, _HEAD.size, at))
        return pickle.loads(os.pread(fd, size, at + _HEAD.size))

    def __iter__(self) -> Iterator[CaseVerdict]:
        """Each verdict, reading the file in large blocks (appends after the iteration
        started are not seen)."""
        self._file.flush()
        fd, count, end = self._file.fileno(), self._count, self._end
        buffer, base, at = b"", 0, 0  # buffer holds the file's bytes from offset `base`
        for _ in range(count):
            if at + _HEAD.size - base > len(buffer):
                buffer, base = self._refill(fd, buffer, base, at, _HEAD.size, end)
            (size,) = _HEAD.unpack_from(buffer, at - base)
            start, stop = at + _HEAD.size, at + _HEAD.size + size
            if stop - base > len(buffer):
                buffer, base = self._refill(fd, buffer, base, at, stop - at, end)
            yield pickle.loads(buffer[start - base:stop - base])
            at = stop

    @staticmethod
    def _refill(fd: int, buffer: bytes, base: int, at: int, need: int, end: int
                ) -> tuple[bytes, int]:
        """The buffer from offset `at` on, holding at least `need` bytes (keeps what it
        has from `at`, reads on in blocks of _CHUNK or more, never past `end`)."""
        kept = buffer[at - base:]
        read_from = at + len(kept)
        more = min(max(_CHUNK, need - len(kept)), end - read_from)
        return kept + os.pread(fd, more, read_from), at

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> VerdictSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Mapped(Sequence[U], Generic[T, U]):
    """`fn` applied to each item of `base` when read (nothing is kept)."""

    def __init__(self, base: Sequence[T], fn: Callable[[T], U]) -> None:
        self.base, self.fn = base, fn

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.fn(v) for v in self.base[i]]
        return self.fn(self.base[i])

    def __iter__(self) -> Iterator[U]:
        return (self.fn(v) for v in self.base)
