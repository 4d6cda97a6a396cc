"""Anthropic Messages wire format: request and response bodies, and writing request bodies as JSON
lines (what ``contextkit replay --dump-requests`` writes; the ``anthropic`` file reader that reads
them back is :mod:`contextkit.formats.anthropic`).

Contract:

- ``to_anthropic_request(from_anthropic_request(body)) == body`` (as parsed JSON) for every
  well-formed request body: unknown fields and block types are carried verbatim.
- ``to_anthropic_response(from_anthropic_response(body)) == body`` likewise for response bodies;
  :class:`AnthropicResponse` also gives the assistant :class:`Message` and the billed
  :class:`Usage`.
- Bad payloads raise :class:`PayloadError` naming the offending field; the file reader turns it into
  a :class:`FormatError` naming file and line (or, lenient, a skipped record).

The ``anthropic`` file format (reader :mod:`contextkit.formats.anthropic`, writer
:func:`write_requests_jsonl`):

- ``.json``: one request body, a list of request bodies, one ``{"request": body, "response": r}``
  pair, or a list of pairs; ``.jsonl``: one request body or one pair per line (what
  ``contextkit replay --dump-requests`` writes, one body per line). ``r`` is a response body, the
  text of its SSE stream, or null. Each body becomes a :class:`Call` with ``exact=True``; other keys
  of a pair are ignored. One :class:`Session` per file, calls in file order.

Detection rule (:func:`is_anthropic_request`), so that OpenAI chat requests, which also have
``model`` and ``messages``, are not taken: a body is Anthropic when it has a ``messages`` list of
objects, shows no OpenAI mark (a role other than user/assistant, a message key other than
``role``/``content`` such as ``tool_calls``/``tool_call_id``/``name``, an OpenAI-only block type
such as ``image_url``, a tool with a ``function`` object, an OpenAI-only top-level field such as
``max_completion_tokens``), and shows an Anthropic mark: the top-level ``system`` field, an
Anthropic-only field (``thinking``, ``top_k``, ``stop_sequences``...), a block typed other than
``text`` (``tool_use``, ``tool_result``, ``image``, ``thinking``...), a ``cache_control`` on a
block, or a tool with ``input_schema``. A body with neither mark (plain user/assistant text) is
ambiguous and is left to other readers, unless it is in a pair whose response is an Anthropic
message or stream. A ``.jsonl`` file is judged by its first record that is not such a plain
body (a first call without a system prompt, as ``convert`` writes for Claude Code sessions), among
its first few records; a file of plain bodies only goes to ``openai-chat``, which reads it alike.
``load(path, format="anthropic")`` reads ambiguous files all the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeGuard

from pydantic import ValidationError, field_validator

from contextkit.errors import ContextkitError
from contextkit.messages import (
    SERVER_TOOL_RESULT_TYPES,
    Block,
    Conversation,
    Frozen,
    JsonObject,
    Message,
    to_payload,
)
from contextkit.session import Usage
from contextkit.wire._reuse import BodyReuse

_OPENAI_FIELDS = frozenset(
    {
        "max_completion_tokens",
        "response_format",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "n",
        "functions",
        "function_call",
        "parallel_tool_calls",
        "stream_options",
        "seed",
        "reasoning_effort",
        "modalities",
    }
)
_OPENAI_BLOCK_TYPES = frozenset(
    {"image_url", "input_audio", "file", "refusal", "input_text", "output_text", "input_image"}
)
_ANTHROPIC_FIELDS = frozenset(
    {
        "system",
        "thinking",
        "top_k",
        "stop_sequences",
        "anthropic_version",
        "mcp_servers",
        "container",
        "context_management",
    }
)
_ANTHROPIC_BLOCK_TYPES = frozenset(
    {
        "image",
        "document",
        "search_result",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "mcp_tool_use",
        "container_upload",
        "compaction",
        *SERVER_TOOL_RESULT_TYPES,
    }
)


class PayloadError(ContextkitError):
    """A JSON payload is not a valid Anthropic Messages body; the message names the field."""


# --------------------------------------------------------------------------------------------------
# Requests


def from_anthropic_request(
    payload: Mapping[str, Any], reuse: BodyReuse | None = None
) -> Conversation:
    """A Messages request body as a :class:`Conversation` (every field kept). With ``reuse``
    (one per file read), what repeats an earlier body of the file is shared with its request,
    not parsed again (:mod:`contextkit.wire._reuse`)."""
    if not isinstance(payload, Mapping):
        raise PayloadError(f"a request body must be a JSON object, found {type(payload).__name__}")
    if not isinstance(payload.get("messages"), Sequence) or isinstance(payload["messages"], str):
        raise PayloadError("no 'messages' list: not a Messages request body")
    if reuse is None:
        return _validate_request(payload, 0)
    return reuse.parse(payload, _validate_request)


def _validate_request(payload: Mapping[str, Any], offset: int) -> Conversation:
    """``payload`` validated; its messages are the body's from index ``offset`` on."""
    try:
        return Conversation.model_validate(payload)
    except ValidationError as exc:
        raise PayloadError("request body: " + describe_validation_error(exc, offset)) from None


