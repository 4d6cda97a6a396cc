"""Cost so far per conversation: what ``GET /stats`` answers and the console line per call.

Each call is priced from the usage its response reports, with :func:`contextkit.pricing.call_cost`'s
prices (:func:`contextkit.pricing.lookup_price`; a model without a price counts its tokens and
says its cost is unknown).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from contextkit.models import resolve_model
from contextkit.pricing import format_cost, lookup_price
from contextkit.session import Usage


def price_usage(model: str | None, usage: Usage, when: datetime | None = None) -> float | None:
    """USD of one call's usage, None when the model's price is unknown (no warning: the proxy
    says so in its line and its stats)."""
    price = lookup_price(resolve_model(model), when or datetime.now(UTC))
    return price.cost(usage) if price is not None else None


@dataclass
class ConversationStats:
    calls: int = 0
    failed: int = 0
    incomplete: int = 0
    edited: int = 0
    input_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    models: dict[str, int] = field(default_factory=dict)


@dataclass
class Stats:
    """Running totals per conversation (the proxy's event loop is the only writer): the
    ``max_conversations`` most recently active each have a row; older ones are folded into
    ``evicted`` (their sums, and how many), so the totals still count every exchange."""

    conversations: dict[str, ConversationStats] = field(default_factory=dict)
    max_conversations: int = 512
    evicted: ConversationStats = field(default_factory=ConversationStats)
    evicted_conversations: int = 0

    def _row(self, conversation: str) -> ConversationStats:
        stats = self.conversations.pop(conversation, None) or ConversationStats()
        self.conversations[conversation] = stats  # most recently active last
        while len(self.conversations) > self.max_conversations:
            oldest = next(iter(self.conversations))
            _fold(self.evicted, self.conversations.pop(oldest))
            self.evicted_conversations += 1
        return stats

    def add(
        self,
        conversation: str,
        model: str | None,
        usage: Usage | None,
        *,
        status: int,
        complete: bool,
        edited: bool,
    ) -> tuple[float | None, ConversationStats]:
        """Count one exchange; its cost (None: unknown, or no usage) and the conversation's sums."""
        stats = self._row(conversation)
        stats.calls += 1
        stats.failed += status >= 400
        stats.incomplete += not complete
        stats.edited += edited
        if model:
            stats.models[model] = stats.models.get(model, 0) + 1
        if usage is None:
            return None, stats
        stats.input_tokens += usage.input_tokens
        stats.cache_read += usage.cache_read
        stats.cache_write += usage.cache_write_5m + usage.cache_write_1h
        stats.output_tokens += usage.output_tokens
        cost = price_usage(model, usage)
        if cost is None:
            stats.unpriced_calls += 1
        else:
            stats.cost_usd += cost
        return cost, stats

    def to_json(self) -> dict[str, Any]:
        rows = {k: asdict(v) for k, v in self.conversations.items()}
        totals = ConversationStats()
        for row in (*self.conversations.values(), self.evicted):
            _fold(totals, row)
        total = asdict(totals)
        del total["models"]
        out: dict[str, Any] = {"conversations": rows, "total": total}
        if self.evicted_conversations:
            evicted = asdict(self.evicted)
            del evicted["models"]
            out["evicted"] = {"conversations": self.evicted_conversations, **evicted}
        return out


def _fold(into: ConversationStats, row: ConversationStats) -> None:
    """Add ``row``'s sums to ``into`` (models left out: per-conversation detail)."""
    for name in ("calls", "failed", "incomplete", "edited", "input_tokens", "cache_read"):
        setattr(into, name, getattr(into, name) + getattr(row, name))
    into.cache_write += row.cache_write
    into.output_tokens += row.output_tokens
    into.cost_usd += row.cost_usd
    into.unpriced_calls += row.unpriced_calls


def console_line(
    conversation: str,
    model: str | None,
    usage: Usage | None,
    cost: float | None,
    so_far: ConversationStats,
    status: int,
    note: str = "",
) -> str:
    """``conversation model in/cache read/cache write/out $call $so-far`` for one call."""
    who = conversation[:28]
    if usage is None:
        line = f"{who} {model or '?'} HTTP {status}, no usage"
    else:
        writes = usage.cache_write_5m + usage.cache_write_1h
        line = (
            f"{who} {model or '?'} in {usage.input_tokens:,} cache read {usage.cache_read:,} "
            f"write {writes:,} out {usage.output_tokens:,} {format_cost(cost)}"
        )
    line += f" | so far {format_cost(so_far.cost_usd)} over {so_far.calls} calls"
    return f"{line} ({note})" if note else line


__all__ = ["ConversationStats", "Stats", "console_line", "price_usage"]
