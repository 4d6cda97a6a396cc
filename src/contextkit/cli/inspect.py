"""``contextkit inspect FILE... [--json] [--model M] [--plot OUT.png] [--lenient]``: where each
session's context went and what it cost. Parses, calls
:func:`contextkit.accounting.inspect_session` per session, prints rich tables (or one JSON
document),
and saves the plots when asked.

An unknown model's cost shows as ``unknown`` (JSON null) with one warning on stderr per model.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from contextkit.accounting import PARTS, SessionReport, inspect_session, report_json
from contextkit.accounting.plots import save_session_plots
from contextkit.cli._app import app, console, err_console, print_json
from contextkit.formats import load
from contextkit.pricing import format_cost


def inspect_files(
    paths: list[Path], model: str | None, lenient: bool = False
) -> list[SessionReport]:
    """Every session (subagents included) of every file, inspected; warnings shown once each.
    Strict by default (a bad record is an error naming file and line); ``lenient`` skips bad
    records and lists each one on stderr."""
    reports: list[SessionReport] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for path in paths:
            loaded = load(path, lenient=lenient)
            for skip in loaded.skipped:
                err_console.print(
                    f"[yellow]skipped[/] {skip.path}:{skip.line}: {skip.reason}", highlight=False
                )
            for top in loaded.sessions:
                reports.extend(
                    inspect_session(s, model=model) for s in top.all_sessions() if s.calls
                )
    for message in dict.fromkeys(str(w.message) for w in caught):
        err_console.print(f"[yellow]warning:[/] {message}", highlight=False)
    return reports


def _parts_table(report: SessionReport) -> Table:
    ledger = report.ledger
    session = report.session
    title = f"{session.path} ({session.format}, {session.model}, {ledger.calls} calls)"
    table = Table(title=title, title_justify="left")
    table.add_column("part")
    table.add_column("last request", justify="right")
    table.add_column("sent over all calls", justify="right")
    for part in PARTS:
        name = part + (
            " (inferred, with tools)" if part == "system" and ledger.prefix_inferred_tokens else ""
        )
        style = "bold" if part == report.biggest else None
        table.add_row(name, f"{report.parts[part]:,}", f"{report.parts_sent[part]:,}", style=style)
    return table


def _cost_table(report: SessionReport) -> Table:
    table = Table(title_justify="left")
    for column in ("", "uncached", "write 5m", "write 1h", "read", "output", "cost"):
        table.add_column(column, justify="right")
    ledger = report.ledger
    for name, tokens in (("simulated", ledger.simulated), ("recorded", ledger.recorded)):
        if tokens is None:
            continue
        t = tokens.totals()
        cost = t["cost_usd"]
        table.add_row(
            name,
            *(
                f"{t[k]:,}"
                for k in ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")
            ),
            format_cost(float(cost) if cost is not None else None),
        )
    return table


def _summary(report: SessionReport) -> str:
    ledger = report.ledger
    ratio = ledger.resend_ratio
    turns = report.calls_per_turn
    lines = [
        f"resend ratio {ratio:.1f}x" if ratio else "resend ratio n/a",
        f"{len(turns)} user turns, calls per turn {list(turns)}",
        "stop reasons " + ", ".join(f"{k} {v}" for k, v in report.stop_reasons.items()),
    ]
    err = ledger.cost_error()
    if err is not None:
        lines.append(f"simulated cost vs recorded {err:+.1%}")
    for item in report.heaviest_tool_results:
        cost = format_cost(item.cost_usd)
        lines.append(
            f"tool result {item.tool or '?'} {item.tokens:,} tokens, carried by "
            f"{item.carried_by} calls from call {item.first_call + 1}, {cost}"
        )
    lines.extend(f"note: {n}" for n in ledger.notes)
    return "\n".join(lines)


@app.command("inspect")
def inspect_command(
    files: Annotated[list[Path], typer.Argument(help="Session files (any supported format).")],
    json_out: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
    model: Annotated[
        str | None, typer.Option("--model", help="Price and count as this model.")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Save context and cost plots (PNG).")
    ] = None,
    lenient: Annotated[
        bool, typer.Option("--lenient", help="Skip bad records (each one is listed).")
    ] = False,
) -> None:
    """Where each session's context went and what it cost, recorded and simulated."""
    reports = inspect_files(files, model, lenient)
    if plot is not None:
        save_session_plots([r.ledger for r in reports], plot)
    if json_out:
        print_json({"sessions": [report_json(r) for r in reports]})
        return
    for report in reports:
        console.print(_parts_table(report))
        console.print(_cost_table(report))
        console.print(_summary(report), highlight=False)
    if plot is not None:
        console.print(f"plot saved to {plot}")
