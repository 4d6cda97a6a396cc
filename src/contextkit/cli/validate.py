"""``contextkit validate [PATH...] [--all] [--json] [--lenient] [--rules RULES]``.

``RULES``: auto, anthropic, openai or strict. Reads each file with :func:`contextkit.formats.load`
and checks the request of every model call it holds against the provider's rules
(:func:`contextkit.messages.validate`). A folder is scanned for
every file a reader recognises (files no reader takes are listed as skipped, not errors); with no
path, or ``--all``, the default locations of every harness are searched (see
:mod:`contextkit.cli._paths`; nothing found there exits 0).

What is checked, and why only that: each call's *request*, the messages as sent (or as rebuilt from
a transcript). The conversation after a response is the next call's request, so checking it too
would report every finding twice; a response is checked as part of the request that follows it.
A finding that persists (a tool call an interrupted session never answered) breaks every request
that carries it, but is reported once: the same code at the same message and block with the same
detail over consecutive calls of one session is one :class:`Finding` with its range of calls
(``calls i-j`` in the table; ``first_call``, ``last_call`` and ``calls`` in the JSON).

Rules: ``--rules auto`` (default) checks each session against the rules of the provider its model
was served by (:func:`contextkit.messages.rules_for_model`): a gpt-4o trajectory is not faulted
for reusing a tool call id, which OpenAI accepts. ``--rules anthropic`` asks instead whether the
history could be sent to Anthropic as is (every reader produces the canonical Anthropic shape):
then OpenAI reasoning items (no thinking signature) and reused tool call ids are reported.
``strict`` also forbids same-role neighbours.

Output: a rich table per file, or with ``--json`` exactly one JSON document on stdout::

    {"files": [{"path", "format", "calls", "violations": [{"first_call", "last_call", "calls",
      "code", "message_index", "block_index", "detail"}], "skipped": [{"line", "reason"}]}],
     "skipped_files": [{"path", "reason"}]}

Every session of a file is checked, its subagents included (depth first, as
:meth:`Session.all_sessions` orders them: a Claude Code file's inline sidechains and the subagent
files beside it), so ``calls`` is the number of calls ``inspect`` and ``cost`` report for the file.
A call number is the 0-based index of the call in that order (sessions, then their calls).
A file that cannot be read has an ``"error"`` field (naming file and line) and ``"format": null``.

Exit codes: 0 every file reads and validates (or there was nothing to check); 1 some request
breaks a rule; 2 some file cannot be read, or the paths named hold no session file (2 wins over
1). Bad input never shows a traceback.
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
from contextkit.cli._paths import select_paths
from contextkit.errors import ContextkitError
from contextkit.formats import load
from contextkit.messages import PROVIDER_RULES, Rules, rules_for, rules_for_model, validate
from contextkit.session import LoadedFile, Session, SkippedRecord


class CallViolation(BaseModel):
    """One finding in one call's request (``session``: the index of the call's session in the
    file, depth first; ``call``: the call's index in the file)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    call: int
    code: str
    message_index: int | None
    block_index: int | None
    detail: str
    session: int = 0


class Finding(BaseModel):
    """One finding that persists over consecutive calls of one session: the same code at the same
    message and block with the same detail, in every request from ``first_call`` to
    ``last_call`` (``calls`` of them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    first_call: int
    last_call: int
    calls: int
    code: str
    message_index: int | None
    block_index: int | None
    detail: str


def group_findings(violations: Sequence[CallViolation]) -> tuple[Finding, ...]:
    """Per-call violations folded into :class:`Finding` runs, in order of first appearance. A run
    holds consecutive calls of one session; a finding that disappears and comes back, or that
    another session repeats, starts a new run."""
    runs: list[list[CallViolation]] = []
    open_runs: dict[tuple[int, str, int | None, int | None, str], int] = {}
    for v in violations:
        key = (v.session, v.code, v.message_index, v.block_index, v.detail)
        at = open_runs.get(key)
        if at is not None and runs[at][-1].call == v.call - 1:
            runs[at].append(v)
            continue
        open_runs[key] = len(runs)
        runs.append([v])
    return tuple(
        Finding(
            first_call=run[0].call,
            last_call=run[-1].call,
            calls=len(run),
            code=run[0].code,
            message_index=run[0].message_index,
            block_index=run[0].block_index,
            detail=run[0].detail,
        )
        for run in runs
    )


class FileReport(BaseModel):
    """What ``validate`` found in one file (``error`` set when the file could not be read)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    format: str | None = None
    calls: int = 0
    violations: tuple[CallViolation, ...] = ()
    skipped: tuple[SkippedRecord, ...] = ()
    error: str | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The violations folded over the consecutive calls that repeat them."""
        return group_findings(self.violations)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "calls": self.calls,
            "violations": [f.model_dump() for f in self.findings],
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
        calls=sum(len(s.calls) for s in _sessions(loaded)),
        violations=tuple(_violations(loaded, rules)),
        skipped=loaded.skipped,
    )


def _sessions(loaded: LoadedFile) -> Iterator[Session]:
    """Every session of the file, subagents included, depth first."""
    for top in loaded.sessions:
        yield from top.all_sessions()


def _violations(loaded: LoadedFile, rules: Rules | None) -> Iterator[CallViolation]:
    """Violations per call; ``rules`` None: each session's own provider's rules."""
    calls = (
        (number, call, rules or rules_for_model(session.model_info, session.format))
        for number, session in enumerate(_sessions(loaded))
        for call in session.calls
    )
    for index, (number, call, call_rules) in enumerate(calls):
        for v in validate(call.request, provider=call_rules):
            yield CallViolation(call=index, session=number, **v.model_dump())


def exit_code(reports: Sequence[FileReport]) -> int:
    if any(r.error is not None for r in reports):
        return 2
    return 1 if any(r.violations for r in reports) else 0


@app.command("validate")
def validate_command(
    files: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Session files or folders (none: every harness's default locations).",
            show_default=False,
        ),
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="Also every harness's default locations.")
    ] = False,
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
        selection = select_paths(files, every, missing_ok=True)
    except ContextkitError as exc:
        console_error(str(exc))
        raise typer.Exit(2) from None
    reports = [
        check_file(p, lenient=lenient, rules=rules, format=format_name) for p in selection.files
    ]
    if json_out:
        skipped = [{"path": p, "reason": r} for p, r in selection.skipped]
        print_json({"files": [r.to_json() for r in reports], "skipped_files": skipped})
    else:
        for report in reports:
            _print_report(report)
        _print_summary(reports, selection.skipped)
    raise typer.Exit(exit_code(reports))


# --------------------------------------------------------------------------------------------------
# output for people


def _print_report(report: FileReport) -> None:
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


def _print_summary(reports: Sequence[FileReport], skipped: Sequence[tuple[str, str]]) -> None:
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


__all__ = [
    "CallViolation",
    "FileReport",
    "Finding",
    "check_file",
    "exit_code",
    "group_findings",
    "validate_command",
]
