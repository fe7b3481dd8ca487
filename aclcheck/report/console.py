"""Rich console rendering of verdicts (also recorded for the HTML report)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from aclcheck.baseline import Diff
from aclcheck.report.errormap import error_map
from aclcheck.verdicts import CaseVerdict, Verdict, summarize, summary_line

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


def _metric(v: CaseVerdict, key: str) -> str:
    value = v.metrics.get(key)
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def case_table(verdicts: Sequence[CaseVerdict], title: str) -> Table:
    table = Table(title=title, show_lines=False)
    table.add_column("case", overflow="fold")
    table.add_column("verdict")
    table.add_column("max ULP", justify="right")
    table.add_column("max abs err", justify="right")
    table.add_column("why", overflow="fold")
    for v in verdicts:
        table.add_row(v.case_id, Text(v.verdict.value, style=STYLE[v.verdict]),
                      _metric(v, "max_ulp"), _metric(v, "max_abs_err"), v.message)
    return table


def matrix_table(verdicts: Sequence[CaseVerdict]) -> Table:
    """Counts by product x dtype x format."""
    groups: dict[tuple[str, str, str], list[CaseVerdict]] = defaultdict(list)
    for v in verdicts:
        groups[(v.product, v.dtype, v.format)].append(v)
    table = Table(title="by product x dtype x format")
    for name in ("product", "dtype", "format"):
        table.add_column(name)
    for name in ("cases", "pass", "fail", "skip", "other"):
        table.add_column(name, justify="right")
    for key in sorted(groups):
        s = summarize(groups[key])
        bad = s["failed"] + s["wrong_status"] + s["unimplemented"] + s["nondeterministic"] \
            + s["error"]
        other = s["mistrusted"] + s["xfailed"] + s["xpassed"]
        table.add_row(*key, str(s["cases"]), str(s["passed"]),
                      Text(str(bad), style="bold red" if bad else ""), str(s["skipped"]),
                      str(other))
    return table


def render(console: Console, verdicts: Sequence[CaseVerdict], *, implementation: str,
           verbose: bool = False, max_details: int = 20) -> None:
    """Failing-case table and details, matrix, notes, and the one-line summary."""
    failing = [v for v in verdicts if v.failing or v.verdict == Verdict.XPASS]
    shown = list(verdicts) if verbose else failing
    if shown:
        title = "all cases" if verbose else "nonconforming cases"
        console.print(case_table(shown, f"{implementation}: {title}"))
    for v in failing[:max_details]:
        console.rule(f"[bold]{v.case_id}[/] {v.verdict.value}", style="red")
        # the detail opens with the gating standard's verdict line: no need to repeat it
        console.print(Text(v.detail if v.detail else v.message))
        if v.evidence is not None:
            console.print(error_map(v.evidence, console.width))
        for note in v.notes:
            console.print(Text(f"note: {note}", style="dim"))
        if v.repro:
            console.print(Text(f"repro: {v.repro}", style="cyan"), soft_wrap=True)  # copyable
    if len(failing) > max_details:
        console.print(f"... {len(failing) - max_details} more nonconforming cases "
                      "(see the JSON report, or filter with --id)")
    console.print(matrix_table(verdicts))
    divergences = [(v.case_id, n) for v in verdicts for n in v.notes
                   if n.startswith("documentation divergence")]
    if divergences:
        table = Table(title="documentation divergences (reported, not judged)")
        table.add_column("case", overflow="fold")
        table.add_column("what the implementation did", overflow="fold")
        for cid, note in divergences:
            table.add_row(cid, note.removeprefix("documentation divergence: "))
        console.print(table)
    if verbose:
        path_notes = [(v.case_id, n) for v in verdicts for n in v.notes
                      if not n.startswith("documentation divergence")]
        for cid, note in path_notes:
            console.print(Text(f"{cid}: {note}", style="dim"))
    line = summary_line(summarize(verdicts))
    style = "bold red" if failing else "bold green"
    console.print(Text(line, style=style), soft_wrap=True)


def render_diff(console: Console, d: Diff, old_name: str) -> None:
    """New failures, fixed cases and metric regressions against a baseline report."""
    table = Table(title=f"against baseline {old_name}")
    table.add_column("change")
    table.add_column("case", overflow="fold")
    table.add_column("before")
    table.add_column("now")
    for was, now in d.new_failures:
        table.add_row(Text("NEW FAILURE", style="bold red"), now.case_id,
                      was.verdict.value if was else "(absent)", now.verdict.value)
    for was, now in d.fixed:
        table.add_row(Text("fixed", style="green"), now.case_id, was.verdict.value,
                      now.verdict.value)
    for was, now in d.changed:
        table.add_row("changed", now.case_id, was.verdict.value, now.verdict.value)
    for r in d.regressions:
        table.add_row(Text("regression", style="yellow"), r.case_id, f"{r.metric} {r.old:g}",
                      f"{r.metric} {r.new:g}")
    if table.row_count:
        console.print(table)
    console.print(Text(
        f"baseline: new failures: {len(d.new_failures)} still failing: "
        f"{len(d.still_failing)} fixed: {len(d.fixed)} regressions: {len(d.regressions)} "
        f"added: {len(d.added)} removed: {len(d.removed)}",
        style="bold red" if d.worse else "bold green"), soft_wrap=True)
