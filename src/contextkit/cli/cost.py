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
``--cache off|5m|1h``, ``--strategy SPEC`` (recordings only), ``--what-if-model M``.
``--model M`` means what it means in every command: the model for calls whose recording names
none (it prices them; a recording's own model stays).

``--json`` prints one document: ``{"basis", "tickets", "mean_usd", "p50_usd", "p90_usd",
"max_usd", "simulated", "breakdown", "what_if": [{"change", "mean_usd", "delta_usd",
"delta_pct", ...}], "recorded", "closed_form", "per_ticket", "notes", ...}``. Where every ticket
has a recorded bill, ``basis`` is ``recorded``: the headline figures are the bill and each what-if
is the bill times the simulated ratio, ticket by ticket (``simulated`` holds the simulated
baseline beside it); else ``basis`` is ``simulated``. ``--plot OUT.png`` draws the distribution
and the breakdown. Bad input exits with code 2 and a message naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from contextkit.cli import _tables as t
from contextkit.cli._app import (
    STRATEGY_HELP,
    AllOption,
    FormatOption,
    JsonOption,
    LenientOption,
    ModelOption,
    app,
    console,
    console_error,
    print_json,
)
from contextkit.cli._paths import read_outcome, select_paths
from contextkit.cli._tables import WideOption
from contextkit.cli.fleet import FleetOptions, run_fleet_command, with_fleet_options
from contextkit.errors import ConfigError, ContextkitError

if TYPE_CHECKING:
    from rich.table import Table

    from contextkit.estimate import CacheMode, CostReport, WhatIfs


AS_RECORDED = "as-recorded"


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


ProfileOption = Annotated[Path | None, typer.Option("--profile", help="Workload profile TOML.")]
FitOption = Annotated[bool, typer.Option("--fit", help="Fit a profile to PATHs (needs -o).")]
OutputOption = Annotated[Path | None, typer.Option("-o", "--output", help="Where --fit writes.")]
TicketsOption = Annotated[int | None, typer.Option("--tickets", min=1, help="Monte Carlo tickets.")]
SeedOption = Annotated[int | None, typer.Option("--seed", min=0, help="Monte Carlo seed.")]
WhatIfModelOption = Annotated[
    str | None, typer.Option("--what-if-model", help="What if: another model.", show_default=False)
]
AddToolsOption = Annotated[
    int | None, typer.Option("--add-tools", min=1, help="What if: N more tools.")
]
AddToolsFileOption = Annotated[
    Path | None,
    typer.Option(
        "--add-tools-file",
        help="What if: these tool schemas (a JSON list of Anthropic or OpenAI tools).",
        exists=True,
        dir_okay=False,
    ),
]
ToolTokensOption = Annotated[
    int | None,
    typer.Option("--tool-tokens", min=1, help="Size of each --add-tools schema (tokens)."),
]
SystemTokensOption = Annotated[
    str | None, typer.Option("--system-tokens", help="What if: system prompt +N tokens.")
]
CacheOption = Annotated[str | None, typer.Option("--cache", help="What if: off, 5m or 1h.")]
StrategyOption = Annotated[
    str | None, typer.Option("--strategy", help="What if: replay under this. " + STRATEGY_HELP)
]
PlotOption = Annotated[Path | None, typer.Option("--plot", help="Write a PNG here.")]


@app.command("cost")
@with_fleet_options
def cost_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Session files or folders (none, without --profile: every harness's default "
            "locations).",
            show_default=False,
        ),
    ] = None,
    every: AllOption = False,
    profile: ProfileOption = None,
    fit: FitOption = False,
    output: OutputOption = None,
    tickets: TicketsOption = None,
    seed: SeedOption = None,
    model: ModelOption = None,
    what_if_model: WhatIfModelOption = None,
    add_tools: AddToolsOption = None,
    add_tools_file: AddToolsFileOption = None,
    tool_tokens: ToolTokensOption = None,
    system_tokens: SystemTokensOption = None,
    cache: CacheOption = None,
    strategy: StrategyOption = None,
    json_out: JsonOption = False,
    plot: PlotOption = None,
    lenient: LenientOption = False,
    format_name: FormatOption = None,
    wide: WideOption = False,
    *,
    fleet: FleetOptions,
) -> None:
    """Cost per ticket, its distribution and breakdown, and what-ifs against it."""
    run = fleet.run(json_out)
    if run is not None:
        what_ifs = (profile, what_if_model, add_tools, add_tools_file, tool_tokens, system_tokens)
        if fit or any(v is not None for v in (*what_ifs, cache, plot)):
            raise typer.BadParameter("--out prices recordings as recorded, or under --strategy")
        specs = (AS_RECORDED,) if strategy is None else (AS_RECORDED, strategy)
        options = {"per_call": fleet.per_call, "model": model, "lenient": lenient}
        run_fleet_command(
            paths, every, run, command="cost", specs=specs, format=format_name, **options
        )
        return
    try:
        change = (add_tools, add_tools_file, tool_tokens, system_tokens, cache, strategy)
        what = _what_ifs(*change, model=what_if_model)
        named = _named(paths, every, profile is not None or fit)
        if fit:
            unread = _fit(named or [], output, lenient, json_out, format_name, model)
            if unread:
                raise typer.Exit(1)
            return
        report = (
            None
            if named is None  # discovery found nothing (and said so): nothing to price
            else _report(named, profile, what, tickets, seed, lenient, format_name, model)
        )
    except ContextkitError as exc:
        console_error(str(exc))
        raise typer.Exit(2) from None
    _show(report, plot, wide, json_out)
    if report is not None and report.unread:  # some files of a folder could not be read
        raise typer.Exit(read_outcome(len(report.names), len(report.unread)))


