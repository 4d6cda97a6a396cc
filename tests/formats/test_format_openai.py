"""OpenAI Chat Completions and Responses formats: mapping, lossless round trips, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import detect, load
from contextkit.formats.openai_chat import READER as CHAT_READER
from contextkit.formats.openai_responses import READER as RESPONSES_READER
from contextkit.messages import (
    CompactionBlock,
    ImageBlock,
    OpaqueBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.session import Usage
from contextkit.wire import (
    META,
    from_responses_items,
    meta_of,
    parse_chat_messages,
    parse_chat_request,
    parse_chat_response,
    parse_responses_request,
    parse_responses_response,
    to_chat_messages,
    to_chat_request,
    to_responses_items,
    to_responses_request,
    usage_from_responses,
)
from corpus_paths import corpus_files

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is in /tmp?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "ls", "arguments": '{"p": "/tmp"}'},
            },
            {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    {"role": "tool", "tool_call_id": "c2", "content": "b.txt", "name": "ls"},
    {"role": "assistant", "content": "Two files."},
]


def roundtrip(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return to_chat_messages(*parse_chat_messages(messages))


def test_chat_maps_to_canonical_blocks() -> None:
    system, messages = parse_chat_messages(CHAT)
    assert system == "You are terse."
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    uses = list(messages[1].tool_uses())
    assert [(u.id, u.input) for u in uses] == [("c1", {"p": "/tmp"}), ("c2", {})]
    assert meta_of(uses[0])["arguments"] == '{"p": "/tmp"}'
    results = list(messages[2].tool_results())
    assert [(r.tool_use_id, r.content) for r in results] == [("c1", "a.txt"), ("c2", "b.txt")]
    assert meta_of(results[1]) == {"name": "ls"}
    assert roundtrip(CHAT) == CHAT


EDGE_CASES: list[list[dict[str, Any]]] = [
    [{"role": "developer", "content": "d"}, {"role": "system", "content": "s"}],
    [{"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
    [{"role": "system", "content": "s", "name": "x"}, {"role": "user", "content": "u"}],
    [{"role": "user", "content": "u"}, {"role": "system", "content": "mid"}],
    [{"role": "user", "content": None}, {"role": "assistant", "content": ""}],
    [{"role": "user"}, {"role": "assistant"}, {"role": "assistant", "content": None}],
    [{"role": "assistant", "content": "x", "tool_calls": []}],
    [{"role": "assistant", "content": "", "tool_calls": None}],
    [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
                {"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}},
            ],
        }
    ],
    [
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "t"}, {"type": "refusal", "refusal": "no"}],
            "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{bad json"}}],
        },
        {"role": "tool", "tool_call_id": "a"},
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "r"}]},
        {"role": "user", "content": "next"},
    ],
    [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "k", "type": "custom", "custom": {"name": "patch", "input": "*** raw"}},
                {"id": "j", "type": "function", "function": {"name": "f", "arguments": " {} "}},
            ],
            "refusal": None,
        },
        {"role": "tool", "tool_call_ids": ["k", "j"], "content": "both", "agent": "main"},
    ],
]


@pytest.mark.parametrize("messages", EDGE_CASES)
def test_chat_roundtrip_edge_cases(messages: list[dict[str, Any]]) -> None:
    assert roundtrip(messages) == messages


def test_chat_details() -> None:
    _, messages = parse_chat_messages(EDGE_CASES[8])
    blocks = messages[0].blocks
    assert isinstance(blocks[1], ImageBlock)
    assert blocks[1].source == {"type": "url", "url": "https://x/y.png"}
    assert isinstance(blocks[2], ImageBlock)
    assert blocks[2].source == {"type": "base64", "media_type": "image/png", "data": "QUJD"}
    assert isinstance(blocks[3], OpaqueBlock)
    system, messages = parse_chat_messages(EDGE_CASES[3])
    assert system is None
    assert meta_of(messages[1]) == {"role": "system"}
    assert messages[1].content == "mid"
    _, messages = parse_chat_messages(EDGE_CASES[9])
    use = messages[0].blocks[-1]
    assert isinstance(use, ToolUseBlock)
    assert use.input == "{bad json"
    _, messages = parse_chat_messages(EDGE_CASES[10])
    results = messages[1].blocks
    assert [r.tool_use_id for r in results if isinstance(r, ToolResultBlock)] == ["k", "j"]


def test_chat_rewrites_edited_arguments() -> None:
    system, messages = parse_chat_messages(CHAT)
    use = next(messages[1].tool_uses())
    edited = use.model_copy(update={"input": {"p": "/var"}})
    content = (edited, *messages[1].blocks[1:])
    changed = (messages[0], messages[1].model_copy(update={"content": content}), *messages[2:])
    out = to_chat_messages(system, changed)
    assert out[2]["tool_calls"][0]["function"]["arguments"] == '{"p": "/var"}'


def test_canonical_without_meta_writes_plain_chat() -> None:
    system = (TextBlock(text="a"), TextBlock(text="b"))
    out = to_chat_messages(system, ())
    assert out == [
        {
            "role": "system",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        }
    ]
    assert META == "openai"


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ([{"role": "user", "content": "a"}, "oops"], "message 1"),
        ([{"role": "robot", "content": "a"}], "message 0: unknown role"),
        ([{"role": "tool", "content": "a"}], "message 0: a tool message needs"),
        ([{"role": "user", "content": 3}], "message 0: content must be"),
        ([{"role": "user", "content": [{"text": "x"}]}], "message 0, part 0"),
        (
            [{"role": "assistant", "tool_calls": [{"id": "x", "function": {"name": "f"}}]}],
            "message 0, tool call 0",
        ),
        ([{"role": "assistant", "tool_calls": "x"}], "message 0: tool_calls must be a list"),
    ],
)
def test_chat_malformed_names_the_index(messages: list[Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        parse_chat_messages(messages)


@pytest.mark.corpus
def test_chat_roundtrip_on_corpus(corpus: Path) -> None:
    histories: list[list[dict[str, Any]]] = []
    for traj in json.loads((corpus / "tau-bench/gpt-4o-airline-first100.json").read_text()):
        histories.append(traj["traj"])
    for path in sorted((corpus / "swe-agent").glob("*.traj")):
        histories.append(json.loads(path.read_text())["history"])
    assert len(histories) == 106
    tool_calls = 0
    for history in histories:
        system, messages = parse_chat_messages(history)
        tool_calls += sum(len(list(m.tool_uses())) for m in messages)
        assert to_chat_messages(system, messages) == history
    assert tool_calls == 572 + 13 + 4 + 5


# --------------------------------------------------------------------------------------------------
# Chat request/response bodies and the openai-chat reader

BODY: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": CHAT,
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "ls",
                "description": "List a directory",
                "parameters": {"type": "object", "properties": {"p": {"type": "string"}}},
                "strict": True,
            },
        },
        {"type": "custom", "custom": {"name": "patch"}},
    ],
    "temperature": 0.2,
    "max_completion_tokens": 512,
}
COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {"id": "c3", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
            },
        }
    ],
    "usage": {
        "prompt_tokens": 1200,
        "completion_tokens": 30,
        "total_tokens": 1230,
        "prompt_tokens_details": {"cached_tokens": 1024},
    },
}


def test_chat_request_roundtrip_and_tools() -> None:
    conversation = parse_chat_request(BODY)
    assert conversation.model == "gpt-4o"
    assert conversation.system == "You are terse."
    assert [t.name for t in conversation.tools] == ["ls", "patch"]
    assert conversation.tools[0].input_schema == BODY["tools"][0]["function"]["parameters"]
    assert conversation.tools[1].type == "custom"
    assert to_chat_request(conversation) == BODY


def test_chat_response_usage_and_stop_reason() -> None:
    parsed = parse_chat_response(COMPLETION)
    assert parsed.stop_reason == "tool_use"
    assert parsed.usage == Usage(input_tokens=176, cache_read=1024, output_tokens=30)
    assert parsed.message is not None
    assert [u.id for u in parsed.message.tool_uses()] == ["c3"]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_chat_reader_jsonl_pairs(tmp_path: Path) -> None:
    lines = [json.dumps({"request": BODY, "response": COMPLETION}), json.dumps(BODY)]
    path = _write(tmp_path / "calls.jsonl", "\n".join(lines) + "\n")
    assert detect(path).name == "openai-chat"
    loaded = load(path)
    calls = loaded.sessions[0].calls
    assert [c.line for c in calls] == [1, 2]
    assert calls[0].usage is not None
    assert calls[0].usage.cache_read == 1024
    assert calls[0].model == "gpt-4o-2024-08-06"
    assert calls[1].response is None
    assert all(c.exact for c in calls)


def test_chat_reader_bare_messages(tmp_path: Path) -> None:
    path = _write(tmp_path / "history.json", json.dumps(CHAT, indent=1))
    assert detect(path).name == "openai-chat"
    calls = load(path).sessions[0].calls
    assert [c.stop_reason for c in calls] == ["tool_use", "end_turn"]
    assert [len(c.request.messages) for c in calls] == [1, 3]
    assert not calls[0].exact


def test_chat_reader_corrupt_line_is_named(tmp_path: Path) -> None:
    bad = dict(BODY, messages=[*CHAT, {"role": "tool", "content": "x"}])
    text = json.dumps(BODY) + "\n" + "{not json\n" + json.dumps(bad) + "\n"
    path = _write(tmp_path / "calls.jsonl", text)
    with pytest.raises(FormatError, match=r"calls\.jsonl:2: not valid JSON"):
        load(path)
    loaded = load(path, lenient=True)
    assert [s.line for s in loaded.skipped] == [2, 3]
    assert "message 6: a tool message needs" in loaded.skipped[1].reason
    assert loaded.calls == 1


def test_chat_reader_json_record_error_names_line(tmp_path: Path) -> None:
    bad = dict(BODY, messages=[{"role": "assistant", "tool_calls": "x"}, {"role": "tool"}])
    path = _write(tmp_path / "calls.json", json.dumps([BODY, bad], indent=1))
    assert detect(path).name == "openai-chat"
    with pytest.raises(FormatError, match="record 1: message 0") as info:
        load(path)
    assert info.value.line is not None
    assert info.value.line > 10


@pytest.mark.parametrize(
    "value",
    [
        {
            "model": "claude",
            "max_tokens": 10,
            "system": "s",
            "messages": [{"role": "user", "content": "x"}],
        },
        {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        [{"task_id": 1, "traj": CHAT, "reward": 1.0}],
        {"info": {}, "messages": CHAT, "trajectory_format": "mini-swe-agent-1"},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        {
            "messages": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}
            ],
            "n": 1,
        },
    ],
)
def test_chat_sniff_is_conservative(tmp_path: Path, value: Any) -> None:
    path = _write(tmp_path / "x.json", json.dumps(value))
    assert not CHAT_READER.sniff(path, path.read_text())
    assert not RESPONSES_READER.sniff(path, path.read_text())


@pytest.mark.corpus
def test_openai_readers_claim_no_other_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert not CHAT_READER.sniff(path, head), path
        assert not RESPONSES_READER.sniff(path, head), path


# --------------------------------------------------------------------------------------------------
# Responses items and bodies

ITEMS: list[dict[str, Any]] = [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "think"}],
        "encrypted_content": "gAAA",
    },
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "phase": "commentary",
        "content": [
            {"type": "output_text", "text": "a", "annotations": []},
            {"type": "output_text", "text": "b", "annotations": [], "logprobs": []},
        ],
    },
    {"type": "function_call", "call_id": "f1", "name": "sh", "arguments": '{"cmd":"ls"}'},
    {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": "*** Begin"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "x"}},
    {"type": "function_call_output", "call_id": "f1", "output": "a.txt"},
    {"type": "custom_tool_call_output", "call_id": "p1", "output": "done"},
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "mid"}]},
    {"role": "user", "content": "plain"},
    {"type": "compaction", "id": "cmp_1", "encrypted_content": "zzz"},
    {"type": "future_item", "data": 1},
    {"type": "message", "role": "assistant", "content": []},
]


def test_responses_items_mapping() -> None:
    system, messages = from_responses_items(ITEMS)
    assert isinstance(system, tuple)
    assert [m.role for m in messages] == ["user", "assistant", "user", "user", "user", "assistant"]
    thinking, text_a, text_b, call, custom, search = messages[1].blocks
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.thinking == "think"
    assert meta_of(thinking)["item"]["encrypted_content"] == "gAAA"
    assert (text_a.type, text_b.type, search.type) == ("text", "text", "web_search_call")
    assert isinstance(call, ToolUseBlock)
    assert call.input == {"cmd": "ls"}
    assert isinstance(custom, ToolUseBlock)
    assert custom.input == "*** Begin"
    assert [r.tool_use_id for r in messages[2].tool_results()] == ["f1", "p1"]
    assert meta_of(messages[3]) == {"item": {}, "role": "developer"}
    assert isinstance(messages[5].blocks[0], CompactionBlock)
    assert isinstance(messages[5].blocks[1], OpaqueBlock)
    assert to_responses_items(system, messages) == ITEMS


def test_responses_request_and_response() -> None:
    body = {"model": "gpt-5", "instructions": "base", "input": ITEMS[:2], "store": False}
    conversation = parse_responses_request(body)
    assert isinstance(conversation.system, tuple)
    assert conversation.system_blocks[0].type == "text"
    assert to_responses_request(conversation) == body
    simple = {"model": "gpt-5", "input": "hello", "instructions": "be brief"}
    assert parse_responses_request(simple).system == "be brief"
    assert to_responses_request(parse_responses_request(simple)) == simple
    response: dict[str, Any] = {
        "id": "resp_1",
        "model": "gpt-5",
        "status": "completed",
        "output": ITEMS[2:5],
        "usage": {
            "input_tokens": 900,
            "input_tokens_details": {"cached_tokens": 800},
            "output_tokens": 40,
        },
    }
    parsed = parse_responses_response(response)
    assert parsed.stop_reason == "tool_use"
    assert parsed.usage == usage_from_responses(response["usage"])
    assert parsed.usage == Usage(input_tokens=100, cache_read=800, output_tokens=40)


def test_responses_reader_items_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "items.json", json.dumps(ITEMS[:9]))
    assert detect(path).name == "openai-responses"
    calls = load(path).sessions[0].calls
    assert len(calls) == 1
    assert calls[0].stop_reason == "tool_use"


@pytest.mark.parametrize(
    ("items", "needle"),
    [
        ([{"type": "message", "role": "robot", "content": []}], "item 0: unknown message role"),
        (
            [ITEMS[1], {"type": "function_call", "name": "x", "arguments": "{}"}],
            "item 1: a function_call",
        ),
        (
            [{"type": "function_call_output", "call_id": "a", "output": 3}],
            "item 0: a function_call_output",
        ),
        (
            [ITEMS[1], {"type": "message", "role": "user", "content": [{"text": "x"}]}],
            "item 1, part 0",
        ),
    ],
)
def test_responses_malformed_names_the_item(items: list[Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        from_responses_items(items)
