"""``contextkit demo [--out FOLDER] [--json] [--calls N] [--seed S]``: the five-minute tour.

Runs :func:`contextkit.demo.run_demo` on the built-in example (no network, no API key): every
preset strategy against the full tape, what one ticket costs and where the money goes, the best
strategy and what it saves, and PNG plots written to ``FOLDER`` (default ``./contextkit-demo``).
With ``--json`` exactly one JSON document goes to stdout (:meth:`DemoResult.to_json` plus the plot
paths under ``"plots"``). The library loads when the command runs (:mod:`._demo_print`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextkit.cli._app import app


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Option("--out", help="Folder for the plots (created).")] = Path(
        "contextkit-demo"
    ),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    calls: Annotated[int, typer.Option("--calls", min=2, help="Model calls in the example.")] = 150,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the example session.")] = 7,
) -> None:
    """Compare every strategy on the built-in example: cost per ticket, savings, plots."""
    from contextkit.cli._demo_print import show_demo  # noqa: PLC0415  (loads the library)

    show_demo(out, as_json, calls, seed)
