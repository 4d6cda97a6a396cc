"""The command line: thin. Each command module parses, calls one library function, and prints.

Bad input never shows a traceback: :class:`ContextkitError` becomes a message on stderr and exit
code 2. Each command lives in its own module and registers itself on :data:`app` when imported.
"""

from __future__ import annotations

import sys
import warnings
from typing import TextIO

# Command modules register themselves on ``app`` when imported: one import per command module.
from contextkit.cli import checkpoint as _checkpoint  # noqa: F401  (registers commands)
from contextkit.cli import convert as _convert  # noqa: F401  (registers commands)
from contextkit.cli import cost as _cost  # noqa: F401  (registers commands)
from contextkit.cli import demo as _demo  # noqa: F401  (registers commands)
from contextkit.cli import inspect as _inspect  # noqa: F401  (registers commands)
from contextkit.cli import proxy as _proxy  # noqa: F401  (registers commands)
from contextkit.cli import replay as _replay  # noqa: F401  (registers commands)
from contextkit.cli import report as _report  # noqa: F401  (registers commands)
from contextkit.cli import usage as _usage  # noqa: F401  (registers commands)
from contextkit.cli import validate as _validate  # noqa: F401  (registers commands)
from contextkit.cli._app import app, console_error, err_console
from contextkit.errors import ContextkitError, FormatError, MixedFormatError, UnknownFormatError


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A warning for people: its text on stderr, not the source line that raised it."""
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when something prints)

    text = f"[yellow]warning:[/] {escape(str(message))}"
    err_console.print(text, highlight=False, markup=True, soft_wrap=True)  # one line, unwrapped


def main() -> None:
    warnings.showwarning = _show_warning
    try:
        app()
    except ContextkitError as exc:
        hint = ""
        bad_record = isinstance(exc, FormatError) and not isinstance(
            exc, MixedFormatError | UnknownFormatError
        )
        if bad_record and getattr(exc, "line", None) is not None:
            hint = " (--lenient skips bad records and lists each one)"
        console_error(str(exc) + hint)
        sys.exit(2)
    except OSError as exc:
        # An output the user named (a plot, a dump, a profile) that cannot be written.
        where = exc.filename if exc.filename is not None else "output"
        console_error(f"{where}: cannot write: {exc.strerror or exc}")
        sys.exit(2)


__all__ = ["app", "main"]
