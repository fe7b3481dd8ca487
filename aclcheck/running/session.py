"""One `aclcheck verify` run as a library call: open the golden file and the adapter,
select and run the cases (serially or fanned out), apply the known failures and the
baseline, decide the gate and write the reports. What is shown on a console (progress,
the report, the gate's lines) is the caller's: the CLI renders a `VerifyRun`.

Everything the run reads besides the golden file is read before any kernel code runs;
the report paths and their mode are fixed then too (an in-process kernel that changes
the working directory or the umask moves or locks nothing).
"""

from __future__ import annotations

import os
import shlex
import sys
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

from aclcheck.cases import Case, CaseData
from aclcheck.configfile import content_digest
from aclcheck.errors import UsageError
from aclcheck.executors import open_executor
from aclcheck.fanout import slots
from aclcheck.impls.aclnn_options import configure_environment
from aclcheck.impls.base import Implementation
from aclcheck.judging.case.verdicts import CaseVerdict, Verdict
from aclcheck.judging.diagnosis.ranking import DiagnosisEntry, RunDiagnosis, diagnose
from aclcheck.judging.diagnosis.signature import CaseFacts, FactCounts
from aclcheck.judging.gate import xfail
from aclcheck.judging.gate.gate import Gate, GateFinding, GateKind, catch_all, decide
from aclcheck.judging.gate.spool import VerdictSpool
from aclcheck.ops import operator_of
from aclcheck.report import json_report, junit
from aclcheck.report.diff import Diff, run_mismatch
from aclcheck.report.diff import diff as baseline_diff
from aclcheck.report.files import file_mode, write_all
from aclcheck.running import sequences
from aclcheck.running.calls import CaseRunner, RunOptions
from aclcheck.running.config import ACLNN_ONLY, VerifyConfig
from aclcheck.running.probing import Failing, measured, probe_failures
from aclcheck.running.readahead import read_ahead
from aclcheck.running.schedule import (
    CaseSource,
    ProgressFn,
    Schedule,
    iter_verdicts,
    iter_verdicts_parallel,
)
from aclcheck.running.workers.adapter import OpenedImpl, StartingImpl
from aclcheck.running.workers.parent import Heartbeat
from aclcheck.store.digest import golden_digest
from aclcheck.store.dispatch import GoldenFile, open_golden
from aclcheck.store.file_guard import Snapshot
from aclcheck.store.index import IndexEntry
from aclcheck.suite import sharding
from aclcheck.suite.filters import row_filter

#: say(text): a line for the user while the run goes on (a warning, an interruption)
Say = Callable[[str], None]
#: progress(total): the per-verdict progress callback, as a context manager the run opens
#: once it knows how many cases it runs
Progress = Callable[[int], Any]


class GoldenSource:
    """Loads cases from an open golden file (only the parent process reads HDF5)."""

    def __init__(self, gf: GoldenFile) -> None:
        self.gf = gf

    def load(self, case: Case) -> CaseData:
        return self.gf.data(case.id)


def case_records(gf: GoldenFile, rows: Iterable[tuple[str, int]],
                 seen: dict[str, tuple[Case, int]]) -> Iterator[Case]:
    """Each case's record, read when the runner takes it (right before its data: the
    reader reads the record once), noted in `seen` with its position in the index
    until its verdict comes back (rows: (id, position))."""
    for case_id, position in rows:
        case = gf.case(case_id)
        seen[case_id] = (case, position)
        yield case


class Selection:
    """The cases a run judges, as (id, position in the index) in index order, read from
    the index (block by block) each time it is iterated: a run holds no row per case,
    so its memory does not grow with the case count. `shard`: the ids of this shard
    (--shard; None: every selected case)."""

    def __init__(self, index: Sequence[IndexEntry], keep: Callable[[IndexEntry], bool],
                 shard: AbstractSet[str] | None = None) -> None:
        self.index, self.keep, self.shard = index, keep, shard

    def __iter__(self) -> Iterator[tuple[str, int]]:
        for position, entry in enumerate(self.index):
            if self.keep(entry) and (self.shard is None or entry.id in self.shard):
                yield entry.id, position

    def count(self) -> int:
        """How many cases (a pass over the index)."""
        return sum(1 for _ in self)


