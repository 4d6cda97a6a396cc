"""OpenAI Responses API: items <-> canonical messages, request/response bodies, and telling them
from others (the ``openai-responses`` file reader is :mod:`contextkit.formats.openai_responses`).

Contract: the item mapping is :mod:`contextkit.wire._responses_items` (``from_responses_items``
and ``to_responses_items`` are re-exported here); request and response bodies go through
:func:`parse_responses_request` / :func:`to_responses_request` and back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextkit.messages import (
    Conversation,
    Message,
    TextBlock,
    token_count,
)
from contextkit.session import Usage
from contextkit.wire._chat_messages import META, meta_of
from contextkit.wire._openai_common import (
    ParsedResponse,
    conversation_from,
    request_fields,
)
from contextkit.wire._responses_items import (
    System,
    _make,
    from_responses_items,
    to_responses_items,
)
from contextkit.wire.openai_chat import PAIR_KEYS


def usage_from_responses(usage: Mapping[str, Any]) -> Usage:
    """A Responses ``usage`` object (input includes the cached part) in Anthropic's classes."""
    details = usage.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else 0
    return Usage.from_openai(
        token_count(usage.get("input_tokens"), "input_tokens") or 0,
        token_count(cached, "input_tokens_details.cached_tokens") or 0,
        token_count(usage.get("output_tokens"), "output_tokens") or 0,
    )


# --------------------------------------------------------------------------------------------------
# Request and response bodies


def parse_responses_request(body: Mapping[str, Any]) -> Conversation:
    """A Responses request body -> Conversation (``instructions`` -> system)."""
    if not isinstance(body, Mapping) or "input" not in body:
        raise ValueError("a Responses request needs an 'input'")
    raw_input = body["input"]
    flag: dict[str, Any] = {}
    if isinstance(raw_input, str):
        system: System = None
        messages: tuple[Message, ...] = (Message(role="user", content=raw_input),)
        flag = {"input_string": True}
    else:
        system, messages = from_responses_items(raw_input)
    instructions = body.get("instructions")
    skip: tuple[str, ...] = ("input",)
    if isinstance(instructions, str):
        skip = ("input", "instructions")
        system = with_instructions(instructions, system)
    conversation = conversation_from("responses", body, system, messages, skip)
    if flag:
        meta = {**meta_of_conversation(conversation), **flag}
        conversation = conversation.model_copy(update={META: meta})
    return conversation


def with_instructions(instructions: str, system: System) -> System:
    if system is None:
        return instructions
    first = _make(TextBlock, {"text": instructions}, {"instructions": True})
    return (first, *(system if isinstance(system, tuple) else (TextBlock(text=system),)))


def meta_of_conversation(conversation: Conversation) -> dict[str, Any]:
    found = (conversation.model_extra or {}).get(META)
    return dict(found) if isinstance(found, Mapping) else {}


def to_responses_request(conversation: Conversation) -> dict[str, Any]:
    """Conversation -> Responses request body (the inverse of :func:`parse_responses_request`)."""
    body = request_fields(conversation, "responses")
    system = conversation.system
    if isinstance(system, str):
        body["instructions"] = system
        system = None
    elif system:
        marked = [b for b in system if meta_of(b).get("instructions")]
        if marked and isinstance(marked[0], TextBlock):
            body["instructions"] = marked[0].text
    as_string = _input_string(conversation)
    body["input"] = (
        as_string if as_string is not None else to_responses_items(system, conversation.messages)
    )
    return body


def _input_string(conversation: Conversation) -> str | None:
    """The ``input`` string of a body that was read with one (and still has just that message)."""
    messages = conversation.messages
    if not meta_of_conversation(conversation).get("input_string") or len(messages) != 1:
        return None
    only = messages[0]
    return only.content if only.role == "user" and isinstance(only.content, str) else None


def parse_responses_response(body: Mapping[str, Any]) -> ParsedResponse:
    """A Responses ``response`` object: its output as one assistant message, stop reason, usage."""
    output = body.get("output")
    if not isinstance(output, list):
        raise ValueError("a Responses response needs an 'output' list")
    _, messages = from_responses_items(output)
    message = next((m for m in messages if m.role == "assistant"), None)
    usage = body.get("usage")
    return ParsedResponse(
        message=message,
        usage=usage_from_responses(usage) if isinstance(usage, Mapping) else None,
        stop_reason=_stop_reason(body, message),
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        response_id=body.get("id") if isinstance(body.get("id"), str) else None,
    )


def _stop_reason(body: Mapping[str, Any], message: Message | None) -> str:
    details = body.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    if reason == "max_output_tokens":
        return "max_tokens"
    if reason == "content_filter":
        return "refusal"
    if message is not None and any(True for _ in message.tool_uses()):
        return "tool_use"
    return "end_turn"


# --------------------------------------------------------------------------------------------------
# Detection and reading

REQUEST_KEYS = frozenset(
    {
        "model", "input", "instructions", "tools", "tool_choice", "temperature", "top_p",
        "max_output_tokens", "max_tool_calls", "parallel_tool_calls", "previous_response_id",
        "reasoning", "store", "stream", "stream_options", "text", "truncation", "user",
        "metadata", "include", "prompt", "prompt_cache_key", "safety_identifier", "service_tier",
        "background", "conversation", "top_logprobs",
    }
)  # fmt: skip
ITEM_TYPES = frozenset(
    {
        "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
        "custom_tool_call_output", "compaction", "web_search_call", "file_search_call",
        "computer_call", "computer_call_output", "local_shell_call", "local_shell_call_output",
        "image_generation_call", "code_interpreter_call", "mcp_call", "mcp_list_tools",
        "mcp_approval_request", "mcp_approval_response", "item_reference",
    }
)  # fmt: skip


def is_responses_body(value: object) -> bool:
    """A Responses request body (every key a Responses parameter, an ``input``)."""
    if not isinstance(value, Mapping) or "input" not in value or not set(value) <= REQUEST_KEYS:
        return False
    raw = value["input"]
    return isinstance(raw, str) or (
        isinstance(raw, list) and all(isinstance(i, Mapping) for i in raw)
    )


def is_responses_record(value: object) -> bool:
    if isinstance(value, Mapping) and "request" in value and set(value) <= PAIR_KEYS:
        response = value.get("response")
        output_ok = response is None or (isinstance(response, Mapping) and "output" in response)
        return output_ok and is_responses_body(value["request"])
    return is_responses_body(value)


def is_items_list(value: object) -> bool:
    """A bare list of typed Responses items (chat messages have no ``type``: not these)."""
    if not isinstance(value, list) or not value:
        return False
    return all(isinstance(i, Mapping) and i.get("type") in ITEM_TYPES for i in value)


__all__ = [
    "ITEM_TYPES",
    "REQUEST_KEYS",
    "from_responses_items",
    "is_items_list",
    "is_responses_body",
    "is_responses_record",
    "meta_of_conversation",
    "parse_responses_request",
    "parse_responses_response",
    "to_responses_items",
    "to_responses_request",
    "usage_from_responses",
    "with_instructions",
]
