"""Reader for Hermes agent sessions (``NousResearch/hermes-agent``; schema from the
``hermes-agent`` 0.19.0 package on PyPI, ``hermes_state.py``: ``SCHEMA_SQL``, ``get_messages``,
``get_compression_lineage``, ``export_session``, ``archive_and_compact``).

Two files hold them:

- ``$HERMES_HOME/state.db`` (default ``~/.hermes/state.db``), SQLite, opened read-only: table
  ``sessions`` (``id``, ``source``, ``model``, ``system_prompt``, ``parent_session_id``,
  ``started_at``, ``end_reason``, token totals ``input_tokens`` (uncached, Hermes'
  ``CanonicalUsage``), ``cache_read_tokens``, ``cache_write_tokens``, ``output_tokens``,
  ``reasoning_tokens``, ``api_call_count``, ``estimated_cost_usd`` / ``actual_cost_usd``, ...)
  and ``messages`` (OpenAI chat rows: ``role``, ``content`` (a list is stored JSON-encoded behind
  ``\\0json:``), ``tool_calls`` (JSON), ``tool_call_id``, ``timestamp`` (Unix s),
  ``finish_reason``, ``api_content`` (the content as sent, when it differed), ``active``,
  ``compacted``);
- ``hermes sessions export`` output: JSONL, one session a line (the ``sessions`` row and its
  ``messages``), or one such JSON object (a lineage export adds ``segments``, each a session).

Hermes splits a conversation at each compression: the old session ends with ``end_reason:
"compression"`` and a new one (``parent_session_id`` = the old id) starts from the compressed
history. Read here as Hermes' own ``get_compression_lineage`` reads it: one logical session per
lineage (``session_id`` the root's id), its calls those of every segment in order, each later
segment's first call in ``Session.compactions`` (its requests start from that segment's
messages). A session whose parent did not end in compression (a branch, ``model_config`` with
``_branched_from``, or a delegated subagent) is a session of its own; its ``parent_session_id``
names the parent's lineage (the session contextkit reads the parent into). Newer Hermes also
compacts in place (``archive_and_compact``: the old rows stay with ``active = 0, compacted =
1``); the rows before the last such compaction are one segment (several in-place compactions
cannot be told apart). Rewound rows (``active = 0, compacted = 0``) are left out and
counted in a note: the user took them back, but the calls that wrote them were made.

What counts as a call: each assistant message. Requests are rebuilt (``exact=False``) with the
session's ``system_prompt`` and the messages before, ``api_content`` in place of ``content`` where
recorded. Cannot know: per-call usage (Hermes keeps token totals per session only: each
session's notes give them, with the API call count and the recorded cost; calls have no usage)
and the tool definitions (``prefix_known=False``; the system prompt is there).

Strict by default: a session record without an ``id``, a message row with an unknown role,
undecodable ``tool_calls``, an ``active`` or ``compacted`` other than 0 or 1, or (database) a
``session_id`` no sessions row has, is a :class:`FormatError` naming the file and the line
(export) or row (database); ``lenient=True`` skips it and lists each one.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextkit.formats._io import Skips, iter_jsonl, load_json, read_head
from contextkit.formats._locations import Location, Places
from contextkit.formats._sqlite import connect, has_tables, is_sqlite
from contextkit.formats._trajectory import (
    Reply,
    as_int,
    as_mapping,
    as_str,
    calls_from_messages,
    parse_chat,
    parse_time,
    peek,
)
from contextkit.session import Call, LoadedFile, Session

NAME = "hermes"
TABLES = frozenset({"sessions", "messages", "schema_version"})
CONTENT_JSON_PREFIX = "\x00json:"
_ROLES = frozenset({"user", "assistant", "tool", "system"})
_SESSION_KEYS = frozenset({"id", "source", "started_at"})
_TOTALS = (
    ("input_tokens", "input (uncached)"),
    ("cache_read_tokens", "cache read"),
    ("cache_write_tokens", "cache write"),
    ("output_tokens", "output"),
    ("reasoning_tokens", "reasoning"),
)


class HermesReader:
    name = NAME

    def locations(self, places: Places) -> tuple[Location, ...]:
        """``$HERMES_HOME/state.db``, default ``~/.hermes/state.db`` (``hermes-agent`` 0.19.0,
        ``hermes_state.py``, as the module docstring cites)."""
        hermes = places.dir("HERMES_HOME", places.home / ".hermes")
        return (Location("Hermes", self.name, hermes / "state.db"),)

    def sniff(self, path: Path, head: str) -> bool:
        """``state.db`` (its tables), or an export whose first record is a Hermes session row."""
        if is_sqlite(head):
            return has_tables(path, TABLES, "state.db")
        seen = peek(head)
        return (
            seen.kind == "object"
            and set(seen.keys) >= _SESSION_KEYS
            and ("message_count" in seen.keys or "messages" in seen.keys)
        )

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        if is_sqlite(read_head(path, 16)):
            records = _from_database(path, skips)
        else:
            records = _from_export(path, skips)
        lineages = _lineages(records)
        roots = {r.id: lineage[0].id for lineage in lineages for r in lineage}
        sessions = tuple(_session(path, lineage, roots, skips) for lineage in lineages)
        return LoadedFile(
            path=str(path), format=NAME, sessions=sessions, skipped=tuple(skips.records)
        )


# --------------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class _Record:
    """One Hermes session row, its message rows, and where it was read."""

    info: Mapping[str, Any]
    messages: tuple[Mapping[str, Any], ...]
    line: int | None = None

    @property
    def id(self) -> str:
        return str(self.info["id"])

    def where(self, row: Mapping[str, Any]) -> str:
        ident = row.get("id")
        return f"session {self.id!r}, message row {ident}: " if ident is not None else ""


def _from_export(path: Path, skips: Skips) -> list[_Record]:
    if path.suffix == ".jsonl":
        values: list[tuple[int | None, object]] = list(iter_jsonl(path, skips))
    else:
        document = load_json(path)
        items = document if isinstance(document, list) else [document]
        values = [(None, item) for item in items]
    out = []
    for line, value in values:
        segments = as_mapping(value).get("segments")
        for item in segments if isinstance(segments, list) else [value]:
            record = _record(item, line, skips)
            if record is not None:
                out.append(record)
    return out


def _record(value: object, line: int | None, skips: Skips) -> _Record | None:
    if not isinstance(value, Mapping) or not isinstance(value.get("id"), str):
        skips.fail("expected a Hermes session object with a string 'id'", line)
        return None
    messages = value.get("messages")
    if not isinstance(messages, list | None):
        skips.fail(f"session {value['id']!r}: 'messages' must be a list", line)
        return None
    info = {k: v for k, v in value.items() if k != "messages"}
    kept = []
    for index, message in enumerate(messages or ()):
        problem = _flags_problem(message) if isinstance(message, Mapping) else "not an object"
        if problem is not None:
            skips.fail(f"session {value['id']!r}, message {index}: {problem}", line)
            continue
        kept.append(message)
    return _Record(info, tuple(kept), line)


def _from_database(path: Path, skips: Skips) -> list[_Record]:
    with connect(path) as connection:
        sessions = _dict_rows(connection, "SELECT * FROM sessions ORDER BY started_at, id")
        messages = _dict_rows(connection, "SELECT * FROM messages ORDER BY id")
    by_session: dict[str, list[Mapping[str, Any]]] = {}
    known = {str(s["id"]) for s in sessions}
    for row in messages:
        if str(row.get("session_id")) not in known:
            skips.fail(f"message row {row.get('id')}: its session_id names no sessions row")
            continue
        decoded = _decoded(row, skips)
        if decoded is not None:
            by_session.setdefault(str(row.get("session_id")), []).append(decoded)
    return [_Record(s, tuple(by_session.get(str(s["id"]), ()))) for s in sessions]


def _dict_rows(connection: sqlite3.Connection, sql: str) -> list[dict[str, Any]]:
    cursor = connection.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor]


def _decoded(row: Mapping[str, Any], skips: Skips) -> Mapping[str, Any] | None:
    """A ``messages`` row as ``get_messages`` returns it: content and tool calls decoded."""
    out = dict(row)
    content = row.get("content")
    if isinstance(content, str) and content.startswith(CONTENT_JSON_PREFIX):
        with contextlib.suppress(ValueError):  # Hermes too keeps the raw string then
            out["content"] = json.loads(content[len(CONTENT_JSON_PREFIX) :])
    calls = row.get("tool_calls")
    if isinstance(calls, str) and calls:
        try:
            out["tool_calls"] = json.loads(calls)
        except ValueError:  # not JSON, or a number past the digit limit
            where = f"session {row.get('session_id')!r}, message row {row.get('id')}"
            skips.fail(f"{where}: 'tool_calls' is not valid JSON")
            return None
    problem = _flags_problem(row)
    if problem is not None:
        skips.fail(f"session {row.get('session_id')!r}, message row {row.get('id')}: {problem}")
        return None
    return out


def _flags_problem(row: Mapping[str, Any]) -> str | None:
    """``active`` and ``compacted`` decide whether a row is live, archived or rewound: a value
    other than 0 or 1 would make a live row a rewound one without a word."""
    for key in ("active", "compacted"):
        if row.get(key) not in (None, 0, 1):
            return f"'{key}' must be 0 or 1"
    return None


# --------------------------------------------------------------------------------------------------
# Lineages


def _branched(record: _Record) -> bool:
    config = record.info.get("model_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except ValueError:  # not JSON, or a number past the digit limit
            return False
    return isinstance(config, Mapping) and config.get("_branched_from") is not None


def _lineages(records: Sequence[_Record]) -> list[list[_Record]]:
    """Records grouped into compression lineages (root first), in the order of their roots."""
    by_id = {r.id: r for r in records}
    children: dict[str, list[_Record]] = {}
    for record in records:
        parent = as_str(record.info.get("parent_session_id"))
        if parent and not _branched(record):
            children.setdefault(parent, []).append(record)
    placed: set[str] = set()
    out = []
    for record in records:
        parent_record = by_id.get(as_str(record.info.get("parent_session_id")) or "")
        continues = (
            parent_record is not None and parent_record.info.get("end_reason") == "compression"
        )
        if record.id in placed or (continues and not _branched(record)):
            continue
        out.append(_chain(record, children, placed))
    out.extend([r] for r in records if r.id not in placed)  # continuations of a second child
    return out


def _compressed(record: _Record) -> bool:
    return record.info.get("end_reason") == "compression"


def _chain(root: _Record, children: Mapping[str, list[_Record]], placed: set[str]) -> list[_Record]:
    chain = [root]
    placed.add(root.id)
    current = root
    while _compressed(current):
        nexts = sorted(children.get(current.id, []), key=lambda r: _started(r.info))
        following = next((r for r in nexts if r.id not in placed), None)
        if following is None:
            break
        chain.append(following)
        placed.add(following.id)
        current = following
    return chain


def _started(info: Mapping[str, Any]) -> float:
    value = info.get("started_at")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


# --------------------------------------------------------------------------------------------------
# Calls


def _problem(row: Mapping[str, Any]) -> str | None:
    if row.get("role") not in _ROLES:
        return f"unknown role {row.get('role')!r} (expected user, assistant, tool or system)"
    calls = row.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        return "'tool_calls' must be a list"
    return None


def _chat(row: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAI chat message a row stands for, with the content as sent."""
    sent = row.get("api_content")
    message: dict[str, Any] = {
        "role": row["role"],
        "content": sent if isinstance(sent, str) else row.get("content"),
    }
    if row.get("tool_calls"):
        message["tool_calls"] = row["tool_calls"]
    if row["role"] == "tool":
        message["tool_call_id"] = row.get("tool_call_id") or ""
    return message


