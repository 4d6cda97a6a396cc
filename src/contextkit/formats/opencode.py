"""Reader for OpenCode sessions (``sst/opencode``, now ``anomalyco/opencode``), in either of its
two stores under ``~/.local/share/opencode/``:

- the JSON storage of older versions: load ``storage/session/<projectID>/<sessionID>.json``
  (the session: ``id`` ``ses_...``, ``parentID``, ``title``, ``time``); its messages are read from
  ``storage/message/<sessionID>/<messageID>.json`` and their parts from
  ``storage/part/<messageID>/<partID>.json`` (``Storage.write(["part", messageID, partID])`` in
  ``packages/opencode/src/session/index.ts``). Message and part files on their own are claimed by
  no reader;
- the SQLite database of newer versions: load ``opencode.db`` (tables ``session``, ``message``,
  ``part`` of ``packages/opencode/src/session/session.sql.ts``: a message row is ``id``,
  ``session_id``, ``time_created`` and ``data``, the message without ``id`` / ``sessionID``; a part
  row adds ``message_id``). Every session of the database is read, oldest first.

A session file, not the storage folder: a reader takes a file, and the session file is what
names the session (as ``openhands-sdk`` takes ``base_state.json``). Child sessions (the ``task``
tool's, ``parentID`` set) are sessions of their own with ``parent_session_id``.

Sources: ``session.sql.ts`` as stored for ``anomalyco/opencode``; ``message-v2.ts``
(``toModelMessages``, ``filterCompacted``) read from the fork ``1rgs/opencode`` at ``27da9ba`` (the
search index held no upstream copy of that file); ``getUsage`` (the token normalisation) as it
appears in several forks of ``session/index.ts``. Messages and parts follow ``message-v2.ts``: a
user message holds ``text``, ``file``, ``compaction`` and ``subtask`` parts; an assistant message
(``modelID``, ``providerID``, ``cost``, ``tokens {input, output, reasoning, cache {read, write}}``,
``summary``, ``finish``, ``error``) holds ``step-start`` / ``step-finish`` (``reason``, ``cost``,
``tokens``), ``text``, ``reasoning`` and ``tool`` parts (``callID``, ``tool``, ``state``:
``status``, ``input``, ``output`` / ``error``).

What counts as a call: each step of an assistant message (the parts from one ``step-start`` to
its ``step-finish``: one model request of OpenCode's agent loop); a message with no step parts is
one call. Its usage is the step's ``tokens`` (the message's, for a message without steps):
OpenCode's ``getUsage`` already stores ``input`` without the cache counts, so ``input_tokens`` =
input, ``cache_read`` / ``cache_write_5m`` = cache (no TTL split), ``output_tokens`` = output (the
providers count reasoning inside it; OpenCode's own cost adds ``reasoning`` again at the output
rate, so the recorded cost can exceed a price from this usage). The recorded cost sum is a note.
The request is rebuilt (``exact=False``) as ``toModelMessages`` and ``filterCompacted`` build it:
the history from the latest completed compaction (the user message with the ``compaction`` part
whose summary assistant message finished, ``tail_start_id`` kept) on; errored assistant messages
left out; a ``compaction`` part as ``What did we do so far?``, a ``subtask`` part as ``The following
tool was executed by the user``; each step's tool results in a user message after it (a pruned
output, ``state.time.compacted``, as ``[Old tool result content cleared]``; a pending or running
tool as ``[Tool execution was interrupted]``). Calls right after a compaction are
``Session.compactions``.

A ``reasoning`` part is a thinking block, signed with ``metadata.anthropic.signature`` when
present (where the AI SDK's Anthropic provider keeps it; other providers' reasoning metadata is
not mapped, so their thinking is unsigned).

Cannot know: the system prompt and tools (``prefix_known=False``), and media OpenCode moves
into a separate user message for some providers (left in place here).

Strict by default: a message or part that is not a JSON object with the fields above (token
counts included), or parts whose message is gone (a part folder or rows naming a message the
session lacks), is a :class:`FormatError` naming its file (JSON storage, with the line) or its
row (``message`` / ``part`` table and id); ``lenient=True`` skips it and lists each one. A
corrupt or locked database is a :class:`FormatError`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError, json_reason
from contextkit.formats._io import Skips, load_json, read_head
from contextkit.formats._locations import Location, Places
from contextkit.formats._sqlite import columns, connect, has_tables, is_sqlite, rows
from contextkit.formats._trajectory import as_int, as_mapping, as_str, parse_time, peek
from contextkit.messages import (
    Block,
    Conversation,
    ImageBlock,
    Message,
    OpaqueBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    token_count,
)
from contextkit.session import Call, LoadedFile, Session, SkippedRecord, Usage

NAME = "opencode"
TABLES = frozenset({"session", "message", "part"})
COMPACTION_TEXT = "What did we do so far?"
SUBTASK_TEXT = "The following tool was executed by the user"
PRUNED_TEXT = "[Old tool result content cleared]"
INTERRUPTED_TEXT = "[Tool execution was interrupted]"
PREFIX_NOTE = (
    "OpenCode does not store the system prompt or the tool definitions: requests hold the "
    "messages only (prefix_known=False)"
)
_STOPS = {"tool-calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}


class OpenCodeReader:
    name = NAME

    def locations(self, places: Places) -> tuple[Location, ...]:
        """``$XDG_DATA_HOME/opencode`` else ``~/.local/share/opencode`` (``sst/opencode``
        ``packages/opencode/src/global/index.ts``: ``xdg-basedir``'s ``xdgData``, on every
        platform): ``storage/session/<project>/<id>.json`` (older) and ``opencode.db`` (newer)."""
        data = places.dir("XDG_DATA_HOME", places.home / ".local" / "share") / "opencode"
        return (
            Location("OpenCode", self.name, data / "storage", "session/*/*.json"),
            Location("OpenCode", self.name, data / "opencode.db"),
        )

    def sniff(self, path: Path, head: str) -> bool:
        """``opencode.db`` (its three tables), or a session file under ``storage/session/``."""
        if is_sqlite(head):
            return has_tables(path, TABLES, "opencode.db")
        if path.suffix != ".json" or path.parent.parent.name != "session":
            return False
        seen = peek(head)
        ident = seen.scalars.get("id")
        return (
            seen.kind == "object"
            and isinstance(ident, str)
            and ident.startswith("ses")
            and "time" in seen.keys
            and bool({"projectID", "directory"} & set(seen.keys))
        )

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        errors = _Errors(lenient)
        if is_sqlite(read_head(path, 16)):
            stored = _from_database(path, errors)
        else:
            stored = [_from_storage(path, errors)]
        sessions = tuple(_session(path, s) for s in stored)
        return LoadedFile(path=str(path), format=NAME, sessions=sessions, skipped=errors.records)


# --------------------------------------------------------------------------------------------------
# Loading: JSON storage or SQLite


@dataclass
class _Errors:
    """Bad records across several files: an error at once, or (lenient) listed skips."""

    lenient: bool
    skipped: list[SkippedRecord] = field(default_factory=list)

    def fail(self, where: Path, reason: str, line: int | None = None) -> None:
        skips = Skips(where, self.lenient)
        skips.fail(reason, line)
        self.skipped.extend(skips.records)

    @property
    def records(self) -> tuple[SkippedRecord, ...]:
        return tuple(self.skipped)


@dataclass(frozen=True)
class _Stored:
    """One session as stored: its info and its messages with their parts, in order."""

    info: Mapping[str, Any]
    messages: tuple[tuple[Mapping[str, Any], tuple[Mapping[str, Any], ...]], ...]


def _message_problem(info: object) -> str | None:
    if not isinstance(info, Mapping):
        return f"expected a message object, found {type(info).__name__}"
    if info.get("role") not in ("user", "assistant"):
        return f"unknown role {info.get('role')!r} (expected user or assistant)"
    if not isinstance(info.get("id"), str):
        return "a message needs a string 'id'"
    return _tokens_problem(info)


def _part_problem(part: object) -> str | None:
    if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
        return "expected a part object with a string 'type'"
    if part["type"] == "tool" and not (
        isinstance(part.get("callID"), str) and isinstance(part.get("state"), Mapping)
    ):
        return "a tool part needs a string 'callID' and a 'state' object"
    return _tokens_problem(part)


def _tokens_problem(value: Mapping[str, Any]) -> str | None:
    """Why a message's or a step-finish part's ``tokens`` is not a usage, or None."""
    try:
        usage_from_tokens(value.get("tokens"))
    except ValueError as exc:
        return f"'tokens': {exc}"
    return None


def _read_json(file: Path, errors: _Errors) -> Any:
    """The file's JSON value, or ``_INVALID`` (reported) when it cannot be parsed."""
    try:
        return load_json(file)
    except FormatError as exc:
        errors.fail(file, exc.reason, exc.line)
        return _INVALID


