"""A run's verdicts kept on disk as they come, read back as a sequence.

A verify run of 100 000 cases must not hold 100 000 verdicts (each a few KB with its
metrics, detail and evidence) in memory: `VerdictSpool` appends each one, pickled, to an
unlinked temporary file and keeps only its end offset (8 bytes a case). It is a
read-only `Sequence[CaseVerdict]`, so the consumers (known failures, the gate, the
diagnosis, the reports) iterate it as they would a list; each pass reads the file
through once. The caller owns it (`with VerdictSpool() as spool:`); closing it frees the
file. `Mapped` is a lazy per-item view of a sequence (known failures applied on the fly).
"""

from __future__ import annotations

import os
import pickle
import tempfile
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

from aclcheck.judging.verdicts import CaseVerdict

T = TypeVar("T")
U = TypeVar("U")

#: bytes read from the spool at a time when iterating it
_CHUNK = 1 << 20


class VerdictSpool(Sequence[CaseVerdict]):
    """Verdicts in the order appended, in an unlinked temporary file (`folder`: where;
    default the system's temporary folder)."""

    def __init__(self, folder: str | None = None) -> None:
        self._file = tempfile.TemporaryFile(dir=folder)  # unlinked: nothing left behind
        self._ends = array("Q")  # end offset of each record

    def append(self, verdict: CaseVerdict) -> None:
        data = pickle.dumps(verdict, protocol=pickle.HIGHEST_PROTOCOL)
        self._file.write(data)
        self._ends.append((self._ends[-1] if self._ends else 0) + len(data))

    def __len__(self) -> int:
        return len(self._ends)

    def _span(self, i: int) -> tuple[int, int]:
        return (self._ends[i - 1] if i else 0), self._ends[i]

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
        start, end = self._span(i)
        return pickle.loads(os.pread(self._file.fileno(), end - start, start))

    def __iter__(self) -> Iterator[CaseVerdict]:
        """Each verdict, reading the file in large blocks (appends after the iteration
        started are not seen)."""
        self._file.flush()
        fd, count = self._file.fileno(), len(self)
        buffer, base, i = b"", 0, 0  # buffer holds the file's bytes from offset `base`
        while i < count:
            start, end = self._span(i)
            if end - base > len(buffer):  # keep the record's head, read on from there
                read_from = base + len(buffer)
                buffer = buffer[start - base:] + os.pread(
                    fd, max(_CHUNK, end - read_from), read_from)
                base = start
            yield pickle.loads(buffer[start - base:end - base])
            i += 1

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
