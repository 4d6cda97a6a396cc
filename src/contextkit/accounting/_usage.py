"""What was spent, by day, week, month, session, project, model or 5-hour block.

Contract: :func:`usage_rows` turns a session into one :class:`UsageRow` per call: the call's time,
model, tokens and dollars, and where the figures come from. A session whose every call carries
usage is the recorded bill (each call's usage priced at its model and date, no simulation);
otherwise the calls are the simulation's (:func:`~contextkit.accounting.price_session`), and the
row says so. A call whose output the reader counted from content (a stream-start placeholder) is
marked. :func:`group_usage` sums rows into :class:`UsageGroup` s by a key in a time zone, and
:func:`usage_blocks` into 5-hour blocks as subscription limits count them (a block opens at the
hour of its first call and runs five hours; the next call after it opens the next).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from typing import Literal, TypeAlias

from contextkit.accounting._ledger import call_prices, price_session
from contextkit.session import Session, Usage

By: TypeAlias = Literal["day", "week", "month", "session", "project", "model"]
BY: tuple[By, ...] = ("day", "week", "month", "session", "project", "model")
BLOCK = timedelta(hours=5)


@dataclass(frozen=True)
class UsageRow:
    """One call as billed (or, without usage, as simulated)."""

    when: datetime | None
    session: str
    project: str
    model: str
    usage: Usage
    cost_usd: float | None
    """None: the model's price is unknown."""
    recorded: bool
    """The file's usage (the bill); False: the simulation's figures for a file without usage."""
    output_estimated: bool = False


def usage_rows(session: Session, project: str) -> list[UsageRow]:
    """One row per call of ``session`` (not its subagents: give each its own)."""
    calls = session.calls
    name = session.session_id or session.path
    if calls and all(c.usage is not None for c in calls):
        prices = call_prices(session)
        out = []
        for call, price in zip(calls, prices, strict=True):
            assert call.usage is not None  # checked above
            cost = price.cost(call.usage) if price is not None else None
            model = call.model or call.request.model or session.model or "unknown"
            out.append(
                UsageRow(
                    call.timestamp,
                    name,
                    project,
                    model,
                    call.usage,
                    cost,
                    True,
                    call.output_estimated,
                )
            )
        return out
    ledger = price_session(session)
    table = ledger.simulated
    out = []
    for i, call in enumerate(calls):
        cost = float(table.cost_usd[i])
        usage = Usage(
            input_tokens=int(table.input[i]),
            cache_write_5m=int(table.cache_write_5m[i]),
            cache_write_1h=int(table.cache_write_1h[i]),
            cache_read=int(table.cache_read[i]),
            output_tokens=int(table.output[i]),
        )
        model = call.model or call.request.model or session.model or "unknown"
        priced = None if math.isnan(cost) else cost  # NaN: the model's price is unknown
        out.append(UsageRow(call.timestamp, name, project, model, usage, priced, False))
    return out


@dataclass
class UsageGroup:
    """Rows summed under one key."""

    key: str
    first: datetime | None = None
    last: datetime | None = None
    calls: int = 0
    input_tokens: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    recorded_calls: int = 0
    simulated_calls: int = 0
    estimated_outputs: int = 0
    models: dict[str, int] = field(default_factory=dict)

    def add(self, row: UsageRow) -> None:
        self.calls += 1
        self.input_tokens += row.usage.input_tokens
        self.cache_write += row.usage.cache_write
        self.cache_read += row.usage.cache_read
        self.output_tokens += row.usage.output_tokens
        if row.cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += row.cost_usd
        self.recorded_calls += row.recorded
        self.simulated_calls += not row.recorded
        self.estimated_outputs += row.output_estimated
        self.models[row.model] = self.models.get(row.model, 0) + 1
        if row.when is not None:
            self.first = row.when if self.first is None else min(self.first, row.when)
            self.last = row.when if self.last is None else max(self.last, row.when)

    @property
    def basis(self) -> str:
        """``recorded`` (the bill), ``simulated`` (files without usage), or ``mixed``."""
        if not self.simulated_calls:
            return "recorded"
        return "simulated" if not self.recorded_calls else "mixed"

    def to_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "first": self.first.isoformat() if self.first else None,
            "last": self.last.isoformat() if self.last else None,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "cache_write_tokens": self.cache_write,
            "cache_read_tokens": self.cache_read,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "unpriced_calls": self.unpriced_calls,
            "basis": self.basis,
            "recorded_calls": self.recorded_calls,
            "simulated_calls": self.simulated_calls,
            "outputs_counted_from_content": self.estimated_outputs,
            "models": dict(sorted(self.models.items())),
        }


