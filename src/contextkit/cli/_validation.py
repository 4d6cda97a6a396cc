"""What ``contextkit validate`` prints of the checks of :func:`contextkit.formats.check_file`
(:mod:`contextkit.cli.validate` is the command; this module loads the library, so the command
imports it when it runs)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from contextkit.cli._app import console, console_error
from contextkit.formats import FileReport, Finding

# --------------------------------------------------------------------------------------------------
# output for people


def print_report(report: FileReport) -> None:
    if report.error is not None:
        console_error(escape(report.error))
        return
    findings = report.findings
    console.print(
        f"[bold]{escape(report.path)}[/]: {report.format}, {report.calls} calls, "
        f"{_plural(len(findings), 'finding')} ({_plural(len(report.violations), 'violation')})",
        highlight=False,
    )
    for skip in report.skipped:
        line = "?" if skip.line is None else str(skip.line)
        console.print(f"  skipped line {line}: {escape(skip.reason)}", highlight=False)
    if findings:
        console.print(_table(findings))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _table(findings: Sequence[Finding]) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    for column in ("calls", "message", "block", "code", "detail"):
        table.add_column(column, overflow="fold")
    for f in findings:
        table.add_row(
            _calls(f),
            "" if f.message_index is None else str(f.message_index),
            "" if f.block_index is None else str(f.block_index),
            f.code,
            escape(f.detail),
        )
    return table


def _calls(finding: Finding) -> str:
    """``"calls 3-52"`` for a run, ``"call 3"`` for one call."""
    if finding.calls == 1:
        return f"call {finding.first_call}"
    return f"calls {finding.first_call}-{finding.last_call}"


def print_summary(reports: Sequence[FileReport], skipped: Sequence[tuple[str, str]]) -> None:
    for path, reason in skipped:
        console.print(f"[yellow]skipped[/] {escape(path)}: {escape(reason)}", highlight=False)
    unreadable = sum(r.error is not None for r in reports)
    calls = sum(r.calls for r in reports)
    findings = sum(len(r.findings) for r in reports)
    found = sum(len(r.violations) for r in reports)
    console.print(
        f"{len(reports)} file(s), {calls} calls, {findings} finding(s), {found} violation(s), "
        f"{unreadable} unreadable, {len(skipped)} not recognised",
        highlight=False,
    )


__all__ = ["print_report", "print_summary"]
