"""Anthropic Messages bodies, SSE stream assembly and the ``anthropic`` file format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import load
from contextkit.formats.anthropic import READER
from contextkit.messages import (
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.session import Usage
from contextkit.wire import (
    AnthropicResponse,
    PayloadError,
    StreamError,
    assemble_stream,
    dump_request_line,
    from_anthropic_request,
    from_anthropic_response,
    is_anthropic_request,
    parse_sse,
    to_anthropic_request,
    to_anthropic_response,
    write_requests_jsonl,
)

TRACE = "claude-trace-lemmy/test-traffic-part1.jsonl"


def trace_pairs(corpus: Path) -> list[dict[str, Any]]:
    lines = (corpus / TRACE).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def sse(*events: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def start(usage: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 1},
    }
    return {"type": "message_start", "message": message}


def delta(index: int, **body: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


def block_start(index: int, **block: Any) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def stop_events(reason: str = "end_turn", output: int = 7) -> tuple[dict[str, Any], ...]:
    return (
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason},
            "usage": {"output_tokens": output},
        },
        {"type": "message_stop"},
    )


# --------------------------------------------------------------------------------------------------
# Golden round trips on the recorded trace


@pytest.mark.corpus
def test_every_recorded_request_body_round_trips(corpus: Path) -> None:
    pairs = trace_pairs(corpus)
    assert len(pairs) == 34
    for number, pair in enumerate(pairs, start=1):
        body = pair["request"]["body"]
        assert to_anthropic_request(from_anthropic_request(body)) == body, f"line {number}"


@pytest.mark.corpus
def test_every_recorded_json_response_round_trips(corpus: Path) -> None:
    bodies = [p["response"]["body"] for p in trace_pairs(corpus) if p["response"].get("body")]
    assert len(bodies) == 15
    for body in bodies:
        parsed = from_anthropic_response(body)
        assert to_anthropic_response(parsed) == body
        assert parsed.billed_usage == Usage.from_anthropic(body["usage"])


def _stream_events(raw: str) -> Iterator[dict[str, Any]]:
    for event in parse_sse(raw):
        value = json.loads(event.data)
        assert isinstance(value, dict)
        yield value


@pytest.mark.corpus
def test_recorded_streams_assemble_to_the_usage_and_tool_inputs_they_carried(corpus: Path) -> None:
    streams = [
        p["response"]["body_raw"] for p in trace_pairs(corpus) if "body_raw" in p["response"]
    ]
    assert len(streams) == 19
    tool_uses = 0
    for raw in streams:
        events = list(_stream_events(raw))
        expected_usage = dict(events[0]["message"]["usage"])
        partial: dict[int, str] = {}
        for event in events:
            if event["type"] == "message_delta":
                expected_usage.update(event["usage"])
            if event["type"] == "content_block_delta" and "partial_json" in event["delta"]:
                partial[event["index"]] = (
                    partial.get(event["index"], "") + event["delta"]["partial_json"]
                )
        assembled = assemble_stream(raw)
        assert assembled.complete
        assert assembled.message["usage"] == expected_usage
        content = assembled.message["content"]
        for index, text in partial.items():
            assert content[index]["type"] == "tool_use"
            assert content[index]["input"] == json.loads(text)
            tool_uses += 1
        response = from_anthropic_response(assembled.message)
        assert response.stop_reason in ("end_turn", "tool_use", "max_tokens")
    assert tool_uses == 11


# --------------------------------------------------------------------------------------------------
# Requests and responses


def test_bad_request_bodies_raise_payload_errors_naming_the_field() -> None:
    with pytest.raises(PayloadError, match="not a Messages request"):
        from_anthropic_request({"model": "m"})
    with pytest.raises(PayloadError, match=r"messages\.0\.role"):
        from_anthropic_request({"messages": [{"role": "system", "content": "x"}]})
    with pytest.raises(PayloadError, match="JSON object"):
        from_anthropic_request(["x"])  # type: ignore[arg-type]  # the point of the test


def test_unknown_fields_and_block_types_survive_a_round_trip() -> None:
    body = {
        "model": "claude-x",
        "max_tokens": 5,
        "future_field": {"a": [1, 2]},
        "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "brand_new", "payload": {"k": 1}}]},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "t", "signature": "sig"}],
            },
        ],
    }
    assert to_anthropic_request(from_anthropic_request(body)) == body


def test_response_record_gives_message_usage_and_round_trips() -> None:
    usage = Usage(
        input_tokens=3, cache_write_5m=10, cache_write_1h=20, cache_read=40, output_tokens=5
    )
    message = Message(role="assistant", content=(TextBlock(text="hi"),))
    built = AnthropicResponse.of(
        message, usage=usage, stop_reason="end_turn", model="m", response_id="x"
    )
    body = to_anthropic_response(built)
    assert body["type"] == "message"
    parsed = from_anthropic_response(body)
    assert parsed.billed_usage == usage
    assert parsed.message == message
    assert to_anthropic_response(parsed) == body
    with pytest.raises(PayloadError, match="API error"):
        from_anthropic_response(
            {"type": "error", "error": {"type": "overloaded_error", "message": "o"}}
        )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"system": "s", "messages": [{"role": "user", "content": "hi"}]}, True),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}
                ]
            },
            True,
        ),
        ({"tools": [{"name": "t", "input_schema": {}}], "messages": []}, True),
        ({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, False),
        (
            {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]},
            False,
        ),
        (
            {"system": "s", "messages": [{"role": "assistant", "content": "", "tool_calls": []}]},
            False,
        ),
        ({"tools": [{"type": "function", "function": {"name": "f"}}], "messages": []}, False),
        ({"system": "s", "max_completion_tokens": 5, "messages": []}, False),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            False,
        ),
    ],
)
def test_detection_rule_separates_anthropic_from_openai_bodies(
    body: dict[str, Any], expected: bool
) -> None:
    assert is_anthropic_request(body) is expected


# --------------------------------------------------------------------------------------------------
# SSE assembly, hand-written streams


def test_stream_with_thinking_signature_citations_and_unknown_events() -> None:
    text = sse(
        start({"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 1}),
        block_start(0, type="thinking", thinking=""),
        delta(0, type="thinking_delta", thinking="let me "),
        delta(0, type="thinking_delta", thinking="think"),
        delta(0, type="signature_delta", signature="SIG"),
        {"type": "content_block_stop", "index": 0},
        block_start(1, type="text", text=""),
        delta(1, type="text_delta", text="Paris"),
        delta(1, type="citations_delta", citation={"type": "char_location", "cited_text": "P"}),
        delta(1, type="sparkle_delta", sparkle=1),
        {"type": "content_block_stop", "index": 1},
        {"type": "ping"},
        {"type": "brand_new_event", "x": 1},
        *stop_events("end_turn", 42),
    )
    assembled = assemble_stream(text)
    assert assembled.complete
    assert assembled.message["content"] == [
        {"type": "thinking", "thinking": "let me think", "signature": "SIG"},
        {
            "type": "text",
            "text": "Paris",
            "citations": [{"type": "char_location", "cited_text": "P"}],
        },
    ]
    assert assembled.message["usage"] == {
        "input_tokens": 5,
        "cache_read_input_tokens": 100,
        "output_tokens": 42,
    }
    assert [e["type"] for e in assembled.unknown_events] == [
        "content_block_delta",
        "brand_new_event",
    ]
    assert len(assembled.notes) == 2
    response = from_anthropic_response(assembled.message)
    assert isinstance(response.content[0], ThinkingBlock)
    assert response.stop_reason == "end_turn"


def test_stream_tool_input_is_parsed_at_block_stop() -> None:
    text = sse(
        start(),
        block_start(0, type="tool_use", id="toolu_1", name="Read", input={}),
        delta(0, type="input_json_delta", partial_json='{"path": "a'),
        delta(0, type="input_json_delta", partial_json='.py", "n": [1, 2]}'),
        {"type": "content_block_stop", "index": 0},
        block_start(1, type="tool_use", id="toolu_2", name="Now", input={}),
        {"type": "content_block_stop", "index": 1},
        *stop_events("tool_use"),
    )
    content = from_anthropic_response(assemble_stream(text).message).content
    assert content == (
        ToolUseBlock(id="toolu_1", name="Read", input={"path": "a.py", "n": [1, 2]}),
        ToolUseBlock(id="toolu_2", name="Now", input={}),
    )


def test_stream_error_event_is_a_clear_error_carrying_the_api_error() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(StreamError, match="overloaded_error: Overloaded") as info:
        assemble_stream(sse(start(), error))
    assert info.value.error == error["error"]
    assert info.value.event == 2


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("event: message_start\ndata: {not json\n\n", "event 1: data is not valid JSON"),
        (sse(delta(0, type="text_delta", text="x")), "before message_start"),
        (sse(start(), delta(3, type="text_delta", text="x")), "unknown block index 3"),
        (sse(start(), block_start(1, type="text", text="")), "out of order"),
        (
            sse(
                start(),
                block_start(0, type="tool_use", id="t", name="n", input={}),
                delta(0, type="input_json_delta", partial_json='{"a": '),
                {"type": "content_block_stop", "index": 0},
            ),
            "tool input of block 0 is not valid JSON",
        ),
        (sse({"type": "ping"}), "no message_start"),
    ],
)
def test_malformed_streams_raise_stream_errors(text: str, match: str) -> None:
    with pytest.raises(StreamError, match=match) as info:
        assemble_stream(text)
    assert info.value.error is None


def test_truncated_stream_is_returned_incomplete_with_notes() -> None:
    text = sse(
        start(),
        block_start(0, type="tool_use", id="t", name="n", input={}),
        delta(0, type="input_json_delta", partial_json='{"a": 1'),
    )
    assembled = assemble_stream(text)
    assert not assembled.complete
    assert assembled.message["content"][0]["input"] == {}
    assert any("truncated" in note for note in assembled.notes)
    assert any("inside the tool input" in note for note in assembled.notes)


def test_sse_parsing_follows_the_line_rules() -> None:
    text = ': comment\r\nevent: a\r\ndata: {"x":\r\ndata:"\u2028"}\r\n\r\ndata: {}'
    events = list(parse_sse(text))
    assert [(e.event, e.data) for e in events] == [("a", '{"x":\n"\u2028"}'), (None, "{}")]


# --------------------------------------------------------------------------------------------------
# The ``anthropic`` file format


def conversations() -> list[Conversation]:
    first = Conversation(
        model="claude-x",
        system="be brief",
        messages=(Message(role="user", content="héllo \ud800"),),
    )
    second = first.append(
        Message(role="assistant", content=(ToolUseBlock(id="t1", name="ls", input={"p": "."}),)),
        Message(role="user", content=(ToolResultBlock(tool_use_id="t1", content="a.py"),)),
    )
    return [first, second]


def test_write_requests_jsonl_then_load_gives_the_same_requests(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    assert write_requests_jsonl(path, conversations()) == 2
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[1] == dump_request_line(conversations()[1])
    loaded = load(path)
    assert loaded.format == "anthropic"
    calls = loaded.sessions[0].calls
    assert [c.request for c in calls] == conversations()
    assert all(c.exact and c.response is None for c in calls)
    assert [c.line for c in calls] == [1, 2]
    assert [json.loads(line) for line in lines] == [
        to_anthropic_request(c) for c in conversations()
    ]


def test_json_files_of_bodies_and_pairs(tmp_path: Path) -> None:
    body = to_anthropic_request(conversations()[1])
    response = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": "done"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 9, "cache_creation_input_tokens": 4, "output_tokens": 2},
    }
    stream = sse(start(), block_start(0, type="text", text=""), *stop_events())
    single = tmp_path / "one.json"
    single.write_text(json.dumps({"request": body, "response": response}), encoding="utf-8")
    many = tmp_path / "many.json"
    many.write_text(json.dumps([body, {"request": body, "response": stream}]), encoding="utf-8")

    call = load(single).sessions[0].calls[0]
    assert call.response == Message(role="assistant", content=(TextBlock(text="done"),))
    assert call.usage == Usage(input_tokens=9, cache_write_5m=4, output_tokens=2)
    assert call.stop_reason == "end_turn"
    assert call.exact
    calls = load(many).sessions[0].calls
    assert [c.usage for c in calls] == [None, Usage(input_tokens=10, output_tokens=7)]


def test_detection_does_not_take_openai_or_trace_files(tmp_path: Path) -> None:
    openai = tmp_path / "chat.jsonl"
    openai.write_text(
        json.dumps({"model": "gpt-4o", "messages": [{"role": "system", "content": "s"}]}) + "\n",
        encoding="utf-8",
    )
    ambiguous = tmp_path / "plain.jsonl"
    ambiguous.write_text(
        json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}) + "\n",
        encoding="utf-8",
    )
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        json.dumps({"request": {"url": "u", "method": "POST", "body": {}}, "response": None}),
        encoding="utf-8",
    )
    for path in (openai, ambiguous, trace):
        assert not READER.sniff(path, path.read_text(encoding="utf-8"))
    # An ambiguous file is still readable when the format is named.
    assert load(ambiguous, format="anthropic").calls == 1


def _bad_file(tmp_path: Path) -> Path:
    good = dump_request_line(conversations()[0]).encode("utf-8")
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b"\n".join(
            [
                good,
                good[: len(good) // 2],  # truncated line
                b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}',  # invalid UTF-8
                b'{"messages": "not a list"}',  # wrong type
                b'{"messages": [{"role": "user", "content": 5}]}',  # wrong type deeper
                good,
            ]
        )
    )
    return path


def test_corrupt_lines_are_errors_naming_the_line(tmp_path: Path) -> None:
    path = _bad_file(tmp_path)
    with pytest.raises(FormatError) as info:
        load(path, format="anthropic")
    assert info.value.line == 2
    assert f"{path}:2:" in str(info.value)


def test_lenient_read_lists_every_skipped_line(tmp_path: Path) -> None:
    loaded = load(_bad_file(tmp_path), format="anthropic", lenient=True)
    assert loaded.calls == 2
    assert [(s.line, s.reason.split(" ")[0]) for s in loaded.skipped] == [
        (2, "not"),
        (3, "invalid"),
        (4, "no"),
        (5, "request"),
    ]
    assert "messages.0.content" in loaded.skipped[3].reason