def _from_storage(path: Path, errors: _Errors) -> _Stored:
    info = load_json(path)
    if not isinstance(info, Mapping) or not isinstance(info.get("id"), str):
        raise FormatError(path, "expected an OpenCode session object with a string 'id'", 1)
    root = path.parent.parent.parent
    messages = []
    for file in sorted((root / "message" / info["id"]).glob("*.json")):
        message = _read_json(file, errors)
        if message is _INVALID:
            continue
        problem = _message_problem(message)
        if problem is not None:
            errors.fail(file, problem, 1)
            continue
        messages.append((message, _storage_parts(root / "part" / message["id"], errors)))
    _orphan_part_folders(root, info["id"], errors)
    messages.sort(key=lambda m: (_created(m[0]), m[0]["id"]))
    return _Stored(info, tuple(messages))


def _orphan_part_folders(root: Path, session_id: str, errors: _Errors) -> None:
    """Part folders of this session whose message file is gone: each is a skipped record (its
    parts have no message to belong to). Only folders no message file of any session names are
    opened, one part file each, to learn their session."""
    named = {f.stem for f in (root / "message").glob("*/*.json")}
    for folder in sorted(p for p in (root / "part").glob("*") if p.name not in named):
        first = next(iter(sorted(folder.glob("*.json"))), None)
        if first is None:
            continue
        try:
            part = load_json(first)
        except FormatError:
            part = None
        if as_mapping(part).get("sessionID") == session_id:
            count = len(list(folder.glob("*.json")))
            errors.fail(folder, f"{count} part files of message {folder.name!r}, which has no file")


