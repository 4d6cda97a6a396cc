"""The typer application every command module registers on, and shared output helpers."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.console import Console

app = typer.Typer(
    name="contextkit",
    help="Decide what stays in an LLM agent's context and what each call costs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

console = Console()
err_console = Console(stderr=True)


def console_error(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)


def print_json(value: Any) -> None:
    """JSON for scripts: one document on stdout, nothing else."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")
