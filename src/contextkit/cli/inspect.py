"""``contextkit inspect [PATH...] [--all] [--json] [--model M] [--plot OUT.png] [--lenient]
[--cache]``: where each session's context went and what it cost; ``--cache`` adds the cache doctor
(the cause of every recorded cache write, with tokens and dollars). Parses, calls
:func:`contextkit.accounting.inspect_session` per session, prints rich tables (or one JSON
document), and saves the plots when asked.

Paths are files or folders (a folder: every file a reader recognises; the others listed on stderr
as skipped). With no path, or ``--all``, the default locations of every harness are searched (see
:mod:`contextkit.cli._paths`): a line per location says what was found where; nothing found there
prints no session and exits 0.

An unknown model's cost shows as ``unknown`` (JSON null) with one warning on stderr per model.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
from contextkit.cli.fleet import FleetOptions, run_fleet_command, with_fleet_options

if TYPE_CHECKING:
    from rich.table import Table

    from contextkit.accounting import CacheDiagnosis, SessionReport


def format_cost(value: float | None) -> str:
    from contextkit.pricing import format_cost as cost  # noqa: PLC0415  (loads the prices)

    return cost(value)


def inspect_files(
    paths: list[Path],
    model: str | None,
    lenient: bool = False,
    format: str | None = None,
    what_if_model: str | None = None,
) -> tuple[list[SessionReport], list[tuple[str, str]]]:
    """Every session (subagents included) of every file, inspected, and the files that could not
    be read, with why; warnings shown once each. Strict by default (a file with a bad record is
    not read: the error names file and line); ``lenient`` skips bad records and lists each one on
    stderr. ``format`` forces a reader (else detected). ``model``
    is the model of calls whose file names none (as ``--model`` in every command);
    ``what_if_model`` re-prices every call as that model."""
    from contextkit.accounting import inspect_session  # noqa: PLC0415  (loads in the command)
    from contextkit.replay import with_default_model  # noqa: PLC0415

    reports: list[SessionReport] = []
    unread: list[tuple[str, str]] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _, loaded in each_loaded(paths, unread, lenient=lenient, format_name=format):
            for top in loaded.sessions:
                reports.extend(
                    inspect_session(with_default_model(s, model), model=what_if_model)
                    for s in top.all_sessions()
                    if s.calls
                )
    for message in dict.fromkeys(str(w.message) for w in caught):
        err_console.print(f"[yellow]warning:[/] {message}", highlight=False)
    return reports, unread


def _parts_table(report: SessionReport, wide: bool = False) -> Table:
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when a command prints)

    from contextkit.accounting import PARTS  # noqa: PLC0415

    ledger = report.ledger
    session = report.session
    where = t.short_path(session.path or "", wide, width=48)
    title = f"{escape(where)} ({session.format}, {session.model}, {ledger.calls} calls)"
    tab = t.table(title)
    t.label_column(tab, "part")
    t.number_column(tab, "last\nrequest")
    t.number_column(tab, "sent over\nall calls")
    for part in PARTS:
        name = part + (
            " (inferred, with tools)" if part == "system" and ledger.prefix_inferred_tokens else ""
        )
        style = "bold" if part == report.biggest else None
        tab.add_row(
            name,
            t.tokens(report.parts[part], wide),
            t.tokens(report.parts_sent[part], wide),
            style=style,
        )
    return tab


def _cost_table(report: SessionReport, wide: bool = False) -> Table:
    estimated = any(n.startswith("recorded: the file's usage, but") for n in report.ledger.notes)
    recorded = "the file's usage" + (", some outputs estimated (see the note)" if estimated else "")
    tab = t.table(
        caption="simulated: the recorded requests through the cache simulator, output as "
        f"recorded (as in replay, compare and cost); recorded: {recorded}"
    )
    t.label_column(tab, "")
    for column in ("uncached", "write\n5m", "write\n1h", "read", "output", "cost"):
        t.number_column(tab, column)
    ledger = report.ledger
    for name, tokens in (("simulated", ledger.simulated), ("recorded", ledger.recorded)):
        if tokens is None:
            continue
        totals = tokens.totals()
        cost = totals["cost_usd"]
        tab.add_row(
            name,
            *(
                t.tokens(totals[k], wide)
                for k in ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")
            ),
            t.money(float(cost), wide) if cost is not None else "unknown",
        )
    return tab


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
        at = item.evicted_at
        evicted = f" (a placeholder from call {at + 1})" if at is not None else ""
        lines.append(
            f"tool result {item.tool or '?'} {item.tokens:,} tokens, carried by "
            f"{item.carried_by} calls from call {item.first_call + 1}{evicted}, {cost}"
        )
    lines.extend(f"note: {n}" for n in ledger.notes)
    return "\n".join(lines)


def _cache_table(diagnosis: CacheDiagnosis, wide: bool = False) -> Table:
    hit, amp, explained = diagnosis.hit_rate, diagnosis.write_amplification, diagnosis.explained
    title = f"cache: hit rate {hit:.1%}" if hit is not None else "cache: no input"
    if amp is not None:
        title += f", write amplification {amp:.2f}x"
    if explained is not None:
        title += f", {explained:.1%} of written tokens explained"
    observed, inferred = diagnosis.observed, diagnosis.inferred
    if observed is not None and inferred is not None:
        title += f": {observed:.1%} observed, {inferred:.1%} inferred from the reads"
    tab = t.table(title)
    t.label_column(tab, "cause")
    for column in ("calls", "written", "share", "cost"):
        t.number_column(tab, column)
    calls: dict[tuple[str, bool], set[int]] = {}
    for event in (e for c in diagnosis.calls for e in c.events):
        calls.setdefault((event.cause, event.inferred), set()).add(event.call)
    written = diagnosis.written or 1
    for inferred_part in (False, True):
        for cause, (tokens, usd) in diagnosis.by_cause(inferred=inferred_part).items():
            tab.add_row(
                cause + (" (inferred)" if inferred_part else ""),
                f"{len(calls[cause, inferred_part]):,}",
                t.tokens(tokens, wide),
                f"{tokens / written:.1%}",
                t.money(usd, wide),
            )
    return tab


def _cache_events(diagnosis: CacheDiagnosis, top: int = 5) -> str:
    """The costliest rewrites (new content left out), one line each."""
    events = [e for c in diagnosis.calls for e in c.events if e.cause not in ("new content",)]
    events.sort(key=lambda e: e.tokens, reverse=True)
    return "\n".join(
        f"call {e.call + 1}: {e.cause}, {e.tokens:,} tokens written, {format_cost(e.usd)}"
        + (f": {e.detail}" if e.detail else "")
        for e in events[:top]
    )


WhatIfModelOption = Annotated[
    str | None,
    typer.Option(
        "--what-if-model", help="Count and price every call as this model.", show_default=False
    ),
]
PlotOption = Annotated[
    Path | None,
    typer.Option("--plot", help="Save context and cost plots (PNG).", show_default=False),
]
CacheOption = Annotated[
    bool,
    typer.Option(
        "--cache", help="The cache doctor: why each recorded cache write happened, and its cost."
    ),
]


@app.command("inspect")
@with_fleet_options
def inspect_command(
    files: PathsArgument = None,
    every: AllOption = False,
    json_out: JsonOption = False,
    model: ModelOption = None,
    what_if_model: WhatIfModelOption = None,
    plot: PlotOption = None,
    lenient: LenientOption = False,
    cache: CacheOption = False,
    format_name: FormatOption = None,
    wide: WideOption = False,
    *,
    fleet: FleetOptions,
) -> None:
    """Where each session's context went and what it cost, recorded and simulated."""
    run = fleet.run(json_out)
    if run is not None:
        if what_if_model is not None or plot is not None:
            raise typer.BadParameter("--what-if-model and --plot are not taken with --out")
        shared = {"per_call": fleet.per_call, "model": model, "lenient": lenient}
        run_fleet_command(
            files, every, run, command="inspect", doctor=cache, format=format_name, **shared
        )
        return
    from contextkit.accounting import diagnose_cache, diagnosis_json, report_json  # noqa: PLC0415

    selection = select_paths(files, every)
    print_skipped(selection.skipped)
    reports, unread = inspect_files(
        list(selection.files), model, lenient, format_name, what_if_model
    )
    print_unread(unread)
    code = read_outcome(len(selection.files) - len(unread), len(unread))
    if not selection.files:  # discovery found nothing (and said so)
        if json_out:
            print_json({"sessions": []})
        return
    if code == 2 and not json_out:
        raise typer.Exit(code)
    if plot is not None:
        from contextkit.accounting.plots import save_session_plots  # noqa: PLC0415  (matplotlib)

        save_session_plots([r.ledger for r in reports], plot)
    doctor = [diagnose_cache(r.session) if cache else None for r in reports]
    if json_out:
        docs = [report_json(r) for r in reports]
        if cache:
            for doc, found in zip(docs, doctor, strict=True):
                doc["cache"] = diagnosis_json(found) if found is not None else None
        out: dict[str, object] = {"sessions": docs}
        if unread:
            out["not_read"] = [{"path": p, "error": why} for p, why in unread]
        print_json(out)
        raise typer.Exit(code)
    for report, found in zip(reports, doctor, strict=True):
        console.print(_parts_table(report, wide))
        console.print(_cost_table(report, wide))
        console.print(_summary(report), highlight=False)
        if cache and found is None:
            console.print("cache: no recorded usage, nothing to diagnose", highlight=False)
        elif found is not None:
            console.print(_cache_table(found, wide))
            console.print(_cache_events(found), highlight=False)
    if plot is not None:
        console.print(f"plot saved to {plot}", highlight=False, soft_wrap=True)
    if code:
        raise typer.Exit(code)