def _created(info: Mapping[str, Any]) -> int:
    return as_int(as_mapping(info.get("time")).get("created")) or 0


def _storage_parts(folder: Path, errors: _Errors) -> tuple[Mapping[str, Any], ...]:
    parts = []
    for file in sorted(folder.glob("*.json")):
        part = _read_json(file, errors)
        if part is _INVALID:
            continue
        problem = _part_problem(part)
        if problem is not None:
            errors.fail(file, problem, 1)
            continue
        parts.append(part)
    return tuple(sorted(parts, key=lambda p: str(p.get("id", ""))))


def _row_json(path: Path, table: str, ident: object, data: object, errors: _Errors) -> Any:
    try:
        return json.loads(data) if isinstance(data, str | bytes) else None
    except ValueError as exc:
        errors.fail(path, f"{table} row {ident!r}: 'data' is not valid JSON ({json_reason(exc)})")
        return _INVALID


_INVALID = object()


def _from_database(path: Path, errors: _Errors) -> list[_Stored]:
    with connect(path) as connection:
        sessions = _session_rows(connection)
        parts = _part_rows(connection, path, errors)
        messages = _message_rows(connection, path, errors, parts)
        known = {str(ident) for (ident,) in rows(connection, "SELECT id FROM message")}
    for message_id, orphans in sorted(parts.items()):
        if message_id not in known:
            errors.fail(
                path, f"{len(orphans)} part rows of message {message_id!r}, which has no row"
            )
    return [_Stored(info, tuple(messages.get(info["id"], ()))) for info in sessions]


