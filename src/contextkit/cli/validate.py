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

from pathlib import Path
from typing import Annotated

import typer

from contextkit.cli._app import FormatOption, app, console_error, print_json
from contextkit.cli._paths import select_paths
from contextkit.errors import ContextkitError


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
            help="Rule set: auto (by each session's model), anthropic, openai or strict.",
        ),
    ] = "auto",
    format_name: FormatOption = None,
) -> None:
    """Check every model call's request against the provider's rules (tool pairing, roles,
    empty content, thinking signatures)."""
    from contextkit.cli._validation import print_report, print_summary  # noqa: PLC0415
    from contextkit.formats import check_file, exit_code  # noqa: PLC0415  (loads the library)
    from contextkit.messages import rules_for  # noqa: PLC0415

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
            print_report(report)
        print_summary(reports, selection.skipped)
    raise typer.Exit(exit_code(reports))


__all__ = ["validate_command"]