def _key(row: UsageRow, by: By, zone: tzinfo) -> str:
    if by in ("session", "project", "model"):
        return str(getattr(row, by))
    if row.when is None:
        return "no time"
    day = row.when.astimezone(zone).date()
    if by == "day":
        return day.isoformat()
    if by == "month":
        return f"{day.year:04d}-{day.month:02d}"
    monday = day - timedelta(days=day.weekday())
    return f"week of {monday.isoformat()}"


def in_range(row: UsageRow, zone: tzinfo, since: date | None, until: date | None) -> bool:
    """Whether the row's day (in ``zone``) is within ``since``..``until`` (inclusive)."""
    if since is None and until is None:
        return True
    if row.when is None:
        return False
    day = row.when.astimezone(zone).date()
    return (since is None or day >= since) and (until is None or day <= until)


def group_usage(rows: Iterable[UsageRow], by: By, zone: tzinfo) -> list[UsageGroup]:
    """Rows summed per key, in key order (times: chronological; names: by cost, highest first)."""
    groups: dict[str, UsageGroup] = {}
    for row in rows:
        key = _key(row, by, zone)
        group = groups.get(key)
        if group is None:
            group = groups[key] = UsageGroup(key)
        group.add(row)
    if by in ("day", "week", "month"):
        return [groups[k] for k in sorted(groups)]
    return sorted(groups.values(), key=lambda g: (-g.cost_usd, g.key))


def usage_blocks(rows: Sequence[UsageRow], zone: tzinfo) -> list[UsageGroup]:
    """Rows summed into 5-hour blocks: a block opens at the hour (in ``zone``) of the first call
    not in the one before, and holds every call within five hours of that. Calls without a time
    are left out."""
    timed = sorted((r for r in rows if r.when is not None), key=lambda r: r.when or datetime.min)
    out: list[UsageGroup] = []
    end: datetime | None = None
    for row in timed:
        assert row.when is not None  # filtered above
        local = row.when.astimezone(zone)
        if end is None or local >= end:
            start = local.replace(minute=0, second=0, microsecond=0)
            end = start + BLOCK
            out.append(UsageGroup(f"{start:%Y-%m-%d %H:%M} - {end:%H:%M}"))
        out[-1].add(row)
    return out


def total(groups: Iterable[UsageGroup]) -> UsageGroup:
    """Every group summed (the table's last row)."""
    out = UsageGroup("total")
    for group in groups:
        out.calls += group.calls
        out.input_tokens += group.input_tokens
        out.cache_write += group.cache_write
        out.cache_read += group.cache_read
        out.output_tokens += group.output_tokens
        out.cost_usd += group.cost_usd
        out.unpriced_calls += group.unpriced_calls
        out.recorded_calls += group.recorded_calls
        out.simulated_calls += group.simulated_calls
        out.estimated_outputs += group.estimated_outputs
        for model, n in group.models.items():
            out.models[model] = out.models.get(model, 0) + n
        for when in (group.first, group.last):
            if when is not None:
                out.first = when if out.first is None else min(out.first, when)
                out.last = when if out.last is None else max(out.last, when)
    return out


__all__ = [
    "BY",
    "By",
    "UsageGroup",
    "UsageRow",
    "group_usage",
    "in_range",
    "total",
    "usage_blocks",
    "usage_rows",
]
