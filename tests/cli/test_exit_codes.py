"""Exit codes of the commands that read many files: 0 every file read, 1 some could not be read
(each named, the rest reported), 2 none could be read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextkit.cli import app

runner = CliRunner()


def _folder(corpus: Path, tmp_path: Path, *, good: bool = True) -> Path:
    """A folder with a Claude Code session whose line 3 is damaged, and (``good``) a sound one."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    source = corpus / "spotter" / "tool_heavy.jsonl"
    if good:
        shutil.copy(source, folder / "good.jsonl")
    lines = source.read_text(encoding="utf-8").split("\n")
    lines[2] = '{"type": "assistant", "message": {"role": "assistant", "content": 7}'
    (folder / "bad.jsonl").write_text("\n".join(lines), encoding="utf-8")
    return folder


@pytest.mark.corpus
@pytest.mark.parametrize("command", ["inspect", "compare", "cost"])
def test_some_unreadable_is_exit_1_with_the_rest_reported(
    corpus: Path, tmp_path: Path, command: str
) -> None:
    folder = _folder(corpus, tmp_path)
    result = runner.invoke(app, [command, "--json", str(folder)])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    if command == "inspect":
        assert len(doc["sessions"]) == 1
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
    assert "bad.jsonl" in " ".join((shown.stdout + shown.stderr).split())  # cost: in its notes


@pytest.mark.corpus
@pytest.mark.parametrize("command", ["inspect", "compare", "cost"])
def test_nothing_read_is_exit_2(corpus: Path, tmp_path: Path, command: str) -> None:
    folder = _folder(corpus, tmp_path, good=False)
    result = runner.invoke(app, [command, str(folder)])
    assert result.exit_code == 2, result.output
    assert "bad.jsonl" in " ".join(result.stderr.split())


@pytest.mark.corpus
@pytest.mark.parametrize("command", ["inspect", "compare", "cost"])
def test_all_read_is_exit_0_and_lenient_reads_the_damaged_file(
    corpus: Path, tmp_path: Path, command: str
) -> None:
    folder = _folder(corpus, tmp_path)
    result = runner.invoke(app, [command, "--lenient", str(folder)])
    assert result.exit_code == 0, result.output
    said = " ".join((result.stdout + result.stderr).split())
    assert "bad.jsonl:3" in said  # its skipped record, listed


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
