"""The typer application every command module registers on, and shared output helpers.

Startup is part of the interface: ``contextkit --help`` must cost little more than importing the
CLI framework (``benchmarks/bench_cli.py``). So this module, and every command module at import
time, imports only typer, the standard library and the strategies' package surface (the presets'
names, which load nothing): the library (pydantic models, numpy, tiktoken, genai-prices,
matplotlib, anthropic) and rich are imported inside the command that runs, and the consoles are
built on first use. ``tests/cli/test_cli_startup.py`` fails when importing the CLI pulls in a
heavy package. Help is plain text (``rich_markup_mode=None``): rich's
help renderer alone costs about twice the framework's import.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, TextIO, cast

import typer

from contextkit.peers import PEER_NAMES
from contextkit.strategies import PRESET_NAMES

if TYPE_CHECKING:
    from rich.console import Console

STRATEGY_HELP = (
    "Strategy: a preset (" + ", ".join(PRESET_NAMES) + "), NAME:key=value, "
    "'a >> b', a TOML/JSON config file, as-recorded, or a peer to compare with ("
    + ", ".join(PEER_NAMES)
    + "; replay and compare only)."
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # noqa: PLC0415  (only for --version)

        sys.stdout.write(f"contextkit {version('contextkit')}\n")
        raise typer.Exit()


app = typer.Typer(
    name="contextkit",
    help="Decide what stays in an LLM agent's context and what each call costs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "show_default": True},
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Decide what stays in an LLM agent's context and what each call costs."""


_PIPE_WIDTH = 200


def _console(stderr: bool = False) -> Console:
    """A console for people. Rich fits a table to 80 columns when the output is not a terminal
    (a pipe, a CI log, a file) and cuts numbers short to get there ("14,77…"): such output gets
    room instead (200 columns; a table takes only what it needs). A terminal, or ``COLUMNS``,
    sets the width as usual."""
    from rich.console import Console  # noqa: PLC0415  (rich loads only when a command prints)

    stream = sys.stderr if stderr else sys.stdout
    wide = stream.isatty() or "COLUMNS" in os.environ
    return Console(file=cast(IO[str], _Printable(stderr)), width=None if wide else _PIPE_WIDTH)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with each lone surrogate (legal in a JSON escape, not encodable in UTF-8: a
    recorded file may hold one) written as its escape, ``\\udc00``: printing it as it is would
    fail, after the command did its work."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _Printable:
    """The process's stdout or stderr as it is at each write (a test runner swaps them), with
    lone surrogates escaped (:func:`printable`): the file rich writes to."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr

    @property
    def _stream(self) -> TextIO:
        return sys.stderr if self._stderr else sys.stdout

    def write(self, text: str) -> int:
        self._stream.write(printable(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"


class _LazyConsole:
    """A :class:`rich.console.Console` built on first use (importing rich costs startup time)."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def _get(self) -> Console:
        if self._console is None:
            self._console = _console(self._stderr)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)

    def __enter__(self) -> Console:  # a Progress or Live holds its console as a context
        return self._get().__enter__()

    def __exit__(self, *exc: object) -> None:
        self._get().__exit__(*exc)


if TYPE_CHECKING:
    console: Console
    err_console: Console
else:
    console = _LazyConsole(stderr=False)
    err_console = _LazyConsole(stderr=True)


def console_error(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)


def print_json(value: Any) -> None:
    """JSON for scripts: one document on stdout, nothing else."""
    sys.stdout.write(printable(json.dumps(value, indent=2, ensure_ascii=False, default=str)) + "\n")


def _check_format(value: str | None) -> str | None:
    """``--format``: None (detect) or a reader's name; an unknown name lists the known ones."""
    if value is None:
        return value
    from contextkit.formats import format_names  # noqa: PLC0415  (the readers load slowly)

    if value not in format_names():
        raise typer.BadParameter(f"unknown format {value!r} (known: {', '.join(format_names())})")
    return value


FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="Read with this reader instead of detecting the format.",
        callback=_check_format,
        show_default=False,
    ),
]
"""The ``--format NAME`` option of every command that reads session files."""

PathsArgument = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Session files or folders (none: every harness's default locations).",
        show_default=False,
    ),
]
"""The session files or folders of every command that reads recordings."""
AllOption = Annotated[bool, typer.Option("--all", help="Also every harness's default locations.")]
JsonOption = Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")]
LenientOption = Annotated[
    bool, typer.Option("--lenient", help="Skip bad records (each one is listed).")
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Model for calls whose recording names none (to count and price); named models stay.",
        show_default=False,
    ),
]
"""``--model`` means one thing in every command: the model of calls whose recording names none."""
