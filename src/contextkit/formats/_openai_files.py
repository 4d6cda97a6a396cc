"""File reading shared by the ``openai-chat`` and ``openai-responses`` readers: files of request
bodies or ``{"request", "response"}`` pairs, and bare transcripts (one reconstructed call per
assistant message). The bodies' codecs are :mod:`contextkit.wire`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextkit.formats._io import HEAD_BYTES, Skips, iter_jsonl, sniff_records
from contextkit.formats._jsondoc import load_doc
from contextkit.messages import Conversation, Message
from contextkit.session import Call, LoadedFile, Session
from contextkit.wire import ParsedResponse, System


def transcript_calls(
    system: System, messages: Sequence[Message], base: Conversation | None = None
) -> tuple[Call, ...]:
    """One reconstructed call per assistant message: the request is everything before it."""
    template = base or Conversation()
    if system is not None:
        template = template.model_copy(update={"system": system})
    calls: list[Call] = []
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        stop = "tool_use" if any(True for _ in message.tool_uses()) else "end_turn"
        request = template.model_copy(update={"messages": tuple(messages[:index])})
        calls.append(Call(request=request, response=message, stop_reason=stop, exact=False))
    return tuple(calls)


_INDEX = re.compile(r"^(?:message|item) (\d+)")


def call_from(
    record: Mapping[str, Any],
    line: int | None,
    parse_request: Callable[[Mapping[str, Any]], Conversation],
    parse_response: Callable[[Mapping[str, Any]], ParsedResponse],
) -> Call:
    """A request body or request/response pair -> the call it records (``exact=True``)."""
    request = record.get("request", record)
    if not isinstance(request, Mapping):
        raise ValueError("'request' must be an object")
    conversation = parse_request(request)
    response = record.get("response") if "request" in record else None
    parsed = parse_response(response) if isinstance(response, Mapping) else ParsedResponse()
    return Call(
        request=conversation,
        response=parsed.message,
        usage=parsed.usage,
        model=parsed.model or conversation.model,
        stop_reason=parsed.stop_reason,
        request_id=parsed.response_id,
        exact=True,
        line=line,
    )


@dataclass(frozen=True)
class RequestFileReader:
    """Reads ``.jsonl`` (one record a line) or ``.json`` (a record, a list of records, or a bare
    transcript list) where a record is a request body or a ``{"request", "response"}`` pair."""

    name: str
    is_record: Callable[[object], bool]
    is_transcript: Callable[[object], bool]
    record_call: Callable[[Mapping[str, Any], int | None], Call]
    transcript: Callable[[Any], tuple[Call, ...]]
    plain_bodies: bool = False
    """Claim a ``.jsonl`` of plain text bodies only (ambiguous between the request forms, read
    alike by either): the reader of last resort does, so every ``convert`` output is read."""

    def sniff(self, path: Path, head: str) -> bool:
        if path.name.endswith((".traj.json", ".traj")):
            return False
        if path.suffix == ".jsonl":
            return sniff_records(path, self.is_record, plain_only=self.plain_bodies)
        if path.suffix != ".json":
            return False
        value = _whole_json(path, head)
        if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            return all(self.is_record(v) for v in value) or self.is_transcript(value)
        return self.is_record(value)

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        calls = self._lines(path, skips) if path.suffix == ".jsonl" else self._document(path, skips)
        session = Session(path=str(path), format=self.name, calls=tuple(calls))
        return LoadedFile(
            path=str(path), format=self.name, sessions=(session,), skipped=tuple(skips.records)
        )

    def _lines(self, path: Path, skips: Skips) -> list[Call]:
        calls: list[Call] = []
        for line, record in iter_jsonl(path, skips):
            try:
                calls.append(self.record_call(record, line))
            except ValueError as exc:
                skips.fail(str(exc), line)
        return calls

    def _document(self, path: Path, skips: Skips) -> list[Call]:
        doc = load_doc(path)
        value = doc.value
        if self.is_transcript(value):
            try:
                return list(self.transcript(value))
            except ValueError as exc:
                found = _INDEX.match(str(exc))
                skips.fail(str(exc), doc.line_of(int(found.group(1))) if found else None)
                return []
        records = value if isinstance(value, list) else [value]
        calls: list[Call] = []
        for index, record in enumerate(records):
            line = doc.line_of(index) if isinstance(value, list) else 1
            try:
                if not isinstance(record, Mapping):
                    raise ValueError("expected a request object")
                calls.append(self.record_call(record, line))
            except ValueError as exc:
                where = f"record {index}: " if isinstance(value, list) else ""
                skips.fail(where + str(exc), line)
        return calls


def _whole_json(path: Path, head: str) -> Any:
    """The file's JSON value for sniffing (the head when it is the whole file)."""
    if len(head.encode("utf-8", errors="replace")) < HEAD_BYTES:
        text = head
    elif path.stat().st_size <= _SNIFF_LIMIT:
        text = path.read_text(encoding="utf-8", errors="replace")
    else:
        return None
    try:
        return json.loads(text)
    except ValueError:  # not JSON, or a number past the digit limit
        return None


_SNIFF_LIMIT = 64 * 1024 * 1024
