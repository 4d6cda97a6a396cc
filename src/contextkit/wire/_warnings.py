"""What a conversion to another form could not carry: one warning per loss, with where it was."""

from __future__ import annotations

from contextkit.errors import ContextkitError
from contextkit.session import Record


class ConversionError(ContextkitError):
    """The conversation cannot be written in the target form at all."""


class ConversionWarning(Record):
    """Something the target form cannot carry, and where it was."""

    code: str
    location: str
    detail: str


class WarningLog:
    """Collects :class:`ConversionWarning` s while a conversion runs."""

    def __init__(self) -> None:
        self.items: list[ConversionWarning] = []

    def add(self, code: str, location: str, detail: str) -> None:
        self.items.append(ConversionWarning(code=code, location=location, detail=detail))
