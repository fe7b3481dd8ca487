"""What a coverage report is: edges of an operator's calls and how many cases of a golden
file reach each (`aclcheck inspect FILE --coverage`). Each operator says which edges it
has (its `coverage` hook); the records here are what the command renders."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Edge:
    """One edge and how many valid cases of the file reach it (first one as example)."""

    group: str  # "hardware", "shape", "value", "layout", "dtype"
    label: str
    section: str  # docs/contract.md section ("" where none)
    cases: int
    example: str  # id of the first case reaching it ("" when none)
    #: only an on-request family (stress) reaches it: a default suite need not
    on_request: bool = False
    #: what reaches an on-request edge (shown beside "none")
    drawn_by: str = "stress"

    @property
    def covered(self) -> bool:
        return self.cases > 0


@dataclass(frozen=True)
class Coverage:
    """Every edge with its count, plus the extremes (largest N·C, W, 1x1 plane, ...)."""

    valid_cases: int
    edges: tuple[Edge, ...]
    extremes: tuple[tuple[str, int], ...]

    def missing(self) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if not e.covered)

    def lost(self) -> tuple[Edge, ...]:
        """The hardware edges a default suite must reach and this file does not."""
        return tuple(e for e in self.missing() if e.group == "hardware" and not e.on_request)

    def to_dict(self) -> dict[str, object]:
        return {"valid_cases": self.valid_cases,
                "edges": [{"group": e.group, "label": e.label, "section": e.section,
                           "cases": e.cases, "example": e.example,
                           "on_request": e.on_request,
                           **({"drawn_by": e.drawn_by} if e.on_request else {})}
                          for e in self.edges],
                "extremes": dict(self.extremes)}
