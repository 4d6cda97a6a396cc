"""Convert a request between the Anthropic Messages, OpenAI Chat Completions and OpenAI Responses
wire forms, saying what the target cannot carry.

Contract:

- ``to_format(conversation, target) -> (payload, warnings)``. When the conversation was read from
  ``target`` (or, for ``anthropic``, carries no OpenAI-only data) the payload is written as read:
  lossless, no warnings. Otherwise the conversation is first reduced to what the target can say,
  and every reduction that loses something is one :class:`ConversionWarning` (``code``,
  ``location`` such as ``messages[3].content[1]``, ``detail``). Nothing is dropped silently.
- ``from_format(payload, source) -> Conversation`` reads a request body of that form.
- The canonical message model is Anthropic-shaped, so conversions only lose what the target has
  no place for: thinking signatures and redacted thinking, ``cache_control``, server-tool blocks,
  documents, citations, ``is_error`` (OpenAI); OpenAI reasoning items, encrypted compaction,
  hosted-tool items, system messages mid-conversation, ``name`` fields (Anthropic).
- Request parameters with a counterpart are mapped (max tokens, temperature, top_p, stop
  sequences, tool_choice, stream); the others are dropped with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from contextkit.messages import (
    Block,
    CompactionBlock,
    Conversation,
    DocumentBlock,
    ImageBlock,
    Message,
    OpaqueBlock,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.wire._chat_messages import META, meta_of
from contextkit.wire._warnings import ConversionError, ConversionWarning, WarningLog
from contextkit.wire._warnings import WarningLog as _Log
from contextkit.wire.anthropic import from_anthropic_request, to_anthropic_request
from contextkit.wire.openai_chat import parse_chat_request, to_chat_request
from contextkit.wire.openai_responses import parse_responses_request, to_responses_request

Target = Literal["anthropic", "openai-chat", "openai-responses"]
TARGETS: tuple[Target, ...] = ("anthropic", "openai-chat", "openai-responses")
_API = {"openai-chat": "chat", "openai-responses": "responses"}


def from_format(payload: Mapping[str, Any], source: Target) -> Conversation:
    """A request body of the ``source`` form as a Conversation."""
    try:
        if source == "anthropic":
            return from_anthropic_request(payload)
        if source == "openai-chat":
            return parse_chat_request(payload)
        return parse_responses_request(payload)
    except ValueError as exc:
        raise ConversionError(f"not a valid {source} request: {exc}") from None


def to_format(
    conversation: Conversation, target: Target
) -> tuple[dict[str, Any], tuple[ConversionWarning, ...]]:
    """The request body in the ``target`` form, and what it could not carry."""
    if target not in TARGETS:
        raise ConversionError(f"unknown target {target!r} (known: {', '.join(TARGETS)})")
    origin = _origin(conversation)
    log = _Log()
    if origin != target:
        conversation = _reduce(conversation, target, origin, log)
    try:
        return _write(conversation, target), tuple(log.items)
    except ValueError as exc:
        raise ConversionError(f"cannot write the request as {target}: {exc}") from None


def _origin(conversation: Conversation) -> str:
    """The form the conversation was read from: its body's API, else what its blocks carry."""
    api = _conv_meta(conversation).get("api")
    if api in ("chat", "responses"):
        return f"openai-{api}"
    metas = [meta_of(x) for x in _carriers(conversation)]
    if any("item" in m or "verbatim" in m for m in metas):
        return "openai-responses"
    return "openai-chat" if any(metas) else "anthropic"


def _conv_meta(conversation: Conversation) -> dict[str, Any]:
    found = (conversation.model_extra or {}).get(META)
    return dict(found) if isinstance(found, Mapping) else {}


def _carriers(conversation: Conversation) -> list[Message | Block]:
    out: list[Message | Block] = [*conversation.system_blocks]
    for message in conversation.messages:
        out.append(message)
        out.extend(message.blocks)
    return out


def _write(conversation: Conversation, target: Target) -> dict[str, Any]:
    if target == "anthropic":
        return to_anthropic_request(conversation)
    if target == "openai-chat":
        return to_chat_request(conversation)
    return to_responses_request(conversation)


# --------------------------------------------------------------------------------------------------
# Reduction to what the target can say