def _session_rows(connection: sqlite3.Connection) -> list[dict[str, Any]]:
    present = columns(connection, "session")
    wanted = [c for c in ("id", "parent_id", "title", "directory", "time_created") if c in present]
    order = "time_created, id" if "time_created" in present else "id"
    # The column names come from the schema above, never from the file: no injection.
    found = rows(connection, f"SELECT {', '.join(wanted)} FROM session ORDER BY {order}")
    out = []
    for values in found:
        row = dict(zip(wanted, values, strict=True))
        info = {"id": str(row["id"]), "parentID": row.get("parent_id"), "title": row.get("title")}
        out.append(info)
    return out


def _part_rows(
    connection: sqlite3.Connection, path: Path, errors: _Errors
) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for ident, message_id, data in rows(
        connection, "SELECT id, message_id, data FROM part ORDER BY message_id, id"
    ):
        value = _row_json(path, "part", ident, data, errors)
        if value is _INVALID:
            continue
        part = {**value, "id": ident} if isinstance(value, Mapping) else value
        problem = _part_problem(part)
        if problem is not None:
            errors.fail(path, f"part row {ident!r}: {problem}")
            continue
        out.setdefault(str(message_id), []).append(part)
    return out


def _message_rows(
    connection: sqlite3.Connection,
    path: Path,
    errors: _Errors,
    parts: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, list[tuple[Mapping[str, Any], tuple[Mapping[str, Any], ...]]]]:
    out: dict[str, list[tuple[Mapping[str, Any], tuple[Mapping[str, Any], ...]]]] = {}
    found = rows(
        connection,
        "SELECT id, session_id, data FROM message ORDER BY session_id, time_created, id",
    )
    for ident, session_id, data in found:
        value = _row_json(path, "message", ident, data, errors)
        if value is _INVALID:
            continue
        info = {**value, "id": ident} if isinstance(value, Mapping) else value
        problem = _message_problem(info)
        if problem is not None:
            errors.fail(path, f"message row {ident!r}: {problem}")
            continue
        out.setdefault(str(session_id), []).append((info, tuple(parts.get(str(ident), ()))))
    return out


# --------------------------------------------------------------------------------------------------
# Parts as blocks


def _file_block(part: Mapping[str, Any]) -> Block | None:
    mime = as_str(part.get("mime")) or ""
    if mime in ("text/plain", "application/x-directory"):
        return None  # OpenCode turns these into text parts of their own
    url = as_str(part.get("url")) or ""
    if mime.startswith("image/") and url.startswith("data:") and "," in url:
        data = url.split(",", 1)[1]
        return ImageBlock(source={"type": "base64", "media_type": mime, "data": data})
    return OpaqueBlock(type="opencode_file", mime=mime, url=url, filename=part.get("filename"))


def _user_blocks(parts: Iterable[Mapping[str, Any]]) -> list[Block]:
    out: list[Block] = []
    for part in parts:
        kind = part["type"]
        if kind == "text" and not part.get("ignored") and isinstance(part.get("text"), str):
            out.append(TextBlock(text=part["text"]))
        elif kind == "file":
            block = _file_block(part)
            if block is not None:
                out.append(block)
        elif kind == "compaction":
            out.append(TextBlock(text=COMPACTION_TEXT))
        elif kind == "subtask":
            out.append(TextBlock(text=SUBTASK_TEXT))
    return out


