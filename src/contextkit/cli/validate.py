"""``contextkit validate FILE... [--json] [--lenient] [--rules auto|anthropic|openai|strict]``.

Reads each file with :func:`contextkit.formats.load` and checks the request of every model call it
holds against the provider's rules (:func:`contextkit.messages.validate`).

What is checked, and why only that: each call's *request*, the messages as sent (or as rebuilt from
a transcript). The conversation after a response is the next call's request, so checking it too
would report every finding twice; a response is checked as part of the request that follows it.
A finding that persists (a tool call an interrupted session never answered) is reported for every
call whose request carries it: each of those requests would be rejected. The table for people
folds such repeats into one row with the range of calls; ``--json`` lists every call.

Rules: ``--rules auto`` (default) checks each session against the rules of the provider its model
was served by (:func:`contextkit.messages.rules_for_model`): a gpt-4o trajectory is not faulted
for reusing a tool call id, which OpenAI accepts. ``--rules anthropic`` asks instead whether the
history could be sent to Anthropic as is (every reader produces the canonical Anthropic shape):
then OpenAI reasoning items (no thinking signature) and reused tool call ids are reported.
``strict`` also forbids same-role neighbours.

Output: a rich table per file, or with ``--json`` exactly one JSON document on stdout::

    {"files": [{"path", "format", "calls", "violations": [{"call", "code", "message_index",
      "block_index", "detail"}], "skipped": [{"line", "reason"}]}]}

``call`` is the 0-based index of the call in the file (sessions in file order, then calls).
A file that cannot be read has an ``"error"`` field (naming file and line) and ``"format": null``.

Exit codes: 0 every file reads and validates; 1 some request breaks a rule; 2 some file cannot be
read (2 wins over 1). Bad input never shows a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict
from rich.markup import escape
from rich.table import Table

from contextkit.cli._app import FormatOption, app, console, console_error, print_json
from contextkit.errors import ContextkitError
from contextkit.formats import load
from contextkit.messages import PROVIDER_RULES, Rules, rules_for, rules_for_model, validate
from contextkit.session import LoadedFile, SkippedRecord


class CallViolation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    call: int
    code: str
    message_index: int | None
    block_index: int | None
    detail: str


class FileReport(BaseModel):
    """What ``validate`` found in one file (``error`` set when the file could not be read)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    format: str | None = None
    calls: int = 0
    violations: tuple[CallViolation, ...] = ()
    skipped: tuple[SkippedRecord, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "calls": self.calls,
            "violations": [v.model_dump() for v in self.violations],
            "skipped": [{"line": s.line, "reason": s.reason} for s in self.skipped],
        }
        if self.error is not None:
            out["error"] = self.error
        return out


def check_file(
    path: Path, *, lenient: bool = False, rules: Rules | None = None, format: str | None = None
) -> FileReport:
    """Read ``path`` (with the ``format`` reader, else detected) and validate the request of every
    call in it."""
    try:
        loaded = load(path, lenient=lenient, format=format)
    except ContextkitError as exc:
        return FileReport(path=str(path), error=str(exc))
    except Exception as exc:
        # A reader that trips over bad input with anything but a FormatError is a reader bug; the
        # user still gets the file named and no traceback, and the exit code says "unreadable".
        reason = f"{path}: cannot be read ({type(exc).__name__}: {exc})"
        return FileReport(path=str(path), error=reason)
    return FileReport(
        path=str(path),
        format=loaded.format,
        calls=loaded.calls,
        violations=tuple(_violations(loaded, rules)),
        skipped=loaded.skipped,
    )


def _violations(loaded: LoadedFile, rules: Rules | None) -> Iterator[CallViolation]:
    """Violations per call; ``rules`` None: each session's own provider's rules."""
    calls = (
        (call, rules or rules_for_model(session.model_info, session.format))
        for session in loaded.sessions
        for call in session.calls
    )
    for index, (call, call_rules) in enumerate(calls):
        for v in validate(call.request, provider=call_rules):
            yield CallViolation(call=index, **v.model_dump())


def exit_code(reports: Sequence[FileReport]) -> int:
    if any(r.error is not None for r in reports):
        return 2
    return 1 if any(r.violations for r in reports) else 0


@app.command("validate")
def validate_command(
    files: Annotated[
        list[Path], typer.Argument(help="Session files to check.", show_default=False)
    ],
    json_out: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
    lenient: Annotated[
        bool, typer.Option("--lenient", help="Skip bad records (each one is listed).")
    ] = False,
    rules_name: Annotated[
        str,
        typer.Option(
            "--rules",
            help=f"Rule set: auto (by each session's model), {', '.join(PROVIDER_RULES)}.",
        ),
    ] = "auto",
    format_name: FormatOption = None,
) -> None:
    """Check every model call's request against the provider's rules (tool pairing, roles,
    empty content, thinking signatures)."""
    try:
        rules = None if rules_name == "auto" else rules_for(rules_name)
    except ContextkitError as exc:
        console_error(str(exc))
        raise typer.Exit(2) from None
    reports = [check_file(p, lenient=lenient, rules=rules, format=format_name) for p in files]
    if json_out:
        print_json({"files": [r.to_json() for r in reports]})
    else:
        for report in reports:
            _print_report(report)
        _print_summary(reports)
    raise typer.Exit(exit_code(reports))


# --------------------------------------------------------------------------------------------------
# output for people


def _print_report(report: FileReport) -> None:
    if report.error is not None:
        console_error(escape(report.error))
        return
    found = len(report.violations)
    console.print(
        f"[bold]{escape(report.path)}[/]: {report.format}, {report.calls} calls, "
        f"{found} violation{'s' if found != 1 else ''}",
        highlight=False,
    )
    for skip in report.skipped:
        line = "?" if skip.line is None else str(skip.line)
        console.print(f"  skipped line {line}: {escape(skip.reason)}", highlight=False)
    if report.violations:
        console.print(_table(report.violations))


def _table(violations: Sequence[CallViolation]) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    for column in ("calls", "message", "block", "code", "detail"):
        table.add_column(column, overflow="fold")
    for key, calls in _folded(violations):
        code, message_index, block_index, detail = key
        table.add_row(
            _ranges(calls),
            "" if message_index is None else str(message_index),
            "" if block_index is None else str(block_index),
            code,
            escape(detail),
        )
    return table


_Key = tuple[str, int | None, int | None, str]


def _folded(violations: Sequence[CallViolation]) -> list[tuple[_Key, list[int]]]:
    """The same finding repeated over calls becomes one row, in order of first appearance."""
    groups: dict[_Key, list[int]] = {}
    for v in violations:
        groups.setdefault((v.code, v.message_index, v.block_index, v.detail), []).append(v.call)
    return list(groups.items())


def _ranges(calls: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    spans: list[list[int]] = []
    for c in calls:
        if spans and c == spans[-1][1] + 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _print_summary(reports: Sequence[FileReport]) -> None:
    unreadable = sum(r.error is not None for r in reports)
    calls = sum(r.calls for r in reports)
    found = sum(len(r.violations) for r in reports)
    console.print(
        f"{len(reports)} file(s), {calls} calls, {found} violation(s), {unreadable} unreadable",
        highlight=False,
    )


__all__ = ["CallViolation", "FileReport", "check_file", "exit_code", "validate_command"]
