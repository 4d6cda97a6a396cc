"""``contextkit checkpoint PATH [--repair]``: what an engine checkpoint holds, or where it is
damaged; with ``--repair``, rewrite it from the last state saved before the damage.

A damaged record (a flipped byte, a hand edit) makes ``ContextEngine.resume`` fail with the line;
``--repair`` keeps every record before it (as ``ContextEngine.resume(path, repair=True)`` does),
says what was cut, and leaves the file ready to resume. Exit codes: 0 the checkpoint reads (or
was repaired); 2 it cannot be read (and ``--repair`` was not given, or cannot help).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextkit.cli._app import app, console


@app.command("checkpoint")
def checkpoint_command(
    path: Annotated[Path, typer.Argument(help="An engine checkpoint file.")],
    repair: Annotated[
        bool,
        typer.Option(
            "--repair", help="Rewrite it from the last state saved before a damaged record."
        ),
    ] = False,
) -> None:
    """What a checkpoint holds, or where it is damaged; --repair cuts the damage away."""
    from contextkit.engine import ContextEngine, read_checkpoint  # noqa: PLC0415

    if repair:
        engine, receipts = ContextEngine.resume(path, repair=True)
        state = read_checkpoint(path)
        for receipt in receipts:
            console.print(f"{receipt.action}: {receipt.detail}", highlight=False, markup=False)
        del engine  # lets the checkpoint's lock go
    else:
        state = read_checkpoint(path)
        for note in state.notes:
            console.print(note, highlight=False, markup=False)
    console.print(
        f"{path}: {len(state.calls)} call(s), {len(state.tape)} message(s) on the tape, "
        f"{len(state.view.messages)} in the view",
        highlight=False,
        markup=False,
    )