def _reduce(conversation: Conversation, target: Target, origin: str, log: _Log) -> Conversation:
    to_openai = target != "anthropic"
    system = _reduce_system(conversation.system, to_openai, log)
    messages: list[Message] = []
    for index, message in enumerate(conversation.messages):
        reduced = _reduce_message(message, f"messages[{index}]", to_openai, target, log)
        if reduced is not None:
            messages.append(reduced)
    tools = [
        t
        for i, tool in enumerate(conversation.tools)
        if (t := _reduce_tool(tool, i, to_openai, log))
    ]
    fields: dict[str, Any] = {"messages": tuple(messages)}
    if conversation.model is not None:
        fields["model"] = conversation.model
    if system is not None:
        fields["system"] = system
    if tools or "tools" in conversation.model_fields_set:
        fields["tools"] = tuple(tools)
    fields.update(_reduce_params(conversation, target, origin, log))
    return Conversation.model_validate(fields)


def _reduce_system(
    system: str | tuple[Block, ...] | None, to_openai: bool, log: _Log
) -> str | tuple[Block, ...] | None:
    if system is None or isinstance(system, str):
        return system
    out: list[Block] = []
    for index, block in enumerate(system):
        where = f"system[{index}]"
        if not isinstance(block, TextBlock):
            log.add("system_block_dropped", where, f"a {block.type!r} block in the system prompt")
            continue
        out.append(_clean(block, where, to_openai, log))
    return tuple(out) if out else None


def _clean(block: Any, where: str, to_openai: bool, log: _Log) -> Any:
    """The block without OpenAI-only data (to Anthropic) or without extra fields (to OpenAI)."""
    extra = dict(block.model_extra or {})
    meta = extra.pop(META, None)
    if to_openai and extra:
        for key in extra:
            code = f"{key}_dropped" if key in ("cache_control", "citations") else "field_dropped"
            log.add(code, where, f"{key!r} has no OpenAI counterpart")
        extra = {}
    if isinstance(meta, Mapping):
        dropped = sorted(set(meta) - _STRUCTURAL_META)
        if dropped:
            log.add("openai_fields_dropped", where, "not carried over: " + ", ".join(dropped))
    data = {k: getattr(block, k) for k in block.model_fields_set if k in type(block).model_fields}
    return type(block).model_validate({**data, **extra})


# META keys that only record the OpenAI layout (no information a reader would miss).
_STRUCTURAL_META = frozenset(
    {
        "arguments", "parts", "continues", "string", "content", "omit", "image_url", "part",
        "item", "role", "same_message", "no_type", "image_url_string", "instructions",
    }
)  # fmt: skip


def _reduce_message(
    message: Message, where: str, to_openai: bool, target: Target, log: _Log
) -> Message | None:
    role = meta_of(message).get("role")
    if isinstance(message.content, str):
        blocks: list[Block] = [TextBlock(text=message.content)]
    else:
        blocks = []
        for index, block in enumerate(message.content):
            blocks.extend(_reduce_block(block, f"{where}.content[{index}]", to_openai, target, log))
    if not to_openai:
        blocks = _drop_empty_text(blocks, where, log)
    if not blocks:
        log.add("empty_message_dropped", where, "nothing of this message is left in the target")
        return None
    content: str | tuple[Block, ...] = tuple(blocks)
    if isinstance(message.content, str):
        content = message.content
    fields: dict[str, Any] = {"role": message.role, "content": content}
    if role is not None and to_openai:
        fields[META] = {"role": role}
    elif role is not None:
        log.add(
            "system_message_as_user",
            where,
            f"a {role!r} message mid-conversation sent as user text",
        )
    _clean(message, where, to_openai, log)
    return Message.model_validate(fields)


def _drop_empty_text(blocks: list[Block], where: str, log: _Log) -> list[Block]:
    kept = [b for b in blocks if not (isinstance(b, TextBlock) and not b.text)]
    if len(kept) != len(blocks):
        log.add("empty_text_dropped", where, "Anthropic rejects empty text blocks")
    return kept


def _reduce_block(
    block: Block, where: str, to_openai: bool, target: Target, log: _Log
) -> list[Block]:
    if to_openai:
        return _to_openai_block(block, where, target, log)
    return _to_anthropic_block(block, where, log)


