"""Assemble an Anthropic Messages server-sent-event stream into the final response body.

Contract:

- :func:`assemble_stream` takes the text of a stream (``event:``/``data:`` lines, blank-line
  separated, as recorded by proxies and tracers) and returns the response body the non-streaming
  API would have returned, as a JSON object, plus notes on anything it passed over.
- ``message_start`` carries the message shell and the input usage (including the cache fields);
  ``content_block_start``/``_delta``/``_stop`` build the content blocks (``text_delta``,
  ``input_json_delta`` parsed into the tool input at the block's stop, ``thinking_delta``,
  ``signature_delta``, ``citations_delta``); ``message_delta`` sets the stop reason and overwrites
  the usage counts it carries (they are cumulative totals, as in the Anthropic SDK's accumulator);
  ``ping`` is ignored; ``message_stop`` marks the stream complete.
- Unknown event or delta types never crash: they are kept in ``unknown_events`` and noted.
- A stream that reports an ``error`` event, or that cannot be assembled (invalid JSON, a delta for a
  block that never started, no ``message_start``), raises :class:`StreamError` naming the event.
  A stream that simply stops early is returned with ``complete=False`` and a note.
- The other way: :func:`stream_events` gives the events the API streams for a response body, and
  :func:`to_sse` their wire text; ``assemble_events(stream_events(body)).message == body``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from contextkit.errors import ContextkitError, json_reason
from contextkit.session import Record

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_TOOL_INPUT_TYPES = ("tool_use", "server_tool_use", "mcp_tool_use")


class StreamError(ContextkitError):
    """A response stream could not be assembled, or it reported an error.

    ``error`` holds the provider's error object when the stream carried an ``error`` event (the call
    failed; the file is not corrupt), and is None when the stream itself is malformed.
    """

    def __init__(
        self, message: str, *, event: int | None = None, error: Mapping[str, Any] | None = None
    ) -> None:
        self.event = event
        self.error = error
        where = f"stream event {event}: " if event is not None else "stream: "
        super().__init__(where + message)


@dataclass(frozen=True)
class SseEvent:
    """One dispatched server-sent event: its ``event:`` name (if any) and joined ``data:`` lines."""

    event: str | None
    data: str


class AssembledStream(Record):
    """The response body a stream adds up to, and what was passed over on the way."""

    message: Mapping[str, Any]
    complete: bool
    """True when ``message_stop`` was seen."""
    notes: tuple[str, ...] = ()
    unknown_events: tuple[Mapping[str, Any], ...] = ()


def parse_sse(text: str) -> Iterator[SseEvent]:
    """Split SSE text into events (WHATWG rules: ``:`` comments, one optional space after ``:``)."""
    name: str | None = None
    data: list[str] = []
    # Only CR, LF and CRLF end lines: str.splitlines would also split on U+2028 inside JSON.
    for line in _LINE_BREAK.split(text):
        if not line:
            if data:
                yield SseEvent(name, "\n".join(data))
            name, data = None, []
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "event":
            name = value
        elif key == "data":
            data.append(value)
    if data:
        yield SseEvent(name, "\n".join(data))


def assemble_stream(text: str) -> AssembledStream:
    """The final response body of an SSE stream's text; :class:`StreamError` on a bad stream."""
    return assemble_events(_decoded(parse_sse(text)))


def _decoded(events: Iterable[SseEvent]) -> Iterator[Mapping[str, Any]]:
    for number, event in enumerate(events, start=1):
        try:
            value = json.loads(event.data)
        except ValueError as exc:
            raise StreamError(
                f"data is not valid JSON ({json_reason(exc)})", event=number
            ) from None
        if not isinstance(value, dict):
            raise StreamError(f"data is {type(value).__name__}, not an object", event=number)
        if "type" not in value and event.event is not None:
            value["type"] = event.event
        yield value


def assemble_events(events: Iterable[Mapping[str, Any]]) -> AssembledStream:
    """The final response body of already-decoded stream events (one JSON object each)."""
    state = _Assembler()
    for number, event in enumerate(events, start=1):
        state.feed(number, event)
    return state.finish()


