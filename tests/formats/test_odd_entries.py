"""Entries of a folder that are not regular files (a FIFO, a symbolic link that loops or points
nowhere) are never passed over in silence, and never opened (a FIFO would block the read): each
is named as a file that cannot be read, and ``validate`` exits 2 as for any unreadable file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.errors import FormatError
from contextkit.formats import load
from contextkit.replay import find_session_files

REQUEST = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 10,
    "messages": [{"role": "user", "content": "hi"}],
}


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "good.jsonl").write_text(json.dumps(REQUEST) + "\n", encoding="utf-8")
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "loop.jsonl").symlink_to(folder / "loop.jsonl")
    (folder / "gone.jsonl").symlink_to(folder / "nowhere.jsonl")
    return folder


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_odd_entries_are_named_as_unreadable(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    found = find_session_files([folder])
    assert sorted(p.name for p in found.files) == [
        "gone.jsonl",
        "good.jsonl",
        "loop.jsonl",
        "pipe.jsonl",
    ]
    reasons = {}
    for name in ("pipe.jsonl", "loop.jsonl", "gone.jsonl"):
        with pytest.raises(FormatError) as caught:
            load(folder / name)
        reasons[name] = caught.value.reason
        with pytest.raises(FormatError):
            load(folder / name, format="anthropic")  # never opened, even with a format named
    assert reasons["pipe.jsonl"].startswith("a FIFO (named pipe)")
    assert reasons["loop.jsonl"] == "a symbolic link that loops or points to nothing"
    assert reasons["gone.jsonl"] == "a symbolic link that loops or points to nothing"
    result = CliRunner().invoke(app, ["validate", str(folder)])
    assert result.exit_code == 2, result.output
    for name in ("pipe.jsonl", "loop.jsonl", "gone.jsonl"):
        assert name in result.output
    assert "3 unreadable" in result.output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_cost_names_the_entries_it_could_not_read(tmp_path: Path) -> None:
    """``cost`` on a folder: the session that reads is priced, and each odd entry is named as not
    read, with why (a FIFO was dropped from its listing without a word before); some files not
    read is exit 1."""
    folder = _folder(tmp_path)
    result = CliRunner().invoke(app, ["cost", str(folder)])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    for name in ("pipe.jsonl", "loop.jsonl", "gone.jsonl"):
        assert name in text
    assert "not read (a FIFO (named pipe)" in text
