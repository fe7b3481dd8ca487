"""Rich console rendering of verdicts (also recorded for the HTML report).

Every text that comes from data goes through safe_text.data_text: never markup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from rich.console import Console, RenderableType
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from aclcheck.judging.case.magnitude import CLASS_ORDER
from aclcheck.judging.case.verdicts import (
    FAILING,
    SUMMARY_KEYS,
    CaseVerdict,
    Verdict,
    divergence_note,
    summary_of,
    summary_text,
)
from aclcheck.judging.diagnosis.ranking import RunDiagnosis
from aclcheck.judging.diagnosis.signature import GroupRow, compact
from aclcheck.judging.diagnosis.vendor import (
    VendorAgreement,
    agreement_line,
    shown_status,
)
from aclcheck.judging.gate.gate import Gate, GateKind
from aclcheck.report.diff import Diff
from aclcheck.report.errormap import error_map
from aclcheck.report.safe_text import data_text, printable

#: Diagnosis entries the console shows (the JSON report has them all).
MAX_ENTRIES = 3

STYLE: dict[Verdict, str] = {
    Verdict.PASS: "green",
    Verdict.FAIL: "bold red",
    Verdict.WRONG_STATUS: "bold red",
    Verdict.UNIMPLEMENTED: "bold red",
    Verdict.NONDETERMINISTIC: "bold magenta",
    Verdict.ERROR: "bold red",
    Verdict.SKIP: "dim",
    Verdict.MISTRUSTED: "yellow",
    Verdict.XFAIL: "yellow",
    Verdict.XPASS: "cyan",
}


def _metric(v: CaseVerdict, key: str) -> Text:
    value = v.metrics.get(key)
    if value is None:
        return Text("")
    if isinstance(value, float):
        return Text(f"{value:.3g}")
    return data_text(value)  # reports are files anyone can edit


def case_table(verdicts: Sequence[CaseVerdict], title: str) -> Table:
    table = Table(title=data_text(title), show_lines=False)
    table.add_column("case", overflow="fold")
    table.add_column("verdict")
    table.add_column("max ULP", justify="right")
    table.add_column("max abs err", justify="right")
    table.add_column("why", overflow="fold")
    for v in verdicts:
        table.add_row(data_text(v.case_id), Text(v.verdict.value, style=STYLE[v.verdict]),
                      _metric(v, "max_ulp"), _metric(v, "max_abs_err"), data_text(v.message))
    return table


def matrix_table(counted: Counted) -> Table:
    """Counts by product x dtype x format, one column per summary key that occurs (the
    same names and counts as the summary line, so the columns add up to it)."""
    groups = {combo: summary_of(c) for combo, c in counted.combos.items()}
    total = summary_of(counted.total)
    keys = [key for key, verdict in SUMMARY_KEYS
            if verdict in (None, Verdict.PASS) or total[key]]
    verdict_of = dict(SUMMARY_KEYS)
    table = Table(title="by product x dtype x format")
    for name in ("product", "dtype", "format"):
        table.add_column(name)
    for key in keys:
        table.add_column(key, justify="right")
    for group in sorted(groups):
        s = groups[group]
        cells = [Text(str(s[key]), style=_count_style(verdict_of[key], s[key]))
                 for key in keys]
        table.add_row(*(data_text(x) for x in group), *cells)
    return table


def _count_style(verdict: Verdict | None, count: int) -> str:
    return STYLE[verdict] if count and verdict in FAILING else ""


#: Size classes, largest errors first (a group's order); other verdicts after them.
_SIZE_ORDER = {c.value: i for i, c in enumerate(CLASS_ORDER)}


def _size(v: CaseVerdict) -> str:
    return v.magnitude.cls.value if v.magnitude is not None else ""


def _severity(v: CaseVerdict) -> tuple[int, float]:
    """Sort key, worst first: the size class, then how far over its budget."""
    ratio = v.magnitude.max_ratio if v.magnitude is not None else 0.0
    return (_SIZE_ORDER.get(_size(v), len(_SIZE_ORDER)), -ratio)


class SignatureGroups:
    """Nonconforming cases grouped by verdict, family and size class, a case kept per
    group (the worst: the first of the worst), fed one verdict at a time."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str, str], tuple[int, CaseVerdict]] = {}

    def add(self, v: CaseVerdict) -> None:
        key = (v.verdict.value, v.family, _size(v))
        count, worst = self.groups.get(key, (0, v))
        self.groups[key] = (count + 1, v if _severity(v) < _severity(worst) else worst)

    def result(self) -> list[tuple[int, CaseVerdict]]:
        """(how many, the worst case) per group, by the worst case (then the larger group
        first)."""
        return sorted(self.groups.values(),
                      key=lambda g: (_severity(g[1]), -g[0], g[1].case_id))


