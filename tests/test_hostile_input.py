"""Hostile input through every command that reads files: a read or a clean error naming the file
(exit 2), never a traceback (the boundary in ``contextkit.formats.load``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from contextkit.cli import main
from contextkit.errors import ContextkitError
from contextkit.formats import load

CASES = {
    "deep.json": "[" * 5000 + "]" * 5000,
    "deep.jsonl": "[" * 5000 + "]" * 5000 + "\n",
    "list-type.jsonl": json.dumps({"type": ["user"], "uuid": "a", "message": {"role": "user"}})
    + "\n",
    "list-role.json": json.dumps({"messages": [{"role": ["user"], "content": "x"}]}),
    "dict-usage.jsonl": json.dumps(
        {
            "type": "assistant",
            "uuid": "a",
            "sessionId": "s",
            "message": {
                "role": "assistant",
                "id": "m",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "hi"}],
                "usage": {"input_tokens": {"a": 1}, "output_tokens": 5},
            },
        }
    )
    + "\n",
}


@pytest.fixture(params=sorted(CASES))
def hostile(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    name = str(request.param)
    path = tmp_path / name
    path.write_text(CASES[name])
    return path


def test_load_reads_or_names_the_file(hostile: Path) -> None:
    for lenient in (False, True):
        try:
            load(hostile, lenient=lenient)
        except ContextkitError as exc:
            message = str(exc)
        else:
            continue
        assert str(hostile) in message


def _run(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """The command as a user runs it: through ``contextkit.cli.main`` (errors -> exit 2)."""
    monkeypatch.setattr(sys, "argv", ["contextkit", *argv])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 0), captured.out + captured.err


@pytest.mark.parametrize("command", ["inspect", "replay", "validate", "cost"])
def test_no_command_prints_a_traceback(
    hostile: Path,
    command: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, output = _run([command, str(hostile)], monkeypatch, capsys)
    assert "Traceback" not in output
    if code != 0:
        assert code in (1, 2)
        assert hostile.name in "".join(output.split())  # named, however the console wrapped it
