"""The typer application every command module registers on, and shared output helpers."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from contextkit.formats import format_names

app = typer.Typer(
    name="contextkit",
    help="Decide what stays in an LLM agent's context and what each call costs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _console(stderr: bool = False) -> Console:
    """A console for people. Rich fits a table to 80 columns when the output is not a terminal
    (a pipe, a CI log, a file) and cuts numbers short to get there ("14,77…"): such output gets
    room instead (200 columns; a table takes only what it needs). A terminal, or ``COLUMNS``,
    sets the width as usual."""
    stream = sys.stderr if stderr else sys.stdout
    wide = stream.isatty() or "COLUMNS" in os.environ
    return Console(stderr=stderr, width=None if wide else _PIPE_WIDTH)


_PIPE_WIDTH = 200
console = _console()
err_console = _console(stderr=True)


def console_error(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)


def print_json(value: Any) -> None:
    """JSON for scripts: one document on stdout, nothing else."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def _check_format(value: str | None) -> str | None:
    """``--format``: None (detect) or a reader's name; an unknown name lists the known ones."""
    if value is not None and value not in format_names():
        raise typer.BadParameter(f"unknown format {value!r} (known: {', '.join(format_names())})")
    return value


FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="Read with this reader instead of detecting the format.",
        callback=_check_format,
    ),
]
"""The ``--format NAME`` option of every command that reads session files."""
