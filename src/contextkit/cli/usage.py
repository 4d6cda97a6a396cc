"""``contextkit usage [PATH...]``: what was spent, by day, week, month, session, project, model or
5-hour block, with ``--since``, ``--until`` and ``--timezone``.

Each row is the recorded bill where the files carry usage (each call's usage priced at its model
and date) and says ``simulated`` where they do not; the calls whose output the reader counted from
content (Claude Code's stream-start placeholders) are counted in their own column. Every
subagent's calls count, under its parent's project. Files that cannot be read are named, and the
exit code says whether all, some or none were read (0, 1, 2).
"""

from __future__ import annotations

import warnings
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import typer

from contextkit.cli import _tables as t
from contextkit.cli._app import (
    AllOption,
    FormatOption,
    JsonOption,
    LenientOption,
    ModelOption,
    PathsArgument,
    app,
    console,
    err_console,
    print_json,
)
from contextkit.cli._paths import (
    each_loaded,
    print_skipped,
    print_unread,
    read_outcome,
    select_paths,
)
from contextkit.cli._tables import WideOption

if TYPE_CHECKING:
    from datetime import tzinfo

    from rich.table import Table

    from contextkit.accounting import UsageGroup, UsageRow

ByOption = Annotated[
    str,
    typer.Option(
        "--by", help="day, week, month, session, project, model, or block (5-hour blocks)."
    ),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since", help="First day counted (YYYY-MM-DD), in --timezone.", show_default=False
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until", help="Last day counted (YYYY-MM-DD), in --timezone.", show_default=False
    ),
]
TimezoneOption = Annotated[
    str, typer.Option("--timezone", help="Time zone of days and blocks (IANA name, or local).")
]


@app.command("usage")
def usage_command(
    paths: PathsArgument = None,
    every: AllOption = False,
    by: ByOption = "day",
    since: SinceOption = None,
    until: UntilOption = None,
    timezone: TimezoneOption = "UTC",
    json_out: JsonOption = False,
    lenient: LenientOption = False,
    format_name: FormatOption = None,
    model: ModelOption = None,
    wide: WideOption = False,
) -> None:
    """What was spent: totals by day, week, month, session, project, model or 5-hour block."""
    from contextkit.accounting import BY, group_usage, in_range, total, usage_blocks  # noqa: PLC0415

    if by not in (*BY, "block"):
        raise typer.BadParameter(
            f"one of {', '.join((*BY, 'block'))} (got {by!r})", param_hint="--by"
        )
    zone = _zone(timezone)
    first, last = _day(since, "--since"), _day(until, "--until")
    selection = select_paths(paths, every)
    print_skipped(selection.skipped)
    rows, unread = _rows(list(selection.files), lenient, format_name, model)
    print_unread(unread)
    code = read_outcome(len(selection.files) - len(unread), len(unread))
    kept = [r for r in rows if in_range(r, zone, first, last)]
    groups = usage_blocks(kept, zone) if by == "block" else group_usage(kept, by, zone)  # type: ignore[arg-type]
    overall = total(groups)
    if json_out:
        doc: dict[str, object] = {
            "by": by,
            "timezone": timezone,
            "since": since,
            "until": until,
            "rows": [g.to_json() for g in groups],
            "total": overall.to_json(),
        }
        if unread:
            doc["not_read"] = [{"path": p, "error": why} for p, why in unread]
        print_json(doc)
    elif selection.files:
        console.print(_table(groups, overall, by, wide))
        for line in _notes(overall):
            console.print(f"note: {line}", highlight=False)
    if code:
        raise typer.Exit(code)


def _zone(name: str) -> tzinfo:
    if name == "local":
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise typer.BadParameter(
            f"{name!r} is not a time zone (an IANA name, or local)", param_hint="--timezone"
        ) from None


def _day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    text = value.strip()
    if len(text) == 8 and text.isdigit():  # ccusage's YYYYMMDD
        text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r}: give a day as YYYY-MM-DD", param_hint=option
        ) from None


def project_of(path: Path) -> str:
    """The project a session file belongs to: for Claude Code the folder under ``projects``
    (its name is the working directory with ``/`` written as ``-``; a leading home folder is left
    out), else the file's folder."""
    parts = path.parts
    if "projects" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index("projects")
        if at + 1 < len(parts) - 1:
            name = parts[at + 1]
            for home in ("-Users-", "-home-"):
                if name.startswith(home):
                    rest = name[len(home) :].split("-", 1)
                    return rest[1] if len(rest) == 2 and rest[1] else name
            return name
    return path.parent.name or str(path.parent)


def _rows(
    paths: list[Path], lenient: bool, format_name: str | None, model: str | None
) -> tuple[list[UsageRow], list[tuple[str, str]]]:
    from contextkit.accounting import usage_rows  # noqa: PLC0415
    from contextkit.replay import with_default_model  # noqa: PLC0415

    rows: list[UsageRow] = []
    unread: list[tuple[str, str]] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for path, loaded in each_loaded(paths, unread, lenient=lenient, format_name=format_name):
            project = project_of(path)
            for top in loaded.sessions:
                for session in top.all_sessions():
                    if session.calls:
                        rows.extend(usage_rows(with_default_model(session, model), project))
    for message in dict.fromkeys(str(w.message) for w in caught):
        err_console.print(f"[yellow]warning:[/] {message}", highlight=False)
    return rows, unread


def _table(groups: list[UsageGroup], overall: UsageGroup, by: str, wide: bool) -> Table:
    tab = t.table(
        caption="basis: recorded = the files' usage priced (the bill); simulated = the file "
        "has no usage"
    )
    t.label_column(tab, by)
    for column in ("calls", "input", "cache\nwrite", "cache\nread", "output", "cost"):
        t.number_column(tab, column)
    t.label_column(tab, "basis")
    for group in [*groups, overall]:
        cost = t.money(group.cost_usd, wide)
        if group.unpriced_calls:
            cost += f" +{group.unpriced_calls} unpriced"
        tab.add_row(
            group.key,
            f"{group.calls:,}",
            t.tokens(group.input_tokens, wide),
            t.tokens(group.cache_write, wide),
            t.tokens(group.cache_read, wide),
            t.tokens(group.output_tokens, wide),
            cost,
            group.basis,
            style="bold" if group is overall else None,
        )
    return tab


def _notes(overall: UsageGroup) -> list[str]:
    out = []
    if overall.estimated_outputs:
        out.append(
            f"the output of {overall.estimated_outputs:,} of {overall.calls:,} calls is counted "
            "from their content: their files hold the count as it stood at stream start"
        )
    if overall.unpriced_calls:
        out.append(
            f"{overall.unpriced_calls:,} call(s) of a model without a known price are not in "
            "the cost (a price override file prices them: $CONTEXTKIT_PRICES)"
        )
    if overall.simulated_calls:
        out.append(
            f"{overall.simulated_calls:,} call(s) come from files without usage: their figures "
            "are the cache simulation's, not a bill"
        )
    return out


__all__ = ["project_of", "usage_command"]
