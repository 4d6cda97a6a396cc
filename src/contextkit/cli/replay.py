"""``contextkit replay`` and ``contextkit compare``: strategies scored on recorded sessions.

``compare [PATH...] [--all]`` takes files and folders; with no path, or ``--all``, the default
locations of every harness are searched (:mod:`contextkit.cli._paths`; nothing found there
compares nothing and exits 0)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from contextkit.cli import _tables as t
from contextkit.cli._app import (
    STRATEGY_HELP,
    AllOption,
    FormatOption,
    LenientOption,
    ModelOption,
    PathsArgument,
    app,
    console,
    err_console,
    print_json,
)
from contextkit.cli._paths import read_outcome, select_paths
from contextkit.cli._tables import WideOption
from contextkit.cli.fleet import FleetOptions, run_fleet_command, with_fleet_options
from contextkit.errors import ContextkitError
from contextkit.strategies import PRESET_NAMES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contextkit.replay import FileResult, Replay
    from contextkit.session import Session

AS_RECORDED = "as-recorded"
ORACLE = "oracle"
DEFAULT_SPECS = (AS_RECORDED, *PRESET_NAMES, ORACLE)

_COLUMNS = (
    ("cost", "cost_usd", "money"),
    ("uncached\nin", "input_tokens", "tokens"),
    ("cache\nread", "cache_read", "tokens"),
    ("cache\nwrite", "cache_write", "tokens"),
    ("peak\nctx", "peak_context_tokens", "tokens"),
    ("compac-\ntions", "compactions", "count"),
    ("over-\nflows", "overflow_calls", "count"),
    ("recall", "recall", "recall"),
    ("copied\nspans", "span_recall", "recall"),
    ("edits\nok", "edit_feasibility", "percent"),
)
"""The figures of a replay summary: header, key, kind (``recall`` and ``percent`` are shares:
a mean over sessions, never a sum)."""
SHARES = ("recall", "percent")
_SUMMARISER = ("summa-\nriser", "summariser_usd", "money")
"""What the strategy's own summary calls cost (part of ``cost``), shown apart with ``--wide``
(and in the JSON as ``summariser_usd``)."""


def _columns(wide: bool) -> tuple[tuple[str, str, str], ...]:
    """The figures shown: with ``wide``, the summariser's cost after the cost."""
    return (_COLUMNS[0], _SUMMARISER, *_COLUMNS[1:]) if wide else _COLUMNS


SAVINGS_NOTE = (
    "savings are of cost + recovery, against the as-recorded requests priced by the same "
    "simulator (the harness's own compaction calls included; the recorded bill is the "
    "as-recorded cost) and against none (marked where none overflows the window: a run that "
    "could not have happened)"
)


def _figure(kind: str, value: Any, wide: bool) -> str:
    if kind == "money":
        return t.money(value, wide)
    if kind == "tokens":
        return t.tokens(value, wide)
    if kind == "recall":
        return "-" if value is None else f"{value:.3f}"
    if kind == "percent":
        return "-" if value is None else f"{value:.0%}"
    return "-" if value is None else f"{value:,}"


def _summary_cells(summary: dict[str, Any], wide: bool) -> list[str]:
    return [_figure(kind, summary.get(key), wide) for _, key, kind in _columns(wide)]


@app.command("replay")
def replay_command(
    file: Annotated[Path, typer.Argument(help="A recorded session file.")],
    strategy: Annotated[
        str, typer.Option("--strategy", "-s", help=STRATEGY_HELP)
    ] = "evict-tool-results",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    dump_requests: Annotated[
        Path | None,
        typer.Option(
            "--dump-requests",
            help="Write each request the strategy sends (JSONL).",
            show_default=False,
        ),
    ] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write a PNG plot here.", show_default=False)
    ] = None,
    lenient: LenientOption = False,
    model: ModelOption = None,
    format_name: FormatOption = None,
    wide: WideOption = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain", help="List every recovery, failed probe and refused request, with why."
        ),
    ] = False,
) -> None:
    """Replay one recorded session under a strategy: cost, cache, peak context, recall."""
    from contextkit.formats import load  # noqa: PLC0415  (the library loads in the command)
    from contextkit.replay import run_strategy, savings, with_default_model  # noqa: PLC0415
    from contextkit.wire import write_requests_jsonl  # noqa: PLC0415

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
    others = [
        s for top in loaded.sessions for s in top.all_sessions() if s is not loaded.sessions[0]
    ]
    others = [s for s in others if s.calls]
    if as_json:
        _print_replay_json(result, saved, loaded.skipped, others)
        return
    _print_replay(result, baseline, none, saved, others, wide)
    if explain:
        _print_explain(result)
    if dump_requests is not None:
        console.print(f"requests written to {dump_requests}", highlight=False, soft_wrap=True)
    if plot is not None:
        console.print(f"plot written to {plot}", highlight=False, soft_wrap=True)


