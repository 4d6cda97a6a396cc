"""Shared parts of the agent-trajectory readers (SWE-agent, mini-swe-agent, tau-bench, OpenHands,
Gemini CLI): whole-file JSON with line numbers, sniffing a file's head, and turning a message list
into calls.

Contract:

- :class:`JsonDoc`, :func:`load_doc` and :func:`peek` (whole-file JSON with line numbers, sniffing a
  file's head) are in :mod:`contextkit.formats._jsondoc`, re-exported here for the readers.
- :func:`calls_from_messages` builds one :class:`Call` per model response from a transcript: the
  request is the conversation before that response (reconstructed, ``exact=False``); consecutive
  calls share the same :class:`Message` objects (the requests are slices of one tuple).
- :func:`usage_from_litellm` maps an OpenAI / litellm ``usage`` object to :class:`Usage`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._io import Skips
from contextkit.formats._jsondoc import JsonDoc, Key, Peek, load_doc, peek
from contextkit.messages import (
    Block,
    Conversation,
    History,
    Message,
    Tool,
    ToolUseBlock,
    token_count,
)
from contextkit.session import Call, Usage
from contextkit.wire import System, parse_chat_messages

# --------------------------------------------------------------------------------------------------
# Values


def as_int(value: object) -> int | None:
    """An int from a JSON number (bools and non-integral floats are not counts)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def as_mapping(value: object) -> Mapping[str, Any]:
    """An object value, or an empty mapping for anything else (a missing or null field)."""
    return value if isinstance(value, Mapping) else {}


def parse_time(value: object) -> datetime | None:
    """An ISO 8601 string or a Unix time in seconds; None when it is neither."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def usage_from_litellm(usage: object) -> Usage | None:
    """An OpenAI / litellm ``usage`` object as :class:`Usage`; None when it has no prompt count.

    ``prompt_tokens`` counts every input token. OpenAI reports the cached part in
    ``prompt_tokens_details.cached_tokens``; litellm in front of Anthropic adds
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens``, both included in
    ``prompt_tokens`` (a write without a TTL split counts as 5m, as in
    :meth:`Usage.from_anthropic`).
    """
    if not isinstance(usage, Mapping):
        return None
    prompt = token_count(usage.get("prompt_tokens"), "prompt_tokens")
    if prompt is None:
        return None
    output = token_count(usage.get("completion_tokens"), "completion_tokens") or 0
    read = token_count(usage.get("cache_read_input_tokens"), "cache_read_input_tokens")
    write = token_count(usage.get("cache_creation_input_tokens"), "cache_creation_input_tokens")
    if read is None and write is None:
        details = usage.get("prompt_tokens_details")
        cached = (
            token_count(details.get("cached_tokens"), "cached_tokens")
            if isinstance(details, Mapping)
            else None
        )
        return Usage.from_openai(prompt, cached or 0, output)
    read, write = read or 0, write or 0
    # Some litellm versions left the write out of prompt_tokens: never report negative input.
    uncached = prompt - read - write if prompt >= read + write else max(prompt - read, 0)
    return Usage(input_tokens=uncached, cache_write_5m=write, cache_read=read, output_tokens=output)


_FINISH_REASONS = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
}


def stop_reason(response: Message, recorded: str | None = None) -> str:
    """The call's stop reason in Anthropic's words.

    A recorded finish reason (OpenAI ``finish_reason``, Gemini ``finishReason``) is mapped, but a
    ``stop`` on a response that calls tools is ``tool_use`` (the harness runs the tools and calls
    again: the turn goes on, whatever the provider said); when the file records none, it is
    inferred from the response: ``tool_use`` when it calls a tool, ``end_turn`` otherwise (what
    the provider returns for a reply without tool calls).
    """
    calls_tools = any(isinstance(b, ToolUseBlock) for b in response.blocks)
    if recorded == "stop" and calls_tools:
        return "tool_use"  # some providers behind OpenAI-style proxies say "stop" for tool calls
    if recorded:
        return _FINISH_REASONS.get(recorded, recorded)
    return "tool_use" if calls_tools else "end_turn"


# --------------------------------------------------------------------------------------------------
# Calls from a transcript


@dataclass(frozen=True)
class Reply:
    """What a file says about one model response, beside the message itself."""

    index: int
    """Index of the response (an assistant message) in the transcript's message tuple."""
    line: int | None = None
    model: str | None = None
    usage: Usage | None = None
    timestamp: datetime | None = None
    finish_reason: str | None = None
    request_id: str | None = None


