"""OpenAI Chat Completions and Responses formats: mapping, lossless round trips, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextkit.formats.openai_chat import META, meta_of, parse_chat_messages, to_chat_messages
from contextkit.messages import ImageBlock, OpaqueBlock, TextBlock, ToolResultBlock, ToolUseBlock

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
