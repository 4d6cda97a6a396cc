"""One base exception and a few precise subclasses. Messages say what went wrong, where, and what
to do about it; the CLI prints them without a traceback."""

from __future__ import annotations

from pathlib import Path


class ContextkitError(Exception):
    """Base of every error contextkit raises on purpose."""


class FormatError(ContextkitError):
    """A file could not be read: names the file and, where known, the line."""

    def __init__(self, path: str | Path, message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.reason = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class UnknownFormatError(FormatError):
    """No reader recognises the file."""


class MixedFormatError(FormatError):
    """A file holding records of several formats; the message says which lines are which."""


class ConfigError(ContextkitError):
    """A strategy, pipeline, profile or price override is invalid; names the offending path."""


class BudgetError(ContextkitError):
    """The context cannot be brought under the budget without breaking an invariant."""


def json_reason(exc: ValueError) -> str:
    """Why ``json.loads`` refused a text: the decoder's message, or (a ``ValueError`` that is not
    a decode error: a number longer than Python's integer-string limit) what that means."""
    message = getattr(exc, "msg", None)
    if isinstance(message, str):
        return message
    text = str(exc)
    if "integer string conversion" in text:
        return "a number with more digits than Python reads (its integer-string limit)"
    return text


def json_column(exc: ValueError) -> int:
    """The column of a decode error (0 when the error has none)."""
    column = getattr(exc, "colno", 0)
    return column if isinstance(column, int) else 0


def json_line(exc: ValueError) -> int | None:
    """The line of a decode error (None when the error has none)."""
    line = getattr(exc, "lineno", None)
    return line if isinstance(line, int) else None
