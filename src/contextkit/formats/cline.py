"""Reader for Cline and Roo Code task histories (``<globalStorage>/saoudrizwan.claude-dev/tasks/
<task id>/api_conversation_history.json``; Roo Code: ``.../rooveterinaryinc.roo-cline/tasks/<task
id>/``), with ``ui_messages.json`` beside it read for usage, costs and timestamps.

What to load: the ``api_conversation_history.json`` file (a reader takes a file; the task folder
is what names the session). ``ui_messages.json`` on its own is claimed by no reader.

Schemas, from the sources:

- ``api_conversation_history.json`` is a JSON list of Anthropic ``MessageParam`` objects
  (``role``, ``content``: a string or Anthropic blocks), extended by each harness: Cline's
  ``ClineStorageMessage`` (``cline/cline`` ``src/shared/messages/content.ts``: ``id``,
  ``modelInfo`` ``{modelId, providerId, mode}``, ``metrics`` ``{tokens: {prompt, completion,
  cached}, cost}`` (``src/shared/messages/metrics.ts``), ``ts``); Roo Code's ``ApiMessage``
  (``RooCodeInc/Roo-Code`` ``src/core/task-persistence/apiMessages.ts``: ``ts``, ``isSummary``,
  ``condenseId`` / ``condenseParent``, ``truncationId`` / ``truncationParent`` /
  ``isTruncationMarker``, reasoning items ``type: "reasoning"`` with ``encrypted_content``).
- ``ui_messages.json`` is a list of ``ClineMessage`` (``cline/cline``
  ``src/shared/ExtensionMessage.ts``): ``ts``, ``type`` ``ask``/``say``, ``say``, ``text``,
  ``conversationHistoryIndex``, ``conversationHistoryDeletedRange``. A ``say: "api_req_started"``
  message's ``text`` is a JSON string, ``ClineApiReqInfo``: ``tokensIn``, ``tokensOut``,
  ``cacheWrites``, ``cacheReads``, ``cost``, ``cancelReason`` (Roo adds ``apiProtocol``).

What counts as a call: each assistant message of the history, except Roo's condense summaries
(``isSummary``: written by a separate summarising call the history does not show). Its request
is rebuilt (``exact=False``) from the messages before it as the harness sends them: the Cline
bookkeeping fields above are dropped (they never reach the provider); Roo's hidden messages
(``condenseParent`` / ``truncationParent`` naming a summary or marker that precedes the call) are
left out; Cline's truncation (``conversationHistoryDeletedRange``, an inclusive ``[start, end]``
of history indices, as Cline's ``ContextManager`` keeps it) is applied with the range the first
UI message after the call's ``api_req_started`` records (Cline stamps every UI message with the
range in force when it is created, and truncates just after ``api_req_started``: an
approximation where no UI message follows). A call whose hidden set grows is in
``Session.compactions``. Cline's newer file-read deduplication (``context_history.json``) is not
replayed: those requests hold the reads as first recorded.

Calls and ``api_req_started`` entries pair by time (the latest one at or before the message's
``ts``) when both carry ``ts``, else in order. Usage: ``tokensOut`` is the output, ``cacheReads``
and ``cacheWrites`` (5m: no TTL split is recorded) the cache. ``tokensIn`` means different things by
version and provider (Roo Code's ``src/shared/cost.ts`` spells out both readings): the uncached
input (Cline and older Roo on Anthropic-style providers) or the whole input with the cache counts
inside it (OpenAI-style providers, newer Roo's ``totalInputTokens``). Read: Roo's ``apiProtocol:
"openai"`` says whole; otherwise whole when it is at least ``cacheReads + cacheWrites`` (an uncached
part as large as every cached token is rare with Cline's breakpoints), uncached when it is smaller;
a note counts the calls where the reading decided anything. Without a UI entry, a Cline message's
own ``metrics.tokens`` is used (``prompt`` counts the cached part; no cache writes). The recorded
``cost`` sum is a note.

Cannot know: the system prompt and tools (``prefix_known=False``), the stop reason (inferred from
the response: older Cline calls tools in XML text, so those read ``end_turn``), and what a
failed request before any response cost.

Strict by default: a history element that is not a message object, a bad block, an
``api_req_started`` whose ``text`` is not a JSON object, is a :class:`FormatError` naming the file
and line; ``lenient=True`` skips it and lists each one (a broken ``ui_messages.json`` then reads
as absent, with a skip).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._io import Skips
from contextkit.formats._locations import Location, Places
from contextkit.formats._trajectory import (
    JsonDoc,
    as_int,
    as_mapping,
    as_str,
    load_doc,
    parse_time,
    peek,
    stop_reason,
)
from contextkit.messages import Conversation, Message, parse_block, token_count
from contextkit.session import Call, LoadedFile, Session, Usage

NAME = "cline"
HISTORY = "api_conversation_history.json"
UI_MESSAGES = "ui_messages.json"
PREFIX_NOTE = (
    "Cline / Roo Code task files do not record the system prompt or the tool definitions: "
    "requests hold the messages only (prefix_known=False)"
)
_BOOKKEEPING = frozenset(
    {
        "ts",
        "id",
        "messageId",
        "modelInfo",
        "metrics",
        "isSummary",
        "condenseId",
        "condenseParent",
        "truncationId",
        "truncationParent",
        "isTruncationMarker",
        "reasoning_details",
        "reasoning_content",
        "provider_metadata",
    }
)


class ClineReader:
    name = NAME

    def locations(self, places: Places) -> tuple[Location, ...]:
        """VS Code's ``globalStorage`` (``$XDG_CONFIG_HOME`` or ``~/.config``
        ``/Code/User/globalStorage`` on Linux, ``~/Library/Application Support/Code/User/
        globalStorage`` on macOS, ``%APPDATA%\\Code\\User\\globalStorage`` on Windows), then
        ``saoudrizwan.claude-dev/tasks/<id>/api_conversation_history.json`` (Cline's extension id
        and task folder, as the module's sources give them; VS Code's per-platform user data
        folder) or ``rooveterinaryinc.roo-cline/tasks/<id>/`` (Roo Code)."""
        storage = places.app_data / "Code" / "User" / "globalStorage"
        tasks = "*/api_conversation_history.json"
        return (
            Location("Cline", self.name, storage / "saoudrizwan.claude-dev" / "tasks", tasks),
            Location(
                "Roo Code", self.name, storage / "rooveterinaryinc.roo-cline" / "tasks", tasks
            ),
        )

    def sniff(self, path: Path, head: str) -> bool:
        """``api_conversation_history.json`` holding a JSON list (of ``role`` objects)."""
        if path.name != HISTORY:
            return False
        seen = peek(head)
        return seen.kind == "list" and (not seen.keys or "role" in seen.keys)

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        doc = load_doc(path)
        if not isinstance(doc.value, list):
            raise FormatError(
                path, "expected a JSON list of messages (api_conversation_history)", 1
            )
        skips = Skips(path, lenient)
        history = _history(doc, skips)
        ui_skips = Skips(path.parent / UI_MESSAGES, lenient)
        requests = _api_requests(ui_skips)
        session = _session(path, history, requests)
        skipped = (*skips.records, *ui_skips.records)
        return LoadedFile(path=str(path), format=NAME, sessions=(session,), skipped=skipped)


# --------------------------------------------------------------------------------------------------
# The history


@dataclass(frozen=True)
class _Entry:
    """One message of the history, its raw object, and where it is."""

    index: int
    line: int | None
    raw: Mapping[str, Any]
    message: Message

    @property
    def is_call(self) -> bool:
        return self.message.role == "assistant" and self.raw.get("isSummary") is not True


def _history(doc: JsonDoc, skips: Skips) -> tuple[list[_Entry], Counter[str]]:
    lines = doc.element_lines()
    entries: list[_Entry] = []
    set_aside: Counter[str] = Counter()
    for index, raw in enumerate(doc.value):
        line = lines[index] if index < len(lines) else None
        if isinstance(raw, Mapping) and "role" not in raw and isinstance(raw.get("type"), str):
            set_aside[f"item/{raw['type']}"] += 1  # Roo's stored reasoning items
            continue
        try:
            message = _message(raw)
        except ValueError as exc:
            skips.fail(f"message {index}: {exc}", line)
            continue
        entries.append(_Entry(index, line, raw, message))
    return entries, set_aside


def _message(raw: object) -> Message:
    if not isinstance(raw, Mapping):
        raise ValueError(f"expected an object, found {type(raw).__name__}")
    role = raw.get("role")
    if role not in ("user", "assistant"):
        raise ValueError(f"unknown role {role!r} (expected user or assistant)")
    content = raw.get("content")
    if isinstance(content, str):
        return Message(role=role, content=content)
    if not isinstance(content, list):
        raise ValueError("'content' must be a string or a list of blocks")
    blocks = []
    for i, block in enumerate(content):
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise ValueError(f"block {i} must be an object with a string 'type'")
        try:
            blocks.append(parse_block(block))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise ValueError(f"block {i} ({block['type']}): not a valid block") from exc
    return Message(role=role, content=tuple(blocks))


# --------------------------------------------------------------------------------------------------
# ui_messages.json: the api_req_started entries


@dataclass(frozen=True)
class _ApiRequest:
    """One ``api_req_started`` entry: its info, time, and the deleted range in force after it."""

    ts: int | None
    info: Mapping[str, Any]
    deleted: tuple[int, int] | None
    line: int | None


def _api_requests(skips: Skips) -> list[_ApiRequest]:
    """The ``api_req_started`` entries of ``ui_messages.json`` (none when the file is absent)."""
    if not skips.path.is_file():
        return []
    try:
        doc = load_doc(skips.path)
    except FormatError as exc:
        skips.fail(exc.reason, exc.line)
        return []
    if not isinstance(doc.value, list):
        skips.fail("expected a JSON list of UI messages", 1)
        return []
    lines = doc.element_lines()
    raws: list[Any] = doc.value
    out = []
    for index, raw in enumerate(raws):
        if not isinstance(raw, Mapping) or raw.get("say") != "api_req_started":
            continue
        line = lines[index] if index < len(lines) else None
        info = _request_info(raw.get("text"))
        if info is None:
            skips.fail(f"UI message {index}: api_req_started 'text' is not a JSON object", line)
            continue
        after = raws[index + 1] if index + 1 < len(raws) else raw
        deleted = _range(as_mapping(after).get("conversationHistoryDeletedRange"))
        out.append(_ApiRequest(as_int(raw.get("ts")), info, deleted, line))
    return out


def _request_info(text: object) -> Mapping[str, Any] | None:
    if text is None:
        return {}
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:  # not JSON, or a number past the digit limit
        return None
    return value if isinstance(value, Mapping) else None


def _range(value: object) -> tuple[int, int] | None:
    if isinstance(value, list) and len(value) == 2:
        start, end = as_int(value[0]), as_int(value[1])
        if start is not None and end is not None and start <= end:
            return (start, end)
    return None


# --------------------------------------------------------------------------------------------------
# Usage


@dataclass
class _Tally:
    cost: float = 0.0
    costed: int = 0
    decided: int = 0
    from_metrics: int = 0
    unpaired: int = 0


def usage_from_request_info(info: Mapping[str, Any], tally: _Tally | None = None) -> Usage | None:
    """``ClineApiReqInfo`` as :class:`Usage` (None without ``tokensIn`` and ``tokensOut``)."""
    tokens_in, out = (
        token_count(info.get("tokensIn"), "tokensIn"),
        token_count(info.get("tokensOut"), "tokensOut"),
    )
    if tokens_in is None and out is None:
        return None
    tokens_in = tokens_in or 0
    reads, writes = (
        token_count(info.get("cacheReads"), "cacheReads") or 0,
        token_count(info.get("cacheWrites"), "cacheWrites") or 0,
    )
    whole = info.get("apiProtocol") == "openai" or tokens_in >= reads + writes
    if tally is not None and reads + writes and info.get("apiProtocol") is None:
        tally.decided += 1
    uncached = max(tokens_in - reads - writes, 0) if whole else tokens_in
    return Usage(
        input_tokens=uncached, cache_write_5m=writes, cache_read=reads, output_tokens=out or 0
    )


def _usage_from_metrics(raw: Mapping[str, Any]) -> Usage | None:
    tokens = as_mapping(as_mapping(raw.get("metrics")).get("tokens"))
    prompt = token_count(tokens.get("prompt"), "prompt")
    if prompt is None:
        return None
    return Usage.from_openai(
        prompt,
        token_count(tokens.get("cached"), "cached") or 0,
        token_count(tokens.get("completion"), "completion") or 0,
    )


def _pair(calls: Sequence[_Entry], requests: Sequence[_ApiRequest]) -> list[_ApiRequest | None]:
    """The ``api_req_started`` entry of each call: by time when every one has a ``ts``."""
    times = [as_int(c.raw.get("ts")) for c in calls]
    if requests and all(t is not None for t in times) and all(r.ts is not None for r in requests):
        starts = [r.ts or 0 for r in requests]
        paired: list[_ApiRequest | None] = []
        for t in times:
            at = bisect_right(starts, t or 0) - 1
            paired.append(requests[at] if at >= 0 else None)
        return paired
    return [requests[i] if i < len(requests) else None for i in range(len(calls))]


# --------------------------------------------------------------------------------------------------
# Requests as sent


def _hidden(before: Sequence[_Entry], deleted: tuple[int, int] | None) -> frozenset[int]:
    """History indices the harness leaves out of a request built from ``before``."""
    summaries = {as_str(e.raw.get("condenseId")) for e in before} - {None}
    markers = {as_str(e.raw.get("truncationId")) for e in before} - {None}
    hidden = {
        e.index
        for e in before
        if e.raw.get("condenseParent") in summaries or e.raw.get("truncationParent") in markers
    }
    if deleted is not None:
        hidden |= {e.index for e in before if deleted[0] <= e.index <= deleted[1]}
    return frozenset(hidden)


@dataclass
class _Built:
    calls: list[Call] = field(default_factory=list)
    compactions: list[int] = field(default_factory=list)
    tally: _Tally = field(default_factory=_Tally)


def _build(entries: Sequence[_Entry], requests: Sequence[_ApiRequest]) -> _Built:
    out = _Built()
    calls = [e for e in entries if e.is_call]
    paired = _pair(calls, requests)
    used = list({id(p): p for p in paired if p is not None}.values())
    out.tally.unpaired = len(requests) - len(used)
    for request in used:
        _count_cost(out.tally, request.info.get("cost"))
    by_call = dict(zip((c.index for c in calls), paired, strict=True))
    hidden_before: frozenset[int] = frozenset()
    for at, entry in enumerate(entries):
        if not entry.is_call:
            continue
        request_info = by_call[entry.index]
        hidden = _hidden(entries[:at], request_info.deleted if request_info else None)
        if hidden - hidden_before:
            out.compactions.append(len(out.calls))
        hidden_before = hidden
        messages = tuple(e.message for e in entries[:at] if e.index not in hidden)
        out.calls.append(_call(entry, messages, request_info, out.tally))
    return out


def _count_cost(tally: _Tally, cost: object) -> None:
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        tally.cost += float(cost)
        tally.costed += 1


def _call(
    entry: _Entry, messages: tuple[Message, ...], request: _ApiRequest | None, tally: _Tally
) -> Call:
    model = as_str(as_mapping(entry.raw.get("modelInfo")).get("modelId"))
    usage = usage_from_request_info(request.info, tally) if request else None
    if usage is None:
        usage = _usage_from_metrics(entry.raw)
        tally.from_metrics += usage is not None
    if request is None:  # a paired entry's cost is counted once, in _build
        _count_cost(tally, as_mapping(entry.raw.get("metrics")).get("cost"))
    ts = as_int(entry.raw.get("ts")) or (request.ts if request else None)
    return Call(
        request=Conversation(model=model, messages=messages),
        response=entry.message,
        usage=usage,
        model=model,
        timestamp=parse_time(ts / 1000) if ts else None,
        stop_reason=stop_reason(entry.message),
        exact=False,
        line=entry.line,
    )


def _session(
    path: Path, history: tuple[list[_Entry], Counter[str]], requests: Sequence[_ApiRequest]
) -> Session:
    entries, set_aside = history
    built = _build(entries, requests)
    summaries = sum(1 for e in entries if e.raw.get("isSummary") is True)
    if summaries:
        set_aside["message/summary"] = summaries
    return Session(
        path=str(path),
        format=NAME,
        session_id=path.parent.name or None,
        calls=tuple(built.calls),
        prefix_known=False,
        compactions=tuple(built.compactions),
        set_aside=dict(sorted(set_aside.items())),
        notes=(PREFIX_NOTE, *_notes(path, built.tally, bool(requests), summaries)),
    )


def _notes(path: Path, tally: _Tally, has_ui: bool, summaries: int) -> list[str]:
    notes = []
    if not has_ui:
        notes.append(f"no api_req_started entries ({UI_MESSAGES} beside the file): usage unknown")
    if tally.costed:
        notes.append(f"recorded cost: ${tally.cost:.6f} over {tally.costed} requests")
    if tally.decided:
        notes.append(
            f"{tally.decided} calls: tokensIn read as the whole input or the uncached part by "
            "comparing it with the cache counts (its meaning varies by version and provider)"
        )
    if tally.from_metrics:
        notes.append(
            f"{tally.from_metrics} calls: usage from the message's metrics (no cache writes)"
        )
    if tally.unpaired:
        notes.append(f"{tally.unpaired} api_req_started entries pair with no assistant message")
    if summaries:
        notes.append(
            f"{summaries} condense summaries: context, not calls (the summarising call is not in "
            f"{path.name})"
        )
    return notes


READER = ClineReader()

__all__ = ["HISTORY", "READER", "UI_MESSAGES", "ClineReader", "usage_from_request_info"]
