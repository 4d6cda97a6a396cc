"""Hermes agent reader: a hand-built ``state.db`` and ``hermes sessions export`` JSONL with the
columns of ``hermes_state.py`` (hermes-agent 0.19.0 on PyPI); no corpus file exists."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import detect, load
from contextkit.formats._io import read_head
from contextkit.formats.hermes.state_db import CONTENT_JSON_PREFIX, READER
from contextkit.messages import TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.session import Session
from corpus_paths import corpus_files

pytestmark = pytest.mark.filterwarnings("error")

SESSION_COLUMNS = (
    "id",
    "source",
    "model",
    "model_config",
    "system_prompt",
    "parent_session_id",
    "started_at",
    "ended_at",
    "end_reason",
    "message_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "estimated_cost_usd",
    "api_call_count",
)
MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "timestamp",
    "token_count",
    "finish_reason",
    "reasoning",
    "active",
    "compacted",
    "api_content",
)
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "terminal", "arguments": '{"command": "ls"}'},
}


def _session(ident: str, started: float, **fields: Any) -> dict[str, Any]:
    row = dict.fromkeys(SESSION_COLUMNS)
    row.update(
        id=ident, source="cli", model="claude-sonnet-4-5", started_at=started, message_count=0
    )
    row.update(input_tokens=10, output_tokens=20, cache_read_tokens=300, cache_write_tokens=40)
    row.update(
        reasoning_tokens=0,
        estimated_cost_usd=0.0123,
        api_call_count=2,
        system_prompt="You are Hermes.",
    )
    row.update(fields)
    return row


def _message(ident: int, session: str, role: str, content: Any, **fields: Any) -> dict[str, Any]:
    row = dict.fromkeys(MESSAGE_COLUMNS)
    row.update(id=ident, session_id=session, role=role, content=content, timestamp=1000.0 + ident)
    row.update(active=1, compacted=0)
    row.update(fields)
    return row


def _data() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    sessions = [
        _session("s1", 1000, end_reason="compression"),
        _session("s2", 2000, parent_session_id="s1"),
        _session("s3", 2500, parent_session_id="s2", source="delegate"),
        _session("s4", 3000),
    ]
    messages = [
        _message(1, "s1", "user", "hi"),
        _message(2, "s1", "assistant", "", tool_calls=[CALL], finish_reason="tool_calls"),
        _message(3, "s1", "tool", "a.py", tool_call_id="call_1", tool_name="terminal"),
        _message(4, "s1", "assistant", "done", finish_reason="stop"),
        _message(5, "s2", "user", "Summary of the earlier turns", api_content="Summary + memory"),
        _message(6, "s2", "assistant", "ok"),
        _message(7, "s2", "assistant", "taken back", active=0),
        _message(8, "s3", "user", [{"type": "text", "text": "sub task"}]),
        _message(9, "s3", "assistant", "sub done"),
        _message(10, "s4", "user", "old", active=0, compacted=1),
        _message(11, "s4", "assistant", "old answer", active=0, compacted=1),
        _message(12, "s4", "user", "compacted summary"),
        _message(13, "s4", "assistant", "new answer"),
    ]
    return sessions, messages


def _database(path: Path, extra: list[dict[str, Any]] | None = None) -> Path:
    sessions, messages = _data()
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version VALUES (22)")
        db.execute(f"CREATE TABLE sessions ({', '.join(SESSION_COLUMNS)})")
        db.execute(f"CREATE TABLE messages ({', '.join(MESSAGE_COLUMNS)})")
        for row in sessions:
            db.execute(
                f"INSERT INTO sessions VALUES ({', '.join('?' * len(row))})", tuple(row.values())
            )
        for row in [*messages, *(extra or [])]:
            stored = dict(row)
            if isinstance(stored["content"], list):
                stored["content"] = CONTENT_JSON_PREFIX + json.dumps(stored["content"])
            if stored["tool_calls"] is not None and not isinstance(stored["tool_calls"], str):
                stored["tool_calls"] = json.dumps(stored["tool_calls"])
            db.execute(
                f"INSERT INTO messages VALUES ({', '.join('?' * len(stored))})",
                tuple(stored.values()),
            )
        db.commit()
    return path


def _export(path: Path) -> Path:
    """What ``hermes sessions export --format jsonl`` writes: each row with its active messages."""
    sessions, messages = _data()
    lines = []
    for row in sessions:
        own = [m for m in messages if m["session_id"] == row["id"] and m["active"] == 1]
        lines.append(json.dumps({**row, "messages": own}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _check(loaded_sessions: tuple[Session, ...], *, in_place: bool) -> None:
    main, sub, fourth = loaded_sessions
    assert main.session_id == "s1"
    assert main.parent_session_id is None
    assert len(main.calls) == 3
    assert main.compactions == (2,)
    first, second, third = main.calls
    assert first.request.system == "You are Hermes."
    assert first.response is not None
    (use,) = first.response.blocks
    assert isinstance(use, ToolUseBlock)
    assert use.input == {"command": "ls"}
    assert first.stop_reason == "tool_use"
    assert first.usage is None
    assert first.model == "claude-sonnet-4-5"
    result = second.request.messages[-1].blocks[0]
    assert isinstance(result, ToolResultBlock)
    assert result.tool_use_id == "call_1"
    assert [m.blocks for m in third.request.messages] == [(TextBlock(text="Summary + memory"),)]
    assert any("2 compression segments: s1, s2" in n for n in main.notes)
    assert any("input (uncached) 10" in n and "over 2 API calls" in n for n in main.notes)
    assert sub.session_id == "s3"
    assert sub.parent_session_id == "s1"  # s2 is a segment of the s1 lineage
    assert sub.calls[0].request.messages[0].blocks == (TextBlock(text="sub task"),)
    if in_place:
        assert len(fourth.calls) == 2
        assert fourth.compactions == (1,)
        assert fourth.calls[1].request.messages[0].content == "compacted summary"
        assert any("1 rewound messages" in n for n in main.notes)
    else:
        assert len(fourth.calls) == 1


def test_state_db_lineages_in_place_compaction_and_subagents(tmp_path: Path) -> None:
    path = _database(tmp_path / "state.db")
    assert detect(path).name == "hermes"
    _check(load(path).sessions, in_place=True)


def test_export_jsonl_reads_like_the_database(tmp_path: Path) -> None:
    path = _export(tmp_path / "sessions.jsonl")
    assert detect(path).name == "hermes"
    _check(load(path).sessions, in_place=False)


def test_lineage_export_json_with_segments(tmp_path: Path) -> None:
    sessions, messages = _data()
    segments = [
        {**row, "messages": [m for m in messages if m["session_id"] == row["id"]]}
        for row in sessions[:2]
    ]
    path = tmp_path / "lineage.json"
    path.write_text(json.dumps({**sessions[1], "segments": segments, "messages": []}))
    assert detect(path).name == "hermes"
    (session,) = load(path).sessions
    assert len(session.calls) == 3  # the rewound row (active = 0) is left out here too
    assert session.compactions == (2,)
    assert any("1 rewound messages" in n for n in session.notes)


def test_bad_rows_are_errors_naming_the_row(tmp_path: Path) -> None:
    bad = [
        _message(20, "s4", "robot", "?"),
        _message(21, "s4", "assistant", "x", tool_calls="{not json"),
    ]
    path = _database(tmp_path / "state.db", bad)
    with pytest.raises(FormatError, match="message row 2"):
        load(path)
    loaded = load(path, lenient=True)
    assert len(loaded.skipped) == 2
    assert any("unknown role 'robot'" in s.reason for s in loaded.skipped)


def test_bad_export_line_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = _export(tmp_path / "sessions.jsonl")
    path.write_text(path.read_text() + '{"source": "cli"}\n')
    with pytest.raises(FormatError, match="string 'id'") as error:
        load(path)
    assert error.value.line == 5
    assert len(load(path, lenient=True).skipped) == 1


def test_sniff_is_conservative(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as db:
        db.execute("CREATE TABLE sessions (id TEXT)")
        db.execute("CREATE TABLE messages (id TEXT)")
        db.commit()
    assert not READER.sniff(other, read_head(other))
    plain = tmp_path / "x.jsonl"
    plain.write_text('{"id": "s", "messages": []}\n')
    assert not READER.sniff(plain, plain.read_text())


@pytest.mark.corpus
def test_hermes_reader_claims_no_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert not READER.sniff(path, head), path
