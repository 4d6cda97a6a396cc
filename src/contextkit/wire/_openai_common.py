"""Pieces shared by the OpenAI Chat Completions and Responses mappings: tools, request fields,
parsed responses.

Tool definitions: a ``function`` tool becomes a :class:`Tool` with ``input_schema`` =
``parameters``; every other field of the OpenAI shape is kept in the tool's ``openai`` extra so
the tool is written back as it was read. Other tool kinds (``custom``, ``web_search``, MCP...) are
kept whole (``openai.verbatim``) with ``Tool.type`` naming the kind.

Request fields other than the model, the messages and the tools (``temperature``,
``tool_choice``, ``max_completion_tokens``...) are kept in the conversation's ``openai`` extra:
``{"api": "chat" | "responses", "body": {...}}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from contextkit.messages import Conversation, Message, Tool, token_count
from contextkit.session import Record, Usage
from contextkit.wire._chat_messages import META

Api = Literal["chat", "responses"]

FINISH_REASONS: dict[str, str] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
"""Chat Completions ``finish_reason`` -> the Anthropic stop reason contextkit uses."""


class ParsedResponse(Record):
    """What one OpenAI response body says about its call."""

    message: Message | None = None
    usage: Usage | None = None
    stop_reason: str | None = None
    model: str | None = None
    response_id: str | None = None


def parse_tools(tools: object, api: Api, where: str = "tools") -> tuple[Tool, ...]:
    if not isinstance(tools, list):
        raise ValueError(f"{where}: expected a list of tool definitions")
    return tuple(_parse_tool(t, api, f"{where}[{i}]") for i, t in enumerate(tools))


def _parse_tool(tool: object, api: Api, where: str) -> Tool:
    if not isinstance(tool, Mapping):
        raise ValueError(f"{where}: a tool definition must be an object")
    kind = tool.get("type", "function")
    spec = tool.get("function") if api == "chat" else tool
    if kind != "function" or not isinstance(spec, Mapping):
        inner = tool.get(str(kind))
        name = tool.get("name") or (inner.get("name") if isinstance(inner, Mapping) else None)
        name = name or kind
        return Tool.model_validate(
            {"name": str(name), "type": str(kind), META: {"verbatim": dict(tool)}}
        )
    if not isinstance(spec.get("name"), str):
        raise ValueError(f"{where}: a function tool needs a string 'name'")
    fields: dict[str, Any] = {"name": spec["name"]}
    if "description" in spec:
        fields["description"] = spec["description"]
    if "parameters" in spec:
        fields["input_schema"] = spec["parameters"]
    rest = {k: v for k, v in spec.items() if k not in ("name", "description", "parameters", "type")}
    meta: dict[str, Any] = {"function": rest}
    if api == "chat":
        meta["tool"] = {k: v for k, v in tool.items() if k not in ("type", "function")}
    if "type" not in tool:
        meta["no_type"] = True
    return Tool.model_validate({**fields, META: meta})


def write_tools(tools: Sequence[Tool], api: Api) -> list[dict[str, Any]]:
    return [_write_tool(t, api) for t in tools]


def _write_tool(tool: Tool, api: Api) -> dict[str, Any]:
    meta = dict((tool.model_extra or {}).get(META) or {})
    if "verbatim" in meta:
        return dict(meta["verbatim"])
    if tool.type not in (None, "function", "custom"):
        raise ValueError(f"tool {tool.name!r}: a {tool.type!r} tool has no OpenAI form")
    spec: dict[str, Any] = {"name": tool.name}
    if "description" in tool.model_fields_set:
        spec["description"] = tool.description
    if "input_schema" in tool.model_fields_set:
        spec["parameters"] = tool.input_schema
    spec.update(meta.get("function", {}))
    out: dict[str, Any] = {"type": "function"}
    if api == "chat":
        out = {**out, "function": spec, **meta.get("tool", {})}
    else:
        out.update(spec)
    if meta.get("no_type"):
        out.pop("type")
    return out


def conversation_from(
    api: Api,
    body: Mapping[str, Any],
    system: Any,
    messages: Sequence[Message],
    skip: Sequence[str],
) -> Conversation:
    """A Conversation holding a request body's parts; other fields go to ``openai.body``."""
    fields: dict[str, Any] = {"messages": tuple(messages)}
    if "model" in body:
        fields["model"] = body["model"]
    if system is not None:
        fields["system"] = system
    if "tools" in body:
        fields["tools"] = parse_tools(body["tools"], api)
    rest = {k: v for k, v in body.items() if k not in ("model", "tools", *skip)}
    fields[META] = {"api": api, "body": rest}
    return Conversation.model_validate(fields)


def request_fields(conversation: Conversation, api: Api) -> dict[str, Any]:
    """The body fields a Conversation carries besides messages and system (model, tools, rest)."""
    meta = dict((conversation.model_extra or {}).get(META) or {})
    out: dict[str, Any] = {}
    if "model" in conversation.model_fields_set:
        out["model"] = conversation.model
    if "tools" in conversation.model_fields_set or conversation.tools:
        out["tools"] = write_tools(conversation.tools, api)
    if meta.get("api") == api:
        out.update(meta.get("body") or {})
    return out


def chat_usage(usage: Mapping[str, Any]) -> Usage:
    """A Chat Completions ``usage`` object (prompt includes the cached part) as :class:`Usage`."""
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else 0
    return Usage.from_openai(
        token_count(usage.get("prompt_tokens"), "prompt_tokens") or 0,
        token_count(cached, "prompt_tokens_details.cached_tokens") or 0,
        token_count(usage.get("completion_tokens"), "completion_tokens") or 0,
    )