def start_adapter(impl: str, results: str | None, isolate: bool | None) -> StartingImpl:
    """The adapter for --impl / --results, loading (where it lives:
    running.workers.adapter.open_impl); the caller opens it once it has read cases ahead."""
    if results is not None:
        from aclcheck.impls.results_impl import ResultsImpl

        return StartingImpl(results, False,
                            opened=OpenedImpl(ResultsImpl(results), None, isolated=False))
    return StartingImpl(impl, isolate)


#: where a run keeps its verdicts in order: a list, or a VerdictSpool (on disk: memory
#: independent of the case count), owned by the caller
Verdicts = list[CaseVerdict] | VerdictSpool


class FactsLog:
    """The signature facts of each judged case, in the verdicts' order, at 4 bytes a case:
    each distinct facts (case id and verdict left out, its texts and axes shared) is kept
    once and a case keeps its number. Distinct facts are few (family, layout, rank,
    product, dtype, window kinds: a bounded product), so memory does not grow with the
    case count as a list of facts would."""

    def __init__(self) -> None:
        self._table: list[CaseFacts] = []
        self._numbers: dict[CaseFacts, int] = {}
        self._parts: dict[object, object] = {}  # equal texts and axes: one object
        self._cases = array("I")  # 0: no facts, k: self._table[k - 1]

    def append(self, found: CaseFacts | None) -> None:
        if found is None:
            self._cases.append(0)
            return
        k = self._numbers.get(found)
        if k is None:
            share = self._parts.setdefault
            found = replace(found, family=share(found.family, found.family),
                            layout=share(found.layout, found.layout),
                            product=share(found.product, found.product),
                            dtype=share(found.dtype, found.dtype),
                            axes=share(found.axes, found.axes))
            self._table.append(found)
            k = self._numbers[found] = len(self._table)
        self._cases.append(k)

    def __len__(self) -> int:
        return len(self._cases)

    def tally(self, verdicts: Iterable[CaseVerdict]) -> FactCounts:
        """Each distinct facts with the verdict of its cases (`verdicts`: the judged
        cases' in order, known failures applied; an interrupted run may have one fact
        more), counted; in the order each first appears."""
        counts: Counter[tuple[int, str]] = Counter()
        for v, k in zip(verdicts, self._cases, strict=False):
            if k:
                counts[(k, v.verdict.value)] += 1
        return {replace(self._table[k - 1], verdict=verdict): n
                for (k, verdict), n in counts.items()}


@dataclass
class RunState:
    """What a run has done so far (kept when it is interrupted): verdicts in order, the
    size of the selection (before --shard), how many cases this run was to judge, and
    the signature facts of each judged case, in the verdicts' order (the diagnosis; the
    records are not kept); for the JSON report, what `merge` compares: the golden file's
    digest (when a JSON report is written) and the run's verdict_options."""

    verdicts: Verdicts = field(default_factory=list)
    selected: int = 0
    planned: int = 0
    facts: FactsLog = field(default_factory=FactsLog)
    golden_digest: str | None = None
    verdict_options: dict[str, Any] = field(default_factory=dict)
    failed: Failing = field(default_factory=Failing)  # FAIL cases the probe may measure
    measured: tuple[DiagnosisEntry, ...] = ()  # the probe's diagnosis entries (running.probing)
    changed: dict[int, CaseVerdict] = field(default_factory=dict)  # by running.sequences

    def judged(self, case: Case, verdict: CaseVerdict) -> None:
        """Note a verdict's case (its facts, without its id: the signature groups by the
        others; nor its verdict: known failures may change it, the end sets it)."""
        hooks = operator_of(case).diagnosis
        found = None
        if hooks is not None:
            found = replace(hooks.facts(case, ""), case_id="")
        self.facts.append(found)


