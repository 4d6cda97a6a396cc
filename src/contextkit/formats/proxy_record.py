"""``contextkit proxy`` records: one exchange per JSON line (see :mod:`contextkit.proxy`).

Each line is an object with ``contextkit_proxy`` (the record version, 1), ``api``
(``anthropic``, ``openai-chat``, ``openai-responses``, ``anthropic-count-tokens`` or ``other``),
``request`` (the body as the client sent it), ``forwarded`` (as the upstream received it; null
when that is ``request`` unchanged),
``response`` (the JSON body, or the stream reassembled into it), ``status``, ``complete``,
``error``, ``started_at`` (epoch seconds), ``conversation`` and more.

Contract:

- One :class:`Session` per file (the proxy writes one file per conversation; ``session_id`` is
  the conversation key), one :class:`Call` per model call in file order. The call's request is
  ``forwarded`` (``request`` when that went out unchanged) exactly (``exact=True``): what the
  provider saw and billed, so a replay of the file makes the same calls; the response and its
  usage come from ``response``.
- A call that failed (HTTP status >= 400, no status: the upstream could not be reached or timed
  out) or did not complete (a stream cut, a client gone) is kept as a call without a response or
  usage, and a session note says why, with its line.
- Other exchanges (``count_tokens``, any other path) are counted in ``set_aside`` as
  ``"METHOD /path"``. A request whose body the proxy could not parse (recorded as its text) and
  the upstream refused is no model call: counted as ``"unparsed request"``, with a note.
- A line that is not a proxy record, or whose bodies cannot be read, is a :class:`FormatError`
  naming the line; ``lenient=True`` skips it and lists it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextkit.errors import ContextkitError
from contextkit.formats._io import Skips, iter_jsonl
from contextkit.formats.anthropic import read_first_object
from contextkit.messages import Conversation
from contextkit.session import Call, LoadedFile, Session
from contextkit.wire import (
    BodyReuse,
    ParsedResponse,
    from_anthropic_request,
    from_anthropic_response,
    parse_chat_request,
    parse_chat_response,
    parse_responses_request,
    parse_responses_response,
)

FORMAT = "contextkit-proxy"
RECORD_KEY = "contextkit_proxy"


def _anthropic_response(body: Mapping[str, Any]) -> ParsedResponse:
    parsed = from_anthropic_response(body)
    return ParsedResponse(
        message=parsed.message,
        usage=parsed.billed_usage,
        stop_reason=parsed.stop_reason,
        model=parsed.model,
        response_id=body.get("id") if isinstance(body.get("id"), str) else None,
    )


def _body_by_body(
    parse: Callable[[Mapping[str, Any]], Conversation],
) -> Callable[[Mapping[str, Any], BodyReuse | None], Conversation]:
    """A request parser that takes no reuse (OpenAI bodies: their messages depend on one
    another, so each body is parsed on its own)."""
    return lambda body, _reuse: parse(body)


_PARSERS: dict[
    str,
    tuple[
        Callable[[Mapping[str, Any], BodyReuse | None], Conversation],
        Callable[[Mapping[str, Any]], ParsedResponse],
    ],
] = {
    "anthropic": (from_anthropic_request, _anthropic_response),
    "openai-chat": (_body_by_body(parse_chat_request), parse_chat_response),
    "openai-responses": (_body_by_body(parse_responses_request), parse_responses_response),
}


def is_proxy_record(value: object) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get(RECORD_KEY), int)


def _timestamp(value: object) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return datetime.fromtimestamp(value, tz=UTC)


def _failure(record: Mapping[str, Any]) -> str | None:
    status = record.get("status")
    error = record.get("error")
    if not isinstance(status, int) or isinstance(status, bool):
        return f"no answer ({error or 'upstream unreachable'})"
    if status >= 400:
        return f"HTTP {status}"
    if record.get("complete") is not True:
        return f"incomplete ({error or 'the response stopped short'})"
    return None


def call_from_record(
    record: Mapping[str, Any], line: int | None, reuse: BodyReuse | None = None
) -> tuple[Call | None, str | None]:
    """The call one record makes (None for an exchange that is no model call) and a note
    (``reuse``: an Anthropic body shares what repeats the file's earlier bodies)."""
    if not is_proxy_record(record):
        raise ValueError(f"not a contextkit proxy record (no integer {RECORD_KEY!r})")
    parsers = _PARSERS.get(str(record.get("api")))
    if parsers is None:
        return None, None
    parse_request, parse_response = parsers
    body = record.get("forwarded")
    if body is None:  # forwarded as received
        body = record.get("request")
    failure = _failure(record)
    if not isinstance(body, Mapping):
        if failure is not None and isinstance(body, str):  # the proxy could not parse it
            return None, f"line {line}: a request body that is not JSON ({failure}): no model call"
        raise ValueError("'forwarded' must be the request body (an object)")
    conversation = parse_request(body, reuse)
    response = record.get("response")
    parsed = ParsedResponse()
    if failure is None:
        if not isinstance(response, Mapping):
            raise ValueError("a complete exchange needs its 'response' body (an object)")
        parsed = parse_response(response)
    call = Call(
        request=conversation,
        response=parsed.message,
        usage=parsed.usage,
        model=parsed.model or conversation.model,
        timestamp=_timestamp(record.get("started_at")),
        stop_reason=parsed.stop_reason,
        request_id=parsed.response_id,
        exact=True,
        line=line,
    )
    note = None if failure is None else f"line {line}: {failure}; kept without a response"
    return call, note


class _ProxyRecordReader:
    name = FORMAT

    def sniff(self, path: Path, head: str) -> bool:
        if path.suffix.lower() != ".jsonl" or RECORD_KEY not in head:
            return False
        return is_proxy_record(read_first_object(path))

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        calls: list[Call] = []
        notes: list[str] = []
        set_aside: Counter[str] = Counter()
        session_id: str | None = None
        reuse = BodyReuse()
        for line, record in iter_jsonl(path, skips):
            try:
                call, note = call_from_record(record, line, reuse)
            except (ValueError, ContextkitError) as exc:
                skips.fail(str(exc), line)
                continue
            session_id = session_id or _str(record.get("conversation"))
            if call is None:
                kind = f"{record.get('method')} {str(record.get('path')).split('?')[0]}"
                set_aside["unparsed request" if note else kind] += 1
                notes.extend([note] if note else [])
                continue
            calls.append(call)
            if note:
                notes.append(note)
        session = Session(
            path=str(path),
            format=FORMAT,
            session_id=session_id,
            calls=tuple(calls),
            set_aside=dict(set_aside),
            notes=tuple(notes),
        )
        return LoadedFile(
            path=str(path), format=FORMAT, sessions=(session,), skipped=tuple(skips.records)
        )


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


READER = _ProxyRecordReader()

__all__ = ["FORMAT", "READER", "RECORD_KEY", "call_from_record", "is_proxy_record"]
