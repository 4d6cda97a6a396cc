"""The message model: what an LLM receives, as frozen values.

Contract:

- Content blocks are a union discriminated on ``type``. Every block type the Anthropic Messages API
  defines has its own model; any other type is kept verbatim in :class:`OpaqueBlock`.
- Every model keeps fields it does not know (``extra="allow"``), so provider-specific data
  (``cache_control``, ``citations``, ids, future fields) survives a round trip.
- Models are frozen and hold tuples, never lists. Payloads (``input``, ``source``) are read-only
  JSON values by convention: nothing in contextkit mutates them.
- ``to_payload(model)`` writes exactly the fields that were read (or set), so
  ``to_payload(parse_x(payload)) == payload`` for every well-formed payload.

The canonical shape is the Anthropic Messages request: ``system`` apart from ``messages``, tool
results in the user role. Other wire formats convert to and from it (``contextkit.wire``).
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from typing import Annotated, Any, Literal, TypeAlias, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Tag,
    TypeAdapter,
    field_validator,
)

from contextkit.messages._history import History, same_prefix
from contextkit.models import ModelInfo, resolve_model

JsonValue: TypeAlias = Any
"""A JSON value (dict, list, str, int, float, bool, None), treated as read-only."""

JsonObject: TypeAlias = Mapping[str, Any]


class Frozen(BaseModel):
    """Base for every value model: frozen, keeps unknown fields, no coercion surprises."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    def model_post_init(self, context: Any, /) -> None:
        # A block built in code (``TextBlock(text=...)``) must still write its ``type``.
        if "type" in type(self).model_fields and getattr(self, "type", None) is not None:
            self.__pydantic_fields_set__.add("type")


def _tupled(value: object) -> object:
    if isinstance(value, list):
        return tuple(value)
    return value


# --------------------------------------------------------------------------------------------------
# Content blocks


class TextBlock(Frozen):
    type: Literal["text"] = "text"
    text: str


class ImageBlock(Frozen):
    type: Literal["image"] = "image"
    source: JsonObject


class DocumentBlock(Frozen):
    type: Literal["document"] = "document"
    source: JsonObject


class ToolUseBlock(Frozen):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: JsonValue


class ToolResultBlock(Frozen):
    """The answer to a ``tool_use``. ``content`` is a string or a tuple of blocks."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | tuple[Block, ...] | None = None
    is_error: bool | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _tuple_content(cls, value: object) -> object:
        return _tupled(value)

    @property
    def text(self) -> str:
        """The result's text content (blocks other than text are left out)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


