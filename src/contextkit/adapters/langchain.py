"""A LangChain v1 agent middleware backed by a contextkit strategy (the ``langchain`` extra).

``create_agent(model, tools, middleware=[CompactContext(strategy)])``: before every model call
the middleware's ``wrap_model_call`` shapes the messages the model is sent; the agent's state (its
full history, the tape) is never edited, so the decision is made again from the whole history at
each call and stays the same while the history only grows. The system prompt is counted against
the budget and left where LangChain keeps it.

Messages go to the OpenAI chat form with LangChain's own ``convert_to_openai_messages`` and through
:class:`~contextkit.adapters.Compactor`; a message the strategy left as it was is passed on as the
very same LangChain object (ids, metadata and all), a changed one (an evicted tool result, a
summary) is rebuilt with ``convert_to_messages``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from contextkit.adapters._core import Compactor
from contextkit.errors import ContextkitError
from contextkit.strategies import Strategy, strategy_from_spec
from contextkit.tokens import TokenCounter

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest
    from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ContextkitError(
        "contextkit.adapters.langchain needs LangChain 1.x: pip install 'contextkit[langchain]'"
    ) from exc


def _key(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, default=str)


class CompactContext(AgentMiddleware):
    """Shapes the messages of each model call with a contextkit strategy."""

    def __init__(
        self,
        strategy: Strategy | str,
        *,
        budget_tokens: int = 150_000,
        context_window: int = 200_000,
        counter: TokenCounter | None = None,
    ) -> None:
        super().__init__()
        chosen = strategy_from_spec(strategy) if isinstance(strategy, str) else strategy
        self.compactor = Compactor(
            chosen, counter=counter, budget_tokens=budget_tokens, context_window=context_window
        )

    def compact(self, messages: list[BaseMessage], system: str | None = None) -> list[BaseMessage]:
        """The messages to send (the same list when the strategy changes nothing)."""
        dicts: list[dict[str, Any]] = convert_to_openai_messages(messages)
        head = [{"role": "system", "content": system}] if system else []
        out = self.compactor.chat([*head, *dicts])
        if out[: len(head)] == head:
            out = out[len(head) :]
        if out == dicts:
            return messages
        originals: dict[str, list[BaseMessage]] = {}
        for message, payload in zip(messages, dicts, strict=True):
            originals.setdefault(_key(payload), []).append(message)
        kept: list[BaseMessage] = []
        for payload in out:
            same = originals.get(_key(payload))
            kept.append(same.pop(0) if same else convert_to_messages([payload])[0])
        return kept

    def _shaped(self, request: ModelRequest) -> ModelRequest:
        system = request.system_prompt if isinstance(request.system_prompt, str) else None
        original: list[BaseMessage] = list(request.messages)
        messages: list[Any] = self.compact(original, system)
        return request if messages is original else request.override(messages=messages)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(self._shaped(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        return await handler(self._shaped(request))


__all__ = ["CompactContext"]
