"""``--format NAME`` forces a reader in the commands that read session files; an unknown name
is an error listing the known ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextkit.cli import app

BODY = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("command", ["validate", "inspect", "replay", "cost"])
def test_unknown_format_lists_the_known_ones(command: str, tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(BODY) + "\n")
    result = CliRunner().invoke(app, [command, str(path), "--format", "nope"])
    assert result.exit_code == 2
    assert "unknown format 'nope'" in result.output
    assert "anthropic" in result.output
    assert "openai-chat" in result.output


def test_format_forces_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"  # plain text: detection gives openai-chat
    path.write_text(json.dumps(BODY) + "\n")
    detected = CliRunner().invoke(app, ["validate", str(path), "--json"])
    forced = CliRunner().invoke(app, ["validate", str(path), "--json", "--format", "anthropic"])
    assert json.loads(detected.stdout)["files"][0]["format"] == "openai-chat"
    assert json.loads(forced.stdout)["files"][0]["format"] == "anthropic"