def to_anthropic_request(conversation: Conversation) -> dict[str, Any]:
    """The request body: exactly the fields that were read or set."""
    return to_payload(conversation)


def describe_validation_error(exc: ValidationError, offset: int = 0) -> str:
    errors = exc.errors()
    first = errors[0]
    loc = list(first["loc"])
    if offset and len(loc) > 1 and loc[0] == "messages" and isinstance(loc[1], int):
        loc[1] += offset  # the index in the whole body, not in the part validated
    where = ".".join(str(part) for part in loc) or "(top level)"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


# --------------------------------------------------------------------------------------------------
# Responses


class AnthropicResponse(Frozen):
    """A Messages response body; fields it does not name (``container``...) are kept as extras."""

    id: str | None = None
    type: str | None = None
    role: Literal["assistant"] | None = None
    model: str | None = None
    content: tuple[Block, ...] = ()
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: JsonObject | None = None
    """The usage object as the API sent it (``service_tier``, ``server_tool_use``... kept)."""

    @field_validator("content", mode="before")
    @classmethod
    def _tuple_content(cls, value: object) -> object:
        return tuple(value) if isinstance(value, list) else value

    @property
    def message(self) -> Message:
        """The assistant message, as the next request would carry it."""
        return Message(role="assistant", content=self.content)

    @property
    def billed_usage(self) -> Usage | None:
        return Usage.from_anthropic(self.usage) if isinstance(self.usage, Mapping) else None

    @classmethod
    def of(
        cls,
        message: Message,
        *,
        usage: Usage | None = None,
        stop_reason: str | None = None,
        model: str | None = None,
        response_id: str | None = None,
    ) -> AnthropicResponse:
        """A response body for ``message`` (for writers and test doubles)."""
        return cls(
            id=response_id,
            type="message",
            role="assistant",
            model=model,
            content=message.blocks,
            stop_reason=stop_reason,
            stop_sequence=None,
            usage=usage_to_anthropic(usage) if usage is not None else None,
        )


def from_anthropic_response(payload: Mapping[str, Any]) -> AnthropicResponse:
    """A Messages response body (non-streaming, or assembled from a stream)."""
    if not isinstance(payload, Mapping):
        raise PayloadError(f"a response body must be a JSON object, found {type(payload).__name__}")
    if payload.get("type") == "error":
        error = payload.get("error")
        detail = error.get("message") if isinstance(error, Mapping) else error
        raise PayloadError(f"the response is an API error: {detail}")
    if not isinstance(payload.get("content"), list):
        raise PayloadError("no 'content' list: not a Messages response body")
    try:
        return AnthropicResponse.model_validate(payload)
    except ValidationError as exc:
        raise PayloadError("response body: " + describe_validation_error(exc)) from None


def to_anthropic_response(response: AnthropicResponse) -> dict[str, Any]:
    """The response body: exactly the fields that were read or set."""
    return to_payload(response)


