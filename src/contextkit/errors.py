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
