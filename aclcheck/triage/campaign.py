"""A hunt campaign: `budget` random valid calls, call i a pure function of (seed, i), judged
in batches wherever an executor runs them, failures deduplicated by how they fail.

Everything here is plain data and pure functions: the campaign's definition (`Campaign`),
call i (`call_case`), the batches still to run (`remaining`), what a batch sends back
(`BatchResult`: counts, and the record of each failing call, never a tensor), and the
running totals (`Tally`) with one representative per failure key. The checkpoint folder
(aclcheck.triage.checkpoint) makes the tally survive a restart; the CLI drives it. What
is read back (`Campaign.from_json`, `BatchResult.from_json`) is untrusted: every field is
checked, and a failure's record must be the campaign's own call i, drawn again.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from itertools import pairwise
from typing import Any

import numpy as np

from aclcheck.cases import Case
from aclcheck.configfile import DIGEST_PREFIX
from aclcheck.judging.case.verdicts import FAILING, Verdict
from aclcheck.ops import OPERATORS, operator
from aclcheck.options import ACCUMULATE_CHOICES, DEFAULT_OPERATOR, SPIN_RULE

#: Version of the campaign files (campaign.json, journal.jsonl); 2 added spin_rule and
#: earlier (the budgets before an extension).
CAMPAIGN_VERSION = 2
#: a tolerance file's digest as configfile.content_digest writes it
_DIGEST = re.compile(re.escape(DIGEST_PREFIX) + "[0-9a-f]{64}")
#: Calls per batch: a batch is one task on a worker and one journal line.
DEFAULT_BATCH = 32
#: a failing verdict's message is kept up to this many characters in the journal
MESSAGE_CHARS = 300
#: Longest failure key or message a journal line may hold (the worker cuts messages to
#: MESSAGE_CHARS).
MAX_TEXT = 1000
#: Most extensions a campaign records (each a larger --budget on the same checkpoint).
MAX_EXTENSIONS = 100


@dataclass(frozen=True)
class Campaign:
    """What a campaign is: the same definition draws the same calls, in any order, on any
    number of workers; a checkpoint belongs to one definition. `earlier`: the budgets it
    had before a larger --budget extended it (its batches keep their numbers: the calls
    after an earlier budget start a batch of their own)."""

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
    spin_rule: str = str(SPIN_RULE.default)
    earlier: tuple[int, ...] = ()
    #: the tolerance file by content (configfile.content_digest): the same path holding
    #: other tolerances is another campaign
    tolerances_digest: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"version": CAMPAIGN_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: Any) -> Campaign:
        """The campaign a checkpoint's campaign.json holds, every field checked (type,
        range, known name): ValueError naming the first that is not one this aclcheck
        writes."""
        from aclcheck.judging.case.standards import STANDARDS_BY_NAME

        if not isinstance(data, dict):
            raise ValueError(f"a JSON {type(data).__name__}, not an object")
        if data.get("version") != CAMPAIGN_VERSION:
            raise ValueError(f"campaign version {data.get('version')!r}, expected "
                             f"{CAMPAIGN_VERSION} (written by another aclcheck version: "
                             "finish it with that one, or use another folder)")
        names = {"version", *cls.__dataclass_fields__}
        if set(data) != names:
            odd = sorted(set(data) ^ names)
            raise ValueError(f"fields {', '.join(odd)} missing or unknown")
        op = _text(data, "op")
        if op not in OPERATORS:
            raise ValueError(f"op {op!r}: no such operator")
        chosen = operator(op)
        campaign = cls(
            seed=_count(data, "seed", 0), budget=_count(data, "budget", 1),
            impl=_text(data, "impl"), op=op, batch=_count(data, "batch", 1),
            products=_names(data, "products", tuple(chosen.products)),
            dtypes=_names(data, "dtypes", chosen.dtypes),
            standards=_names(data, "standards", STANDARDS_BY_NAME),
            accumulate=_choice(data, "accumulate", ACCUMULATE_CHOICES),
            tolerances=_choice(data, "tolerances", None),
            spin_rule=str(_choice(data, "spin_rule", SPIN_RULE.choices, optional=False)),
            earlier=tuple(_ints(data, "earlier")),
            tolerances_digest=_choice(data, "tolerances_digest", None))
        digest = campaign.tolerances_digest
        if (digest is None) != (campaign.tolerances is None) or (
                digest is not None and not _DIGEST.fullmatch(digest)):
            raise ValueError(f"tolerances_digest {digest!r}: not 'blake2b:' and 64 hex "
                             "digits beside a tolerance file (null without one)")
        bounds = (*campaign.earlier, campaign.budget)
        if len(bounds) > MAX_EXTENSIONS or any(a >= b for a, b in pairwise(bounds)) \
                or not campaign.products:
            raise ValueError("earlier budgets not increasing below the budget, or no product")
        return campaign

    def differences(self, stored: Campaign) -> list[str]:
        """Where this campaign differs from a `stored` one ("budget 99, the checkpoint's
        10"), for a refusal."""
        mine, theirs = asdict(self), asdict(stored)
        return [f"{k} {mine[k]!r}, the checkpoint's {theirs[k]!r}" for k in mine
                if mine[k] != theirs[k]]

    def extended(self, budget: int) -> Campaign:
        """This campaign with a larger budget: the calls it judged keep their batches."""
        return replace(self, budget=budget, earlier=(*self.earlier, self.budget))

    def command(self, checkpoint: object) -> str:
        """The `aclcheck hunt` command line that runs this campaign on `checkpoint`."""
        args = ["aclcheck", "hunt", "--impl", self.impl]
        if self.op != DEFAULT_OPERATOR:
            args += ["--op", self.op]
        args += ["--seed", str(self.seed), "--budget", str(self.budget), "--batch",
                 str(self.batch)]
        if self.products != tuple(operator(self.op).products):
            args += [a for p in self.products for a in ("--product", p)]
        args += [a for d in self.dtypes for a in ("--dtype", d)]
        args += [a for s in self.standards for a in ("--standard", s)]
        for flag, value in (("--tolerances", self.tolerances),
                            ("--accumulate", self.accumulate)):
            if value is not None:
                args += [flag, value]
        if self.spin_rule != SPIN_RULE.default:
            args += ["--spin-rule", self.spin_rule]
        return shlex.join([*args, "--checkpoint", str(checkpoint)])

    def _segments(self) -> Iterator[tuple[int, int, int]]:
        """(first batch, first call, end call) of each budget's calls, in order."""
        first, start = 0, 0
        for end in (*self.earlier, self.budget):
            yield first, start, end
            first += -(-(end - start) // self.batch)
            start = end

    @property
    def batches(self) -> int:
        return sum(-(-(end - start) // self.batch) for _, start, end in self._segments())

    def calls(self, batch: int) -> range:
        """The call indices of batch number `batch` (empty past the last)."""
        for first, start, end in self._segments():
            lo = start + (batch - first) * self.batch
            if first <= batch and lo < end:
                return range(lo, min(end, lo + self.batch))
        return range(0)


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data[name]
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} {value!r}: not a non-empty string")
    return value


def _count(data: Mapping[str, Any], name: str, minimum: int) -> int:
    value = data[name]
    if type(value) is not int or value < minimum:
        raise ValueError(f"{name} {value!r}: not an integer >= {minimum}")
    return value


def _ints(data: Mapping[str, Any], name: str) -> list[int]:
    value = data[name]
    if not isinstance(value, list) or any(type(v) is not int or v < 1 for v in value):
        raise ValueError(f"{name} {value!r}: not a list of integers >= 1")
    return value


def _names(data: Mapping[str, Any], name: str, valid: Iterable[str] | None
           ) -> tuple[str, ...]:
    value = data[name]
    known = None if valid is None else set(valid)
    if not isinstance(value, list) or any(not isinstance(v, str) or not v for v in value) \
            or (known is not None and not set(value) <= known):
        raise ValueError(f"{name} {value!r}: not a list of known names")
    return tuple(value)


def _choice(data: Mapping[str, Any], name: str, valid: Iterable[str] | None,
            optional: bool = True) -> str | None:
    value = data[name]
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or (valid is not None and value not in valid):
        raise ValueError(f"{name} {value!r}: not " + ("a non-empty string" if valid is None
                                                     else f"one of {list(valid)}"))
    return value


def call_case(campaign: Campaign, i: int) -> Case:
    """Call i of the campaign: drawn from the operator's space of valid calls by a
    generator seeded by (seed, i) alone, so any worker makes it from two integers, and a
    restart makes the same call."""
    case = operator(campaign.op).space.random_case(
        np.random.default_rng([campaign.seed, i]), campaign.products, campaign.dtypes, i)
    if case is None:
        raise ValueError("no product offers any of the dtypes")
    return case


#: the failure key of a batch whose executor worker died twice (no verdict of its own)
LOST_KEY = "ERROR|executor-lost"


def lost_batch(campaign: Campaign, batch: int, why: str) -> BatchResult:
    """The result of a batch that never came back (its executor worker died on it, and
    again when it was sent once more): every call of it ERROR, the first one kept (a
    rerun of its record shows whether the kernel ends its process on it)."""
    calls = campaign.calls(batch)
    first = call_case(campaign, calls[0])
    failure = Failure(calls[0], first.to_record(), Verdict.ERROR.value, LOST_KEY,
                      why[:MESSAGE_CHARS])
    rest = {LOST_KEY: len(calls) - 1} if len(calls) > 1 else {}
    return BatchResult(batch, {Verdict.ERROR.value: len(calls)}, (failure,), 0.0, rest)


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
    """What a worker sends back for one batch: verdict counts and the failing calls. The
    journal keeps it compacted: per failure key the failing call of lowest index, and in
    `others` how many more of the batch failed that way."""

    batch: int
    counts: dict[str, int]
    failures: tuple[Failure, ...] = ()
    seconds: float = 0.0
    others: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"batch": self.batch, "counts": self.counts, "seconds": self.seconds,
                "failures": [asdict(f) for f in self.failures], "others": self.others}

    @classmethod
    def from_json(cls, data: Any, campaign: Campaign | None = None) -> BatchResult:
        """A batch record read back, every field checked as untrusted data (types,
        ranges, known verdicts, counts that add up); with `campaign`, also a batch of it
        whose failures are its own calls (each record is call i's, drawn again).
        ValueError naming what is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"a JSON {type(data).__name__}, not an object")
        unknown = set(data) - {"batch", "counts", "seconds", "failures", "others"}
        if unknown or not {"batch", "counts", "failures"} <= set(data):
            raise ValueError("not the fields batch, counts, seconds, failures, others")
        batch = _count(data, "batch", 0)
        calls = None if campaign is None else campaign.calls(batch)
        if campaign is not None and not calls:
            raise ValueError(f"batch {batch} is not one of this campaign's "
                             f"{campaign.batches}")
        counts = _counter(data["counts"], "counts", {v.value for v in Verdict}, 0)
        seconds = data.get("seconds", 0.0)
        if type(seconds) not in (int, float) or not 0 <= seconds < math.inf:
            raise ValueError(f"seconds {seconds!r}: not a finite number >= 0")
        if not isinstance(data["failures"], list):
            raise ValueError("failures: not a list")
        failures = tuple(_failure(f, campaign, calls) for f in data["failures"])
        others = _counter(data.get("others", {}), "others", None, 1)
        verdict_of: dict[str, str] = {}
        for f in failures:
            if verdict_of.setdefault(f.key, f.verdict) != f.verdict:
                raise ValueError(f"key {f.key!r} with two verdicts")
        if len({f.index for f in failures}) < len(failures) or not set(others) <= set(
                verdict_of):
            raise ValueError("a call failing twice, or others of a key without a failure")
        for v in sorted(FAILING):
            listed = sum(f.verdict == v for f in failures) + sum(
                n for k, n in others.items() if verdict_of[k] == v)
            if counts.get(v.value, 0) != listed:
                raise ValueError(f"counts {v.value} {counts.get(v.value, 0)}, but {listed} "
                                 "failing call(s) listed")
        if calls is not None and sum(counts.values()) != len(calls):
            raise ValueError(f"counts add up to {sum(counts.values())} calls, batch {batch} "
                             f"has {len(calls)}")
        return cls(batch, counts, failures, float(seconds), others)

    def compact(self) -> BatchResult:
        """The failing call of lowest index per key, the others counted (what the journal
        keeps: it grows with the distinct failures of each batch, not the failing calls)."""
        kept: dict[str, Failure] = {}
        others = Counter(self.others)
        for f in sorted(self.failures, key=lambda f: f.index):
            if f.key in kept:
                others[f.key] += 1
            else:
                kept[f.key] = f
        return replace(self, failures=tuple(kept.values()), others=dict(others))

    def line(self) -> str:
        """One journal line (JSON, no newline inside)."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))


def _counter(value: Any, what: str, valid: set[str] | None, minimum: int) -> dict[str, int]:
    """{name: count} with known names (when `valid`) and integer counts >= minimum."""
    if not isinstance(value, dict) or any(
            not isinstance(k, str) or len(k) > MAX_TEXT or (valid is not None and k not in valid)
            or type(n) is not int or n < minimum for k, n in value.items()):
        raise ValueError(f"{what}: not a map of known names to integers >= {minimum}")
    return dict(value)


def _failure(data: Any, campaign: Campaign | None, calls: range | None) -> Failure:
    """One failing call of a batch record, checked (ValueError)."""
    fields_ = {"index", "record", "verdict", "key", "message"}
    if not isinstance(data, dict) or set(data) != fields_:
        raise ValueError(f"a failure is not the fields {', '.join(sorted(fields_))}")
    index = _count(data, "index", 0)
    if calls is not None and index not in calls:
        raise ValueError(f"failure of call {index}, not one of the batch's calls "
                         f"{calls.start}..{calls.stop - 1}")
    verdict, key, message, record = (data[k] for k in ("verdict", "key", "message", "record"))
    if verdict not in {v.value for v in FAILING}:
        raise ValueError(f"failure of call {index}: verdict {verdict!r} is not a failing one")
    if not isinstance(key, str) or not 0 < len(key) <= MAX_TEXT or not isinstance(
            message, str) or len(message) > MAX_TEXT or not isinstance(record, dict):
        raise ValueError(f"failure of call {index}: key, message or record mistyped or over "
                         f"{MAX_TEXT} characters")
    if campaign is not None and json.dumps(record, sort_keys=True) != json.dumps(
            call_case(campaign, index).to_record(), sort_keys=True):
        raise ValueError(f"failure of call {index}: its record is not call {index} of this "
                         "campaign")
    return Failure(index, record, verdict, key, message)


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
        self.seen.update(result.others)
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