def _print_replay_json(
    result: Replay,
    saved: dict[str, dict[str, float | None]],
    skipped: Any,
    others: list[Session],
) -> None:
    left = [
        {
            "session": s.session_id,
            "calls": len(s.calls),
            "subagent": s.parent_session_id is not None,
        }
        for s in others
    ]
    doc = {
        **result.to_json(),
        "savings": saved[result.strategy],
        "skipped": [{"line": r.line, "reason": r.reason} for r in skipped],
    }
    print_json({**doc, "not_replayed": left})


def _print_explain(result: Replay) -> None:
    """Why the scores are what they are: each recovery (call, kind, what, why, price without and
    with the retrieve tool), each failed probe, each request the provider would refuse."""
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when a command prints)

    tab = t.table(f"recoveries: what later calls needed that {result.strategy} had dropped")
    for header in ("call", "kind", "what held it", "facts needed"):
        t.label_column(tab, header)
    for header in ("tokens", "to get back", "with retrieval"):
        t.number_column(tab, header)
    with_tool = {(r.call, r.source): r for r in result.retrieval or ()}
    lost = "lost for good"
    for r in result.recoveries:
        back = with_tool.get((r.call, r.source))
        tab.add_row(
            str(r.call),
            r.kind,
            escape(r.source[:70]),
            escape(", ".join(f[:30] for f in r.facts[:3])),
            f"{r.tokens:,}",
            lost if not r.recoverable else t.money(r.cost_usd, True),
            lost if back is None or not back.recoverable else t.money(back.cost_usd, True),
        )
    console.print(tab if result.recoveries else "no recovery: no later call needed what it dropped")
    failed = result.probes.failed if result.probes is not None else []
    for call, category, answer in failed:
        console.print(
            f"probe failed at call {call} ({category}): {escape(answer)}", highlight=False
        )
    if result.refused:
        shown = ", ".join(map(str, result.refused[:20]))
        console.print(f"requests the provider would refuse at calls: {shown}", highlight=False)


def _print_replay(
    result: Replay,
    baseline: Replay,
    none: Replay,
    saved: dict[str, dict[str, float | None]],
    others: list[Session],
    wide: bool,
) -> None:
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when a command prints)

    from contextkit.replay import ASSUMPTION, BOUND_NOTE  # noqa: PLC0415

    where = t.short_path(result.session.path or "", wide, width=48)
    tab = t.table(f"{escape(where)} ({result.session.model}, {len(result.rows)} calls)")
    t.label_column(tab, "strategy")
    for header, _, _ in _columns(wide):
        t.number_column(tab, header)
    shown = {AS_RECORDED: baseline, "none": none, result.strategy: result}
    for name, rep in shown.items():
        tab.add_row(name, *_summary_cells(rep.summary(), wide))
    console.print(tab)
    simulated = baseline.summary().get("simulated_cost_usd")
    mine = saved.get(result.strategy, {})
    parts = [
        f"{t.percent(mine.get(key))} vs {label}"
        for key, label in (("vs_as_recorded", "as-recorded"), ("vs_none", "none"))
        if mine.get(key) is not None
    ]
    line = f"as-recorded, simulated: {t.money(simulated, wide)}"
    if parts and result.strategy not in (AS_RECORDED, "none"):
        line += f"; {result.strategy} (cost + recovery): " + ", ".join(parts)
        over = none.summary()["overflow_calls"]
        if over and mine.get("vs_none") is not None:
            line += f" (none overflows the window at {over} calls: it could not have run)"
    console.print(line, highlight=False)
    if result.recall.examples:
        lost = ", ".join(f"call {c}: {f[:60]}" for c, f in result.recall.examples[:6])
        console.print(f"lost (examples): {escape(lost)}", highlight=False)
    if result.quality is not None and result.quality.examples:
        texts = "; ".join(f"call {c}: {q[:60]}" for c, q in result.quality.examples[:4])
        console.print(f"copied text or edit strings lost (examples): {escape(texts)}")
    console.print(f"[dim]{SAVINGS_NOTE}. {ASSUMPTION}[/]")
    if result.strategy == ORACLE:
        console.print(f"[bold]{BOUND_NOTE}.[/]")
    if others:
        subs = [s for s in others if s.parent_session_id is not None]
        calls = sum(len(s.calls) for s in others)
        what = (
            f"{len(subs)} subagent session(s)"
            if len(subs) == len(others)
            else (f"{len(others)} other session(s), {len(subs)} of them subagents")
        )
        console.print(
            f"not replayed here: {what}, {calls} calls (this command replays the file's first "
            "session; `contextkit compare FILE -s STRATEGY` replays every one)",
            highlight=False,
        )