@dataclass(frozen=True)
class ReportTargets:
    """Where the reports go and with which mode, fixed before the first call."""

    paths: dict[str, str]
    mode: int

    @classmethod
    def now(cls, config: VerifyConfig) -> ReportTargets:
        return cls({flag: os.path.abspath(p) for flag, p in config.outputs.items()},
                   file_mode())


@dataclass(frozen=True)
class VerifyRun:
    """What a verify run did: the verdicts (known failures applied), the gate, the
    changes against a baseline, reports that could not be written (by flag, why)."""

    config: VerifyConfig
    implementation: str
    isolation: str  # "workers", "in-process" or "stored results"
    verdicts: Sequence[CaseVerdict]
    gate: Gate
    changes: Diff | None
    lost: dict[str, str]
    interrupted: bool
    diagnosis: RunDiagnosis | None = None  # what the failures say (magnitude, signature)


def run_selection(config: VerifyConfig, starting: StartingImpl, opts: RunOptions,
                  state: RunState, progress: Progress, heartbeat: Heartbeat | None = None,
                  on_open: Callable[[Implementation], None] | None = None) -> None:
    """Select cases from the golden file, read cases ahead while the adapter loads, open
    it (`on_open` sees it first), run them (serially or fanned out), in order, appending
    each verdict (with its repro line) to `state` as it comes, so an interruption keeps
    them; then the sequence stage (running.sequences; --after's calls come first) notes
    the verdicts it changes in `state.changed`. The runner owns the adapter's zygote from
    here."""
    shard = sharding.parse_shard(config.shard) if config.shard else None
    done = state.verdicts
    with open_golden(config.golden) as gf:
        keep = row_filter(gf.index, **config.selection())
        chosen = Selection(gf.index, keep)
        state.selected = state.planned = chosen.count()
        if shard is not None and state.selected:  # sizes of every selected case, once
            mine = sharding.select([(e.id, e.nbytes) for e in gf.index if keep(e)], *shard)
            chosen = Selection(gf.index, keep, mine)
            state.planned = len(mine)
        if not state.planned:
            raise UsageError(f"{config.golden}: no case matches the selection"
                             + (f" (shard {config.shard} is empty)" if state.selected else ""))
        if config.json_path:  # what the cases are, for `merge` (reads /index once)
            state.golden_digest = golden_digest(gf)
        seen: dict[str, tuple[Case, int]] = {}
        cases: Iterable[Case] = case_records(gf, chosen, seen)
        source: CaseSource = GoldenSource(gf)
        cases, source = read_ahead(cases, source, starting.loaded)  # while it imports
        opened = starting.open()
        adapter, zygote = opened.impl, opened.zygote
        if on_open is not None:
            on_open(adapter)
        early = sequences.first(config, adapter, opts, case_records(gf, chosen, {}),
                                GoldenSource(gf).load)  # --after: before the run
        sample = sequences.Sample.of(config, early)
        runner: CaseRunner | None = None  # the serial run's, reused by the probe
        try:
            with progress(state.planned) as step, \
                    open_executor(config.jobs, config.executor) as pool:
                schedule: Schedule
                if pool is None:  # serial or pipelined
                    runner = CaseRunner(adapter, opts, heartbeat, zygote)
                    schedule = partial(iter_verdicts, runner=runner)
                else:  # fanned out
                    if not adapter.spec:
                        raise UsageError(f"{adapter.name} cannot run in worker processes; "
                                         "drop --jobs / --executor")
                    schedule = partial(iter_verdicts_parallel, pool=pool,
                                       window=max(2 * slots(pool), 8))
                for v in schedule(adapter, cases, source, opts, progress=step):
                    case, position = seen.pop(v.case_id)
                    state.judged(case, v)
                    if v.verdict is Verdict.FAIL:
                        state.failed.add(case)
                    v = replace(v, index=position, repro=config.repro(v.case_id))
                    sample.offer(case, len(done), v)
                    done.append(v)
            if sample.due:  # verdicts change where a call before changes the answer
                runner = runner or CaseRunner(adapter, opts)
            state.changed = sequences.stage(runner if sample.due else None, sample, done,
                                            source.load, config.repro, early)
            if state.failed.count and config.probe is not False and not config.results \
                    and config.probe_budget > 0:  # never a verdict: the diagnosis only
                runner = runner or CaseRunner(adapter, opts)
                state.measured = measured(
                    probe_failures(runner, state.failed.cases(), source.load,
                                   config.probe_budget), state.failed.count)
        finally:
            if runner is not None:
                runner.close()


