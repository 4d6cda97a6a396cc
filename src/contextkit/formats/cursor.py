"""Reader for Cursor's conversation store: the global ``state.vscdb`` (``~/.config/Cursor/User/
globalStorage/state.vscdb``; macOS ``~/Library/Application Support/Cursor/User/globalStorage/``;
Windows ``%APPDATA%\\Cursor\\User\\globalStorage\\``).

Cursor is closed source: the schema here is the one reverse-engineered in
``michaeldhood/chatrxiv`` ``docs/cursor/storage-reference.md`` (composerData ``_v`` 10, bubbles
``_v`` 3), and may change with any Cursor release. A SQLite database with the key-value tables
``ItemTable`` and ``cursorDiskKV`` (``key TEXT``, ``value BLOB``); in ``cursorDiskKV``:

- ``composerData:<composerId>``: one conversation (``composerId``, ``name``, ``createdAt`` in
  ms, ``modelConfig.modelName``, and the ordered ``fullConversationHeadersOnly`` list of
  ``{bubbleId, type}``; older versions inline the bubbles in ``conversation``);
- ``bubbleId:<composerId>:<bubbleId>``: one message bubble, ``type`` 1 (user) or 2 (assistant),
  ``text``, ``createdAt`` (ISO), ``thinking.text``, ``tokenCount`` ``{inputTokens,
  outputTokens}``, and on tool steps ``toolFormerData`` (``name``, ``rawArgs`` (newer: ``params``)
  as a JSON string, ``result``, ``status``; a shape seen in several public readers of these
  databases, not documented by Cursor).

Only those two key patterns are queried: the database also holds credentials (``cursorAuth/*``
in ``ItemTable``), which this reader never reads.

One session per composer with bubbles (``session_id`` the composer id, ordered by
``createdAt``). What counts as a call: each assistant bubble. Cursor
records no link between bubbles and model requests (an agent turn is many bubbles, and a
response may span several), so per bubble is an assumption; its usage is the bubble's
``tokenCount`` when either count is non-zero, else unknown (None: newer versions often write
zeros). A tool step is an assistant message with a ``tool_use`` block (id: the bubble id, as no
call id is known) followed by a user message with its ``result``; text is a text block,
``thinking.text`` a thinking block without signature.

Cannot know, and said in every session's notes: the prompts Cursor sent (its system prompt,
tools, attached files, rules and context pieces are not stored: requests hold only the bubbles'
text, ``prefix_known=False``), any cache read or write (``tokenCount`` has none: all input reads
as uncached), whether ``inputTokens`` is the whole prompt, and the model per call (the composer's
``modelName``, a Cursor name such as ``claude-4.5-sonnet-thinking`` or ``default``, which may not
price).

Detection: the SQLite magic, then the tables (``cursorDiskKV`` and ``ItemTable``) of the file
opened read-only. Strict by default: a value that is not a JSON object, a bubble with a
``tokenCount`` that is not token counts, a bubble a header names but the database lacks, a
composer whose ``fullConversationHeadersOnly`` is not a list while it has bubble rows, bubble rows
of a composer without a ``composerData`` row, is a :class:`FormatError` naming the file and the
row's key; lenient mode skips it (a bad composer entirely, a bad bubble alone) and lists each
one. A corrupt or locked database is a :class:`FormatError`.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextkit.errors import json_reason
from contextkit.formats._io import Skips
from contextkit.formats._locations import Location, Places
from contextkit.formats._sqlite import connect, has_tables, is_sqlite, rows
from contextkit.formats._trajectory import as_int, as_mapping, as_str, parse_time, stop_reason
from contextkit.messages import (
    Block,
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    token_count,
)
from contextkit.session import Call, LoadedFile, Session, Usage

NAME = "cursor"
TABLES = frozenset({"cursorDiskKV", "ItemTable"})
NOTES = (
    "Cursor stores no prompts: its system prompt, tools, attached files, rules and context are "
    "not in state.vscdb; requests hold only the bubbles' text (prefix_known=False)",
    "tokenCount has no cache fields: all input reads as uncached; each assistant bubble is read "
    "as one call (Cursor does not link bubbles to model requests)",
)


class CursorReader:
    name = NAME

    def locations(self, places: Places) -> tuple[Location, ...]:
        """``Cursor/User/globalStorage/state.vscdb`` under the same configuration folder as VS
        Code (``michaeldhood/chatrxiv`` ``docs/cursor/storage-reference.md``)."""
        store = places.app_data / "Cursor" / "User" / "globalStorage" / "state.vscdb"
        return (Location("Cursor", self.name, store),)

    def sniff(self, path: Path, head: str) -> bool:
        """A SQLite database whose tables include ``cursorDiskKV`` and ``ItemTable``."""
        if not is_sqlite(head):
            return False
        return has_tables(path, TABLES, "state.vscdb")

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        with connect(path) as connection:
            composers = _composers(connection, skips)
            found = [_session(connection, path, key, c, skips) for key, c in composers]
            _orphan_bubbles(connection, skips)
        sessions = [s for s in found if s is not None]
        return LoadedFile(
            path=str(path), format=NAME, sessions=tuple(sessions), skipped=tuple(skips.records)
        )


# --------------------------------------------------------------------------------------------------
# Rows


def _json_object(value: object) -> Mapping[str, Any] | str:
    """A row's value as a JSON object, or why it is not one."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return "the value is not UTF-8"
    if not isinstance(value, str):
        return f"the value is {type(value).__name__}, not JSON text"
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        return f"not valid JSON ({json_reason(exc)})"
    return (
        parsed if isinstance(parsed, Mapping) else f"expected a JSON object, found {parsed!r:.40}"
    )


