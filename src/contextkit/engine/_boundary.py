"""What the engine accepts at its boundary, coerced once into contextkit's own values.

Contract:

- :func:`to_messages` takes what a harness has at hand: contextkit :class:`Message` objects,
  Anthropic message dicts, OpenAI Chat Completions message dicts, OpenAI Responses items, or the
  SDKs' own pydantic objects of any of these (dumped with ``model_dump``). Consecutive OpenAI
  messages are read together, so the ``tool`` messages answering one assistant turn become one
  user message of results, as the canonical model has it. Leading ``system``/``developer``
  messages come back apart, as a system prompt. Anything else is an :class:`InputError` naming
  the item's position and what is wrong with it, never a raw pydantic error.
- :func:`parse_response` takes a response: a contextkit assistant :class:`Message`, an Anthropic
  ``Message``, an OpenAI ``ChatCompletion`` or ``Response`` (SDK object or dict). A response it
  cannot read is a :class:`ResponseError`.
- :func:`request_body` writes a prepared request in one provider's wire form
  (``contextkit.wire.to_format``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from contextkit.errors import ContextkitError
from contextkit.messages import Block, Conversation, Message
from contextkit.session import Usage
from contextkit.wire import (
    PayloadError,
    from_anthropic_response,
    from_responses_items,
    parse_chat_messages,
    parse_chat_response,
    parse_responses_response,
    to_format,
)

Api = Literal["anthropic", "openai-chat", "openai-responses"]
APIS: tuple[Api, ...] = ("anthropic", "openai-chat", "openai-responses")
System = str | tuple[Block, ...] | None

_CHAT_ROLES = ("system", "developer", "tool", "function")
_CHAT_PARTS = ("image_url", "input_audio", "file")
_RESPONSES_PARTS = ("input_text", "output_text", "input_image", "input_file", "refusal")


class InputError(ContextkitError):
    """Something given to the engine is not a message (or not a valid one); says which and why."""


class ResponseError(ContextkitError):
    """A response given to ``record`` cannot be read; the prepared request is kept."""


def plain(value: Any, *, keep_none: bool = False) -> Any:
    """SDK objects to plain JSON values (their None fields dropped, as the API omits them); in
    plain dicts None is dropped too unless ``keep_none`` (OpenAI's ``"content": null`` is part
    of a message as written)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {
            k: plain(v, keep_none=keep_none) for k, v in value.items() if keep_none or v is not None
        }
    if isinstance(value, list | tuple):
        return [plain(v, keep_none=keep_none) for v in value]
    return value


def _describe(exc: ValidationError) -> str:
    errors = exc.errors()
    first = max(errors, key=lambda e: len(e["loc"]))  # the most specific of a union's branches
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def dialect(raw: Mapping[str, Any]) -> Api:
    """Which wire form a message dict is in (Anthropic unless it shows an OpenAI marker)."""
    kind = raw.get("type")
    content = raw.get("content")
    parts = (
        [p.get("type") for p in content if isinstance(p, Mapping)]
        if isinstance(content, list)
        else []
    )
    if kind is not None and kind != "message":
        return "openai-responses"  # function_call, function_call_output, reasoning, ...
    if kind == "message" and (not parts or any(p in _RESPONSES_PARTS for p in parts)):
        return "openai-responses"
    if any(p in _RESPONSES_PARTS for p in parts):
        return "openai-responses"
    if kind == "message":
        return "anthropic"  # an Anthropic response object (id, model, usage... beside content)
    if raw.get("role") in _CHAT_ROLES or set(raw) - {"role", "content"}:
        return "openai-chat"  # an Anthropic message has only these two fields
    if any(p in _CHAT_PARTS for p in parts) or (raw.get("role") == "assistant" and content is None):
        return "openai-chat"
    return "anthropic"


@dataclass(frozen=True)
class Coerced:
    system: System
    messages: tuple[Message, ...]


def _runs(items: Sequence[object]) -> Iterator[tuple[int, Api | None, list[Any]]]:
    """Consecutive items of one wire form: (index of the first, form, plain values)."""
    run: list[Any] = []
    start, form = 0, None
    for i, item in enumerate(items):
        if isinstance(item, Message):
            value, kind = item, None
        else:
            value = plain(item, keep_none=True)
            if not isinstance(value, Mapping):
                raise InputError(
                    f"item {i}: {type(item).__name__!r} is not a message (give a contextkit "
                    "Message, an Anthropic or OpenAI message dict, or an SDK message object)"
                )
            kind = dialect(value)
            if kind == "anthropic":
                value = plain(value)  # a None field of a dumped SDK block: not on the wire
        if run and (kind != form or kind is None or kind == "anthropic"):
            yield start, form, run
            run = []
        if not run:
            start, form = i, kind
        run.append(value)
    if run:
        yield start, form, run


