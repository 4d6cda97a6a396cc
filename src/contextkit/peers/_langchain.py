"""LangChain's history tools replayed as strategies: ``trim_messages`` and the summarisation
middleware.

Contract:

- Messages go to LangChain and back through :func:`to_langchain` / :func:`back_to_request`: an
  assistant message becomes an ``AIMessage`` (its tool calls as ``tool_calls``), a user message one
  ``ToolMessage`` per tool result plus a ``HumanMessage`` for the rest; each LangChain message
  remembers the blocks it came from, so what LangChain keeps maps back to those very blocks,
  regrouped into the messages they came from. The system prompt and tools are not given to
  LangChain (its tools see only the messages); the budget given is the view's target less them,
  and its token count is scaled to the call's own count (:func:`token_counter`; ``calibrated=False``
  for its raw characters / 4).
- :class:`LangChainTrim` (``langchain-trim``): ``trim_messages`` on every request, as the
  LangGraph docs apply it before the model call (the state keeps the full history):
  ``strategy="last"``, ``start_on="human"``, ``end_on=("human", "tool")``,
  ``count_tokens_approximately``, ``max_tokens`` the call's budget. What it keeps is sent as is,
  also when a provider would refuse it (contextkit's replay reports that) or when nothing is left.
- :class:`LangChainSummary` (``langchain-summary``): ``SummarizationMiddleware`` with
  ``trigger=("fraction", 0.8)`` of the context window and its default ``keep=("messages", 20)``;
  its edits persist, as in an agent's state. It decides when to summarise and what to keep; the
  summary text comes from contextkit's offline hand-off (:class:`ExtractiveSummariser`, given the
  messages LangChain passes its summariser, after its own trim to 4,000 tokens), because no model
  is called here. Each summary is billed as the model call it stands for (a ``summarised``
  receipt with the summary's size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contextkit.errors import ContextkitError
from contextkit.messages import (
    Block,
    Conversation,
    Message,
    Receipt,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.peers._rewriting import RequestRewriter
from contextkit.strategies import CallFacts, ExtractiveSummariser
from contextkit.tokens import block_text

INSTALL = "pip install 'contextkit[langchain]' (or: pip install langchain)"
SUMMARY_FRACTION = 0.8
KEEP_MESSAGES = 20


def _require() -> None:
    try:
        import langchain_core  # noqa: F401, PLC0415  (an extra, imported when first used)
    except ImportError as exc:
        raise ContextkitError(f"the langchain peers need langchain: {INSTALL} ({exc})") from None


@dataclass
class LangChainHistory:
    """A request's messages as LangChain messages, each with the blocks it was made from."""

    messages: list[Any] = field(default_factory=list)
    origin: dict[int, tuple[int, str | tuple[Block, ...]]] = field(default_factory=dict)
    """id of a LangChain message -> (index of its contextkit message, its content there)"""

    def add(self, message: Any, index: int, content: str | tuple[Block, ...]) -> None:
        self.messages.append(message)
        self.origin[id(message)] = (index, content)


def _assistant(message: Message) -> Any:
    from langchain_core.messages import AIMessage  # noqa: PLC0415

    content: list[str | dict[Any, Any]] = []
    calls = []
    for b in message.blocks:
        if isinstance(b, ThinkingBlock):
            content.append({"type": "thinking", "thinking": b.thinking, "signature": b.signature})
        elif isinstance(b, ToolUseBlock):
            given = b.input if isinstance(b.input, dict) else {"input": b.input}
            calls.append({"name": b.name, "args": dict(given), "id": b.id})
        else:
            content.append({"type": "text", "text": block_text(b)})
    return AIMessage(content=content, tool_calls=calls)


def to_langchain(messages: Sequence[Message]) -> LangChainHistory:
    """The messages as LangChain messages (see the module docstring)."""
    from langchain_core.messages import HumanMessage, ToolMessage  # noqa: PLC0415

    history = LangChainHistory()
    for i, message in enumerate(messages):
        if message.role == "assistant":
            history.add(_assistant(message), i, message.content)
            continue
        if isinstance(message.content, str):
            history.add(HumanMessage(content=message.content), i, message.content)
            continue
        for r in message.content:
            if isinstance(r, ToolResultBlock):
                history.add(ToolMessage(content=block_text(r), tool_call_id=r.tool_use_id), i, (r,))
        rest = tuple(b for b in message.content if not isinstance(b, ToolResultBlock))
        if rest:
            text = "\n".join(block_text(b) for b in rest)
            history.add(HumanMessage(content=text), i, rest)
    return history


def back_to_request(
    kept: Sequence[Any], history: LangChainHistory, messages: Sequence[Message]
) -> tuple[Message, ...]:
    """The messages LangChain's ``kept`` stand for: each kept message's own blocks, regrouped
    into the messages they came from (a message kept whole is the same object)."""
    out: list[Message] = []
    came_from: list[int] = []
    for lc in kept:
        found = history.origin.get(id(lc))
        if found is None:
            raise ContextkitError(
                "langchain returned a message it was not given (a copy): cannot map it back"
            )
        index, content = found
        if came_from and came_from[-1] == index and not isinstance(content, str):
            previous = out[-1]
            blocks = previous.content if not isinstance(previous.content, str) else ()
            out[-1] = previous.model_copy(update={"content": (*blocks, *content)})
        else:
            out.append(Message(role=messages[index].role, content=content))
            came_from.append(index)
    return tuple(
        messages[i] if m.content == messages[i].content else m
        for i, m in zip(came_from, out, strict=True)
    )