class ThinkingBlock(Frozen):
    """Extended thinking. The signature must go back to the provider unmodified."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(Frozen):
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ServerToolUseBlock(Frozen):
    """A tool the provider runs itself (web search, code execution, MCP)."""

    type: Literal["server_tool_use", "mcp_tool_use"] = "server_tool_use"
    id: str
    name: str
    input: JsonValue = None


SERVER_TOOL_RESULT_TYPES: tuple[str, ...] = (
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "tool_search_tool_result",
    "mcp_tool_result",
)


class ServerToolResultBlock(Frozen):
    """The result of a server tool; its content is kept as the provider sent it."""

    type: Literal[
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_result",
    ]
    tool_use_id: str
    content: JsonValue = None


class CompactionBlock(Frozen):
    """A server-side compaction summary (``compact_20260112``); must be sent back as is."""

    type: Literal["compaction"] = "compaction"
    content: str | None = None


class OpaqueBlock(Frozen):
    """A block of a type contextkit does not model; every field is kept verbatim."""

    type: str


_KNOWN_TYPES: dict[str, str] = {
    "text": "text",
    "image": "image",
    "document": "document",
    "tool_use": "tool_use",
    "tool_result": "tool_result",
    "thinking": "thinking",
    "redacted_thinking": "redacted_thinking",
    "server_tool_use": "server_tool_use",
    "mcp_tool_use": "server_tool_use",
    "compaction": "compaction",
    **dict.fromkeys(SERVER_TOOL_RESULT_TYPES, "server_tool_result"),
}


def _block_tag(value: object) -> str:
    block_type = value.get("type") if isinstance(value, Mapping) else getattr(value, "type", None)
    if isinstance(value, BaseModel) and type(value) is OpaqueBlock:
        return "opaque"
    if not isinstance(block_type, str):
        return "opaque"
    return _KNOWN_TYPES.get(block_type, "opaque")


Block = Annotated[
    Annotated[TextBlock, Tag("text")]
    | Annotated[ImageBlock, Tag("image")]
    | Annotated[DocumentBlock, Tag("document")]
    | Annotated[ToolUseBlock, Tag("tool_use")]
    | Annotated[ToolResultBlock, Tag("tool_result")]
    | Annotated[ThinkingBlock, Tag("thinking")]
    | Annotated[RedactedThinkingBlock, Tag("redacted_thinking")]
    | Annotated[ServerToolUseBlock, Tag("server_tool_use")]
    | Annotated[ServerToolResultBlock, Tag("server_tool_result")]
    | Annotated[CompactionBlock, Tag("compaction")]
    | Annotated[OpaqueBlock, Tag("opaque")],
    Discriminator(_block_tag),
]

ToolResultBlock.model_rebuild()

# --------------------------------------------------------------------------------------------------
# Messages, tools, conversations

Role = Literal["user", "assistant"]


class Message(Frozen):
    """One entry of the array. ``content`` is a plain string or a tuple of blocks."""

    role: Role
    content: str | tuple[Block, ...]

    @field_validator("content", mode="before")
    @classmethod
    def _tuple_content(cls, value: object) -> object:
        return _tupled(value)

    @property
    def blocks(self) -> tuple[Block, ...]:
        """The content as blocks (a string becomes one text block)."""
        if isinstance(self.content, str):
            return (TextBlock(text=self.content),)
        return self.content

    def tool_uses(self) -> Iterator[ToolUseBlock]:
        return (b for b in self.blocks if isinstance(b, ToolUseBlock))

    def tool_results(self) -> Iterator[ToolResultBlock]:
        return (b for b in self.blocks if isinstance(b, ToolResultBlock))


class Tool(Frozen):
    """A tool definition as sent in the request (client tools and server tools alike)."""

    name: str
    description: str | None = None
    input_schema: JsonValue = None
    type: str | None = None


class Conversation(Frozen):
    """A request as the model receives it: tools, system prompt, messages, and every other field.

    Fields other than these (``max_tokens``, ``thinking``, ``tool_choice``, ``metadata``, ...) are
    kept as extras and written back unchanged.
    """

    model: str | None = None
    system: str | tuple[Block, ...] | None = None
    tools: tuple[Tool, ...] = ()
    messages: Annotated[Sequence[Message], History] = History()
    """A :class:`~contextkit.messages.History`: requests that extend one another share one list."""

    @field_validator("system", "tools", mode="before")
    @classmethod
    def _tuple_fields(cls, value: object) -> object:
        return _tupled(value)

    @property
    def system_blocks(self) -> tuple[Block, ...]:
        if self.system is None:
            return ()
        if isinstance(self.system, str):
            return (TextBlock(text=self.system),)
        return self.system

    @property
    def model_info(self) -> ModelInfo:
        """The request's model, resolved (:func:`~contextkit.models.resolve_model`, remembered per
        id; :data:`~contextkit.models.UNKNOWN_MODEL` when the request names none)."""
        return resolve_model(self.model)

    def with_messages(self, messages: Sequence[Message]) -> Conversation:
        """A copy with other messages (the same object when they are the same objects). Messages
        that begin with this request's own objects extend its history, sharing its list."""
        mine = self.messages
        if isinstance(messages, History):
            if messages is mine or (messages.shares(mine) and len(messages) == len(mine)):
                return self
            return _with_field(self, "messages", messages)
        n = len(mine)
        if len(messages) >= n and all(map(operator.is_, islice(messages, n), mine)):
            if len(messages) == n:
                return self
            if n:  # a plain sequence that grew this request: share the list
                return _with_field(
                    self, "messages", History.of(mine).extended(tuple(islice(messages, n, None)))
                )
        return _with_field(self, "messages", History(messages))

    def append(self, *messages: Message) -> Conversation:
        if not messages:
            return self
        return _with_field(self, "messages", History.of(self.messages).extended(messages))


