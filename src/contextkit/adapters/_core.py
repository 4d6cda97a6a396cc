"""The one thing every adapter does: run a contextkit strategy over a history in a wire form.

Contract: :class:`Compactor` holds a strategy and the per-call facts (counter, budget, window,
model). ``chat(messages)`` takes OpenAI Chat Completions message dicts (the form Hermes and
LangChain's converters use), ``items(items)`` OpenAI Responses items (the Agents SDK's form);
each returns the compacted history in the same form, and the input list itself when the strategy
changed nothing. Conversion is :mod:`contextkit.wire` (lossless: what the strategy kept is
written back as it came). Every receipt is kept in ``receipts``, in order.

A compactor is stateless between calls apart from its receipts: each call shapes the history it
is given (the adapters pass the full history each time, as their frameworks do), so the same
history always gives the same view and the cached prefix stays stable until the strategy acts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextkit.messages import Conversation
from contextkit.strategies import CallFacts, Receipt, Strategy
from contextkit.tokens import ApproxCounter, TokenCounter
from contextkit.wire import (
    from_responses_items,
    parse_chat_messages,
    to_chat_messages,
    to_responses_items,
)


class Compactor:
    """A strategy plus the facts of the calls it shapes (see the module docstring)."""

    def __init__(
        self,
        strategy: Strategy,
        *,
        counter: TokenCounter | None = None,
        budget_tokens: int = 150_000,
        context_window: int = 200_000,
        model: str | None = None,
    ) -> None:
        self.strategy = strategy
        self.facts = CallFacts(
            counter=counter or ApproxCounter(),
            budget_tokens=budget_tokens,
            context_window=context_window,
            model=model,
        )
        self.receipts: list[Receipt] = []
        self.calls = 0

    def apply(self, conversation: Conversation) -> Conversation:
        """The strategy's view of ``conversation`` (the same object when nothing applies)."""
        facts = self.facts.model_copy(update={"call_index": self.calls})
        self.calls += 1
        result = self.strategy(conversation, facts)
        self.receipts.extend(result.receipts)
        return result.view

    def count(self, conversation: Conversation) -> int:
        return self.facts.counter.count_conversation(conversation)

    def chat(self, messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        system, parsed = parse_chat_messages(list(messages))
        conversation = Conversation(system=system, messages=tuple(parsed))
        view = self.apply(conversation)
        if view is conversation:
            return list(messages)
        return to_chat_messages(view.system, view.messages)

    def items(self, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        system, parsed = from_responses_items(list(items))
        conversation = Conversation(system=system, messages=tuple(parsed))
        view = self.apply(conversation)
        if view is conversation:
            return list(items)
        return to_responses_items(view.system, view.messages)


__all__ = ["Compactor"]
