"""Gemini CLI recordings lose no call without saying so: a rewind to an id the file does not hold
is a bad line (it used to drop every earlier message), rewound messages are counted as set aside,
a non-list ``toolCalls`` is a skipped record, and a JSON conversation without ``messages`` is an
error (it used to read as 0 calls)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import load

META = {"sessionId": "s", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z"}


def _jsonl(tmp_path: Path, lines: list[Any]) -> Path:
    path = tmp_path / "session-x.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    return path


def test_a_rewind_to_a_missing_id_is_a_bad_line(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        [
            META,
            {"id": "u1", "type": "user", "content": "hi"},
            {"id": "g1", "type": "gemini", "content": "hello"},
            {"$rewindTo": "nope"},
            {"id": "u2", "type": "user", "content": "more"},
            {"id": "g2", "type": "gemini", "content": "sure"},
        ],
    )
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line == 4
    loaded = load(path, lenient=True)
    assert [r.line for r in loaded.skipped] == [4]
    assert loaded.calls == 2  # nothing before the bad rewind was dropped
    assert "rewound message" not in loaded.sessions[0].set_aside


def test_every_record_is_a_call_skipped_or_set_aside(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"id": "u1", "type": "user", "content": "hi"},
        {"id": "g1", "type": "gemini", "content": "a"},
        {"id": "i1", "type": "info", "content": "note"},
        {"id": "g2", "type": "gemini", "content": "b", "toolCalls": {"not": "a list"}},
        {"id": "u2", "type": "user", "content": "again"},
        {"id": "g3", "type": "gemini", "content": "c"},
    ]
    path = _jsonl(tmp_path, [META, *records, {"$rewindTo": "u2"}])
    loaded = load(path, lenient=True)
    session = loaded.sessions[0]
    responses = sum(1 for r in records if r["type"] == "gemini")
    skipped = len(loaded.skipped)
    aside = sum(session.set_aside.values())
    assert (len(session.calls), skipped, dict(session.set_aside)) == (
        1,
        1,
        {"info": 1, "rewound message": 2},
    )
    # the gemini records: one call, one skipped, one rewound
    assert responses == len(session.calls) + skipped + 1
    assert aside == 3


def test_a_json_conversation_without_messages_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "session-2026-01-01T00-00-x.json"
    path.write_text(json.dumps(META, indent=2))  # as Gemini CLI writes it
    for lenient in (False, True):
        with pytest.raises(FormatError, match="needs a 'messages' list"):
            load(path, format="gemini-cli", lenient=lenient)


def test_a_response_record_with_nothing_in_it_is_named(tmp_path: Path) -> None:
    """Gemini CLI writes a response record only when it brings text, thoughts or tool calls: one
    with none (its ``toolCalls`` removed, say) is read as an empty call and named in a note, never
    passed over in silence."""
    call = {"id": "c1", "name": "ls", "args": {}, "result": [], "timestamp": "2026-01-01T00:00:01Z"}
    records: list[dict[str, Any]] = [
        {"id": "u1", "type": "user", "content": "list files"},
        {"id": "g1", "type": "gemini", "content": "", "toolCalls": [call]},
        {"id": "g2", "type": "gemini", "content": "done"},
    ]
    whole = load(_jsonl(tmp_path, [META, *records])).sessions[0]
    assert not [n for n in whole.notes if "no tool calls" in n]
    del records[1]["toolCalls"]
    (session,) = load(_jsonl(tmp_path, [META, *records])).sessions
    assert len(session.calls) == len(whole.calls)
    (note,) = [n for n in session.notes if "no tool calls" in n]
    assert note.startswith("1 gemini message(s) with no text, no thoughts and no tool calls")
    assert "(messages 1)" in note
