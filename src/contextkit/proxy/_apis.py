"""The three wire APIs the proxy speaks: routes, request bodies to and from a
:class:`Conversation`, streams reassembled into the body the non-streaming API returns, usage.

- ``anthropic``: ``POST /v1/messages`` (any query, e.g. ``?beta=true``); ``count_tokens`` is
  forwarded and recorded but is no model call. Streams: Anthropic server-sent events, assembled by
  :func:`contextkit.wire.assemble_stream`.
- ``openai-chat``: ``POST /v1/chat/completions``. Streams: ``chat.completion.chunk`` objects (the
  content, tool call argument fragments by index, the finish reason and, with
  ``stream_options.include_usage``, the usage of the last chunk) assembled into a
  ``chat.completion``.
- ``openai-responses``: ``POST /v1/responses``. Streams: typed events; the ``response`` of the
  final ``response.completed`` / ``response.incomplete`` / ``response.failed`` event is the body.

Everything here is pure: bytes in, values out; a malformed stream is reported, never raised.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from contextkit.errors import json_reason
from contextkit.messages import Conversation
from contextkit.session import Usage
from contextkit.wire import (
    SseEvent,
    StreamError,
    assemble_events,
    from_anthropic_request,
    parse_chat_request,
    parse_responses_request,
    parse_sse,
    to_anthropic_request,
    to_chat_request,
    to_responses_request,
    usage_from_responses,
)

Api = Literal["anthropic", "anthropic-count-tokens", "openai-chat", "openai-responses"]
MODEL_APIS: tuple[Api, ...] = ("anthropic", "openai-chat", "openai-responses")

_ROUTES: dict[str, Api] = {
    "/v1/messages": "anthropic",
    "/v1/messages/count_tokens": "anthropic-count-tokens",
    "/v1/chat/completions": "openai-chat",
    "/chat/completions": "openai-chat",
    "/v1/responses": "openai-responses",
    "/responses": "openai-responses",
}


def api_of(method: str, path: str) -> Api | None:
    """The API a request speaks (its path without the query), or None: forwarded as is."""
    if method.upper() != "POST":
        return None
    return _ROUTES.get(path.rstrip("/") or "/")


def parse_request(api: Api, body: Mapping[str, Any]) -> Conversation:
    """The body as a Conversation; ``ValueError`` (or a ``ContextkitError``) when malformed."""
    if api == "openai-chat":
        return parse_chat_request(body)
    if api == "openai-responses":
        return parse_responses_request(body)
    return from_anthropic_request(body)


def write_request(api: Api, conversation: Conversation) -> dict[str, Any]:
    """The wire body of a Conversation read by :func:`parse_request` (lossless)."""
    if api == "openai-chat":
        return to_chat_request(conversation)
    if api == "openai-responses":
        return to_responses_request(conversation)
    return to_anthropic_request(conversation)


@dataclass
class Assembled:
    """What a response (JSON or stream) adds up to."""

    body: dict[str, Any] | None
    complete: bool
    events: int = 0
    notes: list[str] = field(default_factory=list)


def assemble(api: Api, text: str, streamed: bool) -> Assembled:
    """The response body of ``text`` (a JSON body, or a stream's text when ``streamed``)."""
    if not streamed:
        try:
            value = json.loads(text) if text.strip() else None
        except ValueError as exc:
            return Assembled(None, False, notes=[f"response is not JSON ({json_reason(exc)})"])
        return Assembled(value if isinstance(value, dict) else None, True)
    if api == "anthropic":
        return _anthropic_stream(text)
    events = list(_data_events(text))
    if api == "openai-chat":
        return _chat_stream(events)
    return _responses_stream(events)


def _anthropic_stream(text: str) -> Assembled:
    events = list(parse_sse(text))
    try:
        stream = assemble_events(_decoded(events))
    except StreamError as exc:
        return Assembled(None, False, len(events), [str(exc)])
    return Assembled(dict(stream.message), stream.complete, len(events), list(stream.notes))


def _decoded(events: list[SseEvent]) -> Iterator[dict[str, Any]]:
    for number, event in enumerate(events, start=1):
        try:
            value = json.loads(event.data)
        except ValueError as exc:
            raise StreamError(
                f"data is not valid JSON ({json_reason(exc)})", event=number
            ) from None
        if not isinstance(value, dict):
            raise StreamError(f"data is {type(value).__name__}, not an object", event=number)
        if "type" not in value and event.event is not None:
            value["type"] = event.event
        yield value


def _data_events(text: str) -> list[dict[str, Any] | str]:
    out: list[dict[str, Any] | str] = []
    for event in parse_sse(text):
        if event.data.strip() == "[DONE]":
            out.append("[DONE]")
            continue
        try:
            value = json.loads(event.data)
        except ValueError:  # not JSON, or a number past the digit limit
            out.append("bad")
            continue
        if isinstance(value, dict):
            if event.event and "type" not in value:
                value["type"] = event.event
            out.append(value)
    return out


def _chat_stream(events: list[dict[str, Any] | str]) -> Assembled:
    body: dict[str, Any] | None = None
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    done = False
    notes: list[str] = []
    for event in events:
        if event == "[DONE]":
            done = True
            continue
        if not isinstance(event, dict):
            notes.append("a chunk is not valid JSON")
            continue
        if "error" in event:
            notes.append(f"error event: {json.dumps(event['error'])[:200]}")
            continue
        if body is None:
            body = {k: event[k] for k in ("id", "model", "created") if k in event}
        if isinstance(event.get("usage"), dict):
            body["usage"] = event["usage"]
        for choice in event.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            finish = choice.get("finish_reason") or finish
            _chat_delta(choice.get("delta") or {}, text, calls)
    if body is None:
        return Assembled(None, False, len(events), [*notes, "no chunk in the stream"])
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) if text else None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    body.update(object="chat.completion")
    body["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    if not done:
        notes.append("the stream ended before [DONE] (truncated)")
    return Assembled(body, done and finish is not None, len(events), notes)


def _chat_delta(
    delta: Mapping[str, Any], text: list[str], calls: dict[int, dict[str, Any]]
) -> None:
    if isinstance(delta.get("content"), str):
        text.append(delta["content"])
    for part in delta.get("tool_calls") or ():
        index = int(part.get("index", 0))
        call = calls.setdefault(
            index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if part.get("id"):
            call["id"] = part["id"]
        function = part.get("function") or {}
        call["function"]["name"] += function.get("name") or ""
        call["function"]["arguments"] += function.get("arguments") or ""


_FINAL_RESPONSES = ("response.completed", "response.incomplete", "response.failed")


def _responses_stream(events: list[dict[str, Any] | str]) -> Assembled:
    body: dict[str, Any] | None = None
    complete = False
    notes: list[str] = []
    for event in events:
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if isinstance(event.get("response"), dict) and kind in (
            *_FINAL_RESPONSES,
            "response.created",
        ):
            body = dict(event["response"])
            complete = complete or kind in _FINAL_RESPONSES
        elif kind == "error":
            notes.append(f"error event: {json.dumps(event)[:200]}")
    if not complete:
        notes.append("the stream ended before response.completed (truncated)")
    return Assembled(body, complete, len(events), notes)


def usage_of(api: Api, body: Mapping[str, Any] | None) -> Usage | None:
    """The billed usage a response body reports (None when it reports none or is malformed)."""
    raw = body.get("usage") if isinstance(body, Mapping) else None
    if not isinstance(raw, Mapping):
        return None
    try:
        if api == "openai-chat":
            return _chat_usage(raw)
        if api == "openai-responses":
            return usage_from_responses(raw)
        return Usage.from_anthropic(raw)
    except (ValueError, TypeError):
        return None


def _chat_usage(usage: Mapping[str, Any]) -> Usage:
    """Chat Completions usage (the prompt count includes the cached part)."""
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else 0
    prompt, output = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    return Usage.from_openai(int(prompt), int(cached or 0), int(output))


def stream_requested(body: Mapping[str, Any]) -> bool:
    return body.get("stream") is True


def error_event(api: Api, message: str) -> bytes:
    """The stream event that tells a client its stream failed (the SDKs raise on it)."""
    if api == "anthropic":
        payload = {"type": "error", "error": {"type": "api_error", "message": message}}
        return f"event: error\ndata: {json.dumps(payload)}\n\n".encode()
    if api == "openai-responses":
        payload = {"type": "error", "code": "proxy_error", "message": message}
        return f"event: error\ndata: {json.dumps(payload)}\n\n".encode()
    return (
        f"data: {json.dumps({'error': {'message': message, 'type': 'proxy_error'}})}\n\n".encode()
    )


def error_body(api: Api, status: int, message: str) -> dict[str, Any]:
    """An error body in the API's own shape (for what the proxy answers itself)."""
    if api.startswith("anthropic"):
        kind = {504: "timeout_error", 413: "request_too_large"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": "proxy_error", "code": status}}


__all__ = [
    "MODEL_APIS",
    "Api",
    "Assembled",
    "api_of",
    "assemble",
    "error_body",
    "error_event",
    "parse_request",
    "stream_requested",
    "usage_of",
    "write_request",
]