CompareStrategyOption = Annotated[
    list[str] | None,
    typer.Option(
        "--strategy",
        "-s",
        help="Repeatable; default: as-recorded and every preset. " + STRATEGY_HELP,
        show_default=False,
    ),
]
MarkdownOption = Annotated[
    bool, typer.Option("--markdown", help="Print a markdown table: $cost / recall.")
]
CostRecallPlotOption = Annotated[
    Path | None, typer.Option("--plot", help="Cost against recall (PNG).", show_default=False)
]


@app.command("compare")
@with_fleet_options
def compare_command(
    paths: PathsArgument = None,
    every: AllOption = False,
    strategy: CompareStrategyOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    markdown: MarkdownOption = False,
    plot: CostRecallPlotOption = None,
    lenient: LenientOption = False,
    model: ModelOption = None,
    wide: WideOption = False,
    *,
    fleet: FleetOptions,
) -> None:
    """Replay every session under every strategy and compare: a row per session with the best
    strategy, and the totals per strategy."""
    specs = tuple(strategy) if strategy else DEFAULT_SPECS
    run = fleet.run(as_json)
    if run is not None:
        if markdown or plot is not None:
            raise typer.BadParameter("--markdown and --plot print one table: not with --out")
        shared = {"per_call": fleet.per_call, "model": model, "lenient": lenient}
        run_fleet_command(paths, every, run, command="compare", specs=specs, **shared)
        return
    from rich.progress import Progress  # noqa: PLC0415  (rich loads only when a command prints)

    from contextkit.replay import compare  # noqa: PLC0415

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
            jobs=fleet.jobs or 1,
            lenient=lenient,
            model=model,
            on_done=lambda _: progress.advance(task),
        )
    errors = _show_compare(results, found.skipped, paths, plot, as_json, markdown, wide)
    code = read_outcome(len(results) - len(errors), len(errors))
    if code:
        raise typer.Exit(code)


def _show_compare(
    results: Sequence[FileResult],
    skipped: Sequence[tuple[str, str]],
    paths: list[Path] | None,
    plot: Path | None,
    as_json: bool,
    markdown: bool,
    wide: bool,
) -> list[dict[str, str]]:
    """Print what ``compare`` found (JSON, markdown or tables); the files it could not read."""
    from contextkit.replay import markdown_table  # noqa: PLC0415

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
                "skipped": [list(s) for s in skipped],
                "skipped_records": skipped_records,
            }
        )
    elif markdown:
        root = paths[0] if paths and len(paths) == 1 and paths[0].is_dir() else None
        sys.stdout.write(markdown_table(rows, root))
    else:
        _print_compare(rows, errors, tuple(skipped), wide)
    return errors


