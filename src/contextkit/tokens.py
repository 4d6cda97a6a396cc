"""Token counting behind one protocol, memoised per block.

``TokenCounter`` is what every other part asks: ``count_text``, ``count_block``,
``count_message``, ``count_conversation`` (the total input of a request: tools, system, messages).
:class:`MemoCounter` derives the last three from ``count_text`` and memoises per block object, so
that pricing a session whose calls share their history (structural sharing) costs one pass over the
unique text, not one pass per call.
"""

from __future__ import annotations

import json
import math
from typing import Protocol, runtime_checkable

from contextkit.messages import (
    Block,
    CompactionBlock,
    Conversation,
    DocumentBlock,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
    to_payload,
)

IMAGE_TOKENS_DEFAULT = 1600
"""Tokens charged for an image whose size is unknown (the documented maximum for a 1.15 MP image)."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens. Implementations say which counter produced a number through ``name``."""

    @property
    def name(self) -> str: ...

    def count_text(self, text: str) -> int: ...

    def count_block(self, block: Block) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_tool(self, tool: Tool) -> int: ...

    def count_conversation(self, conversation: Conversation) -> int: ...


def _compact_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False)


def block_text(block: Block) -> str:
    """The text of a block as the model reads it (payload JSON for structured parts)."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ThinkingBlock):
        return block.thinking
    if isinstance(block, ToolUseBlock | ServerToolUseBlock):
        return block.name + " " + _compact_json(block.input)
    if isinstance(block, ToolResultBlock):
        if isinstance(block.content, str) or block.content is None:
            return block.content or ""
        return "\n".join(block_text(b) for b in block.content if not _is_media(b))
    if isinstance(block, CompactionBlock):
        return block.content or ""
    if isinstance(block, RedactedThinkingBlock):
        return ""  # encrypted; billed, but its size is unknowable offline (see count_block)
    if isinstance(block, ServerToolResultBlock):
        return _compact_json(block.content)
    return _compact_json(to_payload(block))


def _is_media(block: Block) -> bool:
    return isinstance(block, ImageBlock | DocumentBlock)


class MemoCounter:
    """Base counter: memoises by block object and derives every count from ``count_text``.

    Subclasses implement ``_count_text`` and may override the overhead attributes.
    """

    per_message: int = 3
    per_tool: int = 0
    fixed: int = 0

    def __init__(self) -> None:
        # id(obj) -> (obj, count): the stored object keeps its id from being reused.
        self._memo: dict[int, tuple[object, int]] = {}

    @property
    def name(self) -> str:
        return type(self).__name__

    def _count_text(self, text: str) -> int:
        raise NotImplementedError

    def count_text(self, text: str) -> int:
        return self._count_text(text) if text else 0

    def _memoised(self, obj: object, compute: object) -> int:
        hit = self._memo.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = compute() if callable(compute) else 0
        self._memo[id(obj)] = (obj, int(value))
        return int(value)

    def count_block(self, block: Block) -> int:
        return self._memoised(block, lambda: self._block(block))

    def _block(self, block: Block) -> int:
        if isinstance(block, ImageBlock):
            return IMAGE_TOKENS_DEFAULT
        if isinstance(block, DocumentBlock):
            return self.count_text(_compact_json(block.source))
        if isinstance(block, RedactedThinkingBlock):
            # The payload is encrypted; its length is the only hint of the original size.
            return math.ceil(len(block.data) * 3 / 16)
        if isinstance(block, ToolResultBlock) and isinstance(block.content, tuple):
            media = sum(self.count_block(b) for b in block.content if _is_media(b))
            return self.count_text(block_text(block)) + media
        return self.count_text(block_text(block))

    def count_message(self, message: Message) -> int:
        def compute() -> int:
            if isinstance(message.content, str):
                return self.per_message + self.count_text(message.content)
            return self.per_message + sum(self.count_block(b) for b in message.content)

        return self._memoised(message, compute)

    def count_tool(self, tool: Tool) -> int:
        return self._memoised(tool, lambda: self.per_tool + self.count_text(_compact_json(to_payload(tool))))

    def count_system(self, conversation: Conversation) -> int:
        if isinstance(conversation.system, str):
            return self.count_text(conversation.system)
        return sum(self.count_block(b) for b in conversation.system_blocks)

    def count_conversation(self, conversation: Conversation) -> int:
        return (
            self.fixed
            + sum(self.count_tool(t) for t in conversation.tools)
            + self.count_system(conversation)
            + sum(self.count_message(m) for m in conversation.messages)
        )


class ApproxCounter(MemoCounter):
    """About four characters a token: the fallback when no tokenizer encoding can be loaded."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        super().__init__()
        self.chars_per_token = chars_per_token

    @property
    def name(self) -> str:
        return f"approx:{self.chars_per_token:g}chars"

    def _count_text(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)


__all__ = [
    "IMAGE_TOKENS_DEFAULT",
    "ApproxCounter",
    "MemoCounter",
    "TokenCounter",
    "block_text",
]