class DivergenceGroups:
    """Cases that pass with a documentation divergence, grouped by family and kind (what
    the documentation leaves open, what the implementation did), a case kept per group
    (the first), fed one verdict at a time."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], tuple[int, str, str, str]] = {}

    def add(self, v: CaseVerdict) -> None:
        if v.divergence:
            key = (v.family, v.divergence_kind)
            count, family, case_id, what = self.groups.get(
                key, (0, v.family, v.case_id, v.divergence))
            self.groups[key] = (count + 1, family, case_id, what)

    def result(self) -> list[tuple[int, str, str, str]]:
        """(how many, family, the first case's id, what it did) per group, in the order
        first seen."""
        return list(self.groups.values())


def _shown(v: CaseVerdict) -> bool:
    """A case the console details: nonconforming, or an unexpected pass."""
    return v.failing or v.verdict == Verdict.XPASS


class Counted:
    """What the console's headline, groups, matrix, divergences and summary line need of
    every verdict, from one pass: a run's verdicts may be on disk (a VerdictSpool), and
    each pass reads and unpickles them all again."""

    def __init__(self) -> None:
        self.total: Counter[Verdict] = Counter()
        self.combos: dict[tuple[str, str, str], Counter[Verdict]] = {}
        self.signatures = SignatureGroups()
        self.divergences = DivergenceGroups()
        self.vendor = VendorAgreement()
        self.shown = 0

    def add(self, v: CaseVerdict) -> None:
        self.total[v.verdict] += 1
        self.vendor.add(v)
        self.combos.setdefault((v.product, v.dtype, v.format), Counter())[v.verdict] += 1
        if _shown(v):
            self.shown += 1
            self.signatures.add(v)
        self.divergences.add(v)

    @classmethod
    def of(cls, verdicts: Iterable[CaseVerdict]) -> Counted:
        """Every verdict counted, in one pass."""
        counted = cls()
        for v in verdicts:
            counted.add(v)
        return counted


def divergence_table(groups: Sequence[tuple[int, str, str, str]]) -> Table:
    """One row per group of divergent cases: how many, and its first case."""
    table = Table(title="documentation divergences (reported, not judged; grouped by "
                  "kind, -v lists every case)")
    table.add_column("cases", justify="right")
    table.add_column("family")
    table.add_column("first case", overflow="fold")
    table.add_column("what the implementation did (first case)", overflow="fold")
    for count, family, case_id, what in groups:
        table.add_row(str(count), data_text(family or "-"), data_text(case_id),
                      data_text(what))
    return table


def group_table(groups: Sequence[tuple[int, CaseVerdict]], title: str) -> Table:
    """One row per group: how many cases, the verdict, family and size, its worst case."""
    table = Table(title=data_text(title), show_lines=False)
    table.add_column("cases", justify="right")
    table.add_column("verdict")
    table.add_column("family")
    table.add_column("worst case", overflow="fold")
    table.add_column("why (worst case)", overflow="fold")
    for count, v in groups:
        table.add_row(str(count), Text(v.verdict.value, style=STYLE[v.verdict]),
                      data_text(v.family), data_text(v.case_id), data_text(v.message))
    return table


def diagnosis_block(console: Console, diagnosis: RunDiagnosis) -> None:
    """The size of the errors, what explains them, the groups of cases that differ."""
    if diagnosis.headline:
        console.print(data_text(f"size: {diagnosis.headline}", "bold"), soft_wrap=True)
    for i, entry in enumerate(diagnosis.entries[:MAX_ENTRIES]):
        lead = "explained by" if i == 0 else "also"
        console.print(data_text(f"{lead}: {entry.message()} [{entry.code.value}]",
                                "bold" if i == 0 else ""), soft_wrap=True)
    if diagnosis.differing:
        console.print(signature_table(diagnosis.differing))


def signature_table(rows: Sequence[GroupRow]) -> Table:
    """One row per grouping whose groups differ: the groups with failures (failing of
    cases) and the groups without."""
    table = Table(title="failure signature: groupings whose groups differ")
    table.add_column("grouped by")
    table.add_column("failing (of cases)", overflow="fold")
    table.add_column("passing", overflow="fold")
    for name, bad, good in compact(rows):
        table.add_row(data_text(name), data_text(bad, "red"), data_text(good, "green"))
    return table


def failure_block(console: Console, v: CaseVerdict) -> None:
    """One nonconforming case: a rule with its id and verdict, the detail (the gating
    standard's line, metrics, worst elements), notes and the repro command. Pictures
    of where the errors sit belong right after the detail."""
    title = Text.assemble(data_text(v.case_id, "bold"), f" {v.verdict.value}")
    console.rule(title, style="yellow" if v.verdict == Verdict.XFAIL else "red")
    # the detail opens with the gating standard's verdict line: no need to repeat it
    console.print(data_text(v.detail if v.detail else v.message))
    for line in v.clues.lines() if v.clues is not None else ():
        console.print(data_text(line, "bold"))
    if v.evidence is not None:
        console.print(error_map(v.evidence, console.width))
    for note in v.notes:
        console.print(data_text(f"note: {note}", "dim"))
    if v.repro:
        console.print(data_text(f"repro: {v.repro}", "cyan"), soft_wrap=True)  # copyable


def _headline(counts: Counter[Verdict]) -> str:
    """`97 of 548 cases nonconforming` / `no nonconforming case (428 of 548 judged)`."""
    cases = counts.total()
    failing = sum(counts[v] for v in FAILING)
    if failing:
        return f"{failing} of {cases} cases nonconforming"
    return f"no nonconforming case ({cases - counts[Verdict.SKIP]} of {cases} judged)"


def render(console: Console, verdicts: Sequence[CaseVerdict], *, implementation: str,
           verbose: bool = False, max_details: int = 20, json_report: str | None = None,
           diagnosis: RunDiagnosis | None = None) -> None:
    """Top-down: the headline (the implementation named), the diagnosis, nonconforming
    cases grouped by signature (one per group, worst first), their details, the
    matrix, notes, and the one-line summary.

    Without `verbose`: one row and one detail per group (the first `max_details`
    groups); with it every case and the details of every nonconforming case and known
    failure. `json_report` is a report that holds every case, named when cases were
    left out.
    """
    counted = Counted.of(verdicts)  # one pass for every count below (they may be on disk)
    failing = counted.shown
    console.print(Text(f"aclcheck: {implementation}: {_headline(counted.total)}",
                       style="bold red" if failing else "bold green"), soft_wrap=True)
    if diagnosis is not None:
        diagnosis_block(console, diagnosis)
    if verbose:
        print_in_pieces(console, case_table(verdicts, f"{implementation}: all cases"))
        for v in filter(_shown, verdicts):
            failure_block(console, v)
        for v in verdicts:  # known failures too: what they look like today
            if v.verdict == Verdict.XFAIL:
                failure_block(console, v)
        hidden = 0
    else:
        groups = counted.signatures.result()
        if groups:
            console.print(group_table(groups, f"{implementation}: nonconforming cases by "
                                      "signature (worst first; -v lists every case)"))
        for _, v in groups[:max_details]:
            failure_block(console, v)
        hidden = failing - min(max_details, len(groups))
    if hidden > 0:
        where = f"the JSON report {json_report} has them all; " if json_report else ""
        console.print(data_text(f"... {hidden} more nonconforming cases "
                                f"({where}-v shows every one, --id selects one)"))
    console.print(matrix_table(counted))
    if verbose:
        table = Table(title="documentation divergences (reported, not judged)")
        table.add_column("case", overflow="fold")
        table.add_column("what the implementation did", overflow="fold")
        for v in verdicts:
            if v.divergence:
                table.add_row(data_text(v.case_id), data_text(v.divergence))
        if table.row_count:
            print_in_pieces(console, table)  # a row a divergence: thousands in a large run
    elif divergent := counted.divergences.result():
        console.print(divergence_table(divergent))
    if verbose:
        path_notes = [(v.case_id, n) for v in verdicts for n in v.notes
                      if v.divergence is None or n != divergence_note(v.divergence)]
        for cid, note in path_notes:
            console.print(data_text(f"{cid}: {note}", "dim"))
    if counted.vendor.stated:
        vendor_block(console, counted.vendor)
    line = summary_text(summary_of(counted.total))
    style = "bold red" if failing else "bold green"
    console.print(Text(line, style=style), soft_wrap=True)


def vendor_block(console: Console, a: VendorAgreement) -> None:
    """The imported vendor cases whose expected status another side does not share, and
    the counts (the vendor's tests beside aclcheck's contract and the implementation)."""
    if a.parted:
        table = Table(title="vendor tests: where the vendor's expected status and "
                      "another side part")
        for column in ("case", "source", "vendor expects", "aclcheck predicts",
                       "implementation"):
            table.add_column(column, overflow="fold")
        for p in a.parted:
            table.add_row(data_text(p.case_id), data_text(p.source), shown_status(p.vendor),
                          shown_status(p.contract), shown_status(p.implementation))
        console.print(table)
    console.print(data_text(agreement_line(a)), soft_wrap=True)


def print_in_pieces(console: Console, renderable: RenderableType, lines: int = 256) -> None:
    """`console.print(renderable)`, the same bytes, written `lines` lines at a time: rich
    holds all of one print's output until it is written, and a table of a row a case
    held every line of it (its cells stay: rich lays the table out from all of them)."""
    options = console.options.update(justify=None, overflow=None, height=None,
                                     no_wrap=None, markup=None, highlight=None)
    piece: list[Segment] = []
    for n, line in enumerate(Segment.split_and_crop_lines(
            console.render(renderable, options), console.width, pad=False), 1):
        piece += line
        if n % lines == 0:
            console.print(Segments(piece))
            piece = []
    if piece:
        console.print(Segments(piece))


def render_diff(console: Console, d: Diff, old_name: str) -> None:
    """New failures, fixed cases and metric regressions against a baseline report."""
    table = Table(title=data_text(f"against baseline {old_name}"))
    table.add_column("change")
    table.add_column("case", overflow="fold")
    table.add_column("before")
    table.add_column("now")
    for was, now in d.new_failures:
        table.add_row(Text("NEW FAILURE", style="bold red"), data_text(now.case_id),
                      was.verdict.value if was else "(absent)", now.verdict.value)
    for was, now in d.fixed:
        table.add_row(Text("fixed", style="green"), data_text(now.case_id),
                      was.verdict.value, now.verdict.value)
    for was, now in d.now_known:
        table.add_row(Text("now known", style="yellow"), data_text(now.case_id),
                      was.verdict.value, now.verdict.value)
    for was, now in d.unjudged:
        table.add_row(Text("not judged now", style="yellow"), data_text(now.case_id),
                      was.verdict.value, now.verdict.value)
    for was, now in d.changed:
        table.add_row("changed", data_text(now.case_id), was.verdict.value,
                      now.verdict.value)
    for r in d.regressions:
        table.add_row(Text("regression", style="yellow"), data_text(r.case_id),
                      data_text(f"{r.metric} {r.old:g}"), data_text(f"{r.metric} {r.new:g}"))
    if table.row_count:
        console.print(table)
    console.print(Text(
        f"baseline: new failures: {len(d.new_failures)} still failing: "
        f"{len(d.still_failing)} fixed: {len(d.fixed)} now known: {len(d.now_known)} "
        f"not judged now: {len(d.unjudged)} regressions: {len(d.regressions)} "
        f"added: {len(d.added)} removed: {len(d.removed)}",
        style="bold red" if d.worse else "bold green"), soft_wrap=True)


def gate_lines(gate: Gate) -> list[str]:
    """The gate's findings as lines for stderr (a nonconformance is the summary's)."""
    lines = []
    for finding, failing in [(f, True) for f in gate.findings] + [
            (f, False) for f in gate.warnings]:
        lead = "aclcheck: gate failed:" if failing else "aclcheck: warning:"
        detail = printable(finding.detail)
        if finding.kind == GateKind.NOTHING_JUDGED:
            what = "no valid call" if finding.valid_only else "no case"
            lines.append(f"{lead} {what} was judged" + (
                f": all {finding.count} were SKIP or MISTRUSTED (or undocumented calls, "
                "which never fail)" if finding.count else "")
                + (f"; first SKIP: {detail}" if detail else ""))
        elif finding.kind == GateKind.XFAIL_MATCHES_ALL:
            lines.append(f"{lead} the known-failure entry id = {detail!r} matches every "
                         f"case of this run ({finding.count}): it cannot tell a known "
                         "failure from a new one" + ("" if failing else
                                                      " (--strict-xfail fails the gate)"))
        elif finding.kind == GateKind.INPUT_CHANGED:
            lines.append(f"{lead} {detail} changed while the run read it: its verdicts "
                         "cannot be trusted")
    return lines
