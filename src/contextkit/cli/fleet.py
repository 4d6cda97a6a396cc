"""The fleet code path of ``compare``, ``cost`` and ``inspect``: ``--out results.parquet``.

With ``--out``, a command walks its folders lazily and streams one row per session x strategy
(``--per-call``: and one per call, to ``<stem>.calls.parquet``) to Parquet as results come
(:func:`contextkit.fleet.run_fleet`), on ``--engine process`` (default, ``--jobs N``, default: the
cores), ``serial`` or ``ray``. Progress goes to stderr (off when stderr is not a terminal, or with
``--quiet``). ``--resume`` keeps the rows an interrupted run wrote and computes only the rest.
Unreadable files are listed on stderr and are rows with ``status`` ``error`` in the output (exit
code 1 after everything else is written, 2 when no file could be read, as without ``--out``). At
the end: a table of totals per strategy over the whole output (``--json``: the run's summary as
one document).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast, get_type_hints

import typer

from contextkit.cli._app import console, err_console, print_json
from contextkit.cli._paths import discover_here, read_outcome

if TYPE_CHECKING:
    from contextkit.fleet import Engine, FileOutcome, FleetConfig, FleetSummary

ENGINES = ("serial", "process", "ray")
""":data:`contextkit.fleet.ENGINES`, here so that the options cost no import of the library (a
test checks the two agree)."""


def _check_engine(value: str) -> str:
    if value not in ENGINES:
        raise typer.BadParameter(f"unknown engine {value!r} (known: {', '.join(ENGINES)})")
    return value


OutOption = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Stream one row per session x strategy to this Parquet file (docs/fleet.md).",
    ),
]
PerCallOption = Annotated[
    bool, typer.Option("--per-call", help="With --out: also one row per call (.calls.parquet).")
]
ResumeOption = Annotated[
    bool, typer.Option("--resume", help="With --out: keep rows already written, compute the rest.")
]
EngineOption = Annotated[
    str,
    typer.Option(
        "--engine", help="With --out: process (pool), serial or ray.", callback=_check_engine
    ),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
FleetJobsOption = Annotated[
    int | None,
    typer.Option("--jobs", "-j", min=1, help="Processes (with --out, default: the cores)."),
]


@dataclass(frozen=True)
class FleetRun:
    """A command's ``--out`` and the options that go with it (what :func:`run_fleet_command`
    needs beside the :class:`FleetConfig`)."""

    out: Path
    engine: str
    jobs: int | None
    resume: bool
    quiet: bool
    as_json: bool


@dataclass(frozen=True)
class FleetOptions:
    """The fleet options of a command, declared once (:func:`with_fleet_options`)."""

    out: Path | None = None
    per_call: bool = False
    resume: bool = False
    engine: str = "process"
    jobs: int | None = None
    quiet: bool = False

    def run(self, as_json: bool) -> FleetRun | None:
        """The ``--out`` run these options ask for (None: no ``--out``). ``--per-call``,
        ``--resume`` and ``--engine`` mean something only with ``--out``."""
        if self.out is None:
            if self.per_call or self.resume or self.engine != "process":
                raise typer.BadParameter(
                    "--per-call, --resume and --engine need --out results.parquet"
                )
            return None
        return FleetRun(self.out, self.engine, self.jobs, self.resume, self.quiet, as_json)


def _keyword(name: str, default: object, annotation: object) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


_FLEET_PARAMETERS = (
    _keyword("out", None, OutOption),
    _keyword("per_call", False, PerCallOption),
    _keyword("resume", False, ResumeOption),
    _keyword("engine", "process", EngineOption),
    _keyword("jobs", None, FleetJobsOption),
    _keyword("quiet", False, QuietOption),
)

Command = TypeVar("Command", bound=Callable[..., None])


def with_fleet_options(command: Command) -> Command:
    """``command`` with the fleet options (``--out``, ``--per-call``, ``--resume``, ``--engine``,
    ``--jobs``, ``-q``) added to what the command line offers, handed to it as one
    ``fleet: FleetOptions`` argument. Put it under ``@app.command``."""
    hints = get_type_hints(command, include_extras=True)
    own = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in inspect.signature(command).parameters.values()
        if p.name != "fleet"
    ]
    parameters = [*own, *_FLEET_PARAMETERS]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        names = [p.name for p in _FLEET_PARAMETERS]
        fleet = FleetOptions(**{n: kwargs.pop(n) for n in names if n in kwargs})
        command(*args, fleet=fleet, **kwargs)

    wrapper.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    return cast("Command", wrapper)


def run_fleet_command(
    paths: list[Path] | None, every: bool, run: FleetRun, **options: object
) -> None:
    """Run the :class:`FleetConfig` of ``options`` over ``paths`` (and, with none or ``--all``,
    what discovery finds) into ``run.out``, then print the summary; exit 2 if a file could not
    be read."""
    from rich.markup import escape  # noqa: PLC0415  (rich and the library load in the command)
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # noqa: PLC0415

    from contextkit.fleet import FleetConfig, run_fleet  # noqa: PLC0415

    config = FleetConfig.model_validate(options)
    out = run.out
    named = list(paths or [])
    if every or not named:
        named += [p for d in discover_here() for p in d.files]
        if not named:  # discovery found nothing (and said so)
            return
    show = not run.quiet and sys.stderr.isatty()
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, disable=not show) as progress:
        task = progress.add_task("", total=None)
        counts = {"files": 0, "rows": 0}

        def advance(outcome: FileOutcome) -> None:
            counts["files"] += 1
            counts["rows"] += len(outcome.sessions)
            progress.update(task, description=f"{counts['files']:,} files, {counts['rows']:,} rows")

        try:
            summary = run_fleet(
                named,
                config,
                out,
                engine=cast("Engine", run.engine),  # checked by the option's callback
                jobs=run.jobs,
                resume=run.resume,
                on_file=advance,
            )
        except KeyboardInterrupt:
            err_console.print(
                f"interrupted: the rows computed so far are kept; run again with --resume "
                f"to finish {escape(str(out))}",
                highlight=False,
            )
            raise typer.Exit(130) from None
    _report(summary, config, run.as_json)
    code = read_outcome(summary.files - len(summary.errors), len(summary.errors))
    if code:
        raise typer.Exit(code)


def _report(summary: FleetSummary, config: FleetConfig, as_json: bool) -> None:
    from rich.markup import escape  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    from contextkit.fleet import calls_path  # noqa: PLC0415

    for path, reason in summary.skipped:
        err_console.print(f"[yellow]skipped[/] {escape(path)}: {escape(reason)}", soft_wrap=True)
    for path, reason in summary.errors:
        err_console.print(f"[red]could not read[/] {escape(reason or path)}", soft_wrap=True)
    if as_json:
        print_json(summary.to_json())
        return
    table = Table(title=f"{summary.out}: totals per strategy")
    for col in ("strategy", "sessions", "calls", "cost", "unpriced", "mean recall"):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for name, t in summary.strategies.items():
        table.add_row(
            name,
            f"{t['sessions']:,}",
            f"{t['calls']:,}",
            f"${t['cost_usd']:,.2f}",
            f"{t['unpriced']:,}",
            f"{t['recall']:.3f}",
        )
    console.print(table)
    also = f" and {calls_path(summary.out)}" if config.per_call else ""
    console.print(
        f"{summary.files:,} files: {summary.computed_files:,} computed, "
        f"{summary.reused_files:,} reused from the output, {len(summary.errors):,} unreadable, "
        f"{len(summary.skipped):,} not recognised; rows in {summary.out}{also}",
        highlight=False,
    )
