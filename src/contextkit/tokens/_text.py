"""The text a token counter sees in each kind of block: one table look-up per block class, the
compact JSON of tool inputs and payloads, the plain text of tool results and documents.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any, TypeAlias

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

_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=False)
"""Built once: ``json.dumps`` with these options builds a new encoder on every call."""
_MAKE_ENCODER: Callable[..., Callable[[object, int], Iterable[str]]] | None = getattr(
    json.encoder, "c_make_encoder", None
)
_C_JSON = (
    _MAKE_ENCODER(  # what _JSON.encode builds on every call, built once
        None, _JSON.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    if _MAKE_ENCODER is not None
    else None
)
"""The C encoder behind ``_JSON`` (about twice as fast per call; no cycle check, which parsed
JSON never needs). None where the ``_json`` accelerator is missing."""


def _compact_json(value: object) -> str:
    if _C_JSON is not None and not isinstance(value, str):
        return "".join(_C_JSON(value, 0))
    return _JSON.encode(value)


def block_text(block: Block) -> str:
    """The text of a block as the model reads it (payload JSON for structured parts)."""
    text_of = _TEXT_OF.get(type(block))
    if text_of is None:
        text_of = _TEXT_OF[type(block)] = _text_of_class(type(block))
    return text_of(block)


_TextOf: TypeAlias = Callable[[Any], str]
_TEXT_OF: dict[type, _TextOf] = {}
"""How each block class's text is read, worked out once per class: ``isinstance`` against a
pydantic model runs its metaclass's ``__instancecheck__`` in Python (about 120 ns a miss), and a
chain of them per block cost more than reading the text."""


def _text_of_class(cls: type) -> _TextOf:
    """The first of these a class is a subclass of decides (the order of an isinstance chain)."""
    if issubclass(cls, TextBlock):
        return attrgetter("text")
    if issubclass(cls, ThinkingBlock):
        return attrgetter("thinking")
    if issubclass(cls, ToolUseBlock | ServerToolUseBlock):
        return _tool_use_text
    if issubclass(cls, ToolResultBlock):
        return _tool_result_text
    if issubclass(cls, CompactionBlock):
        return _compaction_text
    if issubclass(cls, RedactedThinkingBlock):
        return _no_text  # encrypted; billed, but its size is unknowable offline (see count_block)
    if issubclass(cls, ServerToolResultBlock):
        return _server_result_text
    return _payload_text


def _tool_use_text(block: ToolUseBlock | ServerToolUseBlock) -> str:
    return block.name + " " + _compact_json(block.input)


def _tool_result_text(block: ToolResultBlock) -> str:
    if isinstance(block.content, str) or block.content is None:
        return block.content or ""
    return "\n".join(block_text(b) for b in block.content if not _is_media(b))


def _compaction_text(block: CompactionBlock) -> str:
    return block.content or ""


def _no_text(block: Block) -> str:
    return ""


def _server_result_text(block: ServerToolResultBlock) -> str:
    return _compact_json(block.content)


def _payload_text(block: Block) -> str:
    # cache_control tells the cache where to cut; the model never reads it (not billed).
    return _compact_json({k: v for k, v in to_payload(block).items() if k != "cache_control"})


def _is_media(block: Block) -> bool:
    return isinstance(block, ImageBlock | DocumentBlock)


def _new_parts(
    requests: Iterable[Conversation],
    responses: Iterable[Message | None],
    memo: Mapping[int, int],
    seen: set[int],
) -> tuple[dict[str, None], list[tuple[Block, str | None]], list[Message]]:
    """The distinct non-empty texts of these parts, in order, their blocks not in ``memo`` with
    each one's text, and the messages walked. A request's history shared with the one before
    (the same objects) is not walked again, nor is a message whose id is in ``seen`` (walked
    before: the caller keeps those alive); the ids of the messages walked are added to it."""
    texts: dict[str, None] = {}
    blocks: list[tuple[Block, str | None]] = []
    walked: list[Message] = []
    tools: object = None
    system: object = None
    before: Sequence[Message] = ()

    def add_blocks(parts: Iterable[Block]) -> None:
        for block in parts:  # a block twice (in two messages) is memoised once by prime
            if id(block) not in memo:
                text = _plain_text(block)
                blocks.append((block, text))
                if text:
                    texts[text] = None

    def add_messages(messages: Iterable[Message]) -> None:
        for message in messages:
            if id(message) in seen:
                continue
            seen.add(id(message))
            walked.append(message)
            if isinstance(message.content, str):
                texts[message.content] = None
            else:
                add_blocks(message.content)

    for request in requests:
        if request.tools is not tools:
            tools = request.tools
            texts.update((_tool_text(t), None) for t in request.tools if id(t) not in memo)
        if request.system is not system:
            system = request.system
            if isinstance(system, str):
                texts[system] = None
            else:
                add_blocks(request.system_blocks)
        # The common case, the history grew, by its last shared message (a change further back
        # leaves texts to be counted when asked: counts are the same, only later).
        messages, n = request.messages, len(before)
        grew = n == 0 or (n <= len(messages) and messages[n - 1] is before[-1])
        add_messages(messages[n:] if grew else messages)
        before = messages
    add_messages(r for r in responses if r is not None)
    texts.pop("", None)
    return texts, blocks, walked


def _plain_text(block: Block) -> str | None:
    """The text :meth:`MemoCounter._block` tokenises for ``block`` (None: it counts no text)."""
    plain = _PLAIN.get(type(block))
    if plain is None:
        plain = _PLAIN[type(block)] = _plain_of_class(type(block))
    return plain(block)


_PLAIN: dict[type, Callable[[Any], str | None]] = {}
""":func:`_plain_text` per block class, worked out once per class (see ``_TEXT_OF``)."""


def _plain_of_class(cls: type) -> Callable[[Any], str | None]:
    if issubclass(cls, TextBlock):
        return attrgetter("text")
    if issubclass(cls, ToolResultBlock):
        return _plain_result_text
    if issubclass(cls, ImageBlock | RedactedThinkingBlock):
        return _none
    if issubclass(cls, DocumentBlock):
        return _document_text
    return _text_of_class(cls)  # as block_text reads it, without a second table look-up


def _plain_result_text(block: ToolResultBlock) -> str:
    return block.content if isinstance(block.content, str) else _tool_result_text(block)


def _none(block: Block) -> None:
    return None


def _document_text(block: DocumentBlock) -> str:
    return _compact_json(block.source)


def _tool_text(tool: Tool) -> str:
    """The text of a tool definition as counted: its compact JSON, ``cache_control`` left out
    (it tells the cache where to cut; the model never reads it, so it is not billed)."""
    return _compact_json({k: v for k, v in to_payload(tool).items() if k != "cache_control"})


__all__ = [
    "block_text",
]
