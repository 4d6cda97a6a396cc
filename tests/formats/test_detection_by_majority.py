"""Format detection decides on the file's records, not on one line: a Claude Code-looking line
among the first records of another JSON-lines format leaves the file to its own reader, and is
never read as a transcript of 0 calls.

A file whose very first line is the odd one goes to its own reader when it is a Codex rollout or
a request file (the formats :mod:`contextkit.formats._mixed` tells apart vote over the first
records), with the transcript line a skipped record; a claude-trace log, a pi session or an
OpenHands evaluation file is then an unknown format (an error naming the file), never a
transcript."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextkit.errors import UnknownFormatError
from contextkit.formats import detect, load
from contextkit.formats.convert import convert_file
from contextkit.wire import TARGETS

OTHERS = (
    "claude-trace-lemmy/test-traffic-part1.jsonl",
    "codemie-codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    "localpush-codex/rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl",
    "openhands-eval/multi_swe_bench-example-output.jsonl",
    "pi-mono/large-session.jsonl",
)
TRANSCRIPT = "spotter/tool_heavy.jsonl"


def _claude_code_line(corpus: Path) -> bytes:
    lines = (corpus / TRANSCRIPT).read_bytes().splitlines(keepends=True)
    return next(line for line in lines if json.loads(line).get("type") == "user")


def _with_line_at(data: bytes, line: bytes, at: int) -> bytes:
    lines = data.splitlines(keepends=True)
    return b"".join([*lines[:at], line, *lines[at:]])


def _first_lines(path: Path, count: int = 12) -> bytes:
    return b"".join(path.read_bytes().splitlines(keepends=True)[:count])


@pytest.mark.corpus
@pytest.mark.parametrize("name", OTHERS)
@pytest.mark.parametrize("at", [1, 3, 6])
def test_one_transcript_line_does_not_take_a_file_over(
    corpus: Path, tmp_path: Path, name: str, at: int
) -> None:
    source = corpus / name
    path = tmp_path / source.name
    path.write_bytes(_with_line_at(_first_lines(source), _claude_code_line(corpus), at))
    assert detect(path).name == detect(source).name


@pytest.mark.corpus
@pytest.mark.parametrize("name", OTHERS)
def test_a_transcript_line_first_is_never_a_transcript(
    corpus: Path, tmp_path: Path, name: str
) -> None:
    """Its own format or an unknown format (see the module docstring), never claude-code."""
    source = corpus / name
    path = tmp_path / source.name
    path.write_bytes(_with_line_at(_first_lines(source), _claude_code_line(corpus), 0))
    own = detect(source).name
    if own != "codex":
        with pytest.raises(UnknownFormatError):
            detect(path)
        return
    assert detect(path).name == own
    assert [(r.line, r.reason) for r in load(path, lenient=True).skipped] == [
        (1, "a claude-code record among codex records")
    ]


@pytest.mark.corpus
@pytest.mark.parametrize("target", TARGETS)
def test_one_transcript_line_in_converted_requests(
    corpus: Path, tmp_path: Path, target: str
) -> None:
    """Anthropic, Responses and Chat request files (written by ``convert``): their own reader,
    with the transcript line a skipped record."""
    converted = convert_file(corpus / TRANSCRIPT, target)  # type: ignore[arg-type]
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(json.dumps(r) + "\n" for r in converted.requests), encoding="utf-8")
    path = tmp_path / "requests.jsonl"
    path.write_bytes(_with_line_at(clean.read_bytes(), _claude_code_line(corpus), 1))
    assert detect(path).name == detect(clean).name == target
    loaded = load(path, lenient=True)
    assert len(loaded.sessions[0].calls) == len(converted.requests)
    assert [(r.line, r.reason) for r in loaded.skipped] == [
        (2, f"a claude-code record among {target} records")
    ]


@pytest.mark.corpus
def test_a_transcript_with_a_list_valued_type_is_still_a_transcript(
    corpus: Path, tmp_path: Path
) -> None:
    lines = (corpus / TRANSCRIPT).read_bytes().splitlines(keepends=True)
    record = json.loads(lines[2])
    record["type"] = [record["type"]]
    lines[2] = json.dumps(record).encode() + b"\n"
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines))
    assert detect(path).name == "claude-code"
