"""`--results FILE`: outputs an implementation produced elsewhere (an Atlas board, a C++
harness), read from the store's results layout and judged like a live run."""

from __future__ import annotations

from pathlib import Path

from aclcheck.cases.call import Outcome
from aclcheck.impls.base import CallInputs, Implementation
from aclcheck.store.results import ResultRow, read_results, results_meta


class ResultsImpl(Implementation):
    has_status_codes = True
    models_products = True
    makes_calls = False  # outcomes are data: the board made the calls

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.rows: dict[str, ResultRow] = read_results(self.path)
        meta = results_meta(self.path)
        self.name = f"results:{meta.get('implementation') or self.path.name}"
        self.description = f"stored outputs in {self.path}"
        self.spec = ""  # nothing to re-run in a worker: outcomes are data

    def run(self, call: CallInputs) -> Outcome:
        row = self.rows.get(call.case.id)
        if row is None:
            return Outcome(crashed=f"no result for this case in {self.path}")
        return Outcome(status=row.status, output=row.output, time_s=row.time_s,
                       raised=(row.message or None) if row.status != 0 else None)