def calls_from_messages(
    messages: tuple[Message, ...],
    replies: Sequence[Reply],
    *,
    system: str | tuple[Block, ...] | None = None,
    tools: tuple[Tool, ...] = (),
) -> tuple[Call, ...]:
    """One call per reply: the request is every message before the response, rebuilt."""
    calls: list[Call] = []
    history = History(messages)  # each request a view of its start: one list for every call
    for reply in replies:
        response = messages[reply.index]
        request = Conversation(
            model=reply.model, system=system, tools=tools, messages=history[: reply.index]
        )
        calls.append(
            Call(
                request=request,
                response=response,
                usage=reply.usage,
                model=reply.model,
                timestamp=reply.timestamp,
                stop_reason=stop_reason(response, reply.finish_reason),
                request_id=reply.request_id,
                exact=False,
                line=reply.line,
            )
        )
    return tuple(calls)


class UserTurn:
    """Collects user-role blocks until the next assistant message, tool results first.

    The canonical shape puts every tool result in the one user message that follows the assistant
    message which called the tools, results before any other content.
    """

    def __init__(self) -> None:
        self.results: list[Block] = []
        self.other: list[Block] = []

    def add(self, block: Block, *, result: bool = False) -> None:
        (self.results if result else self.other).append(block)

    def flush(self, into: list[Message]) -> None:
        blocks = (*self.results, *self.other)
        if blocks:
            into.append(Message(role="user", content=blocks))
        self.results, self.other = [], []


@dataclass(frozen=True)
class ChatTranscript:
    """An OpenAI chat message list in canonical form, and where its responses are."""

    system: System
    messages: tuple[Message, ...]
    responses: tuple[tuple[int, int], ...]
    """``(index in messages, index in the raw list)`` of each assistant message, in order."""


def _message_error(exc: ValueError, index: int) -> str:
    # parse_chat_messages numbers messages from 0 within the list it was given: renumber.
    return f"message {index}: " + str(exc).removeprefix("message 0: ")


def parse_chat(
    raws: Sequence[object],
    lines: Sequence[int | None],
    skips: Skips,
    *,
    context: str = "",
) -> ChatTranscript:
    """Map an OpenAI chat message list with ``parse_chat_messages``; a bad message is an error at
    its line (strict) or a skipped record (lenient: the message is left out)."""
    kept: list[int] = []
    for index, raw in enumerate(raws):
        try:
            parse_chat_messages([raw])  # type: ignore[list-item]
        except ValueError as exc:
            line = lines[index] if index < len(lines) else None
            skips.fail(context + _message_error(exc, index), line)
            continue
        kept.append(index)
    system, messages = parse_chat_messages([raws[i] for i in kept])  # type: ignore[misc]
    raw_assistants = [i for i in kept if _is_assistant(raws[i])]
    canonical = [i for i, m in enumerate(messages) if m.role == "assistant"]
    return ChatTranscript(
        system=system,
        messages=messages,
        responses=tuple(zip(canonical, raw_assistants, strict=True)),
    )


def _is_assistant(raw: object) -> bool:
    return isinstance(raw, Mapping) and raw.get("role") == "assistant"


def fail_at(doc: JsonDoc, reason: str, *keys: Key) -> FormatError:
    """A :class:`FormatError` at the line of the element at ``keys`` (the file when unknown)."""
    return FormatError(doc.path, reason, doc.line_of(*keys))


def tool_from_openai(raw: object) -> Tool | None:
    """An OpenAI tool definition (``{"type": "function", "function": {...}}``) as a Tool."""
    if not isinstance(raw, Mapping):
        return None
    function = raw.get("function")
    body: Mapping[str, Any] = function if isinstance(function, Mapping) else raw
    name = body.get("name")
    if not isinstance(name, str):
        return None
    return Tool(
        name=name, description=as_str(body.get("description")), input_schema=body.get("parameters")
    )


__all__ = [
    "ChatTranscript",
    "JsonDoc",
    "Key",
    "Peek",
    "Reply",
    "UserTurn",
    "as_int",
    "as_mapping",
    "as_str",
    "calls_from_messages",
    "fail_at",
    "load_doc",
    "parse_chat",
    "parse_time",
    "peek",
    "stop_reason",
    "tool_from_openai",
    "usage_from_litellm",
]
