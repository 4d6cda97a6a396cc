"""The ``openai-responses`` file reader: files of Responses request bodies, request/response pairs
or item lists, read like the ``openai-chat`` files (see :class:`RequestFileReader`). The bodies'
codec and the detection rule are :mod:`contextkit.wire.openai_responses`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextkit.formats._openai_files import RequestFileReader, call_from, transcript_calls
from contextkit.session import Call
from contextkit.wire import (
    from_responses_items,
    is_items_list,
    is_responses_record,
    parse_responses_request,
    parse_responses_response,
)


def call_from_record(record: Mapping[str, Any], line: int | None = None) -> Call:
    """A request body or request/response pair -> the call it records (``exact=True``)."""
    return call_from(record, line, parse_responses_request, parse_responses_response)


def _transcript(value: Any) -> tuple[Call, ...]:
    return transcript_calls(*from_responses_items(value))


READER = RequestFileReader(
    name="openai-responses",
    is_record=is_responses_record,
    is_transcript=is_items_list,
    record_call=call_from_record,
    transcript=_transcript,
)


__all__ = ["READER", "call_from_record"]
