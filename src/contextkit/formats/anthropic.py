"""The ``anthropic`` file format: files of Anthropic Messages request bodies or request/response
pairs (``.json`` or ``.jsonl``; what ``contextkit replay --dump-requests`` writes). The bodies'
codec, the detection rule and the writer are :mod:`contextkit.wire.anthropic`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contextkit.errors import FormatError
from contextkit.formats._io import Skips, iter_jsonl, load_json, sniff_records
from contextkit.session import Call, LoadedFile, Session, Usage
from contextkit.wire import (
    AnthropicResponse,
    BodyReuse,
    PayloadError,
    StreamError,
    assemble_stream,
    describe_validation_error,
    from_anthropic_request,
    from_anthropic_response,
    is_anthropic_record,
)

FORMAT = "anthropic"
_FIRST_LINE_LIMIT = 256 * 1024 * 1024


def read_first_object(path: Path) -> dict[str, Any] | None:
    """The first non-blank line of a JSONL file as an object, or None (for sniffing).

    Reads the whole first line even past the sniffing head: request bodies with a system prompt and
    tool definitions are often longer than the head.
    """
    try:
        with path.open("rb") as fh:
            for raw in iter(lambda: fh.readline(_FIRST_LINE_LIMIT), b""):
                if raw.strip():
                    value = json.loads(raw.decode("utf-8"))
                    return value if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None
    return None


def _sniff(path: Path, head: str) -> bool:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return sniff_records(path, is_anthropic_record)
    if suffix != ".json" or not head.lstrip().startswith(("{", "[")):
        return False
    try:
        value = load_json(path)
    except FormatError:
        return False
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(is_anthropic_record(item) for item in items)


def call_from_record(
    record: Mapping[str, Any], line: int | None = None, reuse: BodyReuse | None = None
) -> tuple[Call, list[str]]:
    """A request body or a request/response pair as a :class:`Call`, with notes on the response
    (``reuse``: see :func:`from_anthropic_request`)."""
    if "request" in record and "messages" not in record:
        request, response = record["request"], record.get("response")
    else:
        request, response = record, None
    conversation = from_anthropic_request(request, reuse)
    parsed, notes = _response(response)
    usage, stop_reason, time = _audited(record) if parsed is None else (None, None, None)
    call = Call(
        request=conversation,
        response=parsed.message if parsed else None,
        usage=parsed.billed_usage if parsed else usage,
        model=(parsed.model if parsed else None) or conversation.model,
        stop_reason=parsed.stop_reason if parsed else stop_reason,
        timestamp=time,
        exact=True,
        line=line,
    )
    return call, notes


def _audited(record: Mapping[str, Any]) -> tuple[Usage | None, str | None, datetime | None]:
    """What a line of :class:`contextkit.engine.ContextEngine`'s audit log carries beside the
    request (``{"call", "time", "request", "stop_reason", "usage"}``, usage as contextkit's
    :class:`Usage` or the API's shape): the billed usage, the stop reason and the time."""
    raw, stop, when = record.get("usage"), record.get("stop_reason"), record.get("time")
    usage: Usage | None = None
    if isinstance(raw, Mapping):
        try:
            usage = (
                Usage.from_anthropic(raw)
                if "cache_read_input_tokens" in raw or "cache_creation_input_tokens" in raw
                else Usage.model_validate(raw)
            )
        except ValidationError as exc:
            raise PayloadError(f"usage: {describe_validation_error(exc)}") from None
    time = None
    if isinstance(when, str):
        try:
            time = datetime.fromisoformat(when)
        except ValueError:
            raise PayloadError(f"time: not an ISO 8601 time: {when!r:.40}") from None
    return usage, stop if isinstance(stop, str) else None, time


def _response(value: object) -> tuple[AnthropicResponse | None, list[str]]:
    if value is None:
        return None, []
    if isinstance(value, str):
        stream = assemble_stream(value)
        return from_anthropic_response(stream.message), list(stream.notes)
    if isinstance(value, Mapping) and value.get("type") == "error":
        error = value.get("error")
        detail = error.get("message") if isinstance(error, Mapping) else error
        return None, [f"the response is an API error ({detail}); kept without a response"]
    if isinstance(value, Mapping):
        return from_anthropic_response(value), []
    raise PayloadError(f"'response' must be an object, a stream text or null, not {value!r:.40}")


class _AnthropicReader:
    name = FORMAT

    def sniff(self, path: Path, head: str) -> bool:
        return _sniff(path, head)

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        calls: list[Call] = []
        notes: list[str] = []
        reuse = BodyReuse()
        for where, line, record in _records(path, skips):
            try:
                call, found = call_from_record(record, line, reuse)
            except (PayloadError, StreamError, ValueError) as exc:  # ValueError: a bad count
                skips.fail(f"{where}{exc}", line)
                continue
            calls.append(call)
            prefix = where or (f"line {line}: " if line is not None else "")
            notes.extend(prefix + note for note in found)
        session = Session(path=str(path), format=FORMAT, calls=tuple(calls), notes=tuple(notes))
        return LoadedFile(
            path=str(path), format=FORMAT, sessions=(session,), skipped=tuple(skips.records)
        )


def _records(path: Path, skips: Skips) -> Iterator[tuple[str, int | None, Mapping[str, Any]]]:
    """``(where, line, record)`` per body or pair; ``where`` prefixes messages for JSON items."""
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for line, record in iter_jsonl(path, skips):
            yield "", line, record
        return
    value = load_json(path)
    if isinstance(value, Mapping):
        yield "", None, value
        return
    if not isinstance(value, list):
        raise FormatError(path, f"expected a request body or a list, found {type(value).__name__}")
    for index, item in enumerate(value):
        if isinstance(item, Mapping):
            yield f"item {index}: ", None, item
        else:
            skips.fail(f"item {index}: expected a JSON object, found {type(item).__name__}")


READER = _AnthropicReader()

__all__ = ["FORMAT", "READER", "call_from_record", "read_first_object"]
