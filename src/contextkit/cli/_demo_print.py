"""What ``contextkit demo`` prints (imported by the command when it runs: it loads the library).

Runs :func:`contextkit.demo.run_demo` on the built-in example (no network, no API key): every
preset strategy against the full tape, what one ticket costs and where the money goes, the best
strategy and what it saves, and PNG plots written to ``FOLDER`` (default ``./contextkit-demo``).
With ``--json`` exactly one JSON document goes to stdout (:meth:`DemoResult.to_json` plus the plot
paths under ``"plots"``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from contextkit.cli._app import console, print_json
from contextkit.demo import (
    BASELINE,
    BEST_RULE,
    TICKET_CLASSES,
    TICKET_PARTS,
    DemoResult,
    TicketCost,
    demo_spec,
    run_demo,
    write_demo_plots,
)
from contextkit.replay import ASSUMPTION, Replay

_PART_NAMES = {
    "prefix": "fixed prefix",
    "history": "re-sent history",
    "new_input": "new input",
    "output": "output",
    "uncached": "uncached input",
    "cache_write": "cache writes",
    "cache_read": "cache reads",
}


def show_demo(out: Path, as_json: bool, calls: int, seed: int) -> None:
    """Run the demo and print it (or one JSON document)."""
    result = run_demo(demo_spec(calls=calls, seed=seed))
    plots = write_demo_plots(result, out)
    if as_json:
        print_json({**result.to_json(), "plots": [str(p) for p in plots]})
        return
    _print_comparison(result)
    _print_ticket(result)
    _print_best(result)
    console.print("plots written:")
    for path in plots:
        console.print(f"  {path}", highlight=False, soft_wrap=True)
    console.print(f"[dim]{ASSUMPTION}; token counts by {result.counter} (estimates).[/]")


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.2f}"


def _tokens(value: float) -> str:
    """Tokens in a few characters: 987, 12.3k, 536k, 15.1M."""
    for size, unit in ((1e6, "M"), (1e3, "k")):
        if value >= size:
            scaled = value / size
            return f"{scaled:.1f}{unit}" if scaled < 100 else f"{scaled:.0f}{unit}"
    return f"{value:.0f}"


def _saved(result: DemoResult, rep: Replay) -> str:
    if rep.strategy == BASELINE:
        return ""
    saved = result.saving(rep.strategy)
    if saved is None:
        return ""
    return "0%" if round(saved[1], 2) == 0 else f"{-saved[1]:+.0%}"


def _table(title: str) -> Table:
    # No borders and one space between columns: the comparison must fit an 80-column terminal.
    return Table(
        title=title,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0),
        title_justify="left",
    )


_COMPARE = (
    *("strategy", "cost", "vs\nnone", "cache\nread", "cache\nwrite", "peak\nctx"),
    *("com-\npact", "over-\nflow", "re-\ncall", "span\nrecall", "edits\nok"),
)
"""Short headers: the table fits 80 columns with the longest preset name wrapped."""
STRATEGY_WIDTH = 18


def _print_comparison(result: DemoResult) -> None:
    s = result.session
    table = _table(
        f"{len(s.calls)}-call example on {s.model} (window {_tokens(result.baseline.window)}): "
        "every preset against the full tape"
    )
    for col in _COMPARE:
        if col == "strategy":  # a long preset name wraps; a figure never does
            table.add_column(col, max_width=STRATEGY_WIDTH, overflow="fold")
        else:
            table.add_column(col, justify="right", no_wrap=True)
    for rep in result.replays:
        m = rep.summary()
        overflows = m["overflow_calls"]
        table.add_row(
            rep.strategy,
            _money(m["cost_usd"]),
            _saved(result, rep),
            _tokens(m["cache_read"]),
            _tokens(m["cache_write"]),
            _tokens(m["peak_context_tokens"]),
            str(m["compactions"]),
            f"[red]{overflows}[/]" if overflows else "0",
            f"{m['recall']:.3f}",
            f"{m['span_recall']:.3f}" if m.get("span_recall") is not None else "-",
            f"{m['edit_feasibility']:.0%}" if m.get("edit_feasibility") is not None else "-",
            style="bold green" if rep.strategy == result.best else None,
        )
    console.print(table)


def _print_ticket(result: DemoResult) -> None:
    tickets = result.tickets
    table = _table("What one ticket (the example session) costs: full tape and best strategy")
    table.add_column("where the money goes")
    for i, t in enumerate(tickets):
        label = "best" if i else t.strategy
        table.add_column(f"{label}\ntokens", justify="right", no_wrap=True)
        table.add_column(f"{label}\nUSD", justify="right", no_wrap=True)
        table.add_column("\nshare", justify="right", no_wrap=True)
    for keys, label in ((TICKET_PARTS, "by content"), (TICKET_CLASSES, "by billing class")):
        table.add_row(f"[bold]{label}[/]")
        for key in keys:
            table.add_row("  " + _PART_NAMES[key], *_cells(tickets, key))
        table.add_section()
    total = [c for t in tickets for c in ("", _money(t.cost_usd), "")]
    table.add_row("[bold]ticket[/]", *total)
    console.print(table)


def _cells(tickets: tuple[TicketCost, ...], key: str) -> list[str]:
    cells = []
    for t in tickets:
        share = t.usd[key] / t.cost_usd if t.cost_usd else 0.0
        cells += [_tokens(t.tokens[key]), _money(t.usd[key]), f"{share:.0%}"]
    return cells


def _print_best(result: DemoResult) -> None:
    none = result.baseline
    over = sum(1 for row in none.rows if row.overflow)
    overflow = f", which overflows the window at {over} calls" if over else ""
    console.print(
        f"A ticket costs {_money(none.cost_usd)} with the full tape ({BASELINE}{overflow}).",
        highlight=False,
    )
    _print_recovery(result)
    if result.best is None:
        console.print(f"No strategy qualifies as best ({BEST_RULE}).")
        return
    if result.best == BASELINE:
        console.print(
            f"No strategy is cheaper than the full tape by cost + recovery on this session "
            f"({BEST_RULE}): best = {BASELINE}."
        )
        return
    best = result.replay_of(result.best)
    saved = result.saving(result.best)
    share = f" ({saved[1]:.0%})" if saved else ""
    summary = best.summary()
    console.print(
        f"Best: [bold green]{result.best}[/] at {_money(best.cost_usd)} per ticket, "
        f"{_money(summary['recovery_usd'])} more to get back what later calls needed, saves "
        f"{_money(saved[0] if saved else None)}{share} against {BASELINE}{overflow}; "
        f"recall {best.recall.recall:.3f}, copied spans {_spans(best)}.\n"
        f"[dim]best = {BEST_RULE}.[/]"
    )


def _print_recovery(result: DemoResult) -> None:
    """Cost + recovery per strategy: what a later call needed that the view dropped, priced as
    the agent getting it back (the tool run again; lost if the user typed it)."""
    console.print(
        "Cost + recovery (getting back what later calls needed and the view dropped):",
        highlight=False,
    )
    width = max(len(rep.strategy) for rep in result.replays)
    for rep in result.replays:
        s = rep.summary()
        lost = f", {s['unrecoverable']} item(s) lost for good" if s["unrecoverable"] else ""
        console.print(
            f"  {rep.strategy:<{width}} {_money(s['cost_usd'])} + "
            f"{_money(s['recovery_usd'])} = {_money(s['cost_plus_recovery_usd'])}"
            f" ({s['recoveries']} item(s){lost})",
            highlight=False,
        )
    console.print("Probes where the view was edited (share passed):", highlight=False)
    for rep in result.replays:
        s = rep.summary()
        if s["probes"]:
            console.print(f"  {rep.strategy:<{width}}{_probe_cells(s)}", highlight=False)


def _probe_cells(summary: dict[str, Any]) -> str:
    """The probes' shares where the strategy edited the view (files, task, rules, errors)."""
    if not summary["probes"]:
        return ""
    names = {"artifacts": "files", "task": "task", "instructions": "rules", "errors": "errors"}
    # files read or changed so far; the task the user set; the user's rules; errors still open
    cells = [
        f"{label} {'-' if summary[f'probe_{c}'] is None else format(summary[f'probe_{c}'], '.2f')}"
        for c, label in names.items()
    ]
    return " " + " ".join(cells)


def _spans(rep: Replay) -> str:
    quality = rep.quality
    return "n/a" if quality is None else f"{quality.span_recall:.3f}"
