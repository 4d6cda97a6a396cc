"""Cursor reader: a hand-built ``state.vscdb`` following the reverse-engineered schema
(``michaeldhood/chatrxiv`` ``docs/cursor/storage-reference.md``); no corpus file exists."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError, UnknownFormatError
from contextkit.formats import detect, load
from contextkit.formats._io import read_head
from contextkit.formats.cursor import READER
from contextkit.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from contextkit.session import Usage
from corpus_paths import corpus_files

pytestmark = pytest.mark.filterwarnings("error")

COMPOSER = "98251e54-8aed-4515-b2b4-08895453eedd"


def _db(path: Path, rows: dict[str, Any]) -> Path:
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        db.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        db.execute("INSERT INTO ItemTable VALUES ('cursorAuth/accessToken', 'secret')")
        for key, value in rows.items():
            text = value if isinstance(value, str | bytes) else json.dumps(value)
            db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (key, text))
        db.commit()
    return path


def _bubble(bubble_id: str, kind: int, **fields: Any) -> dict[str, Any]:
    return {"_v": 3, "type": kind, "bubbleId": bubble_id, **fields}


def _headers(*ids: tuple[str, int]) -> list[dict[str, Any]]:
    return [{"bubbleId": b, "type": t} for b, t in ids]


def _rows() -> dict[str, Any]:
    composer = {
        "_v": 10,
        "composerId": COMPOSER,
        "name": "PR10 understanding",
        "createdAt": 1766691308486,
        "modelConfig": {"modelName": "claude-4.5-sonnet", "maxMode": False},
        "fullConversationHeadersOnly": _headers(
            ("u1", 1), ("a1", 2), ("a2", 2), ("u2", 1), ("a3", 2)
        ),
    }
    tool = {
        "name": "read_file",
        "rawArgs": '{"target_file": "a.py"}',
        "result": "x = 1",
        "status": "completed",
    }
    bubbles = {
        "u1": _bubble("u1", 1, text="explain a.py", createdAt="2025-12-25T19:01:48Z"),
        "a1": _bubble(
            "a1",
            2,
            text="Reading it.",
            thinking={"text": "need the file"},
            toolFormerData=tool,
            tokenCount={"inputTokens": 1200, "outputTokens": 40},
            createdAt="2025-12-25T19:01:50Z",
        ),
        "a2": _bubble(
            "a2", 2, text="It sets x.", tokenCount={"inputTokens": 1300, "outputTokens": 9}
        ),
        "u2": _bubble("u2", 1, text="thanks"),
        "a3": _bubble(
            "a3", 2, text="You're welcome.", tokenCount={"inputTokens": 0, "outputTokens": 0}
        ),
    }
    out: dict[str, Any] = {f"composerData:{COMPOSER}": composer}
    out.update({f"bubbleId:{COMPOSER}:{k}": v for k, v in bubbles.items()})
    out["composerData:empty"] = {
        "_v": 10,
        "composerId": "empty",
        "createdAt": 1,
        "fullConversationHeadersOnly": [],
    }
    return out


def test_composer_bubbles_become_calls_with_token_counts(tmp_path: Path) -> None:
    path = _db(tmp_path / "state.vscdb", _rows())
    assert detect(path).name == "cursor"
    (session,) = load(path).sessions  # the composer without bubbles is no session
    assert session.session_id == COMPOSER
    assert not session.prefix_known
    first, second, third = session.calls
    assert first.model == "claude-4.5-sonnet"
    assert first.usage == Usage(input_tokens=1200, output_tokens=40)
    assert second.usage == Usage(input_tokens=1300, output_tokens=9)
    assert third.usage is None
    assert first.stop_reason == "tool_use"
    assert first.timestamp is not None
    thinking, text, use = first.response.blocks if first.response else ()
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.signature is None
    assert text == TextBlock(text="Reading it.")
    assert isinstance(use, ToolUseBlock)
    assert use.input == {"target_file": "a.py"}
    user, assistant, result = second.request.messages
    assert user.content == "explain a.py"
    # The unsigned thinking stays on the response, not in later requests.
    assert assistant.blocks == (text, use)
    (block,) = result.blocks
    assert isinstance(block, ToolResultBlock)
    assert block.tool_use_id == use.id
    assert block.content == "x = 1"
    assert [m.role for m in third.request.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert any("no prompts" in n for n in session.notes)
    assert any("1 assistant bubbles have no non-zero tokenCount" in n for n in session.notes)


def test_bad_row_is_an_error_naming_the_key_and_a_skip_leniently(tmp_path: Path) -> None:
    rows = _rows()
    rows[f"bubbleId:{COMPOSER}:a2"] = "{not json"
    rows["composerData:broken"] = "null"
    path = _db(tmp_path / "state.vscdb", rows)
    with pytest.raises(FormatError, match="composerData:broken") as error:
        load(path)
    assert error.value.path == str(path)
    loaded = load(path, lenient=True)
    reasons = [s.reason for s in loaded.skipped]
    assert any("composerData:broken" in r for r in reasons)
    assert any(f"bubbleId:{COMPOSER}:a2" in r and "not valid JSON" in r for r in reasons)
    assert not any("names bubble 'a2'" in r for r in reasons)  # the bad row, reported once
    assert len(loaded.sessions[-1].calls) == 2


def test_legacy_inline_conversation(tmp_path: Path) -> None:
    composer = {
        "composerId": "old",
        "conversation": [_bubble("u", 1, text="hi"), _bubble("a", 2, text="hello")],
    }
    (session,) = load(_db(tmp_path / "state.vscdb", {"composerData:old": composer})).sessions
    (call,) = session.calls
    assert call.model is None
    assert call.request.messages[0].content == "hi"


def test_corrupt_database_is_a_clean_error(tmp_path: Path) -> None:
    path = tmp_path / "state.vscdb"
    path.write_bytes(b"SQLite format 3\x00" + b"\x07" * 200)
    # Cursor's own file name: claimed, so that reading says what is wrong with it.
    assert READER.sniff(path, read_head(path))
    with pytest.raises(FormatError, match="cannot read the SQLite database"):
        load(path)
    other = tmp_path / "copy.db"
    other.write_bytes(path.read_bytes())
    assert not READER.sniff(other, read_head(other))
    with pytest.raises(UnknownFormatError):
        load(other)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")


def test_locked_database_is_a_clean_error(tmp_path: Path) -> None:
    path = _db(tmp_path / "state.vscdb", _rows())
    with _locked(path), pytest.raises(FormatError, match="locked"):
        load(path)


def test_other_sqlite_databases_are_not_claimed(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE ItemTable (key TEXT, value BLOB)")
        db.commit()
    assert not READER.sniff(path, read_head(path))


@pytest.mark.corpus
def test_cursor_reader_claims_no_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert not READER.sniff(path, head), path
