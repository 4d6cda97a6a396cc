"""Conversion between the Anthropic, OpenAI chat and OpenAI Responses request forms."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextkit.cli import app, main
from contextkit.formats import load
from contextkit.formats.convert import convert_file
from contextkit.wire import (
    ConversionError,
    ConversionWarning,
    Target,
    from_anthropic_request,
    from_format,
    to_format,
)

ANTHROPIC: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "temperature": 0.5,
    "stop_sequences": ["END"],
    "tool_choice": {"type": "auto"},
    "thinking": {"type": "enabled", "budget_tokens": 2000},
    "system": [
        {"type": "text", "text": "You are a coder."},
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
    ],
    "tools": [
        {
            "name": "read",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
    ],
    "messages": [
        {"role": "user", "content": "Read a.py and b.py"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "two reads", "signature": "sig=="},
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "tu_1", "name": "read", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "tu_2", "name": "read", "input": {"path": "b.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu_1", "content": "print(1)"},
                {
                    "type": "tool_result",
                    "tool_use_id": "tu_2",
                    "is_error": True,
                    "content": [{"type": "text", "text": "no such file"}],
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xx"}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "ok?", "cache_control": {"type": "ephemeral"}}],
        },
    ],
}


def codes(warnings: tuple[ConversionWarning, ...]) -> set[str]:
    return {w.code for w in warnings}


@pytest.mark.parametrize("target", ["openai-chat", "openai-responses"])
def test_anthropic_to_openai_warns_for_every_loss(target: Target) -> None:
    payload, warnings = to_format(from_anthropic_request(ANTHROPIC), target)
    assert codes(warnings) == {
        "thinking_dropped",
        "redacted_thinking_dropped",
        "cache_control_dropped",
        "is_error_dropped",
        "server_tool_dropped",
        "request_field_dropped",
        "empty_message_dropped",
    } | ({"request_field_dropped"} if target == "openai-responses" else set())
    where = {w.code: w.location for w in warnings}
    assert where["thinking_dropped"] == "messages[1].content[0]"
    assert where["is_error_dropped"] == "messages[2].content[1]"
    assert where["server_tool_dropped"] == "tools[1]"
    assert any(w.location == "request.thinking" for w in warnings)
    if target == "openai-chat":
        assert payload["max_completion_tokens"] == 1024
        assert payload["stop"] == ["END"]
        assert [m["role"] for m in payload["messages"]] == [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "user",
        ]
        assert payload["messages"][2]["tool_calls"][1]["function"] == {
            "name": "read",
            "arguments": '{"path": "b.py"}',
        }
    else:
        assert payload["max_output_tokens"] == 1024
        assert any(w.location == "request.stop" for w in warnings)
        kinds = [i.get("type") for i in payload["input"]]
        assert kinds.count("function_call") == 2
        assert kinds.count("function_call_output") == 2


@pytest.mark.parametrize("via", ["openai-chat", "openai-responses"])
def test_anthropic_openai_anthropic_keeps_structure(via: Target) -> None:
    openai_body, _ = to_format(from_anthropic_request(ANTHROPIC), via)
    back, warnings = to_format(from_format(json.loads(json.dumps(openai_body)), via), "anthropic")
    assert "max_tokens_missing" not in codes(warnings)
    assert back["max_tokens"] == 1024
    assert back["temperature"] == 0.5
    assert back["tool_choice"] == {"type": "auto"}
    assert [t["name"] for t in back["tools"]] == ["read"]
    assert back["tools"][0]["input_schema"] == ANTHROPIC["tools"][0]["input_schema"]
    system = back["system"]
    texts = [system] if isinstance(system, str) else [b["text"] for b in system]
    assert texts == ["You are a coder.", "Be brief."]
    roles = [m["role"] for m in back["messages"]]
    assert roles == ["user", "assistant", "user", "user"]
    assistant = back["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["text", "tool_use", "tool_use"]
    assert [(b["id"], b["input"]) for b in assistant[1:]] == [
        ("tu_1", {"path": "a.py"}),
        ("tu_2", {"path": "b.py"}),
    ]
    results = back["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["tu_1", "tu_2"]
    assert results[0]["content"] == "print(1)"


def test_same_form_is_lossless_without_warnings() -> None:
    conversation = from_anthropic_request(ANTHROPIC)
    assert to_format(conversation, "anthropic") == (ANTHROPIC, ())
    chat = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "hi", "name": "bob"}],
        "seed": 1,
    }
    assert to_format(from_format(chat, "openai-chat"), "openai-chat") == (chat, ())


def test_openai_only_data_is_reported_going_to_anthropic() -> None:
    chat = {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "hi", "name": "bob"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "k", "type": "custom", "custom": {"name": "patch", "input": "raw"}}
                ],
            },
            {"role": "tool", "tool_call_id": "k", "content": "done"},
            {"role": "system", "content": "be nice"},
        ],
        "tools": [{"type": "custom", "custom": {"name": "patch"}}],
        "logit_bias": {"1": 2},
    }
    payload, warnings = to_format(from_format(chat, "openai-chat"), "anthropic")
    assert codes(warnings) == {
        "openai_fields_dropped",
        "tool_input_wrapped",
        "system_message_as_user",
        "custom_tool_as_function",
        "request_field_dropped",
        "max_tokens_missing",
    }
    assert payload["messages"][1]["content"][0]["input"] == {"input": "raw"}
    assert payload["messages"][3] == {"role": "user", "content": "be nice"}


def test_unknown_target_and_bad_payload_are_errors() -> None:
    with pytest.raises(ConversionError, match="unknown target"):
        to_format(from_anthropic_request(ANTHROPIC), "gemini")  # type: ignore[arg-type]
    with pytest.raises(ConversionError, match="message 0: unknown role"):
        from_format({"messages": [{"role": "robot"}]}, "openai-chat")


@pytest.mark.corpus
def test_tau_bench_chat_bodies_round_trip(corpus: Path) -> None:
    for trajectory in json.loads((corpus / "tau-bench/gpt-4o-airline-first100.json").read_text()):
        body = {"model": "gpt-4o", "messages": trajectory["traj"]}
        assert to_format(from_format(body, "openai-chat"), "openai-chat") == (body, ())


@pytest.mark.corpus
def test_codex_calls_convert(corpus: Path) -> None:
    path = next((corpus / "codemie-codex").glob("rollout-2026-05-11T11-*.jsonl"))
    session = load(path).sessions[0]
    for call in session.calls:
        body, warnings = to_format(call.request, "openai-responses")
        assert warnings == ()
        assert body["instructions"].startswith("You are Codex")
    converted = convert_file(path, "anthropic")
    assert len(converted.requests) == 66
    found = codes(converted.warnings)
    assert {"reasoning_dropped", "max_tokens_missing"} <= found
    for body in converted.requests:  # tool pairing survives: every result answers a call
        used = {
            b["id"]
            for m in body["messages"]
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"
        }
        answered = {
            b["tool_use_id"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        }
        assert answered <= used


def test_cli_writes_jsonl_and_warnings(tmp_path: Path) -> None:
    source = tmp_path / "req.json"
    source.write_text(json.dumps(ANTHROPIC))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app, ["convert", str(source), "--to", "openai-chat", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["model"] == "claude-sonnet-4-5"
    assert "thinking_dropped x1" in result.output


def test_cli_bad_input_exits_2_naming_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "calls.jsonl"
    body = {
        "model": "gpt-4o",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
    }
    source.write_text(
        json.dumps(body) + "\n" + '{"model": "gpt-4o", "messages": [{"role": "tool"}]}\n'
    )
    monkeypatch.setattr(sys, "argv", ["contextkit", "convert", str(source), "--to", "anthropic"])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert "calls.jsonl:2" in captured.err
    assert "Traceback" not in captured.err
