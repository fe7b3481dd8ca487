"""What an integrity check found (`inspect --check`): problems, one line each, and how
much was read."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Problems listed per file; the rest are counted.
MAX_PROBLEMS = 50


@dataclass
class CheckReport:
    """What `check_file` found: problems (one line each) and how much it read."""

    path: Path
    kind: str = ""
    cases: int = 0
    datasets: int = 0
    bytes_read: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)
    truncated: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)
        else:
            self.truncated += 1

    def to_dict(self) -> dict[str, Any]:
        return {"file": str(self.path), "format": self.kind, "ok": self.ok,
                "cases": self.cases, "datasets_read": self.datasets,
                "bytes_read": self.bytes_read, "problems": self.problems,
                "problems_not_shown": self.truncated}