@dataclass
class _Built:
    calls: list[Call] = field(default_factory=list)
    compactions: list[int] = field(default_factory=list)
    rewound: int = 0
    set_aside: Counter[str] = field(default_factory=Counter)


def _segments(record: _Record) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]], int]:
    """The rows archived by the last in-place compaction, the live rows, and how many were
    rewound (``active = 0`` without ``compacted``)."""
    archived, live, rewound = [], [], 0
    for row in record.messages:
        if row.get("active", 1) in (1, True):
            live.append(row)
        elif row.get("compacted") in (1, True):
            archived.append(row)
        else:
            rewound += 1
    return archived, live, rewound


def _add_segment(
    out: _Built, record: _Record, rows_: Sequence[Mapping[str, Any]], skips: Skips
) -> None:
    good = []
    for row in rows_:
        problem = _problem(row)
        if problem is not None:
            skips.fail(record.where(row) + problem, record.line)
            continue
        good.append(row)
    if out.calls:
        out.compactions.append(len(out.calls))
    transcript = parse_chat(
        [_chat(r) for r in good],
        [record.line] * len(good),
        skips,
        context=f"session {record.id!r}: ",
    )
    model = as_str(record.info.get("model"))
    replies = [
        Reply(
            index=at,
            line=record.line,
            model=model,
            timestamp=parse_time(good[raw].get("timestamp")),
            finish_reason=as_str(good[raw].get("finish_reason")),
        )
        for at, raw in transcript.responses
    ]
    system = as_str(record.info.get("system_prompt")) or transcript.system
    out.calls.extend(calls_from_messages(transcript.messages, replies, system=system))


