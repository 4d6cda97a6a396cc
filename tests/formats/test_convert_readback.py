"""Every ``contextkit convert`` output is read back by ``load``, format detected: the calls it
holds are the requests written, for every ``--to`` target, on corpus files whose first call is
neutral (no system prompt: Claude Code, claude-trace, a one-call plain text session) or that
need the whole first line past the sniffing head (OpenHands)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextkit.formats import detect, load
from contextkit.formats.convert import convert_file
from contextkit.wire import TARGETS, Target, to_format

FILES = (
    "spotter/tool_heavy.jsonl",
    "spotter/short.jsonl",
    "claude-trace-lemmy/test-traffic-part1.jsonl",
    "openhands/basic.json",
    "codemie-codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
)
AMBIGUOUS = "openai-chat"
"""The reader of plain text bodies only (no mark of either request form): they read alike."""


@pytest.mark.corpus
@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("target", TARGETS)
def test_convert_output_is_detected_and_read_back(
    corpus: Path, name: str, target: Target, tmp_path: Path
) -> None:
    converted = convert_file(corpus / name, target)
    if not converted.requests:
        pytest.skip("no model calls in this file")
    out = tmp_path / "out.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in converted.requests), encoding="utf-8")
    assert detect(out).name in (target, AMBIGUOUS)
    loaded = load(out)
    calls = [c for s in loaded.sessions for c in s.calls]
    assert len(calls) == len(converted.requests)
    for call, request in zip(calls, converted.requests, strict=True):
        back = json.loads(json.dumps(to_format(call.request, target)[0]))
        assert back == {k: v for k, v in request.items() if v is not None or k in back}
