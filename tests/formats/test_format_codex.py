"""Codex CLI rollouts: calls, usage from token_count events, compaction, bad lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import detect, load
from contextkit.formats.codex import ItemsBuilder
from contextkit.messages import Conversation, ToolResultBlock, rules_for, validate
from contextkit.session import Usage
from contextkit.wire import from_responses_items

TS = "2026-05-11T08:27:17.490Z"


def line(kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": TS, "type": kind, "payload": payload})


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def said(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "name": "sh", "arguments": "{}", "call_id": call_id}


def output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


def tokens(total_in: int, total_cached: int, last_in: int, last_cached: int, out: int) -> str:
    info = {
        "total_token_usage": {
            "input_tokens": total_in,
            "cached_input_tokens": total_cached,
            "output_tokens": out,
        },
        "last_token_usage": {
            "input_tokens": last_in,
            "cached_input_tokens": last_cached,
            "output_tokens": out,
        },
    }
    return line("event_msg", {"type": "token_count", "info": info, "rate_limits": None})


ROLLOUT = [
    line("session_meta", {"id": "s1", "base_instructions": {"text": "You are Codex."}}),
    line(
        "response_item",
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "sandbox"}],
        },
    ),
    line("turn_context", {"model": "gpt-5.5", "cwd": "/"}),
    line("response_item", user("fix it")),
    line("event_msg", {"type": "user_message", "message": "fix it", "images": []}),
    line("event_msg", {"type": "token_count", "info": None, "rate_limits": {}}),
    line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "e1"}),
    line("response_item", call("c1")),
    line("response_item", call("c2")),
    tokens(1000, 0, 1000, 0, 50),
    tokens(1000, 0, 1000, 0, 50),  # a repeat: not a new call
    line("response_item", output("c1")),
    line("response_item", output("c2")),
    line("event_msg", {"type": "exec_command_end", "call_id": "c1"}),
    line("response_item", said("done")),
    tokens(2200, 900, 1200, 900, 60),
    line("compacted", {"message": "summary of work"}),
    line("event_msg", {"type": "user_message", "message": "and now?"}),
    line("response_item", said("more")),
    line("response_item", {"type": "ghost_snapshot", "ghost_commit": {}}),
]


def write(tmp_path: Path, lines: list[str], name: str = "rollout-x.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_rollout_calls_usage_and_compaction(tmp_path: Path) -> None:
    path = write(tmp_path, ROLLOUT)
    assert detect(path).name == "codex"
    session = load(path).sessions[0]
    assert session.format == "codex"
    assert session.session_id == "s1"
    assert not session.prefix_known
    assert len(session.calls) == 3
    first, second, third = session.calls
    assert first.request.system_blocks[0].text == "You are Codex."  # type: ignore[union-attr]
    assert first.request.model == "gpt-5.5"
    assert [m.role for m in first.request.messages] == ["user"]
    assert first.stop_reason == "tool_use"
    assert first.usage == Usage(input_tokens=1000, output_tokens=50)
    assert first.line == 7
    results = second.request.messages[-1].blocks
    assert [r.tool_use_id for r in results if isinstance(r, ToolResultBlock)] == ["c1", "c2"]
    assert second.usage == Usage(input_tokens=300, cache_read=900, output_tokens=60)
    assert second.stop_reason == "end_turn"
    # Compaction without replacement history: context + user messages + summary, then the echo.
    texts = [m.blocks[0].text for m in third.request.messages]  # type: ignore[union-attr]
    assert texts == ["fix it", "summary of work", "and now?"]
    assert third.usage is None
    assert session.compactions == (2,)
    assert session.set_aside["event_msg:token_count (repeat)"] == 1
    assert session.set_aside["response_item:ghost_snapshot"] == 1
    assert any("rebuilt from user_message events" in n for n in session.notes)


def test_replacement_history_and_rollback(tmp_path: Path) -> None:
    lines = [
        line("session_meta", {"id": "s2"}),
        line("response_item", user("one")),
        line("response_item", said("a")),
        line("response_item", user("two")),
        line("response_item", said("b")),
        line("event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
        line("response_item", user("three")),
        line("response_item", said("c")),
        line("compacted", {"message": "s", "replacement_history": [user("kept")]}),
        line("response_item", user("four")),
        line("response_item", said("d")),
    ]
    session = load(write(tmp_path, lines)).sessions[0]
    assert len(session.calls) == 4
    third = [m.blocks[0].text for m in session.calls[2].request.messages]  # type: ignore[union-attr]
    assert third == ["one", "a", "three"]
    fourth = [m.blocks[0].text for m in session.calls[3].request.messages]  # type: ignore[union-attr]
    assert fourth == ["kept", "four"]
    assert session.calls[0].request.system is None
    assert any("base instructions" in n for n in session.notes)


def test_corrupt_lines_are_named(tmp_path: Path) -> None:
    lines = [*ROLLOUT[:4], "{broken", line("response_item", {"type": "function_call", "name": "x"})]
    path = write(tmp_path, lines)
    with pytest.raises(FormatError, match=r"rollout-x\.jsonl:5: not valid JSON"):
        load(path)
    loaded = load(path, lenient=True)
    assert [s.line for s in loaded.skipped] == [5, 6]
    assert "function_call needs" in loaded.skipped[1].reason


ROLLOUT_0141 = [
    line("session_meta", {"id": "s2", "base_instructions": {"text": "You are Codex."}}),
    line("turn_context", {"model": "gpt-5.5", "cwd": "/"}),
    line("response_item", user("fix it")),
    line("event_msg", {"type": "user_message", "message": "fix it", "images": []}),
    line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "e1"}),
    line("response_item", said("looking")),
    line("response_item", call("c1")),
    line("response_item", call("c2")),
    line("response_item", output("c1")),
    line("response_item", output("c2")),
    tokens(1000, 0, 1000, 0, 50),  # written after the tool outputs (Codex 0.141 and later)
    line("response_item", call("c3")),
    line("response_item", output("c3")),
    tokens(2300, 900, 1300, 900, 70),
    tokens(2300, 900, 1300, 900, 70),  # a repeat: not a new call
    line("response_item", said("done")),
    tokens(3700, 2100, 1400, 1200, 90),
    line("event_msg", {"type": "user_message", "message": "and now?"}),
    line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "e2"}),
    line("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
]


def test_usage_written_after_the_tool_outputs_is_the_response_s(tmp_path: Path) -> None:
    """Codex 0.141+ writes a response's token_count after the outputs of its tool calls: one call
    per response (was two: the response without usage, then the usage without a response)."""
    session = load(write(tmp_path, ROLLOUT_0141)).sessions[0]
    assert len(session.calls) == 4
    first, second, third, aborted = session.calls
    assert first.usage == Usage(input_tokens=1000, output_tokens=50)
    assert first.response is not None
    assert [b.type for b in first.response.blocks] == ["thinking", "text", "tool_use", "tool_use"]
    assert second.usage == Usage(input_tokens=400, cache_read=900, output_tokens=70)
    assert third.usage == Usage(input_tokens=200, cache_read=1200, output_tokens=90)
    assert third.stop_reason == "end_turn"
    assert aborted.usage is None  # an interrupted turn: no usage event, said so
    assert any("1 response(s) with no token_count" in n for n in session.notes)
    assert not any("without a recorded response" in n for n in session.notes)


def test_builder_matches_batch_mapping() -> None:
    items = [json.loads(raw)["payload"] for raw in ROLLOUT if '"response_item"' in raw][:-1]
    builder = ItemsBuilder()
    for index, item in enumerate(items):
        builder.add(item, index)
    assert builder.snapshot() == from_responses_items(items)


ROLLOUT_1 = "codemie-codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
ROLLOUT_2 = "codemie-codex/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"


@pytest.mark.corpus
def test_corpus_rollout_with_token_counts(corpus: Path) -> None:
    path = corpus / ROLLOUT_1
    session = load(path).sessions[0]
    assert len(session.calls) == 66
    assert all(c.usage is not None for c in session.calls)
    last_total: dict[str, int] = {}
    for raw in path.read_text().splitlines():
        record = json.loads(raw)
        if record["payload"].get("type") == "token_count" and record["payload"]["info"]:
            last_total = record["payload"]["info"]["total_token_usage"]
    usages = [c.usage for c in session.calls if c.usage is not None]
    assert sum(u.total_input for u in usages) == last_total["input_tokens"]
    assert sum(u.cache_read for u in usages) == last_total["cached_input_tokens"]
    assert sum(u.output_tokens for u in usages) == last_total["output_tokens"]
    assert session.calls[0].request.system is not None
    assert {c.model for c in session.calls} == {"gpt-5.5"}
    # Each request extends the previous one: the history only grows (no compaction here).
    for before, after in zip(session.calls, session.calls[1:], strict=False):
        assert (
            after.request.messages[: len(before.request.messages) - 1]
            == before.request.messages[:-1]
        )


def _token_counts(path: Path) -> tuple[int, dict[str, int]]:
    """The number of token_count events whose cumulative total changed, and the last total."""
    changed, previous, last = 0, None, {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        payload = json.loads(raw).get("payload") or {}
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if isinstance(info, dict) and info.get("total_token_usage") is not None:
            total = info["total_token_usage"]
            changed += total != previous
            previous = last = total
    return changed, last


@pytest.mark.corpus
def test_every_corpus_rollout_bills_one_call_per_changed_total(corpus: Path) -> None:
    """Every Codex rollout of the corpus, whatever its client version (0.1xx to 0.142): one billed
    call per changed cumulative token_count, and the calls' usage adds up to the last total
    (input with its cached part, cached, output with reasoning). Before, the 0.141+ rollouts gave
    two calls a response (270 for 140 totals, 219 for 112) and only one of them the usage."""
    checked = 0
    for path in sorted(corpus.rglob("*.jsonl")):
        if detect(path).name != "codex":
            continue
        changed, last = _token_counts(path)
        if not changed:
            continue
        session = load(path).sessions[0]
        usages = [c.usage for c in session.calls if c.usage is not None]
        assert len(usages) == changed, path.name
        assert sum(u.total_input for u in usages) == last["input_tokens"], path.name
        assert sum(u.cache_read for u in usages) == last["cached_input_tokens"], path.name
        assert sum(u.output_tokens for u in usages) == last["output_tokens"], path.name
        unbilled = [c for c in session.calls if c.usage is None]
        assert all(c.response is not None for c in unbilled), path.name  # responses, not events
        assert len(unbilled) <= 2, path.name  # an interrupted turn, the file's cut-off end
        checked += 1
    assert checked >= 4  # codemie, localpush and the two agentv rollouts (0.141, 0.142)


@pytest.mark.corpus
def test_corpus_rollout_without_token_counts(corpus: Path) -> None:
    session = load(corpus / ROLLOUT_2).sessions[0]
    assert len(session.calls) == 20
    assert all(c.usage is None for c in session.calls)
    users = [
        m
        for m in session.calls[-1].request.messages
        if m.role == "user" and not list(m.tool_results())
    ]
    assert len(users) == 3
    assert sum(1 for c in session.calls if c.stop_reason == "end_turn") == 3


def _items_conversation(items: list[dict[str, object]]) -> Conversation:
    system, messages = from_responses_items(items)
    return Conversation(system=system, messages=messages)


CALL: dict[str, object] = {
    "type": "function_call",
    "call_id": "c1",
    "name": "shell",
    "arguments": "{}",
}
OUTPUT: dict[str, object] = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
ASK: dict[str, object] = {
    "type": "message",
    "role": "user",
    "content": [{"type": "input_text", "text": "go"}],
}


def _message(role: str, text: str) -> dict[str, object]:
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


def test_a_developer_message_between_a_call_and_its_output_is_accepted() -> None:
    """OpenAI accepts it (Codex records instruction updates so): no false finding."""
    items = [ASK, CALL, _message("developer", "approval policy changed"), OUTPUT]
    assert validate(_items_conversation(items), provider=rules_for("openai")) == ()
    # Anthropic has no such role: there the same history is one it would reject.
    codes = {v.code for v in validate(_items_conversation(items), provider="anthropic")}
    assert codes == {"results_not_first"}


def test_requests_openai_rejects_still_fail() -> None:
    rules = rules_for("openai")
    unanswered = validate(_items_conversation([ASK, CALL, _message("user", "hi")]), provider=rules)
    assert {v.code for v in unanswered} == {"dangling_tool_use"}
    user_between = [ASK, CALL, _message("user", "a real user message"), OUTPUT]
    assert {v.code for v in validate(_items_conversation(user_between), provider=rules)} == {
        "results_not_first"
    }
    orphan = validate(_items_conversation([ASK, OUTPUT]), provider=rules)
    assert {v.code for v in orphan} == {"orphan_tool_result"}
