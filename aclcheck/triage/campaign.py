"""A hunt campaign: `budget` random valid calls, call i a pure function of (seed, i), judged
in batches wherever an executor runs them, failures deduplicated by how they fail.

Everything here is plain data and pure functions: the campaign's definition (`Campaign`),
call i (`call_case`), the batches still to run (`remaining`), what a batch sends back
(`BatchResult`: counts, and the record of each failing call, never a tensor), and the
running totals (`Tally`) with one representative per failure key. The checkpoint folder
(aclcheck.triage.checkpoint) makes the tally survive a restart; the CLI drives it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from aclcheck.cases import Case
from aclcheck.ops import operator
from aclcheck.options import DEFAULT_OPERATOR

#: Version of the campaign files (campaign.json, journal.jsonl).
CAMPAIGN_VERSION = 1
#: Calls per batch: a batch is one task on a worker and one journal line.
DEFAULT_BATCH = 32


@dataclass(frozen=True)
class Campaign:
    """What a campaign is: the same definition draws the same calls, in any order, on any
    number of workers; a checkpoint belongs to one definition."""

    seed: int
    budget: int
    impl: str
    products: tuple[str, ...]
    dtypes: tuple[str, ...]  # (): every dtype of the products
    standards: tuple[str, ...] = ()
    accumulate: str | None = None
    batch: int = DEFAULT_BATCH
    op: str = DEFAULT_OPERATOR  # the operator's registry name
    tolerances: str | None = None  # the tolerance file's path, as given

    def to_json(self) -> dict[str, Any]:
        return {"version": CAMPAIGN_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Campaign:
        """The campaign a checkpoint's campaign.json holds (ValueError when it is not one
        this aclcheck writes)."""
        if data.get("version") != CAMPAIGN_VERSION:
            raise ValueError(f"campaign version {data.get('version')!r}, expected "
                             f"{CAMPAIGN_VERSION}")
        try:
            return cls(seed=int(data["seed"]), budget=int(data["budget"]),
                       impl=str(data["impl"]), op=str(data["op"]),
                       tolerances=(None if data["tolerances"] is None
                                   else str(data["tolerances"])),
                       products=tuple(str(p) for p in data["products"]),
                       dtypes=tuple(str(d) for d in data["dtypes"]),
                       standards=tuple(str(s) for s in data["standards"]),
                       accumulate=(None if data["accumulate"] is None
                                   else str(data["accumulate"])),
                       batch=int(data["batch"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"campaign.json lacks or mistypes {exc}") from None

    def differences(self, stored: Campaign) -> list[str]:
        """Where this campaign differs from a `stored` one ("budget 99, the checkpoint's
        10"), for a refusal."""
        mine, theirs = asdict(self), asdict(stored)
        return [f"{k} {mine[k]!r}, the checkpoint's {theirs[k]!r}" for k in mine
                if mine[k] != theirs[k]]

    @property
    def batches(self) -> int:
        return -(-self.budget // self.batch)

    def calls(self, batch: int) -> range:
        """The call indices of batch number `batch`."""
        return range(batch * self.batch, min(self.budget, (batch + 1) * self.batch))


def call_case(campaign: Campaign, i: int) -> Case:
    """Call i of the campaign: drawn from the operator's space of valid calls by a
    generator seeded by (seed, i) alone, so any worker makes it from two integers, and a
    restart makes the same call."""
    case = operator(campaign.op).space.random_case(
        np.random.default_rng([campaign.seed, i]), campaign.products, campaign.dtypes, i)
    if case is None:
        raise ValueError("no product offers any of the dtypes")
    return case


def remaining(campaign: Campaign, done: Iterable[int]) -> Iterator[int]:
    """The batch numbers not yet done, in order."""
    finished = set(done)
    return (b for b in range(campaign.batches) if b not in finished)


@dataclass(frozen=True)
class Failure:
    """One failing call: its index, its record (enough to regenerate it), its verdict,
    message and the key failures are deduplicated by."""

    index: int
    record: dict[str, Any]
    verdict: str
    key: str
    message: str

    def case(self, op: str) -> Case:
        """The failing call, rebuilt from its record (a case of operator `op`)."""
        return operator(op).case_type.from_record(self.record)


@dataclass(frozen=True)
class BatchResult:
    """What a worker sends back for one batch: verdict counts and the failing calls."""

    batch: int
    counts: dict[str, int]
    failures: tuple[Failure, ...] = ()
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"batch": self.batch, "counts": self.counts, "seconds": self.seconds,
                "failures": [asdict(f) for f in self.failures]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchResult:
        return cls(int(data["batch"]), {str(k): int(v) for k, v in data["counts"].items()},
                   tuple(Failure(int(f["index"]), dict(f["record"]), str(f["verdict"]),
                                 str(f["key"]), str(f["message"]))
                         for f in data["failures"]), float(data.get("seconds", 0.0)))

    def line(self) -> str:
        """One journal line (JSON, no newline inside)."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))


@dataclass
class Tally:
    """The campaign so far: batches done, verdict counts, and per failure key the first
    failing call (lowest index: the same representative whatever the order batches
    finished in) and how many calls failed that way."""

    done: set[int] = field(default_factory=set)
    counts: Counter[str] = field(default_factory=Counter)
    first: dict[str, Failure] = field(default_factory=dict)
    seen: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, result: BatchResult) -> bool:
        """Count a batch once (False: it was counted already)."""
        if result.batch in self.done:
            return False
        self.done.add(result.batch)
        self.counts.update(result.counts)
        self.seconds += result.seconds
        for f in result.failures:
            self.seen[f.key] += 1
            if f.key not in self.first or f.index < self.first[f.key].index:
                self.first[f.key] = f
        return True

    @property
    def calls(self) -> int:
        return sum(self.counts.values())

    def distinct(self) -> list[Failure]:
        """One failure per key, in call order."""
        return sorted(self.first.values(), key=lambda f: f.index)
