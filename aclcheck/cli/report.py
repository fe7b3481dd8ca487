"""`aclcheck report`: draw the HTML report of a saved JSON report, without rerunning."""

from __future__ import annotations

import click

from aclcheck.cli.common import handle_errors, stderr_console
from aclcheck.errors import EXIT_CODES_HELP
from aclcheck.report import json_report
from aclcheck.report.safe_text import printable
from aclcheck.store.atomic import check_output_path
from aclcheck.store.file_guard import Role, check_apart


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("report_path", metavar="REPORT.json", type=click.Path(dir_okay=False))
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False),
              help="Write the HTML page here (one self-contained file).")
@handle_errors
def report(report_path: str, html_path: str) -> None:
    """Render REPORT.json (from `aclcheck verify --json`) as an HTML page: summary,
    product x dtype x format matrix, a sortable case table, and every non-passing case
    with its pictures. A report without picture data (older aclcheck) is drawn with what
    it has; the page says what is missing.

    \b
    Examples:
      aclcheck verify suite.h5 --impl torch --json run.json
      aclcheck report run.json --html run.html
    """
    from aclcheck.report import html as html_report  # matplotlib: only when run

    check_output_path(html_path, force=True)
    check_apart([Role("REPORT.json", report_path)], [Role("--html", html_path)])
    data, verdicts = json_report.read(report_path)
    html_report.write(html_path, data, verdicts)
    err = stderr_console()
    for warning in html_report.page_warnings(data, verdicts):
        err.print(f"aclcheck: note: {printable(warning)}", soft_wrap=True, markup=False)
    err.print(f"aclcheck: wrote {printable(html_path)} ({len(verdicts)} cases)", markup=False)