def _message_budget(facts: CallFacts, view_head: int) -> int:
    return max(facts.budget_tokens - view_head, 1)


def token_counter(
    messages: Sequence[Message], history: LangChainHistory, facts: CallFacts, calibrated: bool
) -> Any:
    """LangChain's ``count_tokens_approximately``, scaled (``calibrated``) by the ratio of the
    call's own count of ``messages`` to LangChain's count of them, so its budgets and triggers
    mean the tokens the provider counts. Unscaled it counts characters / 4, which undercounts a
    coding agent's history (code, JSON) by up to half: its trim and trigger then never fire
    before the window overflows."""
    from langchain_core.messages.utils import count_tokens_approximately  # noqa: PLC0415

    if not calibrated:
        return count_tokens_approximately
    theirs = count_tokens_approximately(history.messages)
    ours = facts.counter.count_conversation(Conversation(messages=tuple(messages)))
    scale = ours / theirs if theirs else 1.0

    def scaled(lc_messages: Sequence[Any]) -> int:
        return round(count_tokens_approximately(lc_messages) * scale)

    return scaled


class LangChainTrim(RequestRewriter):
    """``trim_messages`` on every request (see the module docstring)."""

    name = "langchain-trim"
    keeps_history = True

    def __init__(self, calibrated: bool = True) -> None:
        super().__init__()
        _require()
        self.calibrated = calibrated

    def rewrite(
        self, messages: tuple[Message, ...], facts: CallFacts, frozen: int
    ) -> tuple[tuple[Message, ...], tuple[Receipt, ...]]:
        from langchain_core.messages import trim_messages  # noqa: PLC0415

        history = to_langchain(messages)
        budget = _message_budget(facts, self.head)
        count = token_counter(messages, history, facts, self.calibrated)
        if count(history.messages) <= budget:
            return messages, ()
        kept = trim_messages(
            history.messages,
            max_tokens=budget,
            token_counter=count,
            strategy="last",
            start_on="human",
            end_on=("human", "tool"),
        )
        return back_to_request(kept, history, messages), ()


class LangChainSummary(RequestRewriter):
    """``SummarizationMiddleware`` whose edits persist (see the module docstring)."""

    name = "langchain-summary"
    keeps_history = False

    def __init__(
        self,
        fraction: float = SUMMARY_FRACTION,
        keep_messages: int = KEEP_MESSAGES,
        calibrated: bool = True,
    ) -> None:
        super().__init__()
        _require()
        self.fraction = fraction
        self.keep_messages = keep_messages
        self.calibrated = calibrated
        self._summariser = ExtractiveSummariser()

    def _for_window(self, window: int, summarise: Any, count: Any) -> Any:
        from langchain.agents.middleware import SummarizationMiddleware  # noqa: PLC0415
        from langchain_core.language_models.fake_chat_models import (  # noqa: PLC0415
            GenericFakeChatModel,
        )

        model = GenericFakeChatModel(messages=iter(()), profile={"max_input_tokens": window})
        return SummarizationMiddleware(
            model,
            trigger=("fraction", self.fraction),
            keep=("messages", self.keep_messages),
            token_counter=count,
            summarizer=summarise,
        )

    def rewrite(
        self, messages: tuple[Message, ...], facts: CallFacts, frozen: int
    ) -> tuple[tuple[Message, ...], tuple[Receipt, ...]]:
        from langchain_core.messages import HumanMessage  # noqa: PLC0415

        history = to_langchain(messages)
        written: list[str] = []

        def summarise(span: Sequence[Any]) -> str:
            own = back_to_request(span, history, messages)
            text = self._summariser.summarise(own, facts).text
            written.append(text)
            return text

        count = token_counter(messages, history, facts, self.calibrated)
        window = max(facts.context_window - self.head, 1)  # what the messages may fill
        middleware = self._for_window(window, summarise, count)
        update = middleware.before_model({"messages": history.messages}, None)
        if not update:
            return messages, ()
        new = update["messages"][1:]  # after RemoveMessage(REMOVE_ALL_MESSAGES)
        summary = new[0] if new and isinstance(new[0], HumanMessage) else None
        kept = back_to_request(new[1:] if summary is not None else new, history, messages)
        if summary is None:
            return kept, ()
        text = summary.content if isinstance(summary.content, str) else str(summary.content)
        head = Message(role="user", content=(TextBlock(text=text),))
        out: tuple[Message, ...] = (head, *kept)
        if kept and kept[0].role == "user":  # one user message: the summary, then what it held
            first = kept[0]
            out = (first.model_copy(update={"content": (*head.blocks, *first.blocks)}), *kept[1:])
        before = Conversation(messages=messages)
        freed = facts.counter.count_conversation(before) - facts.counter.count_conversation(
            Conversation(messages=out)
        )
        receipt = Receipt(
            strategy=self.name,
            action="summarised",
            tokens_freed=freed,
            message_index=0,
            detail=f"summarised {len(messages) - len(kept)} messages, kept the last {len(kept)}",
            summary_tokens=facts.counter.count_text(written[-1] if written else text),
        )
        return out, (receipt,)


__all__ = [
    "LangChainHistory",
    "LangChainSummary",
    "LangChainTrim",
    "back_to_request",
    "to_langchain",
]
