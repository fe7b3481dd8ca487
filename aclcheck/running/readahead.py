"""Cases read before the adapter is ready: while a zygote imports a framework (seconds),
the parent reads and checks the first cases instead of waiting idle. Bounded: at most
READ_AHEAD_CASES cases or READ_AHEAD_BYTES of arrays are held."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

from aclcheck.cases import Case, CaseData
from aclcheck.running.schedule import CaseSource

#: most cases, and most bytes of their arrays, read ahead
READ_AHEAD_CASES = 4096
READ_AHEAD_BYTES = 64 << 20


def _nbytes(data: CaseData) -> int:
    arrays = [t.storage for t in data.inputs.values() if t is not None]
    if data.golden is not None:
        arrays.append(data.golden)
    return sum(a.nbytes for a in arrays)


class ReadAhead:
    """A case source that hands out the cases read ahead first (each once), then reads
    from `source`."""

    def __init__(self, ahead: dict[str, CaseData], source: CaseSource) -> None:
        self.ahead = ahead
        self.source = source

    def load(self, case: Case) -> CaseData:
        data = self.ahead.pop(case.id, None)
        return data if data is not None else self.source.load(case)


def read_ahead(cases: Iterable[Case], source: CaseSource, done: Callable[[], bool],
               max_cases: int = READ_AHEAD_CASES, max_bytes: int = READ_AHEAD_BYTES
               ) -> tuple[Iterable[Case], ReadAhead]:
    """Read cases from `source` until `done()` (the adapter is ready) or the bounds; the
    same cases in the same order, and a source that serves the ones read. A case that
    cannot be read raises as it would have in the run."""
    it = iter(cases)
    ahead: dict[str, CaseData] = {}
    held = 0
    taken: list[Case] = []
    while not done() and len(taken) < max_cases and held < max_bytes:
        case = next(it, None)
        if case is None:
            break
        data = source.load(case)
        ahead[case.id] = data
        taken.append(case)
        held += _nbytes(data)
    return itertools.chain(taken, it), ReadAhead(ahead, source)