def _composers(connection: sqlite3.Connection, skips: Skips) -> list[tuple[str, Mapping[str, Any]]]:
    found = rows(
        connection,
        "SELECT key, value FROM cursorDiskKV WHERE key LIKE 'composerData:%' ORDER BY key",
    )
    out = []
    for key, value in found:
        parsed = _json_object(value)
        if isinstance(parsed, str):
            skips.fail(f"cursorDiskKV row {key!r}: {parsed}")
            continue
        out.append((str(key), parsed))
    out.sort(key=lambda item: (as_int(item[1].get("createdAt")) or 0, item[0]))
    return out


def _orphan_bubbles(connection: sqlite3.Connection, skips: Skips) -> None:
    """Bubble rows of a composer the database has no ``composerData`` row for: no conversation
    to read them in, so each such composer's bubbles are a skipped record."""
    found = rows(
        connection,
        "SELECT key FROM cursorDiskKV WHERE key LIKE 'composerData:%' OR key LIKE 'bubbleId:%'",
    )
    keys = [str(k) for (k,) in found]
    composers = {k.removeprefix("composerData:") for k in keys if k.startswith("composerData:")}
    orphans: Counter[str] = Counter()
    for key in keys:
        if key.startswith("bubbleId:"):
            composer = key.split(":")[1]
            if composer not in composers:
                orphans[composer] += 1
    for composer, count in sorted(orphans.items()):
        skips.fail(f"{count} bubble rows of composer {composer!r}, which has no composerData row")


def _bubble_problem(bubble: Mapping[str, Any]) -> str | None:
    try:
        usage_from_token_count(bubble)
    except ValueError as exc:
        return f"tokenCount: {exc}"
    return None


def _bubbles(
    connection: sqlite3.Connection, composer_id: str, skips: Skips
) -> dict[str, Mapping[str, Any] | None]:
    """The composer's bubble rows by bubble id; None for a bad one (reported here)."""
    prefix = f"bubbleId:{composer_id}:"
    # Keys are matched by range, not LIKE: a composer id could hold LIKE's wildcards.
    found = rows(
        connection,
        "SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?",
        (prefix, prefix[:-1] + ";"),
    )
    out: dict[str, Mapping[str, Any] | None] = {}
    for key, value in found:
        parsed = _json_object(value)
        problem = parsed if isinstance(parsed, str) else _bubble_problem(parsed)
        if problem is not None:
            skips.fail(f"cursorDiskKV row {key!r}: {problem}")
        out[str(key)[len(prefix) :]] = None if isinstance(parsed, str) or problem else parsed
    return out


def _ordered(
    connection: sqlite3.Connection, key: str, composer: Mapping[str, Any], skips: Skips
) -> list[Mapping[str, Any]]:
    """The composer's bubbles in conversation order."""
    inline = composer.get("conversation")
    headers = composer.get("fullConversationHeadersOnly")
    if not isinstance(headers, list) and isinstance(inline, list):
        kept = []  # older versions: inline bubbles
        for index, bubble in enumerate(inline):
            problem = _bubble_problem(bubble) if isinstance(bubble, Mapping) else "not an object"
            if problem is not None:
                skips.fail(f"{key}: conversation[{index}]: {problem}")
                continue
            kept.append(bubble)
        return kept
    composer_id = as_str(composer.get("composerId")) or key.removeprefix("composerData:")
    stored = _bubbles(connection, composer_id, skips)
    if not isinstance(headers, list) and stored:
        skips.fail(
            f"{key}: 'fullConversationHeadersOnly' is not a list; "
            f"its {len(stored)} bubble rows are not read"
        )
    out = []
    for header in headers if isinstance(headers, list) else []:
        bubble_id = as_str(as_mapping(header).get("bubbleId"))
        if bubble_id in stored and stored[bubble_id] is None:
            continue  # a bad row, reported as such
        bubble = stored.get(bubble_id) if bubble_id else None
        if bubble is None:
            skips.fail(f"{key}: header names bubble {bubble_id!r}, which the database lacks")
            continue
        out.append(bubble)
    return out