def _to_openai_block(block: Block, where: str, target: Target, log: _Log) -> list[Block]:
    item = meta_of(block).get("item") or meta_of(block).get("verbatim")
    if item and isinstance(block, ThinkingBlock | CompactionBlock | OpaqueBlock):
        if target == "openai-responses":
            return [block]  # a Responses item going back to the Responses API
        log.add("openai_item_dropped", where, f"a Responses {block.type!r} item has no chat form")
        return []
    if isinstance(block, ThinkingBlock | RedactedThinkingBlock):
        log.add(f"{block.type}_dropped", where, "OpenAI cannot take Anthropic thinking (signed)")
        return []
    if isinstance(block, ServerToolUseBlock | ServerToolResultBlock):
        log.add("server_tool_dropped", where, f"a {block.type!r} block runs on Anthropic's side")
        return []
    if isinstance(block, DocumentBlock):
        log.add("document_dropped", where, "documents have no OpenAI message form here")
        return []
    if isinstance(block, CompactionBlock):
        log.add("compaction_dropped", where, "an Anthropic compaction block")
        return []
    if isinstance(block, OpaqueBlock):
        log.add("unknown_block_dropped", where, f"a {block.type!r} block")
        return []
    if isinstance(block, ImageBlock) and block.source.get("type") not in ("base64", "url"):
        log.add("image_dropped", where, f"an image with a {block.source.get('type')!r} source")
        return []
    if isinstance(block, ToolResultBlock):
        return [_tool_result_to_openai(block, where, target, log)]
    if isinstance(block, ToolUseBlock):
        return [_tool_use_to_openai(block, where, target, log)]
    return [_clean(block, where, True, log)]


def _tool_use_to_openai(block: ToolUseBlock, where: str, target: Target, log: _Log) -> Block:
    """A free-text (custom) tool call stays one in the other OpenAI API."""
    meta = meta_of(block)
    custom = meta.get("type") == "custom" or meta.get("item", {}).get("type") == "custom_tool_call"
    cleaned = _clean(block, where, True, log)
    if not (custom and isinstance(block.input, str)):
        return cleaned  # type: ignore[no-any-return]
    kind = {"type": "custom"} if target == "openai-chat" else {"item": {"type": "custom_tool_call"}}
    return ToolUseBlock.model_validate({**_fields(cleaned), META: kind})


def _tool_result_to_openai(block: ToolResultBlock, where: str, target: Target, log: _Log) -> Block:
    if block.is_error:
        log.add("is_error_dropped", where, "OpenAI tool outputs have no error flag")
    content = block.content
    if isinstance(content, tuple):
        kept: list[Block] = []
        for index, inner in enumerate(content):
            at = f"{where}.content[{index}]"
            if isinstance(inner, TextBlock) or (
                isinstance(inner, ImageBlock) and target == "openai-responses"
            ):
                kept.append(_clean(inner, at, True, log))
            else:
                log.add("tool_result_block_dropped", at, f"a {inner.type!r} block in a tool result")
        content = tuple(kept)
    fields: dict[str, Any] = {"tool_use_id": block.tool_use_id, "content": content}
    _clean(block, where, True, log)
    return ToolResultBlock.model_validate(fields)


def _to_anthropic_block(block: Block, where: str, log: _Log) -> list[Block]:
    meta = meta_of(block)
    if isinstance(block, ThinkingBlock) and "item" in meta:
        log.add("reasoning_dropped", where, "OpenAI reasoning (encrypted) cannot go to Anthropic")
        return []
    if isinstance(block, CompactionBlock) and "item" in meta:
        log.add("compaction_dropped", where, "an OpenAI compaction item (encrypted)")
        return []
    if isinstance(block, OpaqueBlock) and (meta.get("verbatim") or block.type in _OPENAI_PARTS):
        log.add("openai_item_dropped", where, f"a {block.type!r} has no Anthropic form")
        return []
    if isinstance(block, ToolUseBlock) and not isinstance(block.input, Mapping):
        log.add("tool_input_wrapped", where, "tool input is not an object: sent as {'input': ...}")
        return [ToolUseBlock(id=block.id, name=block.name, input={"input": block.input})]
    if isinstance(block, ToolResultBlock) and isinstance(block.content, tuple):
        inner = tuple(
            _clean(b, f"{where}.content[{i}]", False, log) for i, b in enumerate(block.content)
        )
        return [_clean(block.model_copy(update={"content": inner}), where, False, log)]
    return [_clean(block, where, False, log)]


_OPENAI_PARTS = frozenset({"refusal", "input_audio", "file", "input_file", "audio"})


