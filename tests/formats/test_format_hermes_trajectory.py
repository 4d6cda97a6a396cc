"""Hermes ShareGPT trajectories: hand-built lines as ``convert_to_trajectory_format`` writes them
(hermes-agent 0.19.0 on PyPI); no corpus file exists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import detect, load
from contextkit.formats.hermes.trajectory import READER, SYSTEM_OPENING
from contextkit.messages import TextBlock
from corpus_paths import corpus_files

pytestmark = pytest.mark.filterwarnings("error")

SYSTEM = SYSTEM_OPENING + " You are provided with function signatures within <tools> </tools>"
CALL = (
    '<think>\n</think>\n<tool_call>\n{"name": "terminal", "arguments": {"command": "ls"}}'
    "\n</tool_call>"
)
RESULT = (
    '<tool_response>\n{"tool_call_id": "c1", "name": "terminal", "content": "a.py"}'
    "\n</tool_response>"
)


def _entry(*turns: tuple[str, str], completed: bool = True) -> dict[str, Any]:
    return {
        "conversations": [{"from": f, "value": v} for f, v in turns],
        "timestamp": "2026-01-01T00:00:00",
        "model": "anthropic/claude-sonnet-4",
        "completed": completed,
    }


def _write(path: Path, *lines: dict[str, Any] | str) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


GOOD = _entry(
    ("system", SYSTEM),
    ("human", "list the files"),
    ("gpt", CALL),
    ("tool", RESULT),
    ("human", "and then?"),
    ("gpt", "<think>\n</think>\nThere is a.py."),
)


def test_one_session_per_line_one_call_per_gpt_turn(tmp_path: Path) -> None:
    path = _write(tmp_path / "trajectory_samples.jsonl", GOOD, GOOD)
    assert detect(path).name == "hermes-trajectory"
    first, second = load(path).sessions
    assert first.session_id == "trajectory_samples:1"
    assert second.session_id == "trajectory_samples:2"
    call, answer = first.calls
    assert call.request.system == SYSTEM
    assert call.stop_reason == "tool_use"
    assert answer.stop_reason == "end_turn"
    assert call.usage is None
    assert call.model == "anthropic/claude-sonnet-4"
    _user, reply, joined = answer.request.messages
    assert reply.role == "assistant"
    assert joined.blocks == (TextBlock(text=RESULT), TextBlock(text="and then?"))
    assert not first.prefix_known


def test_other_file_names_need_hermes_system_prompt(tmp_path: Path) -> None:
    path = _write(tmp_path / "batch.jsonl", GOOD)
    assert READER.sniff(path, path.read_text())
    plain = _entry(("human", "hi"), ("gpt", "hello"))
    other = _write(tmp_path / "sharegpt.jsonl", plain)
    assert not READER.sniff(other, other.read_text())


def test_bad_line_is_an_error_and_a_skip_leniently(tmp_path: Path) -> None:
    bad = _entry(("system", SYSTEM), ("robot", "?"))
    path = _write(tmp_path / "failed_trajectories.jsonl", GOOD, bad, "{oops", GOOD)
    with pytest.raises(FormatError, match="unknown 'from'") as error:
        load(path)
    assert error.value.line == 2
    loaded = load(path, lenient=True)
    assert [s.line for s in loaded.skipped] == [2, 3]
    assert len(loaded.sessions) == 2


@pytest.mark.corpus
def test_hermes_trajectory_reader_claims_no_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert not READER.sniff(path, head), path
