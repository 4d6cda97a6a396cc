"""OpenAI streams: Chat Completions chunks and Responses events, both ways.

Contract:

- :func:`assemble_chat_chunks` takes the ``chat.completion.chunk`` objects of one streamed call
  (as JSON objects) and returns the ``chat.completion`` the call would have returned without
  streaming: content and refusal deltas joined, tool calls joined by their ``index`` (id, name
  and argument fragments), the finish reason, and the usage of the final chunk when the request
  asked for it (``stream_options={"include_usage": true}``). ``complete`` is False when no
  choice ever carried a finish reason (the stream stopped early).
- :func:`chat_chunks` is the other way, for test servers: the chunks the API streams for a
  completion; ``assemble_chat_chunks(chat_chunks(c)).completion == c`` for a one-choice
  completion.
- :func:`responses_events` gives the events the Responses API streams for a response
  (``response.created`` ... ``response.completed``, or ``response.incomplete``); the final event
  carries the whole response, which is what a client records.
- :func:`to_openai_sse` writes events or chunks as server-sent-event text (Chat Completions ends
  with ``data: [DONE]``; Responses names each event).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AssembledChat:
    completion: dict[str, Any]
    complete: bool


def assemble_chat_chunks(chunks: Iterable[Mapping[str, Any]]) -> AssembledChat:
    """See the module docstring."""
    head: dict[str, Any] = {}
    message: dict[str, Any] = {"role": "assistant"}
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: Any = None
    for chunk in chunks:
        if not head:
            head = {k: chunk[k] for k in ("id", "created", "model") if k in chunk}
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            _delta(message, calls, choice.get("delta") or {})
            finish = choice.get("finish_reason") or finish
    if "content" not in message:
        message["content"] = None
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    completion: dict[str, Any] = {
        **head,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        completion["usage"] = usage
    return AssembledChat(completion=completion, complete=finish is not None)


def _delta(
    message: dict[str, Any], calls: dict[int, dict[str, Any]], delta: Mapping[str, Any]
) -> None:
    for key in ("content", "refusal"):
        if isinstance(delta.get(key), str):
            message[key] = message.get(key, "") + delta[key]
    for part in delta.get("tool_calls") or ():
        call = calls.setdefault(
            int(part.get("index", 0)),
            {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
        )
        if part.get("id"):
            call["id"] = part["id"]
        function = part.get("function") or {}
        if function.get("name"):
            call["function"]["name"] += function["name"]
        if function.get("arguments"):
            call["function"]["arguments"] += function["arguments"]


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def chat_chunks(
    completion: Mapping[str, Any], *, include_usage: bool = False, chunk_chars: int = 64
) -> list[dict[str, Any]]:
    """See the module docstring."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {
        "id": completion.get("id"),
        "object": "chat.completion.chunk",
        "created": completion.get("created", 0),
        "model": completion.get("model"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    if isinstance(message.get("content"), str) and message["content"]:
        out += [chunk({"content": piece}) for piece in _pieces(message["content"], chunk_chars)]
    for i, call in enumerate(message.get("tool_calls") or ()):
        function = call["function"]
        start = {"index": i, "id": call["id"], "type": "function"}
        out.append(
            chunk(
                {"tool_calls": [{**start, "function": {"name": function["name"], "arguments": ""}}]}
            )
        )
        for piece in _pieces(function["arguments"], chunk_chars):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, choice.get("finish_reason")))
    if include_usage and completion.get("usage") is not None:
        out.append({**base, "choices": [], "usage": completion["usage"]})
    return out


def responses_events(response: Mapping[str, Any], *, chunk_chars: int = 64) -> list[dict[str, Any]]:
    """See the module docstring."""
    events: list[dict[str, Any]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    shell = {**copy.deepcopy(dict(response)), "status": "in_progress", "output": []}
    emit("response.created", response=shell)
    emit("response.in_progress", response=shell)
    for index, item in enumerate(response.get("output") or ()):
        _item_events(emit, index, item, chunk_chars)
    final = (
        "response.incomplete" if response.get("status") == "incomplete" else "response.completed"
    )
    emit(final, response=copy.deepcopy(dict(response)))
    return events


def _item_events(emit: Any, index: int, item: Mapping[str, Any], size: int) -> None:
    item_id = item.get("id")
    if item.get("type") == "message":
        emit(
            "response.output_item.added",
            output_index=index,
            item={**item, "content": [], "status": "in_progress"},
        )
        for part_index, part in enumerate(item.get("content") or ()):
            where = {"item_id": item_id, "output_index": index, "content_index": part_index}
            emit("response.content_part.added", **where, part={**part, "text": ""})
            text = str(part.get("text", ""))
            for piece in _pieces(text, size):
                emit("response.output_text.delta", **where, delta=piece, logprobs=[])
            emit("response.output_text.done", **where, text=text, logprobs=[])
            emit("response.content_part.done", **where, part=dict(part))
    elif item.get("type") == "function_call":
        emit(
            "response.output_item.added",
            output_index=index,
            item={**item, "arguments": "", "status": "in_progress"},
        )
        arguments = str(item.get("arguments", ""))
        for piece in _pieces(arguments, size):
            emit(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=piece,
            )
        emit(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=arguments,
        )
    else:
        emit("response.output_item.added", output_index=index, item=dict(item))
    emit("response.output_item.done", output_index=index, item=dict(item))


def to_openai_sse(events: Sequence[Mapping[str, Any]], *, named: bool) -> str:
    """Server-sent-event text: ``named`` for Responses events, else chat chunks and ``[DONE]``."""
    lines: list[str] = []
    for event in events:
        if named:
            lines.append(f"event: {event['type']}")
        lines.append("data: " + json.dumps(event, ensure_ascii=False))
        lines.append("")
    if not named:
        lines += ["data: [DONE]", ""]
    return "\n".join(lines) + "\n"


__all__ = [
    "AssembledChat",
    "assemble_chat_chunks",
    "chat_chunks",
    "responses_events",
    "to_openai_sse",
]
