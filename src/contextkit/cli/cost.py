"""``contextkit cost``: cost per ticket from recordings or a workload profile, with what-ifs.

Three modes:

- ``contextkit cost [PATH...] [--all] [--lenient]``: files or folders of recorded sessions
  (subagents priced into their parent's ticket); with no path (and no ``--profile``), or
  ``--all``, the sessions found in every harness's default locations
  (:mod:`contextkit.cli._paths`; nothing found there prices nothing and exits 0);
- ``contextkit cost --profile profile.toml [--tickets N] [--seed S]``: Monte Carlo on a workload
  profile, with the closed form beside it;
- ``contextkit cost --fit PATH... -o profile.toml``: fit a profile to recordings and write it.

What-ifs (each one row, shown as a delta against the baseline, each re-simulating the cache):
``--add-tools N [--tool-tokens S]``, ``--add-tools-file FILE``, ``--system-tokens +N``,
``--cache off|5m|1h``, ``--strategy SPEC`` (recordings only), ``--model M``.

``--json`` prints one document: ``{"basis", "tickets", "mean_usd", "p50_usd", "p90_usd",
"max_usd", "simulated", "breakdown", "what_if": [{"change", "mean_usd", "delta_usd",
"delta_pct", ...}], "recorded", "closed_form", "per_ticket", "notes", ...}``. Where every ticket
has a recorded bill, ``basis`` is ``recorded``: the headline figures are the bill and each what-if
is the bill plus the simulated difference, ticket by ticket (``simulated`` holds the simulated
baseline beside it); else ``basis`` is ``simulated``. ``--plot OUT.png`` draws the distribution
and the breakdown. Bad input exits with code 2 and a message naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from contextkit.cli._app import FormatOption, app, console, console_error, print_json
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
from contextkit.errors import ConfigError, ContextkitError
from contextkit.estimate import (
    CacheMode,
    CostReport,
    WhatIfs,
    collect_tickets,
    dump_profile,
    estimate_from_profile,
    estimate_recordings,
    fit_profile,
    load_profile,
    plot_report,
)
from contextkit.fleet import FleetConfig
from contextkit.replay import AS_RECORDED


def _signed(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.replace("_", ""))
    except ValueError:
        raise ConfigError(
            f"--system-tokens takes a signed integer such as +500 (got {value!r})"
        ) from None


def _cache(value: str | None) -> CacheMode | None:
    if value is None or value in ("off", "5m", "1h"):
        return value  # type: ignore[return-value]
    raise ConfigError(f"--cache must be off, 5m or 1h (got {value!r})")


@app.command("cost")
def cost_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Session files or folders (none, without --profile: every harness's default "
            "locations).",
            show_default=False,
        ),
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="Also every harness's default locations.")
    ] = False,
    profile: Annotated[
        Path | None, typer.Option("--profile", help="Workload profile TOML.")
    ] = None,
    fit: Annotated[bool, typer.Option("--fit", help="Fit a profile to PATHs (needs -o).")] = False,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Where --fit writes.")
    ] = None,
    tickets: Annotated[int | None, typer.Option("--tickets", help="Monte Carlo tickets.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Monte Carlo seed.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="What if: another model.")] = None,
    add_tools: Annotated[
        int | None, typer.Option("--add-tools", help="What if: N more tools.")
    ] = None,
    add_tools_file: Annotated[
        Path | None, typer.Option("--add-tools-file", help="What if: these JSON tool schemas.")
    ] = None,
    tool_tokens: Annotated[
        int | None, typer.Option("--tool-tokens", help="Size of each --add-tools schema.")
    ] = None,
    system_tokens: Annotated[
        str | None, typer.Option("--system-tokens", help="What if: system prompt +N tokens.")
    ] = None,
    cache: Annotated[str | None, typer.Option("--cache", help="What if: off, 5m or 1h.")] = None,
    strategy: Annotated[
        str | None, typer.Option("--strategy", help="What if: replay under this strategy.")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write a PNG here.")] = None,
    lenient: Annotated[bool, typer.Option("--lenient", help="Skip bad records.")] = False,
    format_name: FormatOption = None,
    out: OutOption = None,
    per_call: PerCallOption = False,
    resume: ResumeOption = False,
    engine: EngineOption = "process",
    jobs: FleetJobsOption = None,
    quiet: QuietOption = False,
) -> None:
    """Cost per ticket, its distribution and breakdown, and what-ifs against it."""
    check_fleet_options(out, per_call, resume, engine)
    if out is not None:
        others = (
            profile,
            model,
            add_tools,
            add_tools_file,
            tool_tokens,
            system_tokens,
            cache,
            plot,
        )
        if fit or any(v is not None for v in others):
            raise typer.BadParameter("--out prices recordings as recorded, or under --strategy")
        specs = (AS_RECORDED,) if strategy is None else (AS_RECORDED, strategy)
        config = FleetConfig(
            command="cost", specs=specs, per_call=per_call, lenient=lenient, format=format_name
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
            as_json=json_out,
        )
        return
    try:
        what = WhatIfs(
            add_tools=add_tools,
            add_tools_file=add_tools_file,
            tool_tokens=tool_tokens,
            system_tokens=_signed(system_tokens),
            cache=_cache(cache),
            strategy=strategy,
            model=model,
        )
        named = list(paths or [])
        if profile is None and not fit and (every or not named):
            named += select_paths(None, every=True).files  # discovery only: named read below
            if not named:  # discovery found nothing (and said so): nothing to price
                if json_out:
                    print_json({"tickets": 0})
                return
        if fit:
            _fit(named, output, lenient, json_out, format_name)
            return
        report = _report(named, profile, what, tickets, seed, lenient, format_name)
    except ContextkitError as exc:
        console_error(str(exc))
        raise typer.Exit(2) from None
    if plot is not None:
        plot_report(report, plot)
    if json_out:
        print_json(report.to_json())
    else:
        _print(report, plot)


def _report(
    paths: list[Path],
    profile: Path | None,
    what: WhatIfs,
    tickets: int | None,
    seed: int | None,
    lenient: bool,
    format_name: str | None = None,
) -> CostReport:
    if profile is not None:
        if paths:
            raise ConfigError("give either PATHs or --profile, not both")
        return estimate_from_profile(load_profile(profile), what, tickets=tickets, seed=seed)
    if not paths:
        raise ConfigError("nothing to estimate: give session PATHs or --profile FILE")
    return estimate_recordings(paths, what, lenient=lenient, format=format_name)


def _fit(
    paths: list[Path],
    output: Path | None,
    lenient: bool,
    json_out: bool,
    format_name: str | None = None,
) -> None:
    if not paths or output is None:
        raise ConfigError("--fit needs session PATHs and -o profile.toml")
    fitted = fit_profile(collect_tickets(paths, lenient=lenient, format=format_name).tickets)
    output.write_text(dump_profile(fitted), encoding="utf-8")
    if json_out:
        print_json({"profile": str(output), **fitted.model_dump(mode="json", by_alias=True)})
    else:
        console.print(f"wrote {output}", highlight=False)
        console.print(dump_profile(fitted), highlight=False, markup=False)


# --- printing ------------------------------------------------------------------------------


def _usd(value: Any) -> str:
    return "-" if value is None else f"${value:,.4f}"


def _print(report: CostReport, plot: Path | None) -> None:
    data = report.to_json()
    head = Table(title=f"Cost per ticket ({report.source}, {data['tickets']} tickets)")
    for col in ("", "mean", "p50", "p90", "max"):
        head.add_column(col, justify="right" if col else "left")
    columns = ("mean_usd", "p50_usd", "p90_usd", "max_usd")
    if data["basis"] == "recorded":  # every ticket has its bill: the headline is the bill
        head.add_row("recorded", *(_usd(data[k]) for k in columns))
        head.add_row("simulated", *(_usd(data["simulated"][k]) for k in columns))
    else:
        label = "simulated" if report.source == "recordings" else "Monte Carlo"
        head.add_row(label, *(_usd(data[k]) for k in columns))
        if data["recorded"]:
            rec = data["recorded"]
            head.add_row(f"recorded ({rec['tickets']} tickets)", *(_usd(rec[k]) for k in columns))
    console.print(head)
    if data["closed_form"]:
        cf = data["closed_form"]
        console.print(
            f"closed form: no cache {_usd(cf['no_cache_usd'])}, always-warm cache "
            f"{_usd(cf['warm_cache_usd'])}, calls {cf['calls']:.2f}",
            highlight=False,
        )
    console.print(_breakdown_table(data["breakdown"]))
    if data["what_if"]:
        console.print(_what_if_table(data))
    for note in data["notes"]:
        console.print(f"[dim]note: {note}[/]", highlight=False)
    if plot is not None:
        console.print(f"plot written to {plot}", highlight=False)


def _breakdown_table(b: dict[str, Any]) -> Table:
    table = Table(title=f"Mean per ticket ({b['calls']:.2f} calls)")
    for col in ("part", "tokens", "USD"):
        table.add_column(col, justify="left" if col == "part" else "right")
    for key, label in (
        ("prefix", "fixed prefix (system + tools)"),
        ("history", "re-sent history"),
        ("new_input", "new input"),
        ("uncached", "= uncached input"),
        ("cache_write", "= cache writes"),
        ("cache_read", "= cache reads"),
        ("output", "output"),
    ):
        tokens = b.get(f"{key}_tokens")
        table.add_row(label, "-" if tokens is None else f"{tokens:,.0f}", _usd(b.get(f"{key}_usd")))
    return table


def _what_if_table(data: dict[str, Any]) -> Table:
    basis = (
        ", the recorded bill plus the simulated difference" if data["basis"] == "recorded" else ""
    )
    table = Table(title=f"What if (baseline {_usd(data['mean_usd'])} per ticket{basis})")
    for col in ("change", "mean", "delta", "delta %", "writes", "reads"):
        table.add_column(col, justify="left" if col == "change" else "right")
    for row in data["what_if"]:
        d = row["breakdown_delta"]
        pct = "-" if row["delta_pct"] is None else f"{row['delta_pct']:+.1f}%"
        delta = "-" if row["delta_usd"] is None else f"{row['delta_usd']:+,.4f}"
        table.add_row(
            row["change"],
            _usd(row["mean_usd"]),
            delta,
            pct,
            _signed_usd(d.get("cache_write_usd")),
            _signed_usd(d.get("cache_read_usd")),
        )
    return table


def _signed_usd(value: float | None) -> str:
    return "-" if value is None else f"{value:+,.4f}"


__all__ = ["cost_command"]
