"""claude-trace raw request/response logs."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import detect, load
from contextkit.formats.anthropic import READER as ANTHROPIC_READER
from contextkit.formats.claude_trace import READER, messages_endpoint
from contextkit.messages import TextBlock, ToolUseBlock
from contextkit.session import Usage
from contextkit.wire import to_anthropic_request

TRACE = "claude-trace-lemmy/test-traffic-part1.jsonl"
URL = "https://api.anthropic.com/v1/messages?beta=true"


@pytest.mark.corpus
def test_recorded_trace_reads_as_one_session_of_34_calls(corpus: Path) -> None:
    path = corpus / TRACE
    assert detect(path).name == "claude-trace"
    loaded = load(path)
    assert loaded.format == "claude-trace"
    assert loaded.skipped == ()
    (session,) = loaded.sessions
    assert len(session.calls) == 34
    assert session.set_aside == {}
    assert session.notes == ()
    models = Counter(c.model for c in session.calls)
    assert models == {"claude-3-5-haiku-20241022": 21, "claude-sonnet-4-20250514": 13}
    assert Counter(c.stop_reason for c in session.calls) == {
        "max_tokens": 15,
        "end_turn": 8,
        "tool_use": 11,
    }


@pytest.mark.corpus
def test_recorded_calls_carry_exact_request_time_usage_and_response(corpus: Path) -> None:
    raw = [json.loads(line) for line in (corpus / TRACE).read_text(encoding="utf-8").splitlines()]
    calls = load(corpus / TRACE).sessions[0].calls
    for number, (pair, call) in enumerate(zip(raw, calls, strict=True), start=1):
        assert call.line == number
        assert call.exact
        assert to_anthropic_request(call.request) == pair["request"]["body"]
        assert call.timestamp == datetime.fromtimestamp(pair["request"]["timestamp"], tz=UTC)
        assert call.request_id == pair["response"]["headers"]["request-id"]
        assert call.usage is not None
        assert call.response is not None
        if pair["response"].get("body"):
            assert call.usage == Usage.from_anthropic(pair["response"]["body"]["usage"])
    first_sonnet = next(c for c in calls if c.model == "claude-sonnet-4-20250514")
    assert first_sonnet.usage == Usage(input_tokens=4, cache_write_5m=15032, output_tokens=174)
    blocks = first_sonnet.response.blocks if first_sonnet.response else ()
    assert isinstance(blocks[0], TextBlock)
    assert isinstance(blocks[1], ToolUseBlock)
    assert blocks[1].name == "TodoWrite"
    assert isinstance(blocks[1].input, dict)
    assert len(blocks[1].input["todos"]) == 2
    cached = sum(c.usage.cache_read for c in calls if c.usage)
    assert cached > 0


# --------------------------------------------------------------------------------------------------
# Hand-written traces


def body(text: str = "hi") -> dict[str, Any]:
    return {
        "model": "claude-x",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "s"}],
        "messages": [{"role": "user", "content": text}],
    }


def pair(
    response: dict[str, Any] | None,
    *,
    url: str = URL,
    request_body: Any = None,
    timestamp: Any = 1748554704.5,
    **extra: Any,
) -> dict[str, Any]:
    request = {
        "timestamp": timestamp,
        "method": "POST",
        "url": url,
        "headers": {},
        "body": body() if request_body is None else request_body,
    }
    return {"request": request, "response": response, "logged_at": "2025-05-29T23:38:25", **extra}


def ok_json(text: str = "hello") -> dict[str, Any]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x-served",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "cache_read_input_tokens": 50, "output_tokens": 2},
    }
    return {
        "timestamp": 1.0,
        "status_code": 200,
        "headers": {"Request-Id": "req_1"},
        "body": message,
    }


def ok_stream() -> dict[str, Any]:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_2",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [],
                "stop_reason": None,
                "usage": {
                    "input_tokens": 7,
                    "cache_creation_input_tokens": 900,
                    "output_tokens": 1,
                },
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "Bash", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"command": "ls"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 30},
        },
        {"type": "message_stop"},
    ]
    raw = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return {"timestamp": 1.0, "status_code": 200, "headers": {}, "body": None, "body_raw": raw}


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def dump(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8")


def test_mixed_trace_calls_set_asides_and_failures(tmp_path: Path) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    stream_error = ok_stream()
    stream_error["body_raw"] = stream_error["body_raw"].replace(
        "event: message_stop",
        f"event: error\ndata: {json.dumps(overloaded)}\n\nevent: message_stop",
    )
    bedrock = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A1/invoke"
    lines = [
        pair(ok_json()),
        pair(ok_stream()),
        pair(
            {"status_code": 200, "body": {"input_tokens": 5}},
            url=URL.replace("messages", "messages/count_tokens"),
        ),
        pair({"timestamp": 2.0, "status_code": 529, "headers": {}, "body": overloaded}),
        pair(None, note="ORPHANED_REQUEST - No matching response received"),
        pair(stream_error),
        pair({**ok_json(), "body": {**ok_json()["body"], "model": None}}, url=bedrock),
    ]
    path = write_lines(tmp_path / "log.jsonl", [dump(line) for line in lines])
    assert detect(path).name == "claude-trace"
    (session,) = load(path).sessions
    assert len(session.calls) == 6  # failed and orphaned requests are calls, count_tokens is not
    assert session.set_aside == {"POST /v1/messages/count_tokens": 1}
    first, streamed, failed, orphan, broken, on_bedrock = session.calls
    assert first.model == "claude-x-served"
    assert first.request_id == "req_1"
    assert first.usage == Usage(input_tokens=3, cache_read=50, output_tokens=2)
    assert streamed.usage == Usage(input_tokens=7, cache_write_5m=900, output_tokens=30)
    assert streamed.response is not None
    assert streamed.response.blocks == (ToolUseBlock(id="t", name="Bash", input={"command": "ls"}),)
    assert streamed.stop_reason == "tool_use"
    for call in (failed, orphan, broken):
        assert call.response is None
        assert call.usage is None
        assert call.stop_reason is None
    assert on_bedrock.model == "anthropic.claude-v2:1"
    assert [note.split(":")[0] for note in session.notes] == ["line 4", "line 5", "line 6"]
    assert "HTTP 529 (overloaded_error: Overloaded)" in session.notes[0]
    assert "ORPHANED_REQUEST" in session.notes[1]
    assert "overloaded_error" in session.notes[2]
    assert first.timestamp == datetime.fromtimestamp(1748554704.5, tz=UTC)


def _corrupt(tmp_path: Path) -> Path:
    good = dump(pair(ok_json()))
    bad_stream = ok_stream()
    bad_stream["body_raw"] = bad_stream["body_raw"].replace('"index": 0}', '"index": 0')
    return write_lines(
        tmp_path / "corrupt.jsonl",
        [
            good,
            good[:-40],  # truncated line
            good.replace(b'"hello"', b'"\xc3\x28"'),  # invalid UTF-8
            dump(pair(ok_json(), timestamp="yesterday")),  # wrong type
            dump({**pair(ok_json()), "response": {**ok_json(), "status_code": "200"}}),
            dump(pair(ok_json(), request_body="not json")),
            dump(pair(bad_stream)),  # malformed stream
            dump(pair(ok_json(), request_body={"messages": [{"role": "robot", "content": "x"}]})),
            good,
        ],
    )


def test_corrupt_trace_lines_are_errors_naming_the_line(tmp_path: Path) -> None:
    path = _corrupt(tmp_path)
    assert READER.sniff(path, path.read_text(encoding="utf-8", errors="replace"))
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{path}:2: not valid JSON")


def test_lenient_trace_read_lists_every_skipped_line(tmp_path: Path) -> None:
    loaded = load(_corrupt(tmp_path), lenient=True)
    assert loaded.calls == 2
    reasons = {s.line or 0: s.reason for s in loaded.skipped}
    assert sorted(reasons) == [2, 3, 4, 5, 6, 7, 8]
    assert "invalid UTF-8" in reasons[3]
    assert "request.timestamp" in reasons[4]
    assert "status_code" in reasons[5]
    assert "request.body must be a JSON object" in reasons[6]
    assert "stream event" in reasons[7]
    assert "messages.0.role" in reasons[8]


def test_trace_and_request_files_are_told_apart(tmp_path: Path) -> None:
    trace = write_lines(tmp_path / "t.jsonl", [dump(pair(ok_json()))])
    requests = write_lines(tmp_path / "r.jsonl", [dump(body())])
    assert READER.sniff(trace, trace.read_text(encoding="utf-8"))
    assert not ANTHROPIC_READER.sniff(trace, trace.read_text(encoding="utf-8"))
    assert not READER.sniff(requests, requests.read_text(encoding="utf-8"))
    assert ANTHROPIC_READER.sniff(requests, requests.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("method", "url", "expected"),
    [
        ("POST", URL, (True, None)),
        ("POST", "https://proxy.local/anthropic/v1/messages/", (True, None)),
        ("POST", "https://api.anthropic.com/v1/messages/count_tokens", (False, None)),
        ("GET", "https://api.anthropic.com/v1/messages", (False, None)),
        (
            "POST",
            "https://bedrock-runtime.eu-west-1.amazonaws.com/model/m1/invoke-with-response-stream",
            (True, "m1"),
        ),
        ("POST", "https://example.com/model/m1/invoke", (False, None)),
    ],
)
def test_messages_endpoint(method: str, url: str, expected: tuple[bool, str | None]) -> None:
    assert messages_endpoint(method, url) == expected