def run_verify(config: VerifyConfig, progress: Progress, say: Say,
               heartbeat: Heartbeat | None = None,
               verdicts: Verdicts | None = None) -> VerifyRun:
    """Run, gate and write the reports of one verify run (config.check() first).
    `verdicts`: where the run keeps its verdicts (empty; the caller's, read through the
    returned run; default a list)."""
    restore = configure_environment(  # the aclnn options, inherited by workers
        config.aclnn_lib_dirs, config.aclnn_device,
        config.products if config.impl == "aclnn" else ())
    try:
        return _run(config, progress, say, heartbeat, [] if verdicts is None else verdicts)
    finally:
        restore()


def isolation_mode(config: VerifyConfig, opened: OpenedImpl) -> str:
    """How the calls ran, as the reports record it."""
    if config.results is not None:
        return "stored results"
    return "workers" if opened.isolated else "in-process"


def _run(config: VerifyConfig, progress: Progress, say: Say,
         heartbeat: Heartbeat | None, verdicts: Verdicts) -> VerifyRun:
    inputs, _ = config.file_roles()
    read_during_run = Snapshot([r for r in inputs if r.flag == "GOLDEN"])
    targets = ReportTargets.now(config)
    opts = config.run_options()  # every input but the golden file is read now,
    xfails = xfail.load_xfails(config.xfail) if config.xfail else None  # before any kernel code
    baseline = json_report.read(config.baseline) if config.baseline else None
    here = {"golden": str(config.golden)}
    if baseline is not None and (mismatch := run_mismatch(baseline[0], here, "golden")):
        raise UsageError(f"--baseline {config.baseline} is a report of another golden file "
                         f"({mismatch}); compare such runs with `aclcheck diff --force`")

    def check_baseline(adapter: Implementation) -> None:
        if baseline is not None and (mismatch := run_mismatch(
                baseline[0], {"implementation": adapter.name}, "implementation")):
            say(f"aclcheck: warning: --baseline is a report of another run ({mismatch})")

    options = verdict_options(config)  # the lists' bytes too, before any kernel code
    starting = start_adapter(config.impl, config.results, config.isolate)
    state = RunState(verdicts, verdict_options=options)
    interrupted = False
    try:
        run_selection(config, starting, opts, state, progress, heartbeat, check_baseline)
    except KeyboardInterrupt:
        if starting.opened is None:  # still loading the adapter: nothing to report
            raise
        # keep what was judged: report it (marked) and exit 130
        interrupted = True
        say(f"aclcheck: interrupted after {len(state.verdicts)} cases; reporting those")
    finally:
        starting.close()
    opened = starting.opened
    assert opened is not None
    adapter = opened.impl
    judged = sequences.with_changes(state.verdicts, state.changed)
    if xfails is not None:
        judged = xfail.applied(judged, xfails, adapter.name)  # read, not kept
    problems = [GateFinding(GateKind.INPUT_CHANGED, detail=f"{r.flag} {r.path}")
                for r in read_during_run.changed()]
    changes = baseline_diff(baseline[1], judged) if baseline is not None else None
    failing = None
    if changes is not None:  # against a baseline only what got worse gates
        failing = [now for _, now in changes.new_failures
                   if now.failing or config.strict_xfail]
    gate = decide(judged, strict_xfail=config.strict_xfail, failing=failing,
                  catch_all_entries=catch_all(xfails.entries, judged, adapter.name)
                  if xfails is not None else (), problems=problems)
    mode = isolation_mode(config, opened)
    diagnosis = run_diagnosis(judged, state.facts, state.measured)
    lost = write_reports(config, targets, adapter.name, state, judged, interrupted, mode,
                         diagnosis)
    return VerifyRun(config, adapter.name, mode, judged, gate, changes, lost, interrupted,
                     diagnosis)


