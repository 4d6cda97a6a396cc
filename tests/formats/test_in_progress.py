"""A file whose last line is unfinished (a session still being written, or one that crashed) is
read up to the line before it, strict or lenient, and the cut line is named: never an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.formats import load
from contextkit.formats._io import IN_PROGRESS


def _session_lines(corpus: Path) -> list[bytes]:
    return (corpus / "spotter" / "subagent.jsonl").read_bytes().splitlines()


@pytest.mark.corpus
@pytest.mark.parametrize("lenient", [False, True])
def test_an_unfinished_last_line_is_read_up_to_it(
    corpus: Path, tmp_path: Path, lenient: bool
) -> None:
    lines = _session_lines(corpus)
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"\n".join(lines[:-1]) + b"\n")
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"\n".join(lines[:-1]) + b"\n" + lines[-1][: len(lines[-1]) // 2])
    read, expected = load(cut, lenient=lenient), load(whole, lenient=lenient)
    assert [len(s.calls) for s in read.sessions] == [len(s.calls) for s in expected.sessions]
    (skipped,) = read.skipped
    assert (skipped.line, skipped.reason) == (len(lines), IN_PROGRESS)


def test_a_whole_last_line_without_a_newline_is_read(tmp_path: Path) -> None:
    """Only a cut record is skipped: a complete one (or two written back to back) is read."""
    record = {
        "model": "claude-sonnet-4-5",
        "system": "s",
        "messages": [{"role": "user", "content": "hi"}],
    }
    path = tmp_path / "bodies.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(record) + json.dumps(record))
    loaded = load(path)
    assert len(loaded.sessions[0].calls) == 3
    assert loaded.skipped == ()
    path.write_text(json.dumps(record) + "\n" + json.dumps(record)[:30])
    loaded = load(path)
    assert len(loaded.sessions[0].calls) == 1
    assert [s.reason for s in loaded.skipped] == [IN_PROGRESS]


@pytest.mark.corpus
@pytest.mark.parametrize("command", ["cost", "inspect", "compare", "validate"])
def test_the_commands_read_a_folder_with_a_session_in_progress(
    corpus: Path, tmp_path: Path, command: str
) -> None:
    lines = _session_lines(corpus)
    (tmp_path / "running.jsonl").write_bytes(b"\n".join(lines[:-1]) + b"\n" + lines[-1][:50])
    args = [command, str(tmp_path)] + (["-s", "none"] if command == "compare" else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "unfinished" in " ".join(result.output.split())