def _tool_result(part: Mapping[str, Any]) -> ToolResultBlock:
    state = as_mapping(part.get("state"))
    status = state.get("status")
    if status == "completed":
        compacted = as_mapping(state.get("time")).get("compacted")
        text = PRUNED_TEXT if compacted else str(state.get("output", ""))
        return ToolResultBlock(tool_use_id=part["callID"], content=text)
    meta = as_mapping(state.get("metadata"))
    interrupted = status == "error" and meta.get("interrupted") is True
    if interrupted and isinstance(meta.get("output"), str):
        return ToolResultBlock(tool_use_id=part["callID"], content=meta["output"])
    error = str(state.get("error", "")) if status == "error" else INTERRUPTED_TEXT
    return ToolResultBlock(tool_use_id=part["callID"], content=error, is_error=True)


@dataclass(frozen=True)
class _Step:
    """One model request of an assistant message: what it wrote and what its tools returned."""

    blocks: tuple[Block, ...]
    results: tuple[ToolResultBlock, ...]
    finish: Mapping[str, Any] | None

    def messages(self) -> tuple[Message, ...]:
        out = [Message(role="assistant", content=self.blocks or "")]
        if self.results:
            out.append(Message(role="user", content=self.results))
        return tuple(out)


def _thinking(part: Mapping[str, Any]) -> ThinkingBlock:
    """A reasoning part, signed when the AI SDK's Anthropic provider left the signature in the
    part's ``metadata.anthropic.signature``."""
    signature = as_str(
        as_mapping(as_mapping(part.get("metadata")).get("anthropic")).get("signature")
    )
    if signature is None:
        return ThinkingBlock(thinking=part["text"])
    return ThinkingBlock(thinking=part["text"], signature=signature)


def _steps(parts: Sequence[Mapping[str, Any]]) -> list[_Step]:
    steps: list[_Step] = []
    blocks: list[Block] = []
    results: list[ToolResultBlock] = []
    started = False
    for part in parts:
        kind = part["type"]
        if kind == "step-start":
            if started or blocks or results:
                steps.append(_Step(tuple(blocks), tuple(results), None))
            blocks, results, started = [], [], True
        elif kind == "step-finish":
            steps.append(_Step(tuple(blocks), tuple(results), part))
            blocks, results, started = [], [], False
        elif kind == "text" and isinstance(part.get("text"), str):
            blocks.append(TextBlock(text=part["text"]))
        elif kind == "reasoning" and isinstance(part.get("text"), str):
            blocks.append(_thinking(part))
        elif kind == "tool":
            state = as_mapping(part.get("state"))
            name = str(part.get("tool", ""))
            blocks.append(ToolUseBlock(id=part["callID"], name=name, input=state.get("input", {})))
            results.append(_tool_result(part))
    if started or blocks or results or not steps:
        steps.append(_Step(tuple(blocks), tuple(results), None))
    return steps


# --------------------------------------------------------------------------------------------------
# The context OpenCode sends


def _visible(history: Sequence[tuple[Mapping[str, Any], tuple[Mapping[str, Any], ...]]]) -> int:
    """Index of the first message ``filterCompacted`` keeps of ``history`` (0: all)."""
    completed: set[str] = set()
    retain: str | None = None
    for index in range(len(history) - 1, -1, -1):
        info, parts = history[index]
        if retain is not None:
            if info["id"] == retain:
                return index
            continue
        if info["role"] == "user" and info["id"] in completed:
            compaction = next((p for p in parts if p["type"] == "compaction"), None)
            if compaction is None:
                continue
            retain = as_str(compaction.get("tail_start_id"))
            if retain is None or info["id"] == retain:
                return index
            continue
        if info["role"] == "assistant" and _finished_summary(info):
            completed.add(str(info.get("parentID")))
    return 0


def _finished_summary(info: Mapping[str, Any]) -> bool:
    return bool(info.get("summary") and info.get("finish") and not info.get("error"))


