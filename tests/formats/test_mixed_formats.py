"""A file of mixed formats is an error saying which lines are which; a few stray records of
another format among one format's records are an error naming them (strict) or skipped records
(lenient), and the rest reads as that format. Files built from corpus records: a Claude Code
transcript, a Codex rollout, and the transcript's requests converted to the request forms."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contextkit.errors import FormatError, MixedFormatError
from contextkit.formats import detect, load
from contextkit.formats.convert import convert_file

TRANSCRIPT = "spotter/tool_heavy.jsonl"
ROLLOUT = "codemie-codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"


def _lines(path: Path, count: int) -> list[bytes]:
    lines = [line for line in path.read_bytes().splitlines(keepends=True) if line.strip()]
    assert len(lines) >= count
    return lines[:count]


def _transcript(corpus: Path, count: int = 36) -> list[bytes]:
    return _lines(corpus / TRANSCRIPT, count)


def _rollout(corpus: Path, count: int = 40) -> list[bytes]:
    return _lines(corpus / ROLLOUT, count)


def _requests(corpus: Path, target: str) -> list[bytes]:
    converted = convert_file(corpus / TRANSCRIPT, target)  # type: ignore[arg-type]
    lines = [json.dumps(r).encode() + b"\n" for r in converted.requests]
    # the first call of a conversation may be a plain text body both request forms write alike
    return [line for line in lines if b'"tool' in line or b'"system' in line or b'"input"' in line]


def _write(tmp_path: Path, lines: list[bytes], name: str = "mixed.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.corpus
@pytest.mark.parametrize("lenient", [False, True])
def test_half_transcript_half_rollout_is_an_error_naming_the_lines(
    corpus: Path, tmp_path: Path, lenient: bool
) -> None:
    cc, cx = _transcript(corpus), _rollout(corpus)
    total = len(cc) + len(cx)
    for lines, expected in (
        (cc + cx, f"lines 1-{len(cc)} are claude-code, lines {len(cc) + 1}-{total} are codex"),
        (cx + cc, f"lines 1-{len(cx)} are codex, lines {len(cx) + 1}-{total} are claude-code"),
    ):
        path = _write(tmp_path, lines)
        with pytest.raises(MixedFormatError) as info:
            load(path, lenient=lenient)
        message = str(info.value)
        assert str(path) in message
        assert expected in message, message
        assert f"({len(cx)} codex, {len(cc)} claude-code)" in message


@pytest.mark.corpus
@pytest.mark.parametrize("target", ["openai-responses", "openai-chat", "anthropic"])
def test_transcript_and_request_records_are_an_error(
    corpus: Path, tmp_path: Path, target: str
) -> None:
    requests = _requests(corpus, target)
    assert len(requests) >= 3
    cc = _transcript(corpus, 12)
    path = _write(tmp_path, cc + requests)
    with pytest.raises(MixedFormatError) as info:
        load(path, lenient=True)
    first = len(cc) + 1
    assert f"lines {first}-{first + len(requests) - 1} are {target}" in str(info.value)
    path = _write(tmp_path, requests + cc)
    with pytest.raises(MixedFormatError, match=f"lines 1-{len(requests)} are {target}"):
        load(path)


@pytest.mark.corpus
def test_interleaved_records_are_listed_run_by_run(corpus: Path, tmp_path: Path) -> None:
    cc, cx = _transcript(corpus, 6), _rollout(corpus, 6)
    lines = [line for pair in zip(cc, cx, strict=True) for line in pair]
    with pytest.raises(MixedFormatError) as info:
        load(_write(tmp_path, lines))
    assert "line 1 is claude-code, line 2 is codex, line 3 is claude-code" in str(info.value)
    assert "more runs" in str(info.value)


@pytest.mark.corpus
@pytest.mark.parametrize("at", [0, 5, 39])
def test_a_stray_transcript_line_in_a_rollout(corpus: Path, tmp_path: Path, at: int) -> None:
    cx = _rollout(corpus)
    clean = load(_write(tmp_path, cx, "clean.jsonl"), lenient=True)
    stray = _transcript(corpus, 3)[2]
    path = _write(tmp_path, [*cx[:at], stray, *cx[at:]])
    assert detect(path).name == "codex"
    with pytest.raises(FormatError) as info:
        load(path)
    assert not isinstance(info.value, MixedFormatError)
    assert info.value.line == at + 1
    assert "claude-code record(s) among codex records" in str(info.value)
    loaded = load(path, lenient=True)
    assert loaded.format == "codex"
    assert loaded.calls == clean.calls
    assert [(r.line, r.reason) for r in loaded.skipped] == [
        (at + 1, "a claude-code record among codex records")
    ]


@pytest.mark.corpus
def test_two_stray_rollout_lines_in_a_transcript(corpus: Path, tmp_path: Path) -> None:
    cc = _transcript(corpus, 39)
    clean = load(_write(tmp_path, cc, "clean.jsonl"), lenient=True)
    cx = _rollout(corpus, 2)
    path = _write(tmp_path, [*cc[:10], cx[0], *cc[10:20], cx[1], *cc[20:]])
    said = r"2 codex record\(s\) among claude-code records \(line\(s\) 11, 22\)"
    with pytest.raises(FormatError, match=said):
        load(path)
    loaded = load(path, lenient=True)
    assert loaded.format == "claude-code"
    assert loaded.calls == clean.calls
    assert dict(loaded.sessions[0].set_aside) == dict(clean.sessions[0].set_aside)
    assert [r.line for r in loaded.skipped] == [11, 22]


@pytest.mark.corpus
def test_the_cli_exits_2_on_a_mixed_file(corpus: Path, tmp_path: Path) -> None:
    path = _write(tmp_path, _transcript(corpus) + _rollout(corpus))
    for args in (["inspect", str(path)], ["inspect", "--lenient", str(path)]):
        done = subprocess.run(
            [sys.executable, "-c", "from contextkit.cli import main; main()", *args],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        said = " ".join(done.stderr.split())  # the console wraps long lines
        assert "lines 1-36 are claude-code, lines 37-76 are codex" in said, said
