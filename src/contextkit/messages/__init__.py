"""The message model, the first layer: frozen blocks, messages and conversations, the usage a
response reports, the receipts of changes, and the invariants a provider enforces (``validate``,
``repair``). It imports nothing from contextkit but :mod:`contextkit.errors`.
"""

from __future__ import annotations

from contextkit.messages._history import History, same_prefix
from contextkit.messages._model import (
    BLOCK_ADAPTER,
    BLOCKS_ADAPTER,
    SERVER_TOOL_RESULT_TYPES,
    Block,
    CompactionBlock,
    Conversation,
    DocumentBlock,
    Frozen,
    ImageBlock,
    JsonObject,
    JsonValue,
    Message,
    OpaqueBlock,
    RedactedThinkingBlock,
    Role,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
    block_payload,
    extends,
    parse_block,
    parse_conversation,
    parse_message,
    to_payload,
)
from contextkit.messages._receipt import (
    Receipt,
)
from contextkit.messages._repair import (
    FAILED_TEXT,
    INTERRUPTED_TEXT,
    PLACEHOLDER_USER_TEXT,
    repair,
)
from contextkit.messages._rules import (
    CODES,
    OPENAI_WIRE_FORMATS,
    PROVIDER_RULES,
    Code,
    Rules,
    Violation,
    rules_for,
    rules_for_model,
)
from contextkit.messages._usage import (
    Usage,
    token_count,
)
from contextkit.messages._validate import (
    validate,
)

__all__ = [
    "BLOCKS_ADAPTER",
    "BLOCK_ADAPTER",
    "CODES",
    "FAILED_TEXT",
    "INTERRUPTED_TEXT",
    "OPENAI_WIRE_FORMATS",
    "PLACEHOLDER_USER_TEXT",
    "PROVIDER_RULES",
    "SERVER_TOOL_RESULT_TYPES",
    "Block",
    "Code",
    "CompactionBlock",
    "Conversation",
    "DocumentBlock",
    "Frozen",
    "History",
    "ImageBlock",
    "JsonObject",
    "JsonValue",
    "Message",
    "OpaqueBlock",
    "Receipt",
    "RedactedThinkingBlock",
    "Role",
    "Rules",
    "ServerToolResultBlock",
    "ServerToolUseBlock",
    "TextBlock",
    "ThinkingBlock",
    "Tool",
    "ToolResultBlock",
    "ToolUseBlock",
    "Usage",
    "Violation",
    "block_payload",
    "extends",
    "parse_block",
    "parse_conversation",
    "parse_message",
    "repair",
    "rules_for",
    "rules_for_model",
    "same_prefix",
    "to_payload",
    "token_count",
    "validate",
]