def _reduce_tool(tool: Tool, index: int, to_openai: bool, log: _Log) -> Tool | None:
    where = f"tools[{index}]"
    verbatim = ((tool.model_extra or {}).get(META) or {}).get("verbatim")
    if to_openai and tool.type not in (None, "custom"):
        log.add("server_tool_dropped", where, f"the {tool.type!r} tool runs on Anthropic's side")
        return None
    if not to_openai and tool.type == "custom":
        log.add(
            "custom_tool_as_function", where, "a custom (free-text) tool sent as {'input': str}"
        )
        schema = {
            "type": "object",
            "properties": {"input": {"type": "string"}},
            "required": ["input"],
        }
        return Tool(name=tool.name, input_schema=schema)
    if not to_openai and verbatim is not None:
        log.add(
            "openai_tool_dropped", where, f"the hosted {tool.type!r} tool has no Anthropic form"
        )
        return None
    if to_openai and verbatim is not None:
        return tool
    cleaned: Tool = _clean(tool, where, to_openai, log)
    function = ((tool.model_extra or {}).get(META) or {}).get("function")
    if to_openai and function:  # ``strict`` and the like mean the same to both OpenAI APIs
        cleaned = Tool.model_validate({**_fields(cleaned), META: {"function": function}})
    return cleaned


def _fields(model: Any) -> dict[str, Any]:
    return {k: getattr(model, k) for k in model.model_fields_set}


# --------------------------------------------------------------------------------------------------
# Request parameters

_PARAM_NAMES: dict[str, dict[str, str]] = {
    "anthropic": {"max_tokens": "max_tokens", "stop_sequences": "stop"},
    "openai-chat": {
        "max_completion_tokens": "max_tokens",
        "max_tokens": "max_tokens",
        "stop": "stop",
    },
    "openai-responses": {"max_output_tokens": "max_tokens"},
}
_SHARED = ("temperature", "top_p", "stream", "tool_choice")


def _source_params(conversation: Conversation, origin: str) -> dict[str, Any]:
    if origin == "anthropic":
        extra = dict(conversation.model_extra or {})
        extra.pop(META, None)
        return extra
    return dict(_conv_meta(conversation).get("body") or {})


def _reduce_params(
    conversation: Conversation, target: Target, origin: str, log: _Log
) -> dict[str, Any]:
    """Neutral parameters from the source body, written under the target's names."""
    source = origin if origin in _PARAM_NAMES else "anthropic"
    neutral: dict[str, Any] = {}
    for key, value in _source_params(conversation, source).items():
        name = _PARAM_NAMES[source].get(key, key if key in _SHARED else "")
        if not name:
            log.add("request_field_dropped", f"request.{key}", f"no {target} counterpart")
        elif name == "tool_choice":
            neutral[name] = _choice_in(value)
        else:
            neutral[name] = [value] if name == "stop" and isinstance(value, str) else value
    return _params_out(neutral, target, log)


def _choice_in(value: Any) -> Any:
    """tool_choice as ``auto``/``none``/``any`` or ``("tool", name)``."""
    if isinstance(value, str):
        return "any" if value == "required" else value
    if isinstance(value, Mapping):
        kind = value.get("type")
        function = value.get("function")
        name = value.get("name") or (
            function.get("name") if isinstance(function, Mapping) else None
        )
        if kind in ("tool", "function") and isinstance(name, str):
            return ("tool", name)
        return kind
    return value


def _params_out(neutral: dict[str, Any], target: Target, log: _Log) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in neutral.items():
        if key == "max_tokens":
            names = {"anthropic": "max_tokens", "openai-chat": "max_completion_tokens"}
            out[names.get(target, "max_output_tokens")] = value
        elif key == "stop" and target == "openai-responses":
            log.add(
                "request_field_dropped", "request.stop", "the Responses API has no stop sequences"
            )
        elif key == "stop":
            out["stop_sequences" if target == "anthropic" else "stop"] = value
        elif key == "tool_choice":
            out[key] = _choice_out(value, target)
        else:
            out[key] = value
    if target == "anthropic":
        if "max_tokens" not in out:
            log.add("max_tokens_missing", "request", "Anthropic requires max_tokens: set it")
        return out
    return {META: {"api": _API[target], "body": out}}


def _choice_out(choice: Any, target: Target) -> Any:
    if isinstance(choice, tuple):
        if target == "anthropic":
            return {"type": "tool", "name": choice[1]}
        if target == "openai-chat":
            return {"type": "function", "function": {"name": choice[1]}}
        return {"type": "function", "name": choice[1]}
    if target == "anthropic":
        return {"type": choice}
    return "required" if choice == "any" else choice


__all__ = [
    "TARGETS",
    "ConversionError",
    "ConversionWarning",
    "Target",
    "WarningLog",
    "from_format",
    "to_format",
]
