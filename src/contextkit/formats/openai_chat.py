"""The ``openai-chat`` file reader: ``.json``/``.jsonl`` files of Chat Completions request bodies,
request/response pairs (``{"request": body, "response": completion}``), lists of these, or a bare
list of chat messages (a transcript: one call per assistant message, ``exact=False``). The bodies'
codec and the detection rule are :mod:`contextkit.wire.openai_chat`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextkit.formats._openai_files import RequestFileReader, call_from, transcript_calls
from contextkit.session import Call
from contextkit.wire import (
    is_chat_message_list,
    is_chat_record,
    parse_chat_messages,
    parse_chat_request,
    parse_chat_response,
)


def call_from_record(record: Mapping[str, Any], line: int | None = None) -> Call:
    """A request body or request/response pair -> the call it records (``exact=True``)."""
    return call_from(record, line, parse_chat_request, parse_chat_response)


def _transcript(value: Any) -> tuple[Call, ...]:
    return transcript_calls(*parse_chat_messages(value))


READER = RequestFileReader(
    name="openai-chat",
    is_record=is_chat_record,
    is_transcript=is_chat_message_list,
    record_call=call_from_record,
    transcript=_transcript,
    plain_bodies=True,
)
"""Files of Chat Completions requests, request/response pairs or chat messages."""

__all__ = ["READER", "call_from_record"]