def _what_ifs(
    add_tools: int | None,
    add_tools_file: Path | None,
    tool_tokens: int | None,
    system_tokens: str | None,
    cache: str | None,
    strategy: str | None,
    *,
    model: str | None,
) -> WhatIfs:
    from contextkit.estimate import WhatIfs  # noqa: PLC0415  (loads in the command)

    return WhatIfs(
        add_tools=add_tools,
        add_tools_file=add_tools_file,
        tool_tokens=tool_tokens,
        system_tokens=_signed(system_tokens),
        cache=_cache(cache),
        strategy=strategy,
        model=model,
    )


def _show(report: CostReport | None, plot: Path | None, wide: bool, json_out: bool) -> None:
    if report is None:
        if json_out:
            print_json({"tickets": 0})
        return
    if plot is not None:
        from contextkit.estimate import plot_report  # noqa: PLC0415  (matplotlib)

        plot_report(report, plot)
    if json_out:
        print_json(report.to_json())
    else:
        _print(report, plot, wide)


def _named(paths: list[Path] | None, every: bool, given: bool) -> list[Path] | None:
    """The files to price: ``paths``, and (with none, unless a profile or a fit is ``given``, or
    with ``--all``) what discovery finds; None when that finds nothing."""
    named = list(paths or [])
    if not given and (every or not named):
        named += select_paths(None, every=True).files  # discovery only: named read below
        if not named:
            return None
    return named


def _report(
    paths: list[Path],
    profile: Path | None,
    what: WhatIfs,
    tickets: int | None,
    seed: int | None,
    lenient: bool,
    format_name: str | None = None,
    model: str | None = None,
) -> CostReport:
    from contextkit.estimate import (  # noqa: PLC0415  (loads in the command)
        estimate_from_profile,
        estimate_recordings,
        load_profile,
    )

    if profile is not None:
        if paths:
            raise ConfigError("give either PATHs or --profile, not both")
        return estimate_from_profile(load_profile(profile), what, tickets=tickets, seed=seed)
    if not paths:
        raise ConfigError("nothing to estimate: give session PATHs or --profile FILE")
    return estimate_recordings(paths, what, lenient=lenient, format=format_name, model=model)


def _fit(
    paths: list[Path],
    output: Path | None,
    lenient: bool,
    json_out: bool,
    format_name: str | None = None,
    model: str | None = None,
) -> int:
    """Fit and write the profiles; the number of files that could not be read."""
    from contextkit.estimate import (  # noqa: PLC0415  (loads in the command)
        FIT_TOLERANCE,
        check_fit,
        collect_tickets,
        dump_profile,
        fit_profiles,
        ticket_model,
    )

    if not paths or output is None:
        raise ConfigError("--fit needs session PATHs and -o profile.toml")
    read = collect_tickets(paths, lenient=lenient, format=format_name, model=model)
    for note in read.notes:  # a file left out of the fit is named, never dropped in silence
        if note.startswith("not read"):
            _warn(note)
    tickets = read.tickets
    if not tickets:
        raise ConfigError("nothing to fit: no session with model calls was read")
    fitted = fit_profiles(tickets)
    written: list[dict[str, Any]] = []
    for name, profile in fitted.items():
        target = output if len(fitted) == 1 else _per_model(output, name)
        target.write_text(dump_profile(profile), encoding="utf-8")
        check = check_fit(profile, [k for k in tickets if ticket_model(k) == name])
        written.append({"path": target, "profile": profile, "check": check})
    if json_out:
        print_json(
            {
                "profiles": [
                    {
                        "path": str(w["path"]),
                        "check": w["check"].to_json(),
                        **w["profile"].model_dump(mode="json", by_alias=True),
                    }
                    for w in written
                ]
            }
        )
    for w in written:
        check = w["check"]
        if not json_out:
            console.print(f"wrote {w['path']} ({check.tickets} tickets)", highlight=False)
            console.print(dump_profile(w["profile"]), highlight=False, markup=False)
        if check.error is None:
            _warn(f"{w['path']}: the fitted mean could not be checked (no price)")
        elif not check.ok:
            _warn(
                f"{w['path']}: the fitted profile's mean {t.money(check.fitted_mean_usd)} is "
                f"{check.error:+.0%} off its {check.tickets} recordings' "
                f"({t.money(check.recordings_mean_usd)}, {check.basis}): over "
                f"{FIT_TOLERANCE:.0%}; the profile's distributions do not carry this workload"
            )
        elif not json_out:
            console.print(
                f"check: fitted mean {t.money(check.fitted_mean_usd)} vs recordings "
                f"{t.money(check.recordings_mean_usd)} ({check.basis}), {check.error:+.1%}",
                highlight=False,
            )
    return len(read.unread)


