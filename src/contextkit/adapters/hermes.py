"""A Hermes agent context engine backed by a contextkit strategy (the ``hermes`` extra).

Hermes (``hermes-agent``) lets one plugin replace its built-in compressor with any subclass of
``agent.context_engine.ContextEngine``: after every model call it reports the usage
(``update_from_response``), asks ``should_compress`` and, when that says yes, hands over its
OpenAI-format message list to ``compress``, which returns the list to continue with.
:class:`ContextkitEngine` is that subclass: the decision is the token threshold Hermes already
uses (``threshold_percent`` of ``context_length``), the compaction is the contextkit strategy,
run with a budget of ``target_percent`` of the window, through
:class:`~contextkit.adapters.Compactor` (lossless conversion: what the strategy keeps goes back
exactly as Hermes sent it). The receipts of every compaction are in ``compactor.receipts``.

As a Hermes plugin (``~/.hermes/plugins/contextkit/__init__.py``)::

    from contextkit.adapters.hermes import register  # registers ContextkitEngine()

or build the engine yourself and pass it to ``ctx.register_context_engine``.
"""

from __future__ import annotations

from typing import Any

from contextkit.adapters._core import Compactor
from contextkit.errors import ContextkitError
from contextkit.messages import Conversation
from contextkit.strategies import Strategy, strategy_from_spec
from contextkit.tokens import TokenCounter
from contextkit.wire import parse_chat_messages

try:
    from agent.context_engine import ContextEngine as _HermesEngine
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ContextkitError(
        "contextkit.adapters.hermes needs the Hermes agent: pip install 'contextkit[hermes]'"
    ) from exc

DEFAULT_STRATEGY = "evict-tool-results:keep_last=3 >> sliding-window"


class ContextkitEngine(_HermesEngine):  # type: ignore[misc]  # hermes-agent ships no types
    """Hermes's ``ContextEngine`` interface over a contextkit strategy."""

    def __init__(
        self,
        strategy: Strategy | str = DEFAULT_STRATEGY,
        *,
        context_length: int = 200_000,
        threshold_percent: float = 0.75,
        target_percent: float = 0.5,
        counter: TokenCounter | None = None,
        model: str | None = None,
    ) -> None:
        if not 0 < target_percent < threshold_percent <= 1:
            raise ContextkitError(
                "ContextkitEngine: need 0 < target_percent < threshold_percent <= 1, got "
                f"{target_percent} and {threshold_percent}"
            )
        chosen = strategy_from_spec(strategy) if isinstance(strategy, str) else strategy
        self.threshold_percent = threshold_percent
        self.target_percent = target_percent
        self.compactor = Compactor(chosen, counter=counter, model=model)
        self.update_model(model or "", context_length)

    @property
    def name(self) -> str:
        return "contextkit"

    def update_model(self, model: str, context_length: int, *args: Any, **kwargs: Any) -> None:
        super().update_model(model, context_length, *args, **kwargs)
        self.compactor.facts = self.compactor.facts.model_copy(
            update={
                "model": model or None,
                "context_window": context_length,
                "budget_tokens": int(context_length * self.target_percent),
            }
        )

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or 0)
        self.last_total_tokens = int(
            usage.get("total_tokens") or self.last_prompt_tokens + self.last_completion_tokens
        )

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        threshold = int(self.threshold_tokens)
        return threshold > 0 and tokens >= threshold

    def should_compress_preflight(self, messages: list[dict[str, Any]]) -> bool:
        return self.count(messages) >= int(self.threshold_tokens)

    def count(self, messages: list[dict[str, Any]]) -> int:
        """The history's size as the compactor's counter counts it."""
        system, parsed = parse_chat_messages(list(messages))
        return self.compactor.count(Conversation(system=system, messages=tuple(parsed)))

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        before = len(self.compactor.receipts)
        out = self.compactor.chat(messages)
        if len(self.compactor.receipts) > before:
            self.compression_count += 1
        return out


def register(ctx: Any) -> None:
    """The Hermes plugin entry point: registers a :class:`ContextkitEngine` with defaults."""
    ctx.register_context_engine(ContextkitEngine())


__all__ = ["DEFAULT_STRATEGY", "ContextkitEngine", "register"]
