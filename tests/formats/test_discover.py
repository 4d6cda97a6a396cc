"""Discovery: a fake home in ``tmp_path`` with one session file per harness, where each harness
writes it; :func:`contextkit.formats.discover` finds each in its place, and the commands say so."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from test_format_hermes import _database as hermes_database
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.formats import check_file, default_locations, discover

runner = CliRunner()
TS = "2025-01-01T00:00:00Z"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _cursor_db(path: Path) -> Path:
    """An empty Cursor store: the two key-value tables, no composer."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as db:
        for table in ("cursorDiskKV", "ItemTable"):
            db.execute(f"CREATE TABLE {table} (key TEXT, value BLOB)")
        db.commit()
    return path


def _hermes_db(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return hermes_database(path)  # the Hermes reader's own fixture: four sessions


def _claude_line() -> str:
    record = {
        "type": "user",
        "parentUuid": None,
        "uuid": "u1",
        "sessionId": "s1",
        "timestamp": TS,
        "message": {"role": "user", "content": "hi"},
    }
    return json.dumps(record) + "\n"


def fake_home(home: Path, config: Path) -> dict[str, Path]:
    """One file per harness under ``home`` (``config``: the platform's app data folder)."""
    storage = config / "Code" / "User" / "globalStorage"
    cline_history = '[{"role": "user", "content": "hi"}]'
    session = {"id": "ses_1", "projectID": "p", "time": {"created": 1}}
    gemini = {"sessionId": "g1", "projectHash": "h", "messages": []}
    codex = {"timestamp": TS, "type": "session_meta", "payload": {"id": "c1"}}
    pi = {"type": "session", "id": "p1", "cwd": "/w", "timestamp": TS}
    return {
        "Claude Code": _write(home / ".claude/projects/-w/s1.jsonl", _claude_line()),
        "Codex": _write(
            home / ".codex/sessions/2025/01/01/rollout-x.jsonl", json.dumps(codex) + "\n"
        ),
        "pi": _write(home / ".pi/agent/sessions/--w--/t_p1.jsonl", json.dumps(pi) + "\n"),
        "Gemini CLI": _write(home / ".gemini/tmp/h/chats/session-1.json", json.dumps(gemini)),
        "Hermes": _hermes_db(home / ".hermes/state.db"),
        "Cline": _write(
            storage / "saoudrizwan.claude-dev/tasks/1/api_conversation_history.json",
            cline_history,
        ),
        "Roo Code": _write(
            storage / "rooveterinaryinc.roo-cline/tasks/2/api_conversation_history.json",
            cline_history,
        ),
        "OpenCode": _write(
            home / ".local/share/opencode/storage/session/p/ses_1.json", json.dumps(session)
        ),
        "Cursor": _cursor_db(config / "Cursor/User/globalStorage/state.vscdb"),
    }


def test_every_harness_is_found_where_it_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    written = fake_home(home, home / ".config")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    aider = _write(repo / ".aider.chat.history.md", "# aider chat started at 2025-01-01 10:00:00\n")
    (repo / "src").mkdir()
    found = discover(home, {}, cwd=repo / "src", platform="linux")
    by_harness = {d.harness: d.files for d in found if d.files}
    assert by_harness == {**{h: (p,) for h, p in written.items()}, "aider": (aider,)}
    assert all(not d.skipped for d in found)
    for files in by_harness.values():  # each hand-built file is valid for its reader
        assert check_file(files[0]).error is None, files[0]


def test_macos_and_environment_overrides(tmp_path: Path) -> None:
    home = tmp_path / "home"
    locations = default_locations(
        home,
        {"CODEX_HOME": str(tmp_path / "cx"), "HERMES_HOME": str(tmp_path / "hm")},
        platform="darwin",
    )
    paths = {loc.harness: loc.path for loc in locations}
    assert paths["Codex"] == tmp_path / "cx" / "sessions"
    assert paths["Hermes"] == tmp_path / "hm" / "state.db"
    support = home / "Library" / "Application Support"
    assert paths["Cursor"] == support / "Cursor/User/globalStorage/state.vscdb"
    assert paths["Cline"] == support / "Code/User/globalStorage/saoudrizwan.claude-dev/tasks"
    assert "aider" not in paths  # no current directory given


def test_a_file_another_reader_takes_is_skipped_not_found(tmp_path: Path) -> None:
    _write(tmp_path / ".codex/sessions/rollout-x.jsonl", _claude_line())
    (codex,) = [d for d in discover(tmp_path, {}, platform="linux") if d.harness == "Codex"]
    assert codex.files == ()
    ((_, reason),) = codex.skipped
    assert reason == "read as claude-code, not codex"


def test_validate_with_no_path_says_what_it_found_where(tmp_path: Path) -> None:
    home = tmp_path / "home"
    written = fake_home(home, home / ".config")
    env = {"HOME": str(home), "XDG_CONFIG_HOME": "", "XDG_DATA_HOME": "", "CODEX_HOME": ""}
    env |= {"CLAUDE_CONFIG_DIR": "", "HERMES_HOME": "", "PI_CODING_AGENT_DIR": ""}
    result = runner.invoke(app, ["validate", "--json", "--lenient"], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"found 1 session file(s) of Codex in {home / '.codex/sessions'}" in result.stderr
    doc = json.loads(result.stdout)
    assert {f["path"] for f in doc["files"]} == {str(p) for p in written.values()}
    assert "Traceback" not in result.output


def test_nothing_found_exits_0_for_inspect_and_compare(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": "", "XDG_DATA_HOME": "", "CODEX_HOME": ""}
    env |= {"CLAUDE_CONFIG_DIR": "", "HERMES_HOME": "", "PI_CODING_AGENT_DIR": ""}
    for command in (["inspect"], ["compare", "--json"], ["validate"]):
        result = runner.invoke(app, command, env=env)
        assert result.exit_code == 0, (command, result.output)
        assert "nothing found in the default locations" in result.stderr


def test_inspect_takes_a_folder_and_lists_files_no_reader_takes(tmp_path: Path) -> None:
    clean = Path(__file__).parents[1] / "fixtures" / "validate" / "clean.jsonl"
    _write(tmp_path / "a" / "one.jsonl", clean.read_text(encoding="utf-8"))
    _write(tmp_path / "notes.json", '{"hello": 1}')
    result = runner.invoke(app, ["inspect", "--json", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (session,) = json.loads(result.stdout)["sessions"]
    assert session["path"] == str(tmp_path / "a" / "one.jsonl")
    assert f"skipped {tmp_path / 'notes.json'}" in " ".join(result.stderr.split())


def test_inspect_a_folder_without_sessions_exits_2(tmp_path: Path) -> None:
    _write(tmp_path / "notes.json", '{"hello": 1}')
    done = subprocess.run(
        [sys.executable, "-c", "from contextkit.cli import main; main()", "inspect", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
        check=False,
    )
    assert done.returncode == 2
    assert f"no session file found in {tmp_path}" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
