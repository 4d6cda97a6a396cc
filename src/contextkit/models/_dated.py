"""Dated values: a figure with its source and the day from which it holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Generic, TypeVar

REFERENCE_DOC = "Anthropic/OpenAI docs via /work/shared/REFERENCE.md (collected 2026)"
"""Source of the figures unless an entry says otherwise."""

T = TypeVar("T")


@dataclass(frozen=True)
class Dated(Generic[T]):
    """A value valid from ``since`` (None: from the start of records) until the next entry."""

    value: T
    since: date | None = None
    source: str = REFERENCE_DOC


def _today(when: date | datetime | None) -> date:
    if when is None:
        return datetime.now(UTC).date()
    if isinstance(when, datetime):
        return (when.astimezone(UTC) if when.tzinfo else when).date()
    return when


def pick(entries: Sequence[Dated[T]], when: date | datetime | None = None) -> Dated[T]:
    """The entry valid on ``when``; before the first dated entry, the earliest one."""
    day = _today(when)
    ordered = sorted(entries, key=lambda e: e.since or date.min)
    chosen = ordered[0]
    for entry in ordered:
        if entry.since is None or entry.since <= day:
            chosen = entry
    return chosen


__all__ = ["REFERENCE_DOC", "Dated", "pick"]
