"""claude-trace logs: raw Anthropic API request/response pairs, one JSON object per line.

Each line (a claude-trace ``RawPair``) is ``{"request": {"timestamp", "method", "url", "headers",
"body"}, "response": {"timestamp", "status_code", "headers", "body" | "body_raw"} | null,
"logged_at", "note"?}``. ``body`` holds a parsed JSON response; ``body_raw`` the text of an SSE
stream (or any non-JSON body).

Contract:

- One :class:`Session` per file, one :class:`Call` per Messages API request, in file order (the
  trace mixes the main conversation with small side calls, e.g. haiku topic and title requests; they
  are all calls). A Messages request is a POST whose URL path ends in ``/v1/messages`` (any query,
  any proxy prefix), or an AWS Bedrock ``/model/{id}/invoke`` or ``invoke-with-response-stream``
  URL (claude-trace records those too; the model then comes from the URL).
- Other requests (``/v1/messages/count_tokens``, batches, anything logged with
  ``--include-all-requests``) are not calls: they are counted in ``Session.set_aside`` under
  ``"METHOD /path"``.
- The request is the body exactly as sent (``exact=True``). The response comes from the JSON body or
  from the assembled SSE stream; usage keeps the cache fields; the timestamp is
  ``request.timestamp`` (epoch seconds, UTC); the model is the one that answered.
- Failed requests (HTTP status >= 400, an ``error`` event in the stream, an orphaned request with
  no response) ARE calls: the request was sent and belongs to the sequence the harness produced.
  They carry no response, no usage and no stop reason, and a session note says why (line, status,
  error message). Consumers that price calls see ``usage is None`` and can leave them out.
- A line that cannot be read (invalid JSON or UTF-8, wrong types, a malformed stream) is a
  :class:`FormatError` naming the line; ``lenient=True`` skips it and lists it in ``skipped``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from contextkit.formats._io import Skips, iter_jsonl
from contextkit.formats.anthropic import read_first_object
from contextkit.session import Call, LoadedFile, Session
from contextkit.wire import (
    AnthropicResponse,
    BodyReuse,
    PayloadError,
    StreamError,
    assemble_stream,
    from_anthropic_request,
    from_anthropic_response,
)

FORMAT = "claude-trace"
_BEDROCK_PATH = re.compile(r"/model/([^/]+)/(invoke|invoke-with-response-stream)$")


def is_trace_record(record: object) -> bool:
    """True for a claude-trace ``RawPair`` object."""
    if not isinstance(record, Mapping):
        return False
    request = record.get("request")
    return (
        isinstance(request, Mapping)
        and isinstance(request.get("url"), str)
        and "method" in request
        and ("response" in record or "logged_at" in record)
    )


def messages_endpoint(method: str, url: str) -> tuple[bool, str | None]:
    """Whether a request is a Messages API call, and the model its URL names (Bedrock)."""
    path = urlsplit(url).path.rstrip("/")
    if method.upper() == "POST" and path.endswith("/v1/messages"):
        return True, None
    bedrock = _BEDROCK_PATH.search(path)
    if bedrock and "bedrock-runtime." in urlsplit(url).netloc:
        return True, unquote(bedrock.group(1))
    return False, None


@dataclass
class _Collected:
    calls: list[Call] = field(default_factory=list)
    set_aside: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    reuse: BodyReuse = field(default_factory=BodyReuse)
    """The file's earlier bodies, which later ones repeat (:mod:`contextkit.formats._reuse`)."""


def _read_record(record: Mapping[str, Any], line: int | None, into: _Collected) -> None:
    """Add one trace line to ``into``: a call, a set-aside count, or notes; PayloadError if bad."""
    request = record.get("request")
    if not isinstance(request, Mapping):
        raise PayloadError("'request' must be an object")
    url, method = request.get("url"), request.get("method")
    if not isinstance(url, str) or not isinstance(method, str):
        raise PayloadError("request.url and request.method must be strings")
    is_call, url_model = messages_endpoint(method, url)
    if not is_call:
        into.set_aside[f"{method.upper()} {urlsplit(url).path}"] += 1
        return
    body = request.get("body")
    if not isinstance(body, Mapping):
        raise PayloadError(f"request.body must be a JSON object, found {type(body).__name__}")
    try:
        conversation = from_anthropic_request(body, into.reuse)
    except PayloadError as exc:
        raise PayloadError(f"request.body: {exc}") from None
    timestamp = _timestamp(request.get("timestamp"))
    parsed, notes = _response(record.get("response"), record.get("note"))
    # Only now, with nothing left to fail, does the line add to the session.
    into.notes.extend(f"line {line}: {note}" for note in notes)
    into.calls.append(
        Call(
            request=conversation,
            response=parsed.message if parsed else None,
            usage=parsed.billed_usage if parsed else None,
            model=(parsed.model if parsed else None) or url_model or conversation.model,
            timestamp=timestamp,
            stop_reason=parsed.stop_reason if parsed else None,
            request_id=_request_id(record.get("response")),
            exact=True,
            line=line,
        )
    )


