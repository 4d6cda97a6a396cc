"""OpenAI Chat Completions: messages, request and response bodies, and telling them from others
(the ``openai-chat`` file reader is :mod:`contextkit.formats.openai_chat`).

Messages map to contextkit's canonical (Anthropic-shaped) model in
:mod:`contextkit.wire._chat_messages` (``parse_chat_messages`` / ``to_chat_messages``, lossless;
see there for the mapping). Request bodies map to a :class:`Conversation` (tools -> ``Tool`` with
``input_schema``; other body fields kept, see :mod:`contextkit.wire._openai_common`), and
``to_chat_request(parse_chat_request(body)) == body`` for every well-formed body.

The file reader accepts ``.json``/``.jsonl`` files holding chat request bodies, request/response
pairs (``{"request": body, "response": completion}``), lists of these, or a bare list of chat
messages (a transcript: one call per assistant message, ``exact=False``). Detection is
conservative: a body's top-level keys must all be Chat Completions parameters, the messages must
show something only OpenAI has (a ``system``/``developer``/``tool`` role, ``tool_calls``, function
tools or an OpenAI-only parameter) and nothing Anthropic has (a top-level ``system``, content
blocks such as ``tool_use``). Agent trajectories (tau-bench results, SWE-agent ``.traj``,
mini-swe-agent ``.traj.json``, OpenHands, Gemini) are left to their own readers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextkit.messages import Conversation
from contextkit.wire._chat_messages import (
    META,
    SYSTEM_ROLES,
    System,
    meta_of,
    parse_chat_messages,
    to_chat_messages,
)
from contextkit.wire._openai_common import (
    FINISH_REASONS,
    ParsedResponse,
    chat_usage,
    conversation_from,
    request_fields,
)

REQUEST_KEYS = frozenset(
    {
        "model", "messages", "tools", "tool_choice", "temperature", "top_p", "n", "stream",
        "stream_options", "stop", "max_tokens", "max_completion_tokens", "presence_penalty",
        "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "user", "seed",
        "response_format", "parallel_tool_calls", "reasoning_effort", "metadata", "store",
        "modalities", "audio", "prediction", "service_tier", "web_search_options", "functions",
        "function_call", "verbosity", "prompt_cache_key", "safety_identifier",
    }
)  # fmt: skip
_OPENAI_ONLY_KEYS = frozenset(
    {
        "max_completion_tokens", "n", "presence_penalty", "frequency_penalty", "logit_bias",
        "logprobs", "top_logprobs", "seed", "response_format", "parallel_tool_calls",
        "reasoning_effort", "stream_options", "modalities", "prediction", "functions",
        "function_call", "web_search_options", "prompt_cache_key", "safety_identifier",
    }
)  # fmt: skip
_MESSAGE_KEYS = frozenset(
    {"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "audio", "function_call"}
)
PAIR_KEYS = frozenset({"request", "response", "id", "timestamp", "metadata", "error"})
"""The keys of a ``{"request", "response"}`` pair (of either OpenAI API) besides the bodies."""
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


# --------------------------------------------------------------------------------------------------
# Request and response bodies


def parse_chat_request(body: Mapping[str, Any]) -> Conversation:
    """A Chat Completions request body -> Conversation. ``ValueError`` on malformed input."""
    if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
        raise ValueError("a chat request needs a 'messages' list")
    system, messages = parse_chat_messages(body["messages"])
    return conversation_from("chat", body, system, messages, ("messages",))


def to_chat_request(conversation: Conversation) -> dict[str, Any]:
    """Conversation -> Chat Completions request body (the inverse of :func:`parse_chat_request`)."""
    body = request_fields(conversation, "chat")
    body["messages"] = to_chat_messages(conversation.system, conversation.messages)
    return body


def parse_chat_response(body: Mapping[str, Any]) -> ParsedResponse:
    """A ``chat.completion`` body: the first choice's message, stop reason and usage."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ValueError("a chat completion needs a non-empty 'choices' list")
    raw = choices[0].get("message")
    if not isinstance(raw, Mapping) or raw.get("role") != "assistant":
        raise ValueError("choices[0].message must be an assistant message")
    _, parsed = parse_chat_messages([raw])
    usage = body.get("usage")
    reason = choices[0].get("finish_reason")
    return ParsedResponse(
        message=parsed[0],
        usage=chat_usage(usage) if isinstance(usage, Mapping) else None,
        stop_reason=FINISH_REASONS.get(reason, reason) if isinstance(reason, str) else None,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        response_id=body.get("id") if isinstance(body.get("id"), str) else None,
    )


# --------------------------------------------------------------------------------------------------
# Detection


def is_chat_body(value: object) -> bool:
    """A Chat Completions request body, and not an Anthropic one (conservative)."""
    if not isinstance(value, Mapping) or not set(value) <= REQUEST_KEYS:
        return False
    messages = value.get("messages")
    if not isinstance(messages, list) or not messages:
        return False
    if not all(isinstance(m, Mapping) and "role" in m for m in messages):
        return False
    if any(_has_anthropic_blocks(m) for m in messages):
        return False
    tools = value.get("tools")
    function_tools = isinstance(tools, list) and any(
        isinstance(t, Mapping) and "function" in t for t in tools
    )
    return function_tools or bool(set(value) & _OPENAI_ONLY_KEYS) or _has_chat_marker(messages)


def _has_anthropic_blocks(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if not isinstance(content, list):
        return False
    return any(isinstance(p, Mapping) and p.get("type") in _ANTHROPIC_BLOCKS for p in content)


def _has_chat_marker(messages: Sequence[Mapping[str, Any]]) -> bool:
    return any(
        m.get("role") in (*SYSTEM_ROLES, "tool") or bool(m.get("tool_calls")) for m in messages
    )


def is_chat_message_list(value: object) -> bool:
    """A bare list of chat messages with an OpenAI-only marker (tool calls, tool or developer
    roles). Plain system/user/assistant text lists are left to the trajectory readers."""
    if not isinstance(value, list) or not value:
        return False
    if not all(isinstance(m, Mapping) and set(m) <= _MESSAGE_KEYS for m in value):
        return False
    if not all(m.get("role") in ("user", "assistant", "tool", *SYSTEM_ROLES) for m in value):
        return False
    return any(m.get("role") in ("tool", "developer") or m.get("tool_calls") for m in value)


def is_chat_record(value: object) -> bool:
    """A request body, or a ``{"request", "response"}`` pair around one."""
    if isinstance(value, Mapping) and "request" in value and set(value) <= PAIR_KEYS:
        return is_chat_body(value["request"])
    return is_chat_body(value)


__all__ = [
    "META",
    "PAIR_KEYS",
    "REQUEST_KEYS",
    "ParsedResponse",
    "System",
    "is_chat_body",
    "is_chat_message_list",
    "is_chat_record",
    "meta_of",
    "parse_chat_messages",
    "parse_chat_request",
    "parse_chat_response",
    "to_chat_messages",
    "to_chat_request",
]
