"""Token counts in usage fields: non-negative integers, else an error naming the field (readers
turn it into an error naming file and line, or a skipped record); deep nesting named by line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from contextkit.errors import FormatError
from contextkit.formats import load
from contextkit.messages import token_count
from contextkit.wire import chat_usage, usage_from_responses

BAD = [math.inf, math.nan, -1, 2.5, "12", [3], {"n": 1}, True]


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_a_bad_count_is_an_error_naming_the_field(value: object) -> None:
    with pytest.raises(ValueError, match="input_tokens must be a non-negative integer"):
        token_count(value, "input_tokens")
    with pytest.raises(ValueError, match="output_tokens"):
        usage_from_responses({"input_tokens": 1, "output_tokens": value})
    with pytest.raises(ValueError, match="prompt_tokens"):
        chat_usage({"prompt_tokens": value})


def test_good_counts() -> None:
    assert token_count(None, "x") is None
    assert token_count(7, "x") == 7
    assert token_count(7.0, "x") == 7
    assert usage_from_responses({"input_tokens": 10, "output_tokens": 2}).input_tokens == 10


def test_a_deep_line_is_named(tmp_path: Path) -> None:
    message = {"role": "user", "content": "hi"}
    good = {"type": "user", "uuid": "a", "sessionId": "s", "parentUuid": None, "message": message}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(good) + "\n" + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(FormatError, match=r"t.jsonl:2: nested deeper"):
        load(path, format="claude-code")
    loaded = load(path, format="claude-code", lenient=True)
    assert [(s.line, s.reason) for s in loaded.skipped] == [
        (2, "nested deeper than the JSON parser can read")
    ]


def test_a_deep_document_is_named_by_line(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text('{"messages": [\n' + "[" * 50_000 + "]" * 50_000 + "]}")
    with pytest.raises(FormatError, match=r"session.json:2: nested deeper"):
        load(path, format="openai-chat")