@dataclass
class _Assembler:
    message: dict[str, Any] | None = None
    complete: bool = False
    json_bufs: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unknown: list[Mapping[str, Any]] = field(default_factory=list)

    def feed(self, number: int, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "error":
            raise StreamError(_error_text(event.get("error")), event=number, error=_err(event))
        if kind == "ping":
            return
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            self.notes.append(f"event {number}: unknown event type {kind!r} kept, not applied")
            self.unknown.append(event)
            return
        if self.message is None and kind != "message_start":
            raise StreamError(f"{kind} before message_start", event=number)
        if self.complete:
            self.notes.append(f"event {number}: {kind} after message_stop ignored")
            return
        handler(self, number, event)

    def content(self) -> list[Any]:
        assert self.message is not None  # feed() checks message_start came first
        blocks = self.message.setdefault("content", [])
        if not isinstance(blocks, list):
            raise StreamError("message_start content is not a list")
        return blocks

    def block(self, number: int, event: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        index = event.get("index")
        blocks = self.content()
        if not isinstance(index, int) or not 0 <= index < len(blocks):
            raise StreamError(
                f"{event.get('type')} for unknown block index {index!r}", event=number
            )
        block = blocks[index]
        if not isinstance(block, dict):
            raise StreamError(f"block {index} is not an object", event=number)
        return index, block

    def finish(self) -> AssembledStream:
        if self.message is None:
            raise StreamError("no message_start event: not an Anthropic Messages stream")
        for index in sorted(self.json_bufs):
            self.notes.append(
                f"block {index}: stream ended inside the tool input; input left as is"
            )
        if not self.complete:
            self.notes.append("the stream ended before message_stop (truncated)")
        return AssembledStream(
            message=self.message,
            complete=self.complete,
            notes=tuple(self.notes),
            unknown_events=tuple(self.unknown),
        )


def _err(event: Mapping[str, Any]) -> Mapping[str, Any]:
    error = event.get("error")
    return error if isinstance(error, Mapping) else {"error": error}


def _error_text(error: object) -> str:
    if isinstance(error, Mapping):
        return f"the API reported an error: {error.get('type')}: {error.get('message')}"
    return f"the API reported an error: {error!r}"


# --------------------------------------------------------------------------------------------------
# Event handlers


def _message_start(state: _Assembler, number: int, event: Mapping[str, Any]) -> None:
    if state.message is not None:
        raise StreamError("a second message_start", event=number)
    message = event.get("message")
    if not isinstance(message, Mapping):
        raise StreamError("message_start without a message object", event=number)
    # Deep copy: the deltas below mutate the shell, the caller's event must stay untouched.
    state.message = copy.deepcopy(dict(message))
    state.content()


def _block_start(state: _Assembler, number: int, event: Mapping[str, Any]) -> None:
    blocks = state.content()
    index, block = event.get("index"), event.get("content_block")
    if not isinstance(block, Mapping):
        raise StreamError("content_block_start without a content_block object", event=number)
    if index != len(blocks):
        raise StreamError(
            f"block index {index!r} out of order (expected {len(blocks)})", event=number
        )
    blocks.append(copy.deepcopy(dict(block)))


def _block_delta(state: _Assembler, number: int, event: Mapping[str, Any]) -> None:
    index, block = state.block(number, event)
    delta = event.get("delta")
    if not isinstance(delta, Mapping):
        raise StreamError("content_block_delta without a delta object", event=number)
    kind = delta.get("type")
    apply = _DELTAS.get(kind) if isinstance(kind, str) else None
    if apply is None:
        state.notes.append(f"event {number}: unknown delta type {kind!r} kept, not applied")
        state.unknown.append(event)
        return
    if not apply(state, index, block, delta):
        state.notes.append(f"event {number}: {kind} on a {block.get('type')} block ignored")


def _block_stop(state: _Assembler, number: int, event: Mapping[str, Any]) -> None:
    index, block = state.block(number, event)
    text = state.json_bufs.pop(index, None)
    if not text:
        return  # no input_json_delta: the input given at content_block_start stands
    try:
        block["input"] = json.loads(text)
    except ValueError as exc:
        raise StreamError(
            f"tool input of block {index} is not valid JSON ({json_reason(exc)})", event=number
        ) from None


def _message_delta(state: _Assembler, number: int, event: Mapping[str, Any]) -> None:
    assert state.message is not None  # feed() checks message_start came first
    delta = event.get("delta")
    if isinstance(delta, Mapping):
        state.message.update(delta)
    usage = event.get("usage")
    if isinstance(usage, Mapping):
        current = state.message.get("usage")
        merged = dict(current) if isinstance(current, Mapping) else {}
        # Counts on message_delta are cumulative totals; absent or null ones leave the start value.
        merged.update({k: v for k, v in usage.items() if v is not None})
        state.message["usage"] = merged


def _message_stop(state: _Assembler, number: int, event: Mapping[str, Any]) -> None:
    state.complete = True


_Handler = Callable[[_Assembler, int, Mapping[str, Any]], None]
_HANDLERS: dict[str, _Handler] = {
    "message_start": _message_start,
    "content_block_start": _block_start,
    "content_block_delta": _block_delta,
    "content_block_stop": _block_stop,
    "message_delta": _message_delta,
    "message_stop": _message_stop,
}

# --------------------------------------------------------------------------------------------------
# Deltas: each returns False when the delta does not fit the block it targets.


def _text(state: _Assembler, index: int, block: dict[str, Any], delta: Mapping[str, Any]) -> bool:
    if block.get("type") != "text":
        return False
    block["text"] = str(block.get("text", "")) + str(delta.get("text", ""))
    return True


def _json(state: _Assembler, index: int, block: dict[str, Any], delta: Mapping[str, Any]) -> bool:
    if block.get("type") not in _TOOL_INPUT_TYPES:
        return False
    state.json_bufs[index] = state.json_bufs.get(index, "") + str(delta.get("partial_json", ""))
    return True


def _thinking(
    state: _Assembler, index: int, block: dict[str, Any], delta: Mapping[str, Any]
) -> bool:
    if block.get("type") != "thinking":
        return False
    block["thinking"] = str(block.get("thinking", "")) + str(delta.get("thinking", ""))
    return True


def _signature(
    state: _Assembler, index: int, block: dict[str, Any], delta: Mapping[str, Any]
) -> bool:
    if block.get("type") != "thinking":
        return False
    block["signature"] = delta.get("signature")
    return True


def _citation(
    state: _Assembler, index: int, block: dict[str, Any], delta: Mapping[str, Any]
) -> bool:
    if block.get("type") != "text":
        return False
    citations = block.get("citations")
    block["citations"] = [
        *(citations if isinstance(citations, list) else []),
        delta.get("citation"),
    ]
    return True


_Delta = Callable[[_Assembler, int, dict[str, Any], Mapping[str, Any]], bool]
_DELTAS: dict[str, _Delta] = {
    "text_delta": _text,
    "input_json_delta": _json,
    "thinking_delta": _thinking,
    "signature_delta": _signature,
    "citations_delta": _citation,
}

# --------------------------------------------------------------------------------------------------
# Writing a stream


def stream_events(message: Mapping[str, Any], *, chunk_chars: int = 64) -> list[dict[str, Any]]:
    """The events the Messages API streams for ``message`` (a non-streaming response body).

    As the API does: ``message_start`` carries the shell with empty content, no stop reason and
    the usage with a placeholder ``output_tokens`` of 1 (the input and cache counts are final);
    a ``ping``; per block a ``content_block_start`` with the block emptied, deltas of at most
    ``chunk_chars`` characters (``text_delta``, ``input_json_delta``, ``thinking_delta`` then one
    ``signature_delta``; other block types start whole), ``content_block_stop``; ``message_delta``
    with the stop reason and the final output count; ``message_stop``.
    """
    shell = copy.deepcopy({k: v for k, v in message.items() if k != "content"})
    usage = shell.get("usage")
    final_output = usage.get("output_tokens") if isinstance(usage, dict) else None
    if isinstance(usage, dict):
        usage["output_tokens"] = min(1, final_output) if isinstance(final_output, int) else 1
    stop = {"stop_reason": shell.pop("stop_reason", None)}
    stop["stop_sequence"] = shell.pop("stop_sequence", None)
    shell.update(content=[], stop_reason=None, stop_sequence=None)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": shell}, {"type": "ping"}]
    blocks = message.get("content")
    for index, block in enumerate(blocks if isinstance(blocks, list | tuple) else ()):
        events.extend(_block_events(index, block, chunk_chars))
    delta: dict[str, Any] = {"type": "message_delta", "delta": stop}
    if final_output is not None:
        delta["usage"] = {"output_tokens": final_output}
    events.extend([delta, {"type": "message_stop"}])
    return events


def _block_events(index: int, block: Mapping[str, Any], size: int) -> list[dict[str, Any]]:
    start = copy.deepcopy(dict(block))
    kind = start.get("type")
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        deltas = [{"type": "text_delta", "text": c} for c in _chunks(str(start["text"]), size)]
        start["text"] = ""
    elif kind in _TOOL_INPUT_TYPES:
        text = json.dumps(start.get("input", {}))
        deltas = [{"type": "input_json_delta", "partial_json": c} for c in _chunks(text, size)]
        start["input"] = {}
    elif kind == "thinking":
        parts = _chunks(str(start.get("thinking", "")), size)
        deltas = [{"type": "thinking_delta", "thinking": c} for c in parts]
        deltas.append({"type": "signature_delta", "signature": start.get("signature", "")})
        start.update(thinking="", signature="")
    events: list[dict[str, Any]] = [
        {"type": "content_block_start", "index": index, "content_block": start}
    ]
    events.extend({"type": "content_block_delta", "index": index, "delta": d} for d in deltas)
    events.append({"type": "content_block_stop", "index": index})
    return events


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(1, size))]


def to_sse(events: Iterable[Mapping[str, Any]]) -> str:
    """The wire text of stream events: ``event: <type>`` and ``data: <json>`` per event."""
    return "".join(
        f"event: {e.get('type')}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n" for e in events
    )


__all__ = [
    "AssembledStream",
    "SseEvent",
    "StreamError",
    "assemble_events",
    "assemble_stream",
    "parse_sse",
    "stream_events",
    "to_sse",
]
