"""A pydantic-ai history processor backed by a contextkit strategy (the ``pydantic-ai`` extra).

``Agent(model, capabilities=[CompactHistory(strategy).capability()])`` (pydantic-ai 2; on 1.x,
``history_processors=[CompactHistory(strategy)]``): before each model request pydantic-ai passes
the message history through the processor, which returns it shaped by the strategy (pydantic-ai 2
then continues the run from the shaped history).

The mapping is one contextkit message per pydantic-ai message (``ModelRequest`` -> user,
``ModelResponse`` -> assistant), one block per part: user prompts and text as text, tool
calls and tool returns (and tool retry prompts, as error results) as ``tool_use`` /
``tool_result`` with the same ids, any other part as an opaque block holding its text (so it
counts). System prompt parts are the conversation's system: they are always kept, at the head of
the first request.

A message the strategy left as it was comes back as the very same pydantic-ai object; a changed
part comes back as a copy of the original with the new content (an evicted tool return keeps its
tool name and id); a message the strategy wrote (a summary) becomes a ``UserPromptPart``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any, Literal

from contextkit.adapters._core import Compactor
from contextkit.errors import ContextkitError
from contextkit.messages import (
    Block,
    Conversation,
    Message,
    OpaqueBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.strategies import Strategy, strategy_from_spec
from contextkit.tokens import TokenCounter

try:
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ContextkitError(
        "contextkit.adapters.pydantic_ai needs pydantic-ai: pip install 'contextkit[pydantic-ai]'"
    ) from exc

_REF = "pydantic_ai"
"""The block extra naming the part it came from: ``[message index, part index]``."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _block(part: Any, ref: list[int]) -> Block:
    extra = {_REF: ref}
    if isinstance(part, ToolReturnPart):
        content = part.model_response_str()
        return ToolResultBlock.model_validate(
            {"tool_use_id": part.tool_call_id, "content": content, **extra}
        )
    if isinstance(part, RetryPromptPart) and part.tool_name is not None:
        retry = {"tool_use_id": part.tool_call_id, "content": part.model_response()}
        return ToolResultBlock.model_validate({**retry, "is_error": True, **extra})
    if isinstance(part, ToolCallPart):
        call = {"id": part.tool_call_id, "name": part.tool_name, "input": part.args_as_dict()}
        return ToolUseBlock.model_validate({**call, **extra})
    if isinstance(part, UserPromptPart | TextPart):
        return TextBlock.model_validate({"text": _text(part.content), **extra})
    text = _text(getattr(part, "content", None) or repr(part))
    return OpaqueBlock.model_validate({"type": "pydantic-ai-part", "text": text, _REF: ref})


class CompactHistory:
    """A pydantic-ai history processor (see the module docstring)."""

    def __init__(
        self,
        strategy: Strategy | str,
        *,
        budget_tokens: int = 150_000,
        context_window: int = 200_000,
        counter: TokenCounter | None = None,
    ) -> None:
        chosen = strategy_from_spec(strategy) if isinstance(strategy, str) else strategy
        self.compactor = Compactor(
            chosen, counter=counter, budget_tokens=budget_tokens, context_window=context_window
        )

    def capability(self) -> Any:
        """The processor as a pydantic-ai 2 capability (``Agent(capabilities=[...])``)."""
        from pydantic_ai.capabilities import ProcessHistory  # noqa: PLC0415 - pydantic-ai 2 only

        return ProcessHistory(self)

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        system: list[SystemPromptPart] = []
        converted: list[Message] = []
        for i, message in enumerate(messages):
            blocks = []
            for j, part in enumerate(message.parts):
                if isinstance(part, SystemPromptPart):
                    system.append(part)
                else:
                    blocks.append(_block(part, [i, j]))
            role: Literal["user", "assistant"] = (
                "user" if isinstance(message, ModelRequest) else "assistant"
            )
            converted.append(Message(role=role, content=tuple(blocks or [TextBlock(text="")])))
        prompt = "\n\n".join(p.content for p in system) or None
        conversation = Conversation(system=prompt, messages=tuple(converted))
        view = self.compactor.apply(conversation)
        if view is conversation:
            return messages
        by_id = {id(m): i for i, m in enumerate(converted)}
        out = [self._back(m, messages, by_id) for m in view.messages]
        return _with_system(out, system)

    def _back(
        self, message: Message, originals: Sequence[ModelMessage], by_id: dict[int, int]
    ) -> ModelMessage:
        if id(message) in by_id:
            return originals[by_id[id(message)]]
        refs = [(b.model_extra or {}).get(_REF) for b in message.blocks]
        source = next((originals[r[0]] for r in refs if r), None)
        parts = [_part(b, originals) for b in message.blocks]
        if source is not None:
            kept = [p for p in source.parts if isinstance(p, SystemPromptPart)]
            rebuilt: ModelMessage = dataclasses.replace(source, parts=[*kept, *parts])
            return rebuilt
        if message.role == "user":
            return ModelRequest(parts=parts)
        return ModelResponse(parts=parts)


def _part(block: Block, originals: Sequence[ModelMessage]) -> Any:
    ref = (block.model_extra or {}).get(_REF)
    original = originals[ref[0]].parts[ref[1]] if ref else None
    if isinstance(block, ToolResultBlock):
        content = (
            block.content
            if isinstance(block.content, str)
            else _text([b.model_dump() for b in block.content or ()])
        )
        if isinstance(original, ToolReturnPart | RetryPromptPart):
            return dataclasses.replace(original, content=content)
        name = _tool_name(block.tool_use_id, originals)
        return ToolReturnPart(tool_name=name, content=content, tool_call_id=block.tool_use_id)
    if (
        original is not None
        and isinstance(block, TextBlock)
        and isinstance(original, UserPromptPart | TextPart)
    ):
        return (
            original
            if original.content == block.text
            else dataclasses.replace(original, content=block.text)
        )
    if original is not None:
        return original
    if isinstance(block, TextBlock):
        return UserPromptPart(content=block.text)
    return UserPromptPart(content=_text(block.model_dump()))


def _tool_name(tool_call_id: str, originals: Sequence[ModelMessage]) -> str:
    for message in originals:
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.tool_call_id == tool_call_id:
                return part.tool_name
    return "tool"


def _with_system(
    messages: list[ModelMessage], system: list[SystemPromptPart]
) -> list[ModelMessage]:
    """The system prompt parts at the head of the first request, once."""
    if not system:
        return messages
    for i, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            if any(isinstance(p, SystemPromptPart) for p in message.parts):
                return messages
            first = dataclasses.replace(message, parts=[*system, *message.parts])
            return [*messages[:i], first, *messages[i + 1 :]]
    return [ModelRequest(parts=list(system)), *messages]


__all__ = ["CompactHistory"]
