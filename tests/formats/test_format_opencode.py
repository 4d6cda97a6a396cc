"""OpenCode reader: hand-built JSON storage and ``opencode.db`` following
``packages/opencode/src/session/message-v2.ts`` and ``session.sql.ts``; no corpus file exists."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError, UnknownFormatError
from contextkit.formats import detect, load
from contextkit.formats._io import read_head
from contextkit.formats.opencode import COMPACTION_TEXT, READER
from contextkit.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from contextkit.session import Session, Usage
from corpus_paths import corpus_files

pytestmark = pytest.mark.filterwarnings("error")

SESSION = {
    "id": "ses_01",
    "projectID": "prj_01",
    "directory": "/work/app",
    "title": "Fix the bug",
    "version": "0.15.0",
    "time": {"created": 1750000000000, "updated": 1750000100000},
}


def _tokens(inp: int, out: int, read: int = 0, write: int = 0) -> dict[str, Any]:
    return {"input": inp, "output": out, "reasoning": 0, "cache": {"read": read, "write": write}}


def _user(ident: str, t: int, *parts: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    info = {"id": ident, "sessionID": "ses_01", "role": "user", "time": {"created": t}}
    return info | {"agent": "build", "model": {"providerID": "anthropic", "modelID": "m"}}, list(
        parts
    )


def _assistant(
    ident: str, t: int, parent: str, *parts: dict[str, Any], **extra: Any
) -> tuple[dict[str, Any], list[Any]]:
    info = {
        "id": ident,
        "sessionID": "ses_01",
        "role": "assistant",
        "time": {"created": t, "completed": t + 5},
        "parentID": parent,
        "modelID": "claude-sonnet-4-5",
        "providerID": "anthropic",
        "mode": "build",
        "agent": "build",
        "path": {"cwd": "/work/app", "root": "/work/app"},
        "cost": 0.0,
        "tokens": _tokens(0, 0),
        **extra,
    }
    return info, list(parts)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _finish(reason: str, tokens: dict[str, Any], cost: float = 0.01) -> dict[str, Any]:
    return {"type": "step-finish", "reason": reason, "cost": cost, "tokens": tokens}


START = {"type": "step-start"}
REASONING = {
    "type": "reasoning",
    "text": "look",
    "metadata": {"anthropic": {"signature": "sig-1"}},
    "time": {"start": 1},
}
TOOL = {
    "type": "tool",
    "callID": "toolu_1",
    "tool": "read",
    "state": {
        "status": "completed",
        "input": {"filePath": "a.py"},
        "output": "x = 1",
        "title": "a.py",
        "metadata": {},
        "time": {"start": 1, "end": 2},
    },
}


def _messages() -> list[tuple[dict[str, Any], list[Any]]]:
    t = 1750000000000
    return [
        _user("msg_01", t, _text("fix the bug")),
        _assistant(
            "msg_02",
            t + 10,
            "msg_01",
            START,
            REASONING,
            TOOL,
            _finish("tool-calls", _tokens(10, 20, write=5000)),
            START,
            _text("fixed"),
            _finish("stop", _tokens(3, 7, read=5000, write=40)),
            finish="stop",
        ),
        _user("msg_03", t + 20, _text("thanks")),
        _assistant(
            "msg_04",
            t + 30,
            "msg_03",
            START,
            error={"name": "APIError", "data": {"message": "overloaded", "isRetryable": True}},
            tokens=_tokens(0, 0),
        ),
        _user("msg_05", t + 40, {"type": "compaction", "auto": True}),
        _assistant(
            "msg_06",
            t + 50,
            "msg_05",
            START,
            _text("SUMMARY"),
            _finish("stop", _tokens(900, 50)),
            summary=True,
            finish="stop",
        ),
        _user("msg_07", t + 60, _text("continue")),
        _assistant(
            "msg_08", t + 70, "msg_07", START, _text("ok"), _finish("stop", _tokens(4, 2, read=100))
        ),
    ]


def _storage(
    tmp_path: Path, messages: list[tuple[dict[str, Any], list[Any]]] | None = None
) -> Path:
    root = tmp_path / "storage"
    session = root / "session" / "prj_01" / "ses_01.json"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps(SESSION, indent=2))
    for info, parts in messages or _messages():
        message = root / "message" / "ses_01" / f"{info['id']}.json"
        message.parent.mkdir(parents=True, exist_ok=True)
        message.write_text(json.dumps(info, indent=2))
        for i, part in enumerate(parts):
            file = root / "part" / info["id"] / f"prt_{info['id']}_{i:02d}.json"
            file.parent.mkdir(parents=True, exist_ok=True)
            body = {"id": file.stem, "sessionID": "ses_01", "messageID": info["id"], **part}
            file.write_text(json.dumps(body, indent=2))
    return session


def _database(tmp_path: Path, bad_message: bool = False) -> Path:
    path = tmp_path / "opencode.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute(
            "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, "
            "parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, "
            "version TEXT NOT NULL, time_created INTEGER, time_updated INTEGER)"
        )
        db.execute(
            "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, "
            "time_created INTEGER, time_updated INTEGER, data TEXT NOT NULL)"
        )
        db.execute(
            "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, "
            "session_id TEXT NOT NULL, time_created INTEGER, time_updated INTEGER, "
            "data TEXT NOT NULL)"
        )
        db.execute(
            "INSERT INTO session VALUES ('ses_01', 'prj_01', NULL, 's', '/w', 'Fix', '1.2', 1, 1)"
        )
        db.execute(
            "INSERT INTO session VALUES "
            "('ses_02', 'prj_01', 'ses_01', 's', '/w', 'Sub', '1.2', 2, 2)"
        )
        for info, parts in _messages():
            data = {k: v for k, v in info.items() if k not in ("id", "sessionID")}
            t = info["time"]["created"]
            db.execute(
                "INSERT INTO message VALUES (?, 'ses_01', ?, ?, ?)",
                (info["id"], t, t, json.dumps(data)),
            )
            for i, part in enumerate(parts):
                ident = f"prt_{info['id']}_{i:02d}"
                db.execute(
                    "INSERT INTO part VALUES (?, ?, 'ses_01', ?, ?, ?)",
                    (ident, info["id"], t, t, json.dumps(part)),
                )
        child = {"role": "user", "time": {"created": 5}, "agent": "general", "model": {}}
        db.execute("INSERT INTO message VALUES ('msg_c1', 'ses_02', 5, 5, ?)", (json.dumps(child),))
        if bad_message:
            db.execute("INSERT INTO message VALUES ('msg_bad', 'ses_02', 6, 6, '{oops')")
        db.commit()
    return path


def _check_main(session: Session) -> None:
    assert session.session_id == "ses_01"
    assert not session.prefix_known
    assert len(session.calls) == 5
    first, second, failed, summary, last = session.calls
    assert first.usage == Usage(input_tokens=10, cache_write_5m=5000, output_tokens=20)
    assert second.usage == Usage(
        input_tokens=3, cache_write_5m=40, cache_read=5000, output_tokens=7
    )
    assert first.stop_reason == "tool_use"
    assert second.stop_reason == "end_turn"
    assert first.model == "claude-sonnet-4-5"
    thinking, use = first.response.blocks if first.response else ()
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.signature == "sig-1"
    assert isinstance(use, ToolUseBlock)
    assert use.input == {"filePath": "a.py"}
    user, assistant, results = second.request.messages
    assert user.blocks == (TextBlock(text="fix the bug"),)
    assert assistant == first.response
    (result,) = results.blocks
    assert isinstance(result, ToolResultBlock)
    assert result.content == "x = 1"
    assert failed.usage == Usage()
    # The errored message is left out of later requests; the compaction prompt joins "thanks".
    roles = [m.role for m in summary.request.messages]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert summary.request.messages[-1].blocks == (
        TextBlock(text="thanks"),
        TextBlock(text=COMPACTION_TEXT),
    )
    compacted = [m.blocks for m in last.request.messages]
    assert compacted == [
        (TextBlock(text=COMPACTION_TEXT),),
        (TextBlock(text="SUMMARY"),),
        (TextBlock(text="continue"),),
    ]
    assert session.compactions == (4,)
    assert any("recorded cost" in n and "$0.040000" in n for n in session.notes)


def test_json_storage_session_file(tmp_path: Path) -> None:
    path = _storage(tmp_path)
    assert detect(path).name == "opencode"
    (session,) = load(path).sessions
    _check_main(session)


def test_database_reads_every_session(tmp_path: Path) -> None:
    path = _database(tmp_path)
    assert detect(path).name == "opencode"
    main, child = load(path).sessions
    _check_main(main)
    assert child.parent_session_id == "ses_01"
    assert child.calls == ()


def test_bad_part_file_is_an_error_naming_it_and_a_skip_leniently(tmp_path: Path) -> None:
    path = _storage(tmp_path)
    bad = path.parent.parent.parent / "part" / "msg_08" / "prt_msg_08_01.json"
    bad.write_text('{"type": ')
    with pytest.raises(FormatError) as error:
        load(path)
    assert error.value.path == str(bad)
    loaded = load(path, lenient=True)
    assert [s.path for s in loaded.skipped] == [str(bad)]
    assert loaded.sessions[0].calls[-1].response is not None


def test_bad_message_row_is_an_error_naming_the_row(tmp_path: Path) -> None:
    path = _database(tmp_path, bad_message=True)
    with pytest.raises(FormatError, match="message row 'msg_bad'"):
        load(path)
    assert len(load(path, lenient=True).skipped) == 1


def test_message_without_role_is_an_error(tmp_path: Path) -> None:
    messages = _messages()
    messages[2] = ({"id": "msg_03", "time": {"created": 1}}, [_text("thanks")])
    path = _storage(tmp_path, messages)
    with pytest.raises(FormatError, match="unknown role") as error:
        load(path)
    assert error.value.path.endswith("msg_03.json")


def test_sniff_is_conservative(tmp_path: Path) -> None:
    path = _storage(tmp_path)
    message = path.parent.parent.parent / "message" / "ses_01" / "msg_01.json"
    assert not READER.sniff(message, message.read_text())
    elsewhere = tmp_path / "ses_01.json"
    elsewhere.write_text(path.read_text())
    assert not READER.sniff(elsewhere, elsewhere.read_text())
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as db:
        db.execute("CREATE TABLE sessions (id TEXT)")
        db.commit()
    assert not READER.sniff(other, read_head(other))


@pytest.mark.corpus
def test_opencode_reader_claims_no_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert not READER.sniff(path, head), path


def test_message_and_part_files_are_claimed_by_no_reader(tmp_path: Path) -> None:
    path = _storage(tmp_path)
    root = path.parent.parent.parent
    for file in [*root.glob("message/*/*.json"), *root.glob("part/*/*.json")]:
        with pytest.raises(UnknownFormatError):
            detect(file)