# --------------------------------------------------------------------------------------------------
# Bubbles as messages


def _tool_input(data: Mapping[str, Any]) -> object:
    raw = data.get("rawArgs", data.get("params"))
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:  # not JSON, or a number past the digit limit
            return {"raw": raw}
    return raw if isinstance(raw, Mapping) else {}


def _assistant(bubble: Mapping[str, Any], bubble_id: str) -> tuple[Message, Message | None]:
    """The assistant message of a bubble, and the user message holding its tool result."""
    blocks: list[Block] = []
    thinking = as_str(as_mapping(bubble.get("thinking")).get("text"))
    if thinking:
        blocks.append(ThinkingBlock(thinking=thinking))
    if as_str(bubble.get("text")):
        blocks.append(TextBlock(text=bubble["text"]))
    tool = as_mapping(bubble.get("toolFormerData"))
    result = None
    if as_str(tool.get("name")):
        blocks.append(ToolUseBlock(id=bubble_id, name=tool["name"], input=_tool_input(tool)))
        output = tool.get("result")
        text = output if isinstance(output, str) else json.dumps(output)
        block = ToolResultBlock(tool_use_id=bubble_id, content=text or "")
        result = Message(role="user", content=(block,))
    return Message(role="assistant", content=tuple(blocks) if blocks else ""), result


def usage_from_token_count(bubble: Mapping[str, Any]) -> Usage | None:
    """A bubble's ``tokenCount`` as :class:`Usage`; None when absent or all zero (unknown)."""
    counts = as_mapping(bubble.get("tokenCount"))
    tokens_in, tokens_out = (
        token_count(counts.get("inputTokens"), "inputTokens"),
        token_count(counts.get("outputTokens"), "outputTokens"),
    )
    if not tokens_in and not tokens_out:
        return None
    return Usage(input_tokens=tokens_in or 0, output_tokens=tokens_out or 0)


@dataclass
class _Built:
    messages: list[Message] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    set_aside: Counter[str] = field(default_factory=Counter)
    uncounted: int = 0


def _resent(response: Message) -> Message:
    """The response as later requests hold it: without its thinking (unsigned: no provider takes
    it back, and what Cursor sent again is not recorded)."""
    kept = tuple(b for b in response.blocks if not isinstance(b, ThinkingBlock))
    if len(kept) == len(response.blocks):
        return response
    return Message(role="assistant", content=kept or "")


def _build(bubbles: Sequence[Mapping[str, Any]], model: str | None) -> _Built:
    out = _Built()
    for index, bubble in enumerate(bubbles):
        kind = as_int(bubble.get("type"))
        if kind == 1:
            out.messages.append(Message(role="user", content=str(bubble.get("text") or "")))
        elif kind == 2:
            _add_call(out, bubble, as_str(bubble.get("bubbleId")) or f"bubble-{index}", model)
        else:
            out.set_aside[f"bubble/type-{kind}"] += 1
    return out


def _add_call(out: _Built, bubble: Mapping[str, Any], bubble_id: str, model: str | None) -> None:
    response, result = _assistant(bubble, bubble_id)
    usage = usage_from_token_count(bubble)
    out.uncounted += usage is None
    out.calls.append(
        Call(
            request=Conversation(model=model, messages=tuple(out.messages)),
            response=response,
            usage=usage,
            model=model,
            timestamp=parse_time(bubble.get("createdAt")),
            stop_reason=stop_reason(response),
            request_id=as_str(bubble.get("requestId")),
            exact=False,
        )
    )
    out.messages.append(_resent(response))
    if result is not None:
        out.messages.append(result)


def _session(
    connection: sqlite3.Connection,
    path: Path,
    key: str,
    composer: Mapping[str, Any],
    skips: Skips,
) -> Session | None:
    """The composer's session; None when it has no bubbles."""
    bubbles = _ordered(connection, key, composer, skips)
    if not bubbles:
        return None
    model = as_str(as_mapping(composer.get("modelConfig")).get("modelName"))
    model = None if model == "default" else model  # Cursor's automatic choice: the model is unknown
    built = _build(bubbles, model)
    notes = list(NOTES)
    if built.uncounted:
        notes.append(
            f"{built.uncounted} assistant bubbles have no non-zero tokenCount: usage unknown"
        )
    if as_str(composer.get("name")):
        notes.append(f"composer {composer['name']!r}")
    return Session(
        path=str(path),
        format=NAME,
        session_id=as_str(composer.get("composerId")) or key.removeprefix("composerData:"),
        calls=tuple(built.calls),
        prefix_known=False,
        set_aside=dict(built.set_aside),
        notes=tuple(notes),
    )


READER = CursorReader()

__all__ = ["READER", "TABLES", "CursorReader", "usage_from_token_count"]
