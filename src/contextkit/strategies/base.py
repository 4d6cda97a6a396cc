"""The strategy protocol: one signature for every way of shaping the view.

A strategy is a callable ``(view, facts, /) -> Compacted``: a pure function of the current view
(a :class:`Conversation`) and the per-call facts (counter, budget, model, clock). It returns the new
view and receipts saying what was removed or replaced and how many tokens that freed. When nothing
applies it returns ``Compacted(view)`` holding the *same* view object, so callers (and the prompt
cache) can tell at no cost that nothing changed. Strategies never mutate their input and reuse the
message objects they keep.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from contextkit.messages import Conversation, Receipt
from contextkit.tokens import ApproxCounter, TokenCounter


class CallFacts(BaseModel):
    """What a strategy may know about the call it shapes. New fields get defaults."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid")

    counter: TokenCounter = Field(default_factory=ApproxCounter)
    budget_tokens: int = 200_000
    """The most input tokens the view may hold for this call (the target, not the window)."""
    context_window: int = 200_000
    """The model's context window, for triggers phrased as a fraction of it."""
    model: str | None = None
    now: datetime = Field(default_factory=lambda: datetime.now(UTC))
    call_index: int = 0


class Compacted(BaseModel):
    """A strategy's answer: the new view and what changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    view: Conversation
    receipts: tuple[Receipt, ...] = ()

    @property
    def tokens_freed(self) -> int:
        return sum(r.tokens_freed for r in self.receipts)


@runtime_checkable
class Strategy(Protocol):
    """Anything called as ``strategy(view, facts)`` returning :class:`Compacted`."""

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted: ...


__all__ = ["CallFacts", "Compacted", "Receipt", "Strategy"]