def usage_to_anthropic(usage: Usage) -> dict[str, Any]:
    """A :class:`Usage` in the API's ``usage`` shape (with the 5m/1h cache-write split)."""
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write_5m,
            "ephemeral_1h_input_tokens": usage.cache_write_1h,
        },
        "output_tokens": usage.output_tokens,
    }


# --------------------------------------------------------------------------------------------------
# Telling Anthropic bodies from others (see the module docstring for the rule)


def is_anthropic_request(payload: object) -> bool:
    """True when ``payload`` is an unambiguous Anthropic Messages request body."""
    if not _has_messages(payload):
        return False
    return not _openai_marks(payload) and _anthropic_marks(payload)


def is_anthropic_response(payload: object) -> bool:
    """True for a Messages response body (``type: message``, a ``content`` list)."""
    return (
        isinstance(payload, Mapping)
        and payload.get("type") == "message"
        and isinstance(payload.get("content"), list)
    )


def _has_messages(payload: object) -> TypeGuard[Mapping[str, Any]]:
    if not isinstance(payload, Mapping):
        return False
    messages = payload.get("messages")
    return isinstance(messages, list) and all(isinstance(m, Mapping) for m in messages)


def _blocks(payload: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for message in payload["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            yield from (b for b in content if isinstance(b, Mapping))
    system = payload.get("system")
    if isinstance(system, list):
        yield from (b for b in system if isinstance(b, Mapping))


def _tools(payload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    tools = payload.get("tools")
    return [t for t in tools if isinstance(t, Mapping)] if isinstance(tools, list) else []


def _openai_marks(payload: Mapping[str, Any]) -> bool:
    if any(key in payload for key in _OPENAI_FIELDS):
        return True
    for message in payload["messages"]:
        if message.get("role") not in ("user", "assistant") or set(message) - {"role", "content"}:
            return True
    if any(b.get("type") in _OPENAI_BLOCK_TYPES for b in _blocks(payload)):
        return True
    return any("function" in t for t in _tools(payload))


def _anthropic_marks(payload: Mapping[str, Any]) -> bool:
    if any(key in payload for key in _ANTHROPIC_FIELDS):
        return True
    for block in _blocks(payload):
        if block.get("type") in _ANTHROPIC_BLOCK_TYPES or "cache_control" in block:
            return True
    return any("input_schema" in t for t in _tools(payload))


def is_anthropic_record(record: object) -> bool:
    """True for a request body or a ``{"request", "response"}`` pair of the ``anthropic`` format."""
    if is_anthropic_request(record):
        return True
    if not isinstance(record, Mapping) or "messages" in record:
        return False
    request, response = record.get("request"), record.get("response")
    if not _has_messages(request) or _openai_marks(request):
        return False
    streamed = isinstance(response, str) and response.lstrip().startswith(("event:", "data:"))
    return _anthropic_marks(request) or is_anthropic_response(response) or streamed


# --------------------------------------------------------------------------------------------------
# Writing request bodies (``contextkit replay --dump-requests``)


def dump_request_line(conversation: Conversation) -> str:
    """The request body as one JSON line (no newline at the end)."""
    body = to_anthropic_request(conversation)
    line = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (legal in JSON escapes, not in UTF-8): keep it escaped, losslessly.
        line = json.dumps(body, ensure_ascii=True, separators=(",", ":"))
    return line


def write_requests_jsonl(path: str | Path, conversations: Iterable[Conversation]) -> int:
    """Write one request body per line; returns the number of lines written."""
    count = 0
    with Path(path).open("w", encoding="utf-8", newline="\n") as fh:
        for conversation in conversations:
            fh.write(dump_request_line(conversation) + "\n")
            count += 1
    return count


__all__ = [
    "AnthropicResponse",
    "PayloadError",
    "describe_validation_error",
    "dump_request_line",
    "from_anthropic_request",
    "from_anthropic_response",
    "is_anthropic_record",
    "is_anthropic_request",
    "is_anthropic_response",
    "to_anthropic_request",
    "to_anthropic_response",
    "usage_to_anthropic",
    "write_requests_jsonl",
]
