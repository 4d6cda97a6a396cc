"""Short builders for messages and conversations in tests and examples.

Each returns a frozen model from :mod:`contextkit.messages`; strings become text blocks. A builder
writes only the fields a provider would send (``is_error`` only when true), so ``to_payload`` of a
built message is a realistic wire payload.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextkit.messages import (
    Block,
    Conversation,
    JsonValue,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
)


def _blocks(parts: Sequence[str | Block]) -> tuple[Block, ...]:
    return tuple(TextBlock(text=p) if isinstance(p, str) else p for p in parts)


def user(*parts: str | Block) -> Message:
    """A user message; one string alone stays plain string content."""
    if len(parts) == 1 and isinstance(parts[0], str):
        return Message(role="user", content=parts[0])
    return Message(role="user", content=_blocks(parts))


def assistant(*parts: str | Block, tool_uses: Sequence[ToolUseBlock] = ()) -> Message:
    """An assistant message: its parts, then ``tool_uses``; one string alone stays a string."""
    if len(parts) == 1 and isinstance(parts[0], str) and not tool_uses:
        return Message(role="assistant", content=parts[0])
    return Message(role="assistant", content=(*_blocks(parts), *tool_uses))


def tool_use(id: str, name: str = "run", input: JsonValue = None) -> ToolUseBlock:
    return ToolUseBlock(id=id, name=name, input={} if input is None else input)


def tool_result(
    id: str,
    content: str | Sequence[str | Block] = "ok",
    is_error: bool = False,
) -> ToolResultBlock:
    """The result of tool_use ``id``; ``is_error`` is written only when true."""
    body: str | tuple[Block, ...] = content if isinstance(content, str) else _blocks(content)
    if is_error:
        return ToolResultBlock(tool_use_id=id, content=body, is_error=True)
    return ToolResultBlock(tool_use_id=id, content=body)


def thinking(text: str, signature: str | None = "sig") -> ThinkingBlock:
    """A thinking block, signed unless ``signature`` is None."""
    if signature is None:
        return ThinkingBlock(thinking=text)
    return ThinkingBlock(thinking=text, signature=signature)


def redacted_thinking(data: str = "EuYBCkQYAiJA") -> RedactedThinkingBlock:
    return RedactedThinkingBlock(data=data)


def conversation(
    *messages: Message,
    system: str | Sequence[Block] | None = None,
    tools: Sequence[Tool] = (),
    model: str | None = None,
) -> Conversation:
    """A request; only the fields given are set (so ``to_payload`` writes nothing else)."""
    fields: dict[str, object] = {"messages": messages}
    if system is not None:
        fields["system"] = system if isinstance(system, str) else tuple(system)
    if tools:
        fields["tools"] = tuple(tools)
    if model is not None:
        fields["model"] = model
    return Conversation.model_validate(fields)


__all__ = [
    "assistant",
    "conversation",
    "redacted_thinking",
    "thinking",
    "tool_result",
    "tool_use",
    "user",
]
