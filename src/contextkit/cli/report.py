"""``contextkit report [PATH...] [-o report.html] [--strategies]``: one self-contained HTML page
for a session or a folder (:func:`contextkit.report.write_report`).

Paths are files or folders, selected as every reading command selects them
(:mod:`contextkit.cli._paths`; no path, or ``--all``: the default locations of every harness).
Files that fail to load are listed in the page, not fatal. ``--strategies`` adds the strategy
comparison (every preset, or the ``--strategy`` specs), which replays every session and is slow on
a big folder. ``--json`` prints ``{"output", "bytes", "seconds", "sessions", "calls",
"failures"}``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from contextkit.cli._app import FormatOption, app, console, print_json
from contextkit.cli._paths import print_skipped, read_outcome, select_paths
from contextkit.errors import ConfigError

if TYPE_CHECKING:
    from contextkit.estimate import WhatIfs


def _what_ifs(model: str | None, add_tools: int | None, system_tokens: int | None) -> WhatIfs:
    from contextkit.estimate import WhatIfs  # noqa: PLC0415  (the library loads in the command)
    from contextkit.report import DEFAULT_WHAT_IFS  # noqa: PLC0415

    if add_tools is not None and add_tools < 0:
        raise ConfigError(f"--add-tools must be 0 or more (got {add_tools})")
    return WhatIfs(
        add_tools=DEFAULT_WHAT_IFS.add_tools if add_tools is None else add_tools or None,
        system_tokens=DEFAULT_WHAT_IFS.system_tokens if system_tokens is None else system_tokens,
        cache=DEFAULT_WHAT_IFS.cache,
        model=model,
    )


PathsArgument = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Session files or folders (none: every harness's default locations).",
        show_default=False,
    ),
]
EveryOption = Annotated[bool, typer.Option("--all", help="Also every harness's default locations.")]
WithStrategiesOption = Annotated[
    bool,
    typer.Option("--strategies", help="Compare strategies (replays every session: slow)."),
]
StrategyOption = Annotated[
    list[str] | None,
    typer.Option("--strategy", "-s", help="A strategy to compare (repeat; implies --strategies)."),
]
JobsOption = Annotated[int, typer.Option("--jobs", "-j", help="Processes for --strategies.", min=1)]
WhatIfModelOption = Annotated[
    str | None, typer.Option("--what-if-model", help="What if: every call on this model.")
]
AddToolsOption = Annotated[
    int | None, typer.Option("--add-tools", help="What if: N more tools (0: leave out).")
]
SystemTokensOption = Annotated[
    int | None,
    typer.Option("--system-tokens", help="What if: system prompt +N tokens (0: leave out)."),
]


@app.command("report")
def report_command(
    paths: PathsArgument = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    every: EveryOption = False,
    with_strategies: WithStrategiesOption = False,
    strategy: StrategyOption = None,
    jobs: JobsOption = 1,
    what_if_model: WhatIfModelOption = None,
    add_tools: AddToolsOption = None,
    system_tokens: SystemTokensOption = None,
    lenient: Annotated[bool, typer.Option("--lenient", help="Skip bad records.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
    format_name: FormatOption = None,
) -> None:
    """One self-contained HTML report: cost, cache, context per call, what-ifs, strategies."""
    from contextkit.report import DEFAULT_STRATEGIES, write_report  # noqa: PLC0415

    start = time.perf_counter()
    what = _what_ifs(what_if_model, add_tools, system_tokens)
    selection = select_paths(paths, every)
    print_skipped(selection.skipped)
    specs = strategy or (list(DEFAULT_STRATEGIES) if with_strategies else None)
    roots = [p for p in (paths or []) if p.is_dir()]
    data = write_report(
        list(selection.files),
        output,
        roots=roots,
        skipped=selection.skipped,
        what_ifs=what,
        strategies=specs,
        jobs=jobs,
        lenient=lenient,
        format=format_name,
    )
    seconds = time.perf_counter() - start
    size = output.stat().st_size
    if json_out:
        print_json(
            {
                "output": str(output),
                "bytes": size,
                "seconds": round(seconds, 3),
                "sessions": len(data.sessions),
                "calls": sum(s.calls for s in data.sessions),
                "failures": [{"path": f.path, "error": f.error} for f in data.failures],
                "skipped_records": [
                    {"record": f.path, "reason": f.error} for f in data.skipped_records
                ],
            }
        )
    else:
        failed = f", {len(data.failures)} not read (listed in the page)" if data.failures else ""
        console.print(
            f"wrote {output} ({size / 1024:,.0f} KiB, {len(data.sessions)} sessions{failed}) "
            f"in {seconds:.1f} s",
            highlight=False,
            markup=False,
        )
    code = read_outcome(len(data.sessions), len(data.failures))
    if code:
        raise typer.Exit(code)


__all__ = ["report_command"]