def _sent(info: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]) -> tuple[Message, ...]:
    """What one stored message puts into later requests (``toModelMessages``)."""
    if not parts:
        return ()
    if info["role"] == "user":
        blocks = _user_blocks(parts)
        return (Message(role="user", content=tuple(blocks)),) if blocks else ()
    error = as_mapping(info.get("error"))
    if error and not (
        error.get("name") == "MessageAbortedError"
        and any(p["type"] not in ("step-start", "reasoning") for p in parts)
    ):
        return ()
    out: list[Message] = []
    for step in _steps(parts):
        if step.blocks:
            out.extend(step.messages())
    return tuple(out)


def usage_from_tokens(tokens: object) -> Usage | None:
    """OpenCode's ``tokens`` as :class:`Usage` (``input`` already without the cache)."""
    tokens = as_mapping(tokens)
    if token_count(tokens.get("input"), "input") is None:
        return None
    cache = as_mapping(tokens.get("cache"))
    return Usage(
        input_tokens=token_count(tokens.get("input"), "input") or 0,
        cache_write_5m=token_count(cache.get("write"), "write") or 0,
        cache_read=token_count(cache.get("read"), "read") or 0,
        output_tokens=token_count(tokens.get("output"), "output") or 0,
    )


@dataclass
class _Built:
    calls: list[Call] = field(default_factory=list)
    compactions: list[int] = field(default_factory=list)
    cost: float = 0.0


def _merge(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Adjacent same-role messages as one (the provider conversion merges them too)."""
    out: list[Message] = []
    for message in messages:
        if out and out[-1].role == message.role:
            out[-1] = Message(role=message.role, content=(*out[-1].blocks, *message.blocks))
        else:
            out.append(message)
    return tuple(out)


def _build(stored: _Stored) -> _Built:
    out = _Built()
    history = list(stored.messages)
    sent = [_sent(info, parts) for info, parts in history]
    start_before = 0
    for index, (info, parts) in enumerate(history):
        if info["role"] != "assistant":
            continue
        start = _visible(history[:index])
        if start > start_before:
            out.compactions.append(len(out.calls))
        start_before = start
        before = [m for messages in sent[start:index] for m in messages]
        _add_calls(out, info, parts, before)
    return out


def _add_calls(
    out: _Built, info: Mapping[str, Any], parts: Sequence[Mapping[str, Any]], before: list[Message]
) -> None:
    model = as_str(info.get("modelID"))
    created = as_int(as_mapping(info.get("time")).get("created"))
    steps = _steps(parts)
    for step in steps:
        finish = step.finish or {}
        usage = usage_from_tokens(finish.get("tokens") if step.finish else info.get("tokens"))
        cost = finish.get("cost") if step.finish else info.get("cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            out.cost += float(cost)
        reason = as_str(finish.get("reason")) or as_str(info.get("finish"))
        response, *results = step.messages()
        out.calls.append(
            Call(
                request=Conversation(model=model, messages=_merge(before)),
                response=response,
                usage=usage,
                model=model,
                timestamp=parse_time(created / 1000) if created else None,
                stop_reason=_STOPS.get(reason, reason) if reason else None,
                request_id=str(info["id"]),
                exact=False,
            )
        )
        before.extend((response, *results))


def _session(path: Path, stored: _Stored) -> Session:
    built = _build(stored)
    notes = [PREFIX_NOTE]
    if built.calls:
        notes.append(f"recorded cost (OpenCode's, reasoning at the output rate): ${built.cost:.6f}")
    if as_str(stored.info.get("title")):
        notes.append(f"session {stored.info['title']!r}")
    return Session(
        path=str(path),
        format=NAME,
        session_id=str(stored.info["id"]),
        calls=tuple(built.calls),
        parent_session_id=as_str(stored.info.get("parentID")),
        prefix_known=False,
        compactions=tuple(built.compactions),
        notes=tuple(notes),
    )


READER = OpenCodeReader()

__all__ = ["READER", "TABLES", "OpenCodeReader", "usage_from_tokens"]
