"""``contextkit replay`` and ``contextkit compare``: strategies scored on recorded sessions.

``compare [PATH...] [--all]`` takes files and folders; with no path, or ``--all``, the default
locations of every harness are searched (:mod:`contextkit.cli._paths`; nothing found there
compares nothing and exits 0)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from contextkit.cli._app import FormatOption, app, console, err_console, print_json
from contextkit.cli._paths import select_paths
from contextkit.cli.fleet import (
    EngineOption,
    FleetJobsOption,
    OutOption,
    PerCallOption,
    QuietOption,
    ResumeOption,
    check_fleet_options,
    run_fleet_command,
)
from contextkit.errors import ContextkitError
from contextkit.fleet import FleetConfig
from contextkit.formats import load
from contextkit.formats.anthropic import write_requests_jsonl
from contextkit.replay import (
    AS_RECORDED,
    ASSUMPTION,
    BOUND_NOTE,
    ORACLE,
    RULE,
    Replay,
    best_strategy,
    compare,
    markdown_table,
    run_strategy,
    savings,
    with_default_model,
)
from contextkit.strategies.config import PRESETS

DEFAULT_SPECS = (AS_RECORDED, *PRESETS, ORACLE)


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:+.0%}"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _summary_row(
    name: str,
    summary: dict[str, Any],
    saved: dict[str, float | None],
    calls: int | None = None,
) -> list[str]:
    edits = summary.get("edit_feasibility")
    row = [
        name,
        _money(summary["cost_usd"]),
        _pct(saved.get("vs_as_recorded")),
        _pct(saved.get("vs_none")),
        _pct(saved.get("vs_oracle")),
        f"{summary['input_tokens']:,}",
        f"{summary['cache_read']:,}",
        f"{summary['cache_write']:,}",
        f"{summary['peak_context_tokens']:,}",
        str(summary["compactions"]),
        str(summary["overflow_calls"]),
        f"{summary['recall']:.3f}",
        _share(summary.get("span_recall")),
        "n/a" if edits is None else f"{edits:.0%} of {summary['edits']}",
    ]
    return row if calls is None else [*row[:1], str(calls), *row[1:]]


_COLUMNS = (
    "cost",
    "vs as-recorded",
    "vs none",
    "vs oracle",
    "uncached in",
    "cache read",
    "cache write",
    "peak context",
    "compactions",
    "overflows",
    "recall",
    "copied spans",
    "edits feasible",
)
SAVINGS_NOTE = (
    "savings are against the as-recorded requests priced by the same simulator (the harness's "
    "own compaction calls included; the recorded bill is the as-recorded cost column) and "
    "against none"
)


_Lenient = Annotated[bool, typer.Option("--lenient", help="Skip bad records, list them.")]
_Model = Annotated[
    str | None,
    typer.Option("--model", help="Model for calls whose file names none (to count and price)."),
]


@app.command("replay")
def replay_command(
    file: Annotated[Path, typer.Argument(help="A recorded session file.")],
    strategy: Annotated[
        str,
        typer.Option("--strategy", "-s", help="Preset, config file, inline spec, or as-recorded."),
    ] = "evict-tool-results",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    dump_requests: Annotated[
        Path | None,
        typer.Option("--dump-requests", help="Write each request the strategy sends (JSONL)."),
    ] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write a PNG plot here.")] = None,
    lenient: _Lenient = False,
    model: _Model = None,
    format_name: FormatOption = None,
) -> None:
    """Replay one recorded session under a strategy: cost, cache, peak context, recall."""
    loaded = load(file, lenient=lenient, format=format_name)
    if not loaded.sessions or not loaded.sessions[0].calls:
        raise ContextkitError(f"{file}: no model calls to replay")
    session = with_default_model(loaded.sessions[0], model)
    for skip in loaded.skipped:
        err_console.print(f"[yellow]skipped[/] {skip.path}:{skip.line}: {skip.reason}")
    result = run_strategy(session, strategy)
    baseline = run_strategy(session, AS_RECORDED) if strategy != AS_RECORDED else result
    none = run_strategy(session, "none") if strategy != "none" else result
    if dump_requests is not None:
        write_requests_jsonl(dump_requests, result.requests)
    if plot is not None:
        from contextkit.replay.plots import plot_replays  # noqa: PLC0415  (matplotlib loads slowly)

        plot_replays([baseline, result] if baseline is not result else [result], plot)
    row = {AS_RECORDED: baseline.summary(), "none": none.summary()}
    row[result.strategy] = result.summary()
    saved = savings(row)
    if as_json:
        skipped = [{"line": r.line, "reason": r.reason} for r in loaded.skipped]
        print_json({**result.to_json(), "savings": saved[result.strategy], "skipped": skipped})
        return
    _print_replay(result, baseline, none, saved, len(loaded.sessions))
    if dump_requests is not None:
        console.print(f"requests written to {dump_requests}")
    if plot is not None:
        console.print(f"plot written to {plot}")


def _print_replay(
    result: Replay,
    baseline: Replay,
    none: Replay,
    saved: dict[str, dict[str, float | None]],
    sessions: int,
) -> None:
    table = Table(title=f"{result.session.path} ({result.session.model}, {len(result.rows)} calls)")
    for col in ("strategy", *_COLUMNS):
        table.add_column(col, justify="left" if col == "strategy" else "right", overflow="fold")
    shown = {AS_RECORDED: baseline, "none": none, result.strategy: result}
    for name, rep in shown.items():
        table.add_row(*_summary_row(name, rep.summary(), saved[name]))
    console.print(table)
    simulated = baseline.summary()["simulated_cost_usd"]
    console.print(f"as-recorded, simulated: {_money(simulated)}")
    if result.recall.examples:
        lost = ", ".join(f"call {c}: {f[:60]}" for c, f in result.recall.examples[:6])
        console.print(f"lost (examples): {lost}")
    if result.quality is not None and result.quality.examples:
        texts = "; ".join(f"call {c}: {escape(t[:60])}" for c, t in result.quality.examples[:4])
        console.print(f"copied text or edit strings lost (examples): {texts}")
    console.print(f"[dim]{SAVINGS_NOTE}. {ASSUMPTION}.[/]")
    if result.strategy == ORACLE:
        console.print(f"[bold]{BOUND_NOTE}.[/]")
    if sessions > 1:
        console.print(f"[dim]the file holds {sessions} sessions; the first was replayed[/]")


@app.command("compare")
def compare_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Session files or folders (none: every harness's default locations).",
            show_default=False,
        ),
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="Also every harness's default locations.")
    ] = False,
    strategy: Annotated[
        list[str] | None,
        typer.Option("--strategy", "-s", help="Repeatable; default: as-recorded and every preset."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print a markdown table: $cost / recall.")
    ] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Cost against recall (PNG).")] = None,
    jobs: FleetJobsOption = None,
    lenient: _Lenient = False,
    model: _Model = None,
    out: OutOption = None,
    per_call: PerCallOption = False,
    resume: ResumeOption = False,
    engine: EngineOption = "process",
    quiet: QuietOption = False,
) -> None:
    """Replay every session under every strategy and compare."""
    specs = tuple(strategy) if strategy else DEFAULT_SPECS
    check_fleet_options(out, per_call, resume, engine)
    if out is not None:
        if markdown or plot is not None:
            raise typer.BadParameter("--markdown and --plot print one table: not with --out")
        config = FleetConfig(
            command="compare", specs=specs, per_call=per_call, model=model, lenient=lenient
        )
        run_fleet_command(
            paths,
            every,
            config,
            out,
            engine=engine,
            jobs=jobs,
            resume=resume,
            quiet=quiet,
            as_json=as_json,
        )
        return
    found = select_paths(paths, every)
    if not found.files:  # discovery found nothing (and said so): nothing to compare
        if as_json:
            print_json({"results": [], "errors": [], "skipped": [], "skipped_records": []})
        return
    with Progress(console=err_console, transient=True, disable=as_json or markdown) as progress:
        task = progress.add_task("replaying", total=len(found.files))
        results = compare(
            found.files,
            specs,
            jobs=jobs or 1,
            lenient=lenient,
            model=model,
            on_done=lambda _: progress.advance(task),
        )
    rows = [r for f in results for r in f.results]
    errors = [{"path": f.path, "error": f.error} for f in results if f.error]
    skipped_records = [
        {"path": f.path, "line": line, "reason": reason}
        for f in results
        for line, reason in f.skipped
    ]
    for rec in skipped_records:
        err_console.print(f"[yellow]skipped[/] {rec['path']}:{rec['line']}: {rec['reason']}")
    if plot is not None:
        from contextkit.replay.plots import plot_cost_recall  # noqa: PLC0415  (slow import)

        plot_cost_recall(rows, plot)
    if as_json:
        print_json(
            {
                "results": rows,
                "errors": errors,
                "skipped": [list(s) for s in found.skipped],
                "skipped_records": skipped_records,
            }
        )
    elif markdown:
        root = paths[0] if paths and len(paths) == 1 and paths[0].is_dir() else None
        sys.stdout.write(markdown_table(rows, root))
    else:
        _print_compare(rows, errors, found.skipped)
    if errors:
        raise typer.Exit(2)


def _print_compare(
    rows: list[dict[str, Any]], errors: list[dict[str, Any]], skipped: tuple[tuple[str, str], ...]
) -> None:
    base = _common_folder([row["path"] for row in rows])
    caption = f"paths under {base}" if base else None
    table = Table(
        title="strategies compared (replay keeps the recorded responses)", caption=caption
    )
    for col in ("session / strategy", "calls", *_COLUMNS):
        table.add_column(
            col, justify="left" if col.startswith("session") else "right", overflow="fold"
        )
    sessions: dict[tuple[str, Any], list[dict[str, Any]]] = {}
    for row in rows:
        sessions.setdefault((row["path"], row.get("session_id")), []).append(row)
    verdicts: list[str] = []
    for (path, session_id), group in sessions.items():
        by_name = {r["strategy"]: r["summary"] for r in group}
        saved = savings(by_name)
        table.add_section()
        shown = os.path.relpath(path, base) if base else path
        if session_id and len(sessions) > 1 and sum(k[0] == path for k in sessions) > 1:
            shown += f" {session_id[:8]}"
        table.add_row(f"[bold]{escape(shown)}[/]", *[""] * (len(_COLUMNS) + 1))
        for r in group:
            label = r["strategy"]
            cells = _summary_row(label, r["summary"], saved[label], r["calls"])[1:]
            table.add_row("  " + label, *cells)
        best = best_strategy(by_name)
        verdicts.append(f"{shown}: best {best or '(none qualifies)'}")
    console.print(table)
    console.print(f"best = {RULE}")
    for line in verdicts:
        console.print(f"  {escape(line)}")
    console.print(f"[dim]{SAVINGS_NOTE}. {ASSUMPTION}. {BOUND_NOTE}.[/]")
    for err in errors:
        err_console.print(f"[red]could not read[/] {err['error']}")
    for path, reason in skipped:
        err_console.print(f"[yellow]skipped[/] {path}: {reason}")


def _common_folder(paths: list[str]) -> str:
    """The folder every session path lies under, when they are several ("" otherwise): the
    table names sessions below it (the JSON keeps whole paths)."""
    if len(set(paths)) < 2:
        return ""
    try:
        return os.path.commonpath([os.path.dirname(p) for p in paths])
    except ValueError:  # relative and absolute paths mixed, or other drives
        return ""
