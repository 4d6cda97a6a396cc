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


LONE_SURROGATE = (
    '{"model": "claude-sonnet-4-5", "system": "s", "messages": ['
    '{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t\\udc00", '
    '"content": "x"}]}]}\n'
)
"""A request whose orphan tool result (a validation finding, printed with its id) carries a lone
surrogate: legal in a JSON escape, not encodable as UTF-8."""


@pytest.mark.parametrize("command", ["inspect", "replay", "validate", "cost"])
def test_a_lone_surrogate_is_printed_escaped(tmp_path: Path, command: str) -> None:
    """Found by the fuzz run on a Codex rollout: a strict UTF-8 stdout (a pipe under a test
    runner) failed on the character after the command had done its work, and rich's console kept
    the unwritten text, so every later command of the process failed too."""
    from typer.testing import CliRunner  # noqa: PLC0415

    from contextkit.cli import app  # noqa: PLC0415

    path = tmp_path / "surrogate.jsonl"
    path.write_text(LONE_SURROGATE, encoding="utf-8")
    runner = CliRunner()
    for _ in range(2):  # the second run sees no text left over from the first
        result = runner.invoke(app, [command, str(path)])
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(
            result.exception
        )
        assert "\udc00" not in result.output
    if command == "validate":
        assert "t\\udc00" in result.output