def verdict_options(config: VerifyConfig) -> dict[str, Any]:
    """Every option that can change a verdict (those the repro line carries: VerifyConfig's
    field metadata, so a new one is never left out) by flag, with the value this run
    used, defaults included; the files of --tolerances and --xfail by their content
    ('blake2b:<hex>' of their bytes), not their name. `merge` joins only shards whose
    options are equal."""
    options: dict[str, Any] = {}
    for f in fields(config):
        carried = f.metadata["repro"]
        if f.name == "golden" or not carried or (carried == ACLNN_ONLY
                                                 and config.impl != "aclnn"):
            continue
        value = getattr(config, f.name)
        if f.name == "standards":
            value = config.standard_names
        elif f.name in ("tolerances", "xfail") and value is not None:
            value = content_digest(f.metadata["flag"], value)
        options[f.metadata["flag"]] = list(value) if isinstance(value, tuple) else value
    return options


def run_diagnosis(verdicts: Sequence[CaseVerdict], facts: FactsLog,
                  measured: tuple[DiagnosisEntry, ...] = ()) -> RunDiagnosis:
    """The diagnosis of a run from its verdicts (known failures applied) and the
    signature facts of the cases they judged, in the same order: counted, so it costs
    the distinct facts, not a record a case; the probe's entries (`measured`) lead."""
    return diagnose(verdicts, facts.tally(verdicts), measured)


def write_reports(config: VerifyConfig, targets: ReportTargets, implementation: str,
                  state: RunState, verdicts: Sequence[CaseVerdict], interrupted: bool,
                  isolation: str, diagnosis: RunDiagnosis | None = None) -> dict[str, str]:
    """Write the JSON, JUnit and HTML reports, each on its own; why any was lost, by flag."""
    extra: dict[str, Any] = {"command": shlex.join(["aclcheck", *sys.argv[1:]]),
                             "interrupted": interrupted, "isolation": isolation,
                             "selection": {k: list(v) if isinstance(v, tuple) else v
                                           for k, v in config.selection().items()},
                             "selected": state.selected, "planned": state.planned,
                             "verdict_options": state.verdict_options}
    if state.golden_digest is not None:
        extra["golden_digest"] = state.golden_digest
    if config.shard:
        extra["shard"] = config.shard
    writers: dict[str, Callable[[], None]] = {}
    paths = targets.paths
    report = json_report.build(verdicts, implementation=implementation,
                               standards=config.standard_names, golden=str(config.golden),
                               extra=extra) if config.json_path or config.html_path else {}
    if report and diagnosis is not None:
        report["summary"].update(diagnosis.summary_json())
        report["diagnosis"] = diagnosis.entries_json()
    if config.json_path:
        writers["--json"] = partial(json_report.write, paths["--json"], report,
                                    mode=targets.mode)
    if config.junit_path:
        name = f"aclcheck {implementation} {Path(config.golden).name}"
        writers["--junit"] = partial(junit.write, paths["--junit"], verdicts,
                                     suite_name=name, properties={"isolation": isolation},
                                     mode=targets.mode)
    if config.html_path:
        from aclcheck.report import html as html_report  # matplotlib: only when asked

        writers["--html"] = partial(html_report.write, paths["--html"], report, verdicts,
                                    mode=targets.mode)
    return write_all(writers)


__all__ = ["FactsLog", "GoldenSource", "ProgressFn", "RunState", "Selection", "VerifyRun",
           "start_adapter", "run_selection", "run_verify", "write_reports"]