def _by_session(rows: list[dict[str, Any]]) -> dict[tuple[str, str | None], dict[str, Any]]:
    """Summaries by session (path and session id), then by strategy; ``calls`` beside them."""
    sessions: dict[tuple[str, str | None], dict[str, Any]] = {}
    for row in rows:
        entry = sessions.setdefault(
            (row["path"], row.get("session_id")), {"calls": row["calls"], "by": {}}
        )
        entry["by"][row["strategy"]] = row["summary"]
    return sessions


def _print_compare(
    rows: list[dict[str, Any]],
    errors: list[dict[str, Any]],
    skipped: tuple[tuple[str, str], ...],
    wide: bool,
) -> None:
    sessions = _by_session(rows)
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    base = _common_folder([path for path, _ in sessions])
    if base:
        console.print(f"paths under {base}", highlight=False, markup=False, soft_wrap=True)
    console.print(_sessions_table(sessions, base, wide))
    overall = _overall(sessions)
    if overall:
        console.print(overall, highlight=False)
    console.print(_totals_table(sessions, strategies, wide))
    if wide:
        console.print(_detail_table(rows, base))
    from contextkit.replay import ASSUMPTION, BOUND_NOTE, RULE  # noqa: PLC0415

    console.print(f"best = {RULE}", highlight=False)
    console.print(f"[dim]{SAVINGS_NOTE}. {ASSUMPTION}. {BOUND_NOTE}.[/]")
    for err in errors:
        err_console.print(f"[red]could not read[/] {err['error']}", highlight=False)
    for path, reason in skipped:
        err_console.print(f"[yellow]skipped[/] {path}: {reason}", highlight=False)


def _sessions_table(
    sessions: dict[tuple[str, str | None], dict[str, Any]], base: str, wide: bool
) -> Any:
    """A row per session: its bill, the full tape, and the best strategy with its saving."""
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when a command prints)

    from contextkit.replay import best_strategy, savings, total  # noqa: PLC0415

    tab = t.table(
        "per session (replay keeps the recorded responses)",
        caption="as-rec: the recorded requests priced by the same simulator as every strategy "
        "(the basis of each saving); the recorded bill is in compare --json and in the line "
        "below",
    )
    t.label_column(tab, "session")
    for header in ("calls", "as-rec", "none"):
        t.number_column(tab, header)
    t.label_column(tab, "best")
    t.number_column(tab, "best cost\n+ recovery")
    t.number_column(tab, "vs\nas-rec")
    t.number_column(tab, "vs\nnone")
    for (path, session_id), entry in sessions.items():
        by = entry["by"]
        shown = os.path.relpath(path, base) if base else path
        name = t.short_path(shown, wide)
        if session_id and session_id not in shown:  # a Claude Code file is named by its id
            name += f" {session_id[:8]}"
        best = best_strategy(by)
        recorded = by.get(AS_RECORDED, {})
        bill = recorded.get("simulated_cost_usd") or recorded.get("cost_usd")
        best_cost = total(by[best]) if best else None
        saved = savings(by).get(best, {}) if best else {}
        none = "-"
        if "none" in by:
            none = t.money(by["none"]["cost_usd"], wide)
            if by["none"].get("overflow_calls"):
                none += f" ({by['none']['overflow_calls']} over)"
        tab.add_row(
            escape(name),
            f"{entry['calls']:,}",
            t.money(bill, wide) if AS_RECORDED in by else "-",
            none,
            best or "-",
            t.money(best_cost, wide) if best else "-",
            t.percent(saved.get("vs_as_recorded")),
            t.percent(saved.get("vs_none")),
        )
    return tab


def _overall(sessions: dict[tuple[str, str | None], dict[str, Any]]) -> str:
    """One line: what the best strategy of each session saves over them all, in dollars, against
    the as-recorded requests priced alike (and the recorded bill beside it)."""
    from contextkit.replay import best_strategy, total  # noqa: PLC0415

    best_sum = simulated = bill = 0.0
    counted = 0
    for entry in sessions.values():
        by = entry["by"]
        best, recorded = best_strategy(by), by.get(AS_RECORDED)
        cost = total(by[best]) if best else None
        base = (recorded or {}).get("simulated_cost_usd") or (recorded or {}).get("cost_usd")
        if cost is None or base is None or recorded is None:
            continue
        best_sum, simulated, counted = best_sum + cost, simulated + base, counted + 1
        bill += recorded.get("cost_usd") or base
    if not counted or not simulated:
        return ""
    saved = simulated - best_sum
    return (
        f"over {counted} session(s) the best of each costs ${best_sum:,.2f} with recovery, "
        f"against ${simulated:,.2f} as recorded (priced alike): ${saved:,.2f} saved "
        f"({-saved / simulated:+.0%}); the recorded bill: ${bill:,.2f}"
    )


