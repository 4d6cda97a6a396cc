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

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from contextkit.formats._chat_messages import META, System
from contextkit.formats._io import HEAD_BYTES, Skips, iter_jsonl, sniff_records
from contextkit.formats._jsondoc import load_doc
from contextkit.messages import Conversation, Message, Tool, token_count
from contextkit.session import Call, LoadedFile, Record, Session, Usage

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


def transcript_calls(
    system: System, messages: Sequence[Message], base: Conversation | None = None
) -> tuple[Call, ...]:
    """One reconstructed call per assistant message: the request is everything before it."""
    template = base or Conversation()
    if system is not None:
        template = template.model_copy(update={"system": system})
    calls: list[Call] = []
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        stop = "tool_use" if any(True for _ in message.tool_uses()) else "end_turn"
        request = template.model_copy(update={"messages": tuple(messages[:index])})
        calls.append(Call(request=request, response=message, stop_reason=stop, exact=False))
    return tuple(calls)


def chat_usage(usage: Mapping[str, Any]) -> Usage:
    """A Chat Completions ``usage`` object (prompt includes the cached part) as :class:`Usage`."""
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else 0
    return Usage.from_openai(
        token_count(usage.get("prompt_tokens"), "prompt_tokens") or 0,
        token_count(cached, "prompt_tokens_details.cached_tokens") or 0,
        token_count(usage.get("completion_tokens"), "completion_tokens") or 0,
    )


# --------------------------------------------------------------------------------------------------
# File reading, shared by the ``openai-chat`` and ``openai-responses`` readers

_INDEX = re.compile(r"^(?:message|item) (\d+)")


def call_from(
    record: Mapping[str, Any],
    line: int | None,
    parse_request: Callable[[Mapping[str, Any]], Conversation],
    parse_response: Callable[[Mapping[str, Any]], ParsedResponse],
) -> Call:
    """A request body or request/response pair -> the call it records (``exact=True``)."""
    request = record.get("request", record)
    if not isinstance(request, Mapping):
        raise ValueError("'request' must be an object")
    conversation = parse_request(request)
    response = record.get("response") if "request" in record else None
    parsed = parse_response(response) if isinstance(response, Mapping) else ParsedResponse()
    return Call(
        request=conversation,
        response=parsed.message,
        usage=parsed.usage,
        model=parsed.model or conversation.model,
        stop_reason=parsed.stop_reason,
        request_id=parsed.response_id,
        exact=True,
        line=line,
    )


@dataclass(frozen=True)
class RequestFileReader:
    """Reads ``.jsonl`` (one record a line) or ``.json`` (a record, a list of records, or a bare
    transcript list) where a record is a request body or a ``{"request", "response"}`` pair."""

    name: str
    is_record: Callable[[object], bool]
    is_transcript: Callable[[object], bool]
    record_call: Callable[[Mapping[str, Any], int | None], Call]
    transcript: Callable[[Any], tuple[Call, ...]]
    plain_bodies: bool = False
    """Claim a ``.jsonl`` of plain text bodies only (ambiguous between the request forms, read
    alike by either): the reader of last resort does, so every ``convert`` output is read."""

    def sniff(self, path: Path, head: str) -> bool:
        if path.name.endswith((".traj.json", ".traj")):
            return False
        if path.suffix == ".jsonl":
            return sniff_records(path, self.is_record, plain_only=self.plain_bodies)
        if path.suffix != ".json":
            return False
        value = _whole_json(path, head)
        if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            return all(self.is_record(v) for v in value) or self.is_transcript(value)
        return self.is_record(value)

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        calls = self._lines(path, skips) if path.suffix == ".jsonl" else self._document(path, skips)
        session = Session(path=str(path), format=self.name, calls=tuple(calls))
        return LoadedFile(
            path=str(path), format=self.name, sessions=(session,), skipped=tuple(skips.records)
        )

    def _lines(self, path: Path, skips: Skips) -> list[Call]:
        calls: list[Call] = []
        for line, record in iter_jsonl(path, skips):
            try:
                calls.append(self.record_call(record, line))
            except ValueError as exc:
                skips.fail(str(exc), line)
        return calls

    def _document(self, path: Path, skips: Skips) -> list[Call]:
        doc = load_doc(path)
        value = doc.value
        if self.is_transcript(value):
            try:
                return list(self.transcript(value))
            except ValueError as exc:
                found = _INDEX.match(str(exc))
                skips.fail(str(exc), doc.line_of(int(found.group(1))) if found else None)
                return []
        records = value if isinstance(value, list) else [value]
        calls: list[Call] = []
        for index, record in enumerate(records):
            line = doc.line_of(index) if isinstance(value, list) else 1
            try:
                if not isinstance(record, Mapping):
                    raise ValueError("expected a request object")
                calls.append(self.record_call(record, line))
            except ValueError as exc:
                where = f"record {index}: " if isinstance(value, list) else ""
                skips.fail(where + str(exc), line)
        return calls


def _whole_json(path: Path, head: str) -> Any:
    """The file's JSON value for sniffing (the head when it is the whole file)."""
    if len(head.encode("utf-8", errors="replace")) < HEAD_BYTES:
        text = head
    elif path.stat().st_size <= _SNIFF_LIMIT:
        text = path.read_text(encoding="utf-8", errors="replace")
    else:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


_SNIFF_LIMIT = 64 * 1024 * 1024