def _timestamp(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PayloadError(f"request.timestamp must be epoch seconds, found {value!r:.40}")
    try:
        return datetime.fromtimestamp(value, tz=UTC)
    except (OverflowError, OSError, ValueError):
        raise PayloadError(f"request.timestamp {value!r} is out of range") from None


def _request_id(response: object) -> str | None:
    headers = response.get("headers") if isinstance(response, Mapping) else None
    if not isinstance(headers, Mapping):
        return None
    for key, value in headers.items():
        if str(key).lower() == "request-id" and isinstance(value, str):
            return value
    return None


def _response(response: object, note: object) -> tuple[AnthropicResponse | None, list[str]]:
    """The parsed response and notes; failed calls give None and a note saying why."""
    if response is None:
        why = f" ({note})" if isinstance(note, str) else ""
        return None, [f"no response recorded{why}; kept as a call without a response"]
    if not isinstance(response, Mapping):
        raise PayloadError(f"'response' must be an object or null, found {type(response).__name__}")
    status = response.get("status_code")
    if isinstance(status, bool) or not isinstance(status, int):
        raise PayloadError(f"response.status_code must be an integer, found {status!r:.40}")
    body, raw = response.get("body"), response.get("body_raw")
    if status >= 400:
        return None, [f"HTTP {status} ({_error_detail(body, raw)}); kept without a response"]
    if isinstance(body, Mapping):
        if body.get("type") == "error":
            return None, [f"API error ({_error_detail(body, raw)}); kept without a response"]
        return _parsed(body, "response.body"), []
    if isinstance(raw, str) and raw.lstrip().startswith(("event:", "data:")):
        return _streamed(raw)
    if isinstance(raw, str):
        return None, [f"response body is neither JSON nor an SSE stream ({len(raw)} chars)"]
    return None, ["the response has no body (claude-trace could not read it)"]


def _streamed(raw: str) -> tuple[AnthropicResponse | None, list[str]]:
    try:
        stream = assemble_stream(raw)
    except StreamError as exc:
        if exc.error is None:
            raise  # a malformed stream: the line is bad
        return None, [f"{exc}; kept without a response"]
    return _parsed(stream.message, "response stream"), [f"stream: {n}" for n in stream.notes]


def _parsed(body: Mapping[str, Any], where: str) -> AnthropicResponse:
    try:
        return from_anthropic_response(body)
    except PayloadError as exc:
        raise PayloadError(f"{where}: {exc}") from None


def _error_detail(body: object, raw: object) -> str:
    error = body.get("error") if isinstance(body, Mapping) else None
    if isinstance(error, Mapping):
        return f"{error.get('type')}: {error.get('message')}"
    if isinstance(raw, str) and raw:
        return raw[:200]
    return "no error body"


class _ClaudeTraceReader:
    name = FORMAT

    def sniff(self, path: Path, head: str) -> bool:
        if path.suffix.lower() not in (".jsonl", ".ndjson") or not head.lstrip().startswith("{"):
            return False
        return is_trace_record(read_first_object(path))

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        found = _Collected()
        for line, record in iter_jsonl(path, skips):
            try:
                _read_record(record, line, found)
            except (PayloadError, StreamError, ValueError) as exc:  # ValueError: a bad count
                skips.fail(str(exc), line)
        session = Session(
            path=str(path),
            format=FORMAT,
            calls=tuple(found.calls),
            set_aside=dict(found.set_aside),
            notes=tuple(found.notes),
        )
        return LoadedFile(
            path=str(path), format=FORMAT, sessions=(session,), skipped=tuple(skips.records)
        )


READER = _ClaudeTraceReader()

__all__ = ["FORMAT", "READER", "is_trace_record", "messages_endpoint"]