def _per_model(output: Path, model: str) -> Path:
    """``profile.toml`` -> ``profile-claude-haiku-4-5.toml``: one file per model."""
    safe = "".join(c if c.isalnum() or c in "-._" else "-" for c in model)
    return output.with_name(f"{output.stem}-{safe}{output.suffix or '.toml'}")


def _warn(message: str) -> None:
    """A warning on stderr (the fit is written; the user decides)."""
    from contextkit.cli._app import err_console  # noqa: PLC0415

    err_console.print(f"[yellow]warning:[/] {message}", highlight=False, soft_wrap=True)


# --- printing ------------------------------------------------------------------------------


def _print(report: CostReport, plot: Path | None, wide: bool = False) -> None:
    data = report.to_json()

    def usd(value: Any) -> str:
        return "-" if value is None else t.money(value, wide)

    head = t.table(f"Cost per ticket ({report.source}, {data['tickets']} tickets)")
    t.label_column(head, "")
    for col in ("mean", "p50", "p90", "max"):
        t.number_column(head, col)
    columns = ("mean_usd", "p50_usd", "p90_usd", "max_usd")
    if data["basis"] == "recorded":  # every ticket has its bill: the headline is the bill
        head.add_row("recorded", *(usd(data[k]) for k in columns))
        head.add_row("simulated", *(usd(data["simulated"][k]) for k in columns))
    else:
        label = "simulated" if report.source == "recordings" else "Monte Carlo"
        head.add_row(label, *(usd(data[k]) for k in columns))
        if data["recorded"]:
            rec = data["recorded"]
            head.add_row(f"recorded ({rec['tickets']} tickets)", *(usd(rec[k]) for k in columns))
    console.print(head)
    if data["closed_form"]:
        cf = data["closed_form"]
        console.print(
            f"closed form: no cache {usd(cf['no_cache_usd'])}, always-warm cache "
            f"{usd(cf['warm_cache_usd'])}, calls {cf['calls']:.2f}",
            highlight=False,
        )
    console.print(_breakdown_table(data["breakdown"], wide))
    if data["what_if"]:
        console.print(_what_if_table(data, wide))
    for note in data["notes"]:
        console.print(f"[dim]note: {note}[/]", highlight=False)
    if plot is not None:
        console.print(f"plot written to {plot}", highlight=False, soft_wrap=True)


def _breakdown_table(b: dict[str, Any], wide: bool = False) -> Table:
    tab = t.table(f"Mean per ticket ({b['calls']:.2f} calls)")
    t.label_column(tab, "part")
    t.number_column(tab, "tokens")
    t.number_column(tab, "USD")
    for key, label in (
        ("prefix", "fixed prefix (system + tools)"),
        ("history", "re-sent history"),
        ("new_input", "new input"),
        ("uncached", "= uncached input"),
        ("cache_write", "= cache writes"),
        ("cache_read", "= cache reads"),
        ("output", "output"),
    ):
        usd = b.get(f"{key}_usd")
        tab.add_row(
            label,
            t.tokens(b.get(f"{key}_tokens"), wide),
            "-" if usd is None else t.money(usd, wide),
        )
    return tab


def _what_if_table(data: dict[str, Any], wide: bool = False) -> Table:
    basis = ", the bill times the simulated ratio" if data["basis"] == "recorded" else ""
    tab = t.table(f"What if (baseline {t.money(data['mean_usd'], wide)} per ticket{basis})")
    t.label_column(tab, "change")
    for col in ("mean", "delta", "delta\n%", "writes", "reads"):
        t.number_column(tab, col)
    for row in data["what_if"]:
        d = row["breakdown_delta"]
        tab.add_row(
            row["change"],
            "-" if row["mean_usd"] is None else t.money(row["mean_usd"], wide),
            t.signed_money(row["delta_usd"], wide),
            "-" if row["delta_pct"] is None else f"{row['delta_pct']:+.1f}%",
            t.signed_money(d.get("cache_write_usd"), wide),
            t.signed_money(d.get("cache_read_usd"), wide),
        )
    return tab


__all__ = ["cost_command"]