def to_messages(items: Sequence[object]) -> Coerced:
    """See the module docstring."""
    system: System = None
    out: list[Message] = []
    for start, form, run in _runs(items):
        if form is None:
            out.extend(run)
            continue
        try:
            found, messages = _parse_run(form, run)
        except ValidationError as exc:
            raise InputError(f"item {start} ({form} message): {_describe(exc)}") from None
        except (ValueError, TypeError, KeyError) as exc:
            raise InputError(f"items from {start} ({form} messages): {exc}") from None
        if found is not None:
            if out or system is not None:
                raise InputError(
                    f"item {start}: a system message after other messages; give the system "
                    "prompt first or as ContextEngine(system=...)"
                )
            system = found
        out.extend(messages)
    return Coerced(system=system, messages=tuple(out))


def _parse_run(form: Api, run: list[Any]) -> tuple[System, tuple[Message, ...]]:
    if form == "openai-chat":
        system, messages = parse_chat_messages(run)
        return system, tuple(messages)
    if form == "openai-responses":
        system, messages = from_responses_items(run)
        return system, tuple(messages)
    raw = run[0]
    if raw.get("type") == "message":  # an Anthropic response object given as a message
        raw = {"role": raw.get("role"), "content": raw.get("content")}
    return None, (Message.model_validate(raw),)


@dataclass(frozen=True)
class ParsedAnswer:
    """What ``record`` needs from a response."""

    message: Message
    usage: Usage | None = None
    stop_reason: str | None = None
    model: str | None = None
    response_id: str | None = None


def parse_response(response: object) -> ParsedAnswer:
    """See the module docstring."""
    if isinstance(response, Message):
        if response.role != "assistant":
            raise ResponseError("record(): the response must be an assistant message")
        return ParsedAnswer(message=response)
    body = plain(response)
    if not isinstance(body, Mapping):
        raise ResponseError(
            f"record(): a {type(response).__name__} is not a response (give the SDK's response "
            "object, its dict, or a contextkit assistant Message)"
        )
    try:
        return _parse_body(body)
    except ValidationError as exc:
        raise ResponseError(f"record(): the response is not valid: {_describe(exc)}") from None
    except PayloadError as exc:
        raise ResponseError(f"record(): {exc}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise ResponseError(f"record(): the response cannot be read: {exc}") from None


def _parse_body(body: Mapping[str, Any]) -> ParsedAnswer:
    if "choices" in body:
        chat = parse_chat_response(body)
        return _answer(chat.message, chat.usage, chat.stop_reason, chat.model, chat.response_id)
    if body.get("object") == "response" or isinstance(body.get("output"), list):
        if body.get("status") in ("failed", "cancelled"):
            raise ValueError(f"the response has status {body.get('status')!r}")
        resp = parse_responses_response(body)
        return _answer(resp.message, resp.usage, resp.stop_reason, resp.model, resp.response_id)
    if body.get("type") == "error" or "content" in body:
        anthropic = from_anthropic_response(body)
        return _answer(
            anthropic.message,
            anthropic.billed_usage,
            anthropic.stop_reason,
            anthropic.model,
            anthropic.id,
        )
    if "role" in body:
        return ParsedAnswer(message=Message.model_validate(body))
    raise ValueError("neither an Anthropic message, a chat completion nor a Responses response")


def _answer(
    message: Message | None,
    usage: Usage | None,
    stop_reason: str | None,
    model: str | None,
    response_id: str | None,
) -> ParsedAnswer:
    if message is None:
        raise ValueError("the response holds no assistant message")
    return ParsedAnswer(message, usage, stop_reason, model, response_id)


def request_body(request: Conversation, api: Api) -> dict[str, Any]:
    """The request in ``api``'s wire form (what it cannot carry is dropped, as ``to_format``
    reports; a conversation read from that form is written back as read)."""
    if api not in APIS:
        raise InputError(f"unknown api {api!r} (known: {', '.join(APIS)})")
    body, _ = to_format(request, api)
    return body


__all__ = [
    "APIS",
    "Api",
    "Coerced",
    "InputError",
    "ParsedAnswer",
    "ResponseError",
    "dialect",
    "parse_response",
    "plain",
    "request_body",
    "to_messages",
]