def _totals_table(
    sessions: dict[tuple[str, str | None], dict[str, Any]], strategies: list[str], wide: bool
) -> Any:
    """A row per strategy, summed over the sessions every strategy priced (a session with an
    unknown price or no bill would make the sums incomparable); shares are means. The saving is
    against the as-recorded requests priced by the same simulator, of cost + recovery."""
    from contextkit.replay import best_strategy  # noqa: PLC0415
    from contextkit.replay import total as replay_total  # noqa: PLC0415

    priced = [
        e["by"]
        for e in sessions.values()
        if all(s in e["by"] and e["by"][s]["cost_usd"] is not None for s in strategies)
    ]
    left = len(sessions) - len(priced)
    note = f"; {left} session(s) left out: a price or the bill unknown" if left else ""
    tab = t.table(f"totals over {len(priced)} session(s){note}")
    t.label_column(tab, "strategy")
    for header, _, _ in _columns(wide):
        t.number_column(tab, header)
    t.number_column(tab, "vs\nas-rec")
    t.number_column(tab, "best\nin")
    bill = None  # the as-recorded requests priced by the same simulator: like for like
    if AS_RECORDED in strategies:
        bill = sum(
            by[AS_RECORDED].get("simulated_cost_usd") or by[AS_RECORDED]["cost_usd"]
            for by in priced
        )
    best = [best_strategy(by) for by in priced]
    for name in strategies:
        summaries = [by[name] for by in priced]
        total: dict[str, Any] = {
            key: sum(s[key] for s in summaries)
            for _, key, kind in _columns(wide)
            if kind not in SHARES
        }
        total["peak_context_tokens"] = max((s["peak_context_tokens"] for s in summaries), default=0)
        for _, key, kind in _columns(wide):
            if kind in SHARES:
                known = [s[key] for s in summaries if s.get(key) is not None]
                total[key] = sum(known) / len(known) if known else None
        plus = [replay_total(s) for s in summaries]
        versus = ""
        if bill and name != AS_RECORDED:  # of cost + recovery; n/a where something was lost
            known = [p for p in plus if p is not None]
            versus = t.percent(sum(known) / bill - 1) if len(known) == len(plus) else "n/a"
        counted = f"{best.count(name)}" if name != AS_RECORDED else ""
        tab.add_row(name, *_summary_cells(total, wide), versus, counted)
    return tab


def _detail_table(rows: list[dict[str, Any]], base: str) -> Any:
    """``--wide``: every session under every strategy, whole figures."""
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when a command prints)

    tab = t.table("every session under every strategy")
    t.label_column(tab, "session / strategy")
    t.number_column(tab, "calls")
    for header, _, _ in _columns(True):
        t.number_column(tab, header)
    last = None
    for row in rows:
        if row["path"] != last:
            tab.add_section()
            shown = os.path.relpath(row["path"], base) if base else row["path"]
            tab.add_row(f"[bold]{escape(shown)}[/]", *[""] * (len(_columns(True)) + 1))
            last = row["path"]
        tab.add_row(
            "  " + row["strategy"], f"{row['calls']:,}", *_summary_cells(row["summary"], True)
        )
    return tab


def _common_folder(paths: list[str]) -> str:
    """The folder every session path lies under, when they are several ("" otherwise): the
    table names sessions below it (the JSON keeps whole paths)."""
    if len(set(paths)) < 2:
        return ""
    try:
        return os.path.commonpath([os.path.dirname(p) for p in paths])
    except ValueError:  # relative and absolute paths mixed, or other drives
        return ""
