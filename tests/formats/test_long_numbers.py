"""A JSON number longer than Python's integer-string limit (4,300 digits) is hostile input like any
other: a clear error naming file and line when read strictly, a reported skip when lenient, and no
traceback from any command (it raised an uncaught ``ValueError`` in ``load_json`` and in the
first-line check before)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from contextkit.cli import main
from contextkit.errors import FormatError
from contextkit.formats import load

HUGE = "9" * 5_000


def _record(i: int) -> dict[str, object]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": f"question {i}"}],
    }


def _requests(tmp_path: Path, bad_line: int) -> Path:
    lines = [json.dumps(_record(i)) for i in range(4)]
    lines[bad_line - 1] = lines[bad_line - 1].replace('"max_tokens": 100', f'"max_tokens": {HUGE}')
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_jsonl_line_with_a_huge_number_is_named(tmp_path: Path) -> None:
    path = _requests(tmp_path, 3)
    with pytest.raises(FormatError) as caught:
        load(path)
    assert caught.value.line == 3
    assert "more digits than Python reads" in str(caught.value)
    read = load(path, lenient=True)
    assert [s.line for s in read.skipped] == [3]
    assert sum(len(s.calls) for s in read.sessions) == 3


def test_a_huge_number_on_the_first_line_is_named_by_detection(tmp_path: Path) -> None:
    """The first record is what detection reads: then no reader can claim the file, and the
    error says why, strict or lenient (as for any first line that does not parse)."""
    path = _requests(tmp_path, 1)
    for lenient in (False, True):
        with pytest.raises(FormatError) as caught:
            load(path, lenient=lenient)
        assert caught.value.line == 1
        assert "more digits than Python reads" in str(caught.value)


def test_a_json_document_with_a_huge_number_is_named(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_text('{\n  "steps": [\n    ' + HUGE + "\n  ]\n}\n", encoding="utf-8")
    with pytest.raises(FormatError) as caught:
        load(path)
    assert caught.value.line == 3
    assert "more digits than Python reads" in str(caught.value)


@pytest.mark.parametrize("command", ["inspect", "validate", "cost", "compare"])
def test_no_command_prints_a_traceback(
    tmp_path: Path,
    command: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _requests(tmp_path, 1)
    monkeypatch.setattr(sys, "argv", ["contextkit", command, str(path)])
    with pytest.raises(SystemExit) as stopped:
        main()
    shown = capsys.readouterr()
    assert stopped.value.code == 2
    assert "Traceback" not in shown.out + shown.err
    assert "more digits than Python reads" in shown.err
