"""Exit codes of the commands that read many files: 0 every file read, 1 some could not be read
(each named, the rest reported), 2 none could be read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from contextkit.cli import app

runner = CliRunner()


def _folder(corpus: Path, tmp_path: Path) -> Path:
    """A folder with a Claude Code session whose line 3 is damaged, and a sound one."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    source = corpus / "spotter" / "tool_heavy.jsonl"
    shutil.copy(source, folder / "good.jsonl")
    lines = source.read_text(encoding="utf-8").split("\n")
    lines[2] = '{"type": "assistant", "message": {"role": "assistant", "content": 7}'
    (folder / "bad.jsonl").write_text("\n".join(lines), encoding="utf-8")
    return folder


def _said(result: Result) -> str:
    return " ".join((result.stdout + result.stderr).split())


@pytest.mark.corpus
@pytest.mark.parametrize("command", ["inspect", "compare", "cost", "usage"])
def test_exit_codes_tell_all_some_and_none_read(corpus: Path, tmp_path: Path, command: str) -> None:
    folder = _folder(corpus, tmp_path)
    # Some unreadable: exit 1, the file named with why, the rest reported.
    result = runner.invoke(app, [command, "--json", str(folder)])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    if command in ("inspect", "usage"):
        assert len(doc["sessions"] if command == "inspect" else doc["rows"]) == 1
        (unread,) = doc["not_read"]
        assert unread["path"].endswith("bad.jsonl")
        assert "bad.jsonl:3:" in unread["error"]
        assert "--lenient" in unread["error"]
    elif command == "compare":
        assert doc["results"]
        assert [e["path"].endswith("bad.jsonl") for e in doc["errors"]] == [True]
    else:
        assert doc["tickets"] == 1
        assert any("not read" in n and "bad.jsonl" in n for n in doc["notes"])
    shown = runner.invoke(app, [command, str(folder)])
    assert shown.exit_code == 1
    assert "bad.jsonl" in _said(shown)  # cost: in its notes
    # All read (leniently: the damaged record skipped and listed): exit 0.
    lenient = runner.invoke(app, [command, "--lenient", str(folder)])
    assert lenient.exit_code == 0, lenient.output
    assert "bad.jsonl:3" in _said(lenient)
    # None read: exit 2.
    (folder / "good.jsonl").unlink()
    nothing = runner.invoke(app, [command, str(folder)])
    assert nothing.exit_code == 2, nothing.output
    assert "bad.jsonl" in _said(nothing)


@pytest.mark.corpus
def test_report_some_unreadable_is_exit_1(corpus: Path, tmp_path: Path) -> None:
    folder = _folder(corpus, tmp_path)
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(folder), "-o", str(out), "--json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["sessions"] >= 1
    assert [f["path"].endswith("bad.jsonl") for f in doc["failures"]] == [True]
    assert out.exists()


@pytest.mark.corpus
@pytest.mark.parametrize("command", ["inspect", "compare", "cost", "usage", "report"])
def test_a_half_written_transcript_is_read_up_to_its_last_full_line(
    corpus: Path, tmp_path: Path, command: str
) -> None:
    """A session still being written (its last line cut, no newline) beside a sound one: exit 0,
    strict as well, the file read up to the line before and named in a note (report: it listed
    the skipped record as a file not read, and now would have exited 1)."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(corpus / "packmind-claude" / "s-cc-3a3c81d623-0.jsonl", folder / "done.jsonl")
    data = (corpus / "spotter" / "tool_heavy.jsonl").read_bytes().rstrip(b"\n")
    cut = data.rfind(b"\n") + 1
    (folder / "running.jsonl").write_bytes(data[: cut + 60])
    extra = ["-o", str(tmp_path / "r.html")] if command == "report" else []
    result = runner.invoke(app, [command, str(folder), *extra])
    assert result.exit_code == 0, result.output
    if command != "report":
        assert "the last line is unfinished (in progress" in _said(result)
    else:
        page = (tmp_path / "r.html").read_text(encoding="utf-8")
        assert "Records skipped (1)" in page
        assert "running.jsonl" in page


@pytest.mark.corpus
def test_a_fit_names_the_files_it_could_not_read(corpus: Path, tmp_path: Path) -> None:
    """``cost --fit``: a file left out of the fit is named on stderr and the exit code is 1 (it
    was dropped without a word once unreadable files stopped stopping the command)."""
    folder = _folder(corpus, tmp_path)
    profile = tmp_path / "p.toml"
    result = runner.invoke(app, ["cost", "--fit", str(folder), "-o", str(profile)])
    assert result.exit_code == 1, result.output
    assert "not read" in _said(result)
    assert "bad.jsonl" in _said(result)
    assert profile.exists()