def _build(lineage: Sequence[_Record], skips: Skips) -> _Built:
    """Every segment's calls in order; a segment after calls starts from compacted history."""
    out = _Built()
    for record in lineage:
        archived, live, rewound = _segments(record)
        out.rewound += rewound
        for rows_ in (archived, live):
            if rows_:
                _add_segment(out, record, rows_, skips)
    out.compactions = [i for i in dict.fromkeys(out.compactions) if i < len(out.calls)]
    return out


def _session(
    path: Path, lineage: Sequence[_Record], roots: Mapping[str, str], skips: Skips
) -> Session:
    """The lineage's session; a parent in another lineage is named by that lineage's id."""
    built = _build(lineage, skips)
    root = lineage[0]
    parent = as_str(root.info.get("parent_session_id"))
    return Session(
        path=str(path),
        format=NAME,
        session_id=root.id,
        calls=tuple(built.calls),
        parent_session_id=roots.get(parent, parent) if parent else None,
        prefix_known=False,
        compactions=tuple(built.compactions),
        notes=tuple(_notes(lineage, built)),
    )


def _notes(lineage: Sequence[_Record], built: _Built) -> list[str]:
    notes = [
        "Hermes stores the system prompt but not the tool definitions (prefix_known=False), "
        "and token usage per session only: calls carry no usage"
    ]
    if len(lineage) > 1:
        ids = ", ".join(r.id for r in lineage)
        notes.append(f"one logical session across {len(lineage)} compression segments: {ids}")
    for record in lineage:
        notes.append(_totals_note(record.info))
    if built.rewound:
        notes.append(f"{built.rewound} rewound messages (active = 0) left out")
    return notes


def _totals_note(info: Mapping[str, Any]) -> str:
    parts = [f"{label} {as_int(info.get(key)) or 0}" for key, label in _TOTALS]
    cost = info.get("actual_cost_usd") or info.get("estimated_cost_usd")
    priced = f", recorded cost ${float(cost):.6f}" if isinstance(cost, int | float) else ""
    calls = as_int(info.get("api_call_count"))
    return (
        f"session {info.get('id')!r} totals (Hermes): "
        + ", ".join(parts)
        + f" over {calls if calls is not None else '?'} API calls{priced}"
    )


READER = HermesReader()

__all__ = ["READER", "TABLES", "HermesReader"]
