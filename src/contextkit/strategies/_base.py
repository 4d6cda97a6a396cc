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
from contextkit.strategies._structure import forget_with_messages
from contextkit.tokens import ApproxCounter, TokenCounter

_HEADS: dict[tuple[int, int, int], tuple[object, object, object, int]] = {}
forget_with_messages(_HEADS.clear)


def head_tokens(view: Conversation, counter: TokenCounter) -> int:
    """Tokens of ``view``'s system prompt and tools (with the counter's fixed framing), memoised
    by identity: a replay's views share one head from call to call."""
    key = (id(view.system), id(view.tools), id(counter))
    hit = _HEADS.get(key)
    if hit is not None and hit[0] is view.system and hit[1] is view.tools and hit[2] is counter:
        return hit[3]
    bare = view.model_copy(update={"messages": ()})
    tokens = counter.count_conversation(bare)
    if len(_HEADS) > 1_000:
        _HEADS.clear()
    _HEADS[key] = (view.system, view.tools, counter, tokens)
    return tokens


class CallFacts(BaseModel):
    """What a strategy may know about the call it shapes. New fields get defaults."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid")

    counter: TokenCounter = Field(default_factory=ApproxCounter)
    budget_tokens: int = 200_000
    """The most input tokens the request may hold for this call, counted as
    :meth:`input_tokens` counts them (system + tools + messages; the target, not the window)."""
    context_window: int = 200_000
    """The model's context window, for triggers phrased as a fraction of it."""
    model: str | None = None
    now: datetime = Field(default_factory=lambda: datetime.now(UTC))
    call_index: int = 0
    prefix_tokens: int | None = Field(None, ge=0)
    """Tokens of the system prompt and tool definitions as the server counts them for this call
    (what it adds to the messages), None: as the view itself holds them. A file that omits them
    (Claude Code transcripts) gets the size inferred from recorded usage or measured per client
    version, so that triggers and budgets count what the server counts."""
    previous_call_at: datetime | None = None
    """When the previous call of this conversation started (None: this is the first)."""
    previous_model: str | None = None
    """The model of the previous call (None: unknown or first call)."""
    cache_ttl_s: int = Field(300, gt=0)
    """The prompt cache's TTL as the harness writes it (5 minutes unless 1 hour is used)."""
    cache_reset: bool = False
    """The harness rewrote cached content just before this call (a resumed session, a
    reconnected tool server): the cached prefix is cold whatever the clock says."""

    def input_tokens(self, view: Conversation) -> int:
        """Input tokens of ``view`` as the server counts them: system + tools + messages.

        With :attr:`prefix_tokens` set, the view's own system and tools are replaced by it."""
        total = self.counter.count_conversation(view)
        if self.prefix_tokens is None:
            return total
        return total - head_tokens(view, self.counter) + self.prefix_tokens


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


__all__ = ["CallFacts", "Compacted", "Receipt", "Strategy", "head_tokens"]
