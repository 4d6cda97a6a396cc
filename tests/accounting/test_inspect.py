"""``contextkit inspect``: the breakdown by part, tool results that ride along, and the command."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

import contextkit.cli.inspect as inspect_cli
from contextkit.accounting import inspect_session, split_user_text
from contextkit.cache import AnthropicCache
from contextkit.cli import app
from contextkit.messages import (
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.session import Call, Session
from contextkit.testing import WordCounter, fixed_price, words

PRICE = fixed_price("test")
T0 = datetime(2026, 3, 1, tzinfo=UTC)
assert inspect_cli.inspect_command is not None  # imported for its registration on ``app``


def test_split_user_text() -> None:
    text = "fix the bug <system-reminder>be careful here</system-reminder> please"
    typed, injected = split_user_text(text)
    assert typed.split() == ["fix", "the", "bug", "please"]
    assert injected == "<system-reminder>be careful here</system-reminder>"
    assert split_user_text("[Request interrupted by user]") == ("", "[Request interrupted by user]")
    cmd = "<command-name>/mcp</command-name>\n<command-message>mcp</command-message>"
    assert split_user_text(cmd)[0] == ""


def _session() -> Session:
    system = words(1200, "s")
    use = ToolUseBlock(id="t1", name="Read", input={})
    small = ToolUseBlock(id="t2", name="Grep", input={})
    history: list[Message] = [
        Message(
            role="user", content="read it <system-reminder>" + words(8, "r") + "</system-reminder>"
        )
    ]
    replies = [
        Message(role="assistant", content=(ThinkingBlock(thinking=words(6, "k")), use)),
        Message(role="assistant", content=(TextBlock(text=words(5, "a")), small)),
        Message(role="assistant", content=(TextBlock(text=words(7, "d")),)),
    ]
    results = [
        Message(role="user", content=(ToolResultBlock(tool_use_id="t1", content=words(400, "f")),)),
        Message(role="user", content=(ToolResultBlock(tool_use_id="t2", content=words(20, "g")),)),
    ]
    calls = []
    for k, reply in enumerate(replies):
        request = Conversation(model="claude-sonnet-4-5", system=system, messages=tuple(history))
        stop = "end_turn" if k == 2 else "tool_use"
        calls.append(
            Call(
                request=request,
                response=reply,
                timestamp=T0 + timedelta(seconds=10 * k),
                stop_reason=stop,
            )
        )
        history.append(reply)
        if k < 2:
            history.append(results[k])
    return Session(path="<hand>", format="test", calls=tuple(calls))


def test_parts_and_tool_results_that_ride_along() -> None:
    report = inspect_session(
        _session(), WordCounter(), PRICE, cache=AnthropicCache(min_tokens=1024, placement="off")
    )
    parts = report.parts
    # Tool-use blocks count as "name {}" (two words): Read {}, Grep {}.
    assert parts == {
        "system": 1200,
        "tools": 0,
        "user_typed": 2,
        "user_injected": 8,
        "tool_results": 420,
        "assistant_text": 5,
        "tool_requests": 4,
        "thinking": 6,
        "other": 0,
    }
    assert report.biggest == "system"
    assert report.parts_sent["tool_results"] == 400 + 420
    assert report.calls_per_turn == (3,)
    assert report.stop_reasons == {"tool_use": 2, "end_turn": 1}
    heavy = report.heaviest_tool_results[0]
    assert (heavy.tool, heavy.tokens, heavy.first_call, heavy.carried_by) == ("Read", 400, 1, 2)
    # Caching off: every input token at $3/M, in both calls that carried it.
    assert heavy.cost_usd == pytest.approx(2 * 400 * 3.0 / 1e6)


def _claude_code_file(path: Path, model: str) -> Path:
    common = {"sessionId": "s1", "isSidechain": False, "userType": "external", "version": "2.1.0"}
    records = [
        {
            **common,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-02-10T21:11:56Z",
            "message": {"role": "user", "content": "hello there " + words(50, "h")},
        },
        {
            **common,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "requestId": "req_1",
            "timestamp": "2026-02-10T21:11:59Z",
            "message": {
                "model": model,
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": "hi " + words(20, "x")}],
                "stop_reason": "end_turn",
                "usage": {
                    "input_tokens": 3,
                    "cache_creation_input_tokens": 6000,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 25,
                },
            },
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_cli_json(tmp_path: Path) -> None:
    path = _claude_code_file(tmp_path / "s.jsonl", "claude-sonnet-4-5-20250929")
    plot = tmp_path / "out.png"
    result = CliRunner().invoke(app, ["inspect", str(path), "--json", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (entry,) = doc["sessions"]
    assert entry["format"] == "claude-code"
    assert entry["calls"] == 1
    assert set(entry["parts"]) >= {"system", "tools", "user_typed", "tool_results", "thinking"}
    assert entry["recorded"]["cache_write_5m"] == 6000
    assert entry["recorded"]["cost_usd"] == pytest.approx((3 * 3 + 6000 * 3.75 + 25 * 15) / 1e6)
    assert entry["simulated"]["input"] + entry["simulated"]["cache_write_5m"] == 6003
    assert entry["system_and_tools_inferred"] is True
    assert plot.stat().st_size > 10_000
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_cli_unknown_model_is_unknown_cost_not_a_crash(tmp_path: Path) -> None:
    path = _claude_code_file(tmp_path / "s.jsonl", "claude-sonnet-4-5-20250929")
    result = CliRunner().invoke(
        app, ["inspect", str(path), "--json", "--what-if-model", "mystery-model-x"]
    )
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["sessions"][0]
    assert entry["simulated"]["cost_usd"] is None
    assert entry["recorded"]["cost_usd"] is None
    assert result.stderr.count("mystery-model-x") == 1
    table = CliRunner().invoke(app, ["inspect", str(path), "--what-if-model", "mystery-model-x"])
    assert table.exit_code == 0
    assert "unknown" in table.stdout


@pytest.mark.corpus
def test_cli_on_a_recorded_session(corpus: Path) -> None:
    path = corpus / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    result = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["sessions"]
    assert entry["calls"] == 7
    assert entry["recorded"]["cache_read"] > 0
    assert abs(entry["cost_error"]) < 0.25
    assert entry["resend_ratio"] > 1
    assert entry["heaviest_tool_results"][0]["carried_by_calls"] >= 1