def _with_field(model: Conversation, name: str, value: object) -> Conversation:
    """``model.model_copy(update={name: value})`` for a declared field, without the generic
    path (``copy.copy`` of three attributes, a loop over the update): a replay extends its tape
    this way at every call. The same attributes as pydantic's ``__copy__`` sets."""
    if model.__pydantic_private__ is not None:  # a subclass with private attributes
        return model.model_copy(update={name: value})
    copied = object.__new__(type(model))
    fields = model.__dict__.copy()
    fields[name] = value
    extra = model.__pydantic_extra__
    object.__setattr__(copied, "__dict__", fields)
    object.__setattr__(copied, "__pydantic_extra__", None if extra is None else extra.copy())
    object.__setattr__(copied, "__pydantic_fields_set__", model.__pydantic_fields_set__ | {name})
    object.__setattr__(copied, "__pydantic_private__", None)
    return copied


# cast: mypy does not see an Annotated union as a type form TypeAdapter accepts.
BLOCK_ADAPTER: TypeAdapter[Block] = TypeAdapter(cast("type[Block]", Block))
BLOCKS_ADAPTER: TypeAdapter[tuple[Block, ...]] = TypeAdapter(tuple[Block, ...])


def parse_block(payload: JsonObject) -> Block:
    """Parse one content block (unknown types become :class:`OpaqueBlock`)."""
    return BLOCK_ADAPTER.validate_python(payload)


def parse_message(payload: JsonObject) -> Message:
    return Message.model_validate(payload)


def parse_conversation(payload: JsonObject) -> Conversation:
    """Parse an Anthropic Messages request body."""
    return Conversation.model_validate(payload)


def to_payload(value: BaseModel) -> dict[str, Any]:
    """The wire form: exactly the fields that were read or set, nothing added."""
    return value.model_dump(mode="json", exclude_unset=True, by_alias=True)


def block_payload(block: Block) -> dict[str, Any]:
    return to_payload(block)


def extends(messages: Sequence[Message], before: Sequence[Message]) -> bool:
    """Whether ``messages`` begins with ``before`` (the same objects, as structural sharing leaves
    a growing history, or equal ones). Two histories of one list (:class:`History`) are decided
    by their lengths; others by their last message, then one list comparison in C, which tests
    identity before equality (:func:`~contextkit.messages.same_prefix`)."""
    n = len(before)
    if n == 0:
        return True
    return n <= len(messages) and same_prefix(messages, before, n)


__all__ = [
    "BLOCKS_ADAPTER",
    "BLOCK_ADAPTER",
    "SERVER_TOOL_RESULT_TYPES",
    "Block",
    "CompactionBlock",
    "Conversation",
    "DocumentBlock",
    "Frozen",
    "ImageBlock",
    "JsonObject",
    "JsonValue",
    "Message",
    "OpaqueBlock",
    "RedactedThinkingBlock",
    "Role",
    "ServerToolResultBlock",
    "ServerToolUseBlock",
    "TextBlock",
    "ThinkingBlock",
    "Tool",
    "ToolResultBlock",
    "ToolUseBlock",
    "block_payload",
    "extends",
    "parse_block",
    "parse_conversation",
    "parse_message",
    "to_payload",
]
