"""Cline / Roo Code reader: hand-built task folders following ``ClineStorageMessage`` /
Roo's ``ApiMessage`` and ``ClineMessage`` (no corpus file exists for these harnesses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError, UnknownFormatError
from contextkit.formats import detect, load
from contextkit.formats.cline import HISTORY, READER, UI_MESSAGES, usage_from_request_info
from contextkit.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from contextkit.session import Session, Usage
from corpus_paths import corpus_files

pytestmark = pytest.mark.filterwarnings("error")

T0 = 1_750_000_000_000


def _task(tmp_path: Path, history: list[Any], ui: list[Any] | str | None = None) -> Path:
    folder = tmp_path / "tasks" / "1750000000000"
    folder.mkdir(parents=True)
    path = folder / HISTORY
    path.write_text(json.dumps(history, indent=2))
    if ui is not None:
        (folder / UI_MESSAGES).write_text(ui if isinstance(ui, str) else json.dumps(ui, indent=2))
    return path


def _req(ts: int, **info: Any) -> dict[str, Any]:
    return {"ts": ts, "type": "say", "say": "api_req_started", "text": json.dumps(info)}


def _say(ts: int, say: str, text: str = "", **extra: Any) -> dict[str, Any]:
    return {"ts": ts, "type": "say", "say": say, "text": text, **extra}


MODEL = {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"}

HISTORY_CLINE: list[Any] = [
    {"role": "user", "content": [{"type": "text", "text": "<task>fix it</task>"}], "ts": T0},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "look first", "signature": "sig"},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
        ],
        "modelInfo": MODEL,
        "ts": T0 + 2000,
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"}],
        "ts": T0 + 2100,
    },
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "done"}],
        "modelInfo": MODEL,
        "ts": T0 + 4000,
    },
]

UI_CLINE: list[Any] = [
    _say(T0, "task", "fix it"),
    _req(
        T0 + 10, request="...", tokensIn=4, tokensOut=50, cacheWrites=12000, cacheReads=0, cost=0.05
    ),
    _say(T0 + 2000, "text", "reading"),
    _req(T0 + 2200, tokensIn=6, tokensOut=20, cacheWrites=300, cacheReads=12000, cost=0.01),
    _say(T0 + 4000, "completion_result", "done"),
]


def _only(path: Path, *, lenient: bool = False) -> Session:
    (session,) = load(path, lenient=lenient).sessions
    return session


def test_cline_task_calls_requests_and_usage(tmp_path: Path) -> None:
    path = _task(tmp_path, HISTORY_CLINE, UI_CLINE)
    assert detect(path).name == "cline"
    session = _only(path)
    assert session.session_id == "1750000000000"
    assert not session.prefix_known
    first, second = session.calls
    assert first.model == "claude-sonnet-4-5"
    assert first.usage == Usage(input_tokens=4, cache_write_5m=12000, output_tokens=50)
    assert second.usage == Usage(
        input_tokens=6, cache_write_5m=300, cache_read=12000, output_tokens=20
    )
    assert first.stop_reason == "tool_use"
    assert second.stop_reason == "end_turn"
    assert first.timestamp is not None
    assert first.timestamp.year == 2025
    thinking, use = first.response.blocks if first.response else ()
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.signature == "sig"
    assert isinstance(use, ToolUseBlock)
    assert use.input == {"path": "a.py"}
    user, assistant, result = second.request.messages
    assert user.blocks == (TextBlock(text="<task>fix it</task>"),)
    assert assistant == first.response
    (block,) = result.blocks
    assert isinstance(block, ToolResultBlock)
    assert block.tool_use_id == "toolu_1"
    # The bookkeeping fields never reach the provider.
    assert "modelInfo" not in (assistant.model_extra or {})
    assert "ts" not in (user.model_extra or {})
    lines = path.read_text().splitlines()
    assert first.line is not None
    assert lines[first.line - 1] == "  {"
    assert '"assistant"' in lines[first.line]
    assert any("$0.060000 over 2 requests" in n for n in session.notes)
    assert session.compactions == ()


def test_tokens_in_as_whole_input_when_protocol_says_openai_or_it_covers_the_cache() -> None:
    whole = {"tokensIn": 1000, "tokensOut": 5, "cacheReads": 800, "cacheWrites": 0}
    assert usage_from_request_info({**whole, "apiProtocol": "openai"}) == Usage(
        input_tokens=200, cache_read=800, output_tokens=5
    )
    assert usage_from_request_info(whole) == Usage(
        input_tokens=200, cache_read=800, output_tokens=5
    )
    uncached = {"tokensIn": 3, "tokensOut": 5, "cacheReads": 800, "cacheWrites": 40}
    assert usage_from_request_info(uncached) == Usage(
        input_tokens=3, cache_read=800, cache_write_5m=40, output_tokens=5
    )
    assert usage_from_request_info({"request": "still streaming"}) is None


def test_without_ui_messages_usage_comes_from_metrics_or_is_unknown(tmp_path: Path) -> None:
    history = [dict(m) for m in HISTORY_CLINE]
    history[3] = {
        **history[3],
        "metrics": {"tokens": {"prompt": 1500, "completion": 9, "cached": 1200}, "cost": 0.002},
    }
    session = _only(_task(tmp_path, history))
    assert session.calls[0].usage is None
    assert session.calls[1].usage == Usage(input_tokens=300, cache_read=1200, output_tokens=9)
    assert any("no api_req_started" in n for n in session.notes)
    assert any("from the message's metrics" in n for n in session.notes)


def test_cline_deleted_range_truncates_later_requests(tmp_path: Path) -> None:
    history: list[Any] = [{"role": "user", "content": "task"}]
    for i in range(3):
        history.append({"role": "assistant", "content": f"a{i}"})
        history.append({"role": "user", "content": f"u{i}"})
    history.append({"role": "assistant", "content": "a3"})
    ui = [
        _say(T0, "task", "task"),
        _req(T0 + 1, tokensIn=1, tokensOut=1),
        _say(T0 + 2, "text", "a0"),
        _req(T0 + 3, tokensIn=1, tokensOut=1),
        _say(T0 + 4, "text", "a1"),
        _req(T0 + 5, tokensIn=1, tokensOut=1),
        _say(T0 + 6, "text", "a2", conversationHistoryDeletedRange=[1, 2]),
        _req(T0 + 7, tokensIn=1, tokensOut=1, conversationHistoryDeletedRange=[1, 2]),
        _say(T0 + 8, "text", "a3", conversationHistoryDeletedRange=[1, 2]),
    ]
    session = _only(_task(tmp_path, history, ui))
    assert len(session.calls) == 4
    assert session.compactions == (2,)
    texts = [m.content for m in session.calls[3].request.messages]
    assert texts == ["task", "a1", "u1", "a2", "u2"]
    assert len(session.calls[1].request.messages) == 3


def test_roo_condense_summary_hides_tagged_messages_and_is_not_a_call(tmp_path: Path) -> None:
    history = [
        {"role": "user", "content": "task", "ts": T0},
        {"role": "assistant", "content": "a0", "ts": T0 + 10, "condenseParent": "c1"},
        {"role": "user", "content": "u0", "ts": T0 + 20, "condenseParent": "c1"},
        {"type": "reasoning", "encrypted_content": "xyz", "id": "rs_1"},
        {"role": "assistant", "content": "S", "ts": T0 + 30, "isSummary": True, "condenseId": "c1"},
        {"role": "user", "content": "u1", "ts": T0 + 40},
        {"role": "assistant", "content": "a1", "ts": T0 + 50},
    ]
    ui = [
        _req(T0 + 5, tokensIn=100, tokensOut=5, apiProtocol="anthropic"),
        _req(T0 + 45, tokensIn=900, tokensOut=5, cacheReads=100, apiProtocol="openai"),
    ]
    session = _only(_task(tmp_path, history, ui))
    first, second = session.calls
    assert [m.content for m in second.request.messages] == ["task", "S", "u1"]
    assert session.compactions == (1,)
    assert second.usage == Usage(input_tokens=800, cache_read=100, output_tokens=5)
    assert session.set_aside == {"item/reasoning": 1, "message/summary": 1}
    assert first.usage == Usage(input_tokens=100, output_tokens=5)


def test_bad_message_is_an_error_strictly_and_a_listed_skip_leniently(tmp_path: Path) -> None:
    history = [*HISTORY_CLINE[:2], {"role": "system", "content": "x"}, "junk", *HISTORY_CLINE[2:]]
    path = _task(tmp_path, history, UI_CLINE)
    with pytest.raises(FormatError, match="unknown role 'system'") as error:
        load(path)
    assert error.value.path == str(path)
    assert error.value.line is not None
    loaded = load(path, lenient=True)
    assert [s.reason.split(":")[0] for s in loaded.skipped] == ["message 2", "message 3"]
    assert loaded.calls == 2


def test_broken_ui_messages_is_an_error_naming_that_file(tmp_path: Path) -> None:
    path = _task(tmp_path, HISTORY_CLINE, "[{not json")
    with pytest.raises(FormatError) as error:
        load(path)
    assert error.value.path.endswith(UI_MESSAGES)
    loaded = load(path, lenient=True)
    assert loaded.skipped[0].path.endswith(UI_MESSAGES)
    assert all(c.usage is None for c in loaded.sessions[0].calls)


def test_api_req_started_with_bad_text_is_a_skip(tmp_path: Path) -> None:
    ui = [*UI_CLINE[:1], _say(T0 + 10, "api_req_started", "{oops"), *UI_CLINE[2:]]
    path = _task(tmp_path, HISTORY_CLINE, ui)
    with pytest.raises(FormatError, match="api_req_started") as error:
        load(path)
    assert error.value.line == 8
    loaded = load(path, lenient=True)
    assert len(loaded.skipped) == 1


def test_not_a_list_is_an_error(tmp_path: Path) -> None:
    path = _task(tmp_path, [], None)
    path.write_text('{"role": "user"}')
    with pytest.raises(FormatError, match="expected a JSON list"):
        READER.read(path)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("api_conversation_history.json", '{"messages": []}'),
        ("history.json", '[{"role": "user", "content": "x"}]'),
        ("ui_messages.json", '[{"ts": 1, "type": "say", "say": "task"}]'),
    ],
)
def test_sniff_is_conservative(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert not READER.sniff(path, text)


@pytest.mark.corpus
def test_cline_reader_claims_no_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert not READER.sniff(path, head), path


def test_ui_messages_is_claimed_by_no_reader(tmp_path: Path) -> None:
    path = _task(tmp_path, HISTORY_CLINE, UI_CLINE)
    with pytest.raises(UnknownFormatError):
        detect(path.parent / UI_MESSAGES)
