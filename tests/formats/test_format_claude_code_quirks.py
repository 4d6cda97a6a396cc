"""Claude Code reader on what recorded usage does not say plainly: stream-start output placeholders,
subagents that survive only as ``agent_progress`` records, two records on one line, record kinds of
newer clients, corrupted token counts.

Corpus figures are stated per file and derived again here with a plain JSON loop over the lines
(:func:`claude_code_json.json_calls`), independent of the reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from claude_code_json import JsonCall, json_calls, json_records
from contextkit.errors import FormatError
from contextkit.formats._io import Skips, iter_jsonl
from contextkit.formats.claude_code import load_claude_code
from contextkit.messages import BLOCKS_ADAPTER, TextBlock, Usage, validate
from contextkit.models import resolve_model
from contextkit.session import Session
from contextkit.tokens import block_text, counter_for

ENTIRE_6D = "entire-claude/s-6d-9f76bd01e9-0.jsonl"
ENTIRE_BD = "entire-claude/s-bd-7375936c5c-0.jsonl"
SPOTTER_SUBAGENT = "spotter/subagent.jsonl"

CORRECTED: dict[str, int] = {
    "claude-code-log-synthetic/representative_messages.jsonl": 0,
    "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": 2,
    "claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": 3,
    "codemie-claude/incremental-subagents/turn-2.jsonl": 1,
    "codemie-claude/incremental-subagents/turn-2/subagents/agent-a485154.jsonl": 1,
    "codemie-claude/session-196820da.jsonl": 1,
    "codemie-claude/session-9eda1058.jsonl": 0,
    "entire-claude/s-33-bdd525bfa3-0.jsonl": 8,
    ENTIRE_6D: 299,
    "entire-claude/s-89-7eb280e769-12.jsonl": 288,
    ENTIRE_BD: 63,
    "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl": 15,
    "spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl": 3,
    "spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-acompact-fffbd0.jsonl": 1,
    "spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl": 18,
    "spotter/short.jsonl": 1,
    SPOTTER_SUBAGENT: 11,
    "spotter/tool_heavy.jsonl": 2,
}
"""Calls of each file (its own sessions, not the subagent files beside it) whose output_tokens is
a placeholder. The files with real outputs (claude-code-log 1.0.0, codemie 9eda1058 on 2.1.4)
have none; every other client version from 1.0.98 on writes some."""


# --------------------------------------------------------------------------------------------------
# The plain JSON loop (claude_code_json.json_calls) and the rule applied to it


def _placeholders(calls: dict[str, JsonCall]) -> int:
    """Calls whose content counts at least 2x the recorded output and 5 tokens more."""
    found = 0
    model = next((c.model for c in calls.values() if c.model), None)
    for call in calls.values():
        counter = counter_for(resolve_model(call.model or model))
        blocks = BLOCKS_ADAPTER.validate_python(call.blocks)
        counted = sum(counter.count_text(block_text(b)) for b in blocks)
        recorded = call.usage.get("output_tokens") or 0
        found += counted >= max(2 * recorded, recorded + 5)
    return found


def _own_sessions(path: Path) -> list[Session]:
    return [
        s
        for top in load_claude_code(path).sessions
        for s in top.all_sessions()
        if s.path == str(path)
    ]


# --------------------------------------------------------------------------------------------------
# 1. placeholder output tokens


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(CORRECTED))
def test_placeholder_outputs_are_counted_per_file(corpus: Path, name: str) -> None:
    sessions = _own_sessions(corpus / name)
    calls = [c for s in sessions for c in s.calls]
    assert len(calls) == len(json_calls(corpus / name))
    corrected = [c for c in calls if c.output_estimated]
    assert len(corrected) == CORRECTED[name] == _placeholders(json_calls(corpus / name))
    for session in sessions:
        mine = sum(c.output_estimated for c in session.calls)
        notes = [n for n in session.notes if n.startswith("output_tokens counted")]
        assert len(notes) == (1 if mine else 0)
        head = f"output_tokens counted from the response content for {mine} of "
        assert all(n.startswith(f"{head}{len(session.calls)} calls") for n in notes)


@pytest.mark.corpus
def test_files_with_real_outputs_are_left_alone(corpus: Path) -> None:
    """codemie's 9eda1058 (client 2.1.4) records final output counts: none is touched, and its
    usage is exactly the file's."""
    path = corpus / "codemie-claude/session-9eda1058.jsonl"
    calls = list(json_calls(path).values())  # in order of their first line, as the reader's
    (session,) = _own_sessions(path)
    assert len(session.calls) == len(calls) == 5
    for call, recorded in zip(session.calls, calls, strict=True):
        assert not call.output_estimated
        assert call.usage == Usage.from_anthropic(recorded.usage)


@pytest.mark.corpus
def test_final_counts_the_parent_confirms_are_left_alone(corpus: Path) -> None:
    """claude-code-viewer 5c0375b4 (client 1.0.108): the parent's Task results report the usage of
    each inline sidechain's last response (308 and 520 tokens out); the sidechain files record the
    same figures, and they are kept as recorded."""
    path = corpus / "claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    billed = [
        r["usage"]["output_tokens"]
        for obj in json_records(path)
        if isinstance(r := obj.get("toolUseResult"), dict) and "usage" in r
    ]
    assert billed == [308, 520]
    lasts = [s.calls[-1] for s in load_claude_code(path).sessions[0].subagents]
    assert [c.usage.output_tokens for c in lasts if c.usage] == billed
    assert not any(c.output_estimated for c in lasts)


@pytest.mark.corpus
def test_a_counted_output_against_the_billed_one(corpus: Path) -> None:
    """The one placeholder whose billed figure the corpus holds elsewhere: the last call of
    spotter's subagent a881341 records 1 output token in its file; the parent's Task result
    reports the final usage of that response (997 tokens out). The count comes within 5%."""
    parent = corpus / "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    billed = next(
        r["usage"]
        for obj in json_records(parent)
        if isinstance(r := obj.get("toolUseResult"), dict) and r.get("agentId") == "a881341"
    )
    assert billed["output_tokens"] == 997
    agent = next(
        s for s in load_claude_code(parent).sessions[0].subagents if s.session_id == "a881341"
    )
    last = agent.calls[-1]
    assert last.output_estimated
    assert last.usage is not None
    assert abs(last.usage.output_tokens - 997) / 997 < 0.05
    fields = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    assert (last.usage.input_tokens, last.usage.cache_read, last.usage.cache_write) == tuple(
        billed[f] for f in fields
    )


# --------------------------------------------------------------------------------------------------
# 2. subagents held in agent_progress records


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "agents"), [(ENTIRE_6D, 7), (SPOTTER_SUBAGENT, 1)])
def test_agent_progress_subagents_on_the_corpus(corpus: Path, name: str, agents: int) -> None:
    path = corpus / name
    per_agent: dict[str, set[str]] = {}
    tool_use: dict[str, str] = {}
    for obj in json_records(path):
        data = obj.get("data", {})
        if obj.get("type") == "progress" and data.get("type") == "agent_progress":
            tool_use[data["agentId"]] = obj["parentToolUseID"]
            inner = data["message"]
            keys = per_agent.setdefault(data["agentId"], set())
            if inner["type"] == "assistant":
                keys.add(inner["requestId"])
    main = load_claude_code(path).sessions[0]
    subs = {s.session_id: s for s in main.subagents}
    assert len(subs) == len(per_agent) == agents
    for agent, keys in per_agent.items():
        sub = subs[agent]
        assert len(sub.calls) == len(keys) + 1  # + the last response, from the Task result
        assert sub.parent_session_id == main.session_id
        assert sub.parent_tool_use_id == tool_use[agent]
        assert any(
            t.id == tool_use[agent]
            for c in main.calls
            if c.response
            for t in c.response.tool_uses()
        )
        assert all(c.usage is not None and c.model and c.timestamp for c in sub.calls)
        assert all(validate(c.request) == () for c in sub.calls)
        assert [c.request_id for c in sub.calls[:-1]] == sorted(
            keys, key=[c.request_id for c in sub.calls].index
        )
    if name == ENTIRE_6D:
        assert sum(len(s.calls) for s in main.subagents) == 156 + 7


@pytest.mark.corpus
def test_agent_progress_is_ignored_where_the_subagent_file_exists(corpus: Path) -> None:
    """spotter's main file holds 2 of its subagent's calls as agent_progress too; the subagent
    file (3 calls) is read, the progress copies are not a second session."""
    main = load_claude_code(corpus / "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl").sessions[
        0
    ]
    assert [(s.session_id, len(s.calls)) for s in main.subagents] == [
        ("a881341", 3),
        ("acompact-fffbd0", 1),
    ]


def _progress(agent: str, line: dict[str, Any], parent: str) -> dict[str, Any]:
    return {
        "type": "progress",
        "uuid": f"p-{line['uuid']}",
        "parentUuid": parent,
        "sessionId": "s1",
        "parentToolUseID": "task1",
        "toolUseID": "agent_msg_1",
        "timestamp": "2026-01-01T00:00:02.000Z",
        "data": {"type": "agent_progress", "agentId": agent, "prompt": "look", "message": line},
    }


def _inner_assistant(uuid: str, request: str, block: dict[str, Any], output: int) -> dict[str, Any]:
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 100, "output_tokens": output}
    return {
        "type": "assistant",
        "uuid": uuid,
        "requestId": request,
        "timestamp": "2026-01-01T00:00:03.000Z",
        "message": {
            "id": f"msg_{request}",
            "model": "claude-opus-4-5-20251101",
            "role": "assistant",
            "content": [block],
            "stop_reason": None,
            "usage": usage,
        },
    }


def _inner_user(uuid: str, content: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "timestamp": "2026-01-01T00:00:02.500Z",
        "message": {"role": "user", "content": content},
    }


def _tool(tid: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": f"/src/{tid}.py"}}


def _result(tid: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tid, "content": f"contents of {tid}"}


ANSWER = "The two files define the reader and its tests; " * 12


def _progress_session(usage: Any = None) -> list[dict[str, Any]]:
    """A parent that starts subagent x1 by a Task call; x1's messages only in progress records."""
    task = {"type": "tool_use", "id": "task1", "name": "Task", "input": {"prompt": "look"}}
    final_usage = (
        usage
        if usage is not None
        else {"input_tokens": 1, "cache_read_input_tokens": 400, "output_tokens": 1}
    )
    inner = [
        _inner_user("i1", [{"type": "text", "text": "look"}]),
        _inner_assistant("i2", "q1", _tool("t1"), 3),
        _inner_assistant("i3", "q1", _tool("t2"), 3),
        _inner_user("i4", [_result("t1")]),
        _inner_user("i5", [_result("t2")]),
        _inner_assistant("i6", "q2", _tool("t3"), 1),
        _inner_user("i7", [_result("t3")]),
    ]
    lines: list[dict[str, Any]] = [
        _user("u1", None, "delegate"),
        _assistant("a1", "u1", "r1", task, 30),
    ]
    parent = "a1"
    for rec in inner:
        lines.append(_progress("x1", rec, parent))
        parent = lines[-1]["uuid"]
    done = _user("u2", parent, [{"type": "tool_result", "tool_use_id": "task1", "content": ANSWER}])
    done["toolUseResult"] = {
        "status": "completed",
        "agentId": "x1",
        "content": [{"type": "text", "text": ANSWER}],
        "usage": final_usage,
    }
    return [*lines, done, _assistant("a2", "u2", "r2", {"type": "text", "text": "thanks"}, 2)]


def _user(uuid: str, parent: str | None, content: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": content},
    }


def _assistant(
    uuid: str, parent: str, request: str, block: dict[str, Any], output: int
) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "requestId": request,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {
            "id": f"msg_{request}",
            "role": "assistant",
            "model": "claude-opus-4-5-20251101",
            "content": [block],
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": output},
        },
    }


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_agent_progress_messages_make_a_subagent_session(tmp_path: Path) -> None:
    main = load_claude_code(_write(tmp_path / "s1.jsonl", _progress_session())).sessions[0]
    assert len(main.calls) == 2
    (sub,) = main.subagents
    assert (sub.session_id, sub.parent_session_id, sub.parent_tool_use_id) == ("x1", "s1", "task1")
    assert [c.request_id for c in sub.calls] == ["q1", "q2", None]
    first, second, last = sub.calls
    assert [m.role for m in first.request.messages] == ["user"]
    assert [m.role for m in second.request.messages] == ["user", "assistant", "user"]
    assert [t.id for t in second.request.messages[1].tool_uses()] == ["t1", "t2"]
    assert [r.tool_use_id for r in second.request.messages[2].tool_results()] == ["t1", "t2"]
    assert [r.tool_use_id for r in last.request.messages[-1].tool_results()] == ["t3"]
    assert last.response is not None
    assert last.response.content == (TextBlock(text=ANSWER),)
    assert last.model == "claude-opus-4-5-20251101"
    assert last.stop_reason == "end_turn"
    assert last.usage is not None
    assert last.usage.cache_read == 400
    assert last.output_estimated  # recorded 1; the answer is long
    assert last.usage.output_tokens > 100
    assert all(validate(c.request) == () for c in sub.calls)
    assert any("agent_progress" in n for n in sub.notes)
    assert main.set_aside["progress"] == 7


def test_a_subagent_result_with_all_zero_usage_is_reported_not_priced(tmp_path: Path) -> None:
    """A Task result whose usage is all zeros (nothing billed) makes no call: before, it was a
    call of its own, and a subagent with nothing else became a one-call session with no model
    ("no price known for model '<no model>'")."""
    zero = {"input_tokens": 0, "output_tokens": 0}
    main = load_claude_code(_write(tmp_path / "s1.jsonl", _progress_session(usage=zero)))
    (sub,) = main.sessions[0].subagents
    assert [c.request_id for c in sub.calls] == ["q1", "q2"]
    assert any("all-zero usage" in n and "no call is taken" in n for n in sub.notes)


def test_agent_progress_with_a_bad_usage_names_the_line(tmp_path: Path) -> None:
    lines = _progress_session(usage={"input_tokens": -4, "output_tokens": 1})
    path = _write(tmp_path / "s1.jsonl", lines)
    with pytest.raises(FormatError, match=r"toolUseResult\.usage: usage\.input_tokens") as info:
        load_claude_code(path)
    assert info.value.line == 10
    lenient = load_claude_code(path, lenient=True)
    assert [s.line for s in lenient.skipped] == [10]
    inner = _progress_session()
    inner[3]["data"]["message"]["message"]["usage"]["output_tokens"] = "many"
    with pytest.raises(FormatError, match=r"agent_progress record, in data\.message") as info:
        load_claude_code(_write(tmp_path / "s2.jsonl", inner))
    assert info.value.line == 4


# --------------------------------------------------------------------------------------------------
# 1. placeholder outputs on hand-built calls


def test_a_placeholder_output_is_counted_and_a_short_reply_is_not(tmp_path: Path) -> None:
    long_text = {"type": "text", "text": "Here is what the module does, step by step. " * 20}
    lines = [
        _user("u1", None, "explain"),
        _assistant("a1", "u1", "r1", long_text, 1),
        _user("u2", "a1", "thanks"),
        _assistant("a2", "u2", "r2", {"type": "text", "text": "You are welcome."}, 4),
    ]
    session = load_claude_code(_write(tmp_path / "s1.jsonl", lines)).sessions[0]
    placeholder, short = session.calls
    assert placeholder.output_estimated
    assert placeholder.usage is not None
    assert placeholder.usage.output_tokens > 150
    assert placeholder.usage.input_tokens == 10  # input as recorded
    assert not short.output_estimated
    assert short.usage == Usage(input_tokens=10, output_tokens=4)
    assert any(
        n.startswith("output_tokens counted from the response content for 1 of 2")
        for n in session.notes
    )


def test_real_outputs_change_nothing(tmp_path: Path) -> None:
    lines = [
        _user("u1", None, "hi"),
        _assistant("a1", "u1", "r1", {"type": "text", "text": "Hello!"}, 3),
    ]
    session = load_claude_code(_write(tmp_path / "s1.jsonl", lines)).sessions[0]
    assert not any(c.output_estimated for c in session.calls)
    assert not any("output_tokens counted" in n for n in session.notes)


# --------------------------------------------------------------------------------------------------
# 4. two records on one line


@pytest.mark.corpus
def test_two_records_on_one_line_in_the_corpus(corpus: Path) -> None:
    path = corpus / ENTIRE_BD
    kinds: dict[str, int] = {}
    for obj in json_records(path):
        kinds[obj["type"]] = kinds.get(obj["type"], 0) + 1
    loaded = load_claude_code(path)  # strict
    assert loaded.skipped == ()
    session = loaded.sessions[0]
    assert len(session.calls) == 63
    assert session.set_aside["summary"] == kinds["summary"] == 4
    assert session.set_aside["progress"] == kinds["progress"] == 103
    assert any(n.startswith("line 183 holds 2 JSON records") for n in session.notes)


def test_iter_jsonl_splits_records_written_back_to_back(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}{"b": 2} {"c": 3}\n  {"d": 4}\n')
    skips = Skips(path, lenient=False)
    assert list(iter_jsonl(path, skips)) == [
        (1, {"a": 1}),
        (1, {"b": 2}),
        (1, {"c": 3}),
        (2, {"d": 4}),
    ]
    (note,) = skips.notes
    assert note.startswith("line 1 holds 3 JSON records with no newline between them")


@pytest.mark.parametrize("text", ['{"a": 1}{"b": \n', '{"a": 1}}\n', '{"a": 1} x\n'])
def test_a_broken_second_record_is_still_an_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"ok": 0}\n' + text)
    with pytest.raises(FormatError, match="not valid JSON") as info:
        list(iter_jsonl(path, Skips(path, lenient=False)))
    assert info.value.line == 2
    lenient = Skips(path, lenient=True)
    assert list(iter_jsonl(path, lenient)) == [(1, {"ok": 0})]
    assert [s.line for s in lenient.records] == [2]
    assert lenient.notes == []


def test_a_progress_and_a_summary_on_one_line_are_both_read(tmp_path: Path) -> None:
    lines = [json.dumps(x) for x in _progress_session()]
    summary = json.dumps({"type": "summary", "summary": "Delegated a look", "leafUuid": "u2"})
    lines[4] += summary  # a progress record, then the summary, no newline between
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    session = load_claude_code(path).sessions[0]
    assert session.set_aside["summary"] == 1
    assert [len(s.calls) for s in session.all_sessions()] == [2, 3]
    assert any(n.startswith("line 5 holds 2 JSON records") for n in session.notes)


# --------------------------------------------------------------------------------------------------
# 5. bad input


def test_record_kinds_of_a_newer_client_are_set_aside(tmp_path: Path) -> None:
    lines = [
        {"type": "agent-name", "name": "reviewer", "sessionId": "s1"},
        _user("u1", None, "hi"),
        {"type": "pr-link", "uuid": "k1", "parentUuid": "u1", "sessionId": "s1", "url": "x"},
        {"type": "system", "subtype": "memory_saved", "uuid": "k2", "parentUuid": "k1"},
        {"type": "progress", "uuid": "k3", "parentUuid": "k2", "data": {"type": "tool_stream"}},
        {"type": "worktree-state", "sessionId": "s1", "state": {"branch": "b"}},
        _assistant("a1", "k3", "r1", {"type": "brand_new_block", "payload": {"x": 1}}, 2),
    ]
    session = load_claude_code(_write(tmp_path / "s1.jsonl", lines)).sessions[0]
    assert len(session.calls) == 1
    assert [m.role for m in session.calls[0].request.messages] == ["user"]
    assert session.set_aside == {
        "agent-name": 1,
        "pr-link": 1,
        "progress": 1,
        "system/memory_saved": 1,
        "worktree-state": 1,
    }


BAD_COUNTS = ["1e999", "NaN", "-5", "[1]", '{"n": 1}', '"12"', "true", "2.5"]


@pytest.mark.parametrize("value", BAD_COUNTS)
@pytest.mark.parametrize("key", ["output_tokens", "cache_read_input_tokens"])
def test_corrupted_token_counts_name_file_and_line(tmp_path: Path, value: str, key: str) -> None:
    lines = [
        json.dumps(_user("u1", None, "hi")),
        json.dumps(_assistant("a1", "u1", "r1", {"type": "text", "text": "one"}, 2)),
        json.dumps(_user("u2", "a1", "again")),
        json.dumps(_assistant("a2", "u2", "r2", {"type": "text", "text": "two"}, 2)).replace(
            '"output_tokens": 2', f'"output_tokens": 2, "{key}": {value}'
        ),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError) as info:
        load_claude_code(path)
    assert (info.value.path, info.value.line) == (str(path), 4)
    assert f"message.usage: usage.{key} must be a non-negative integer" in info.value.reason
    lenient = load_claude_code(path, lenient=True)
    assert [(s.line, s.reason) for s in lenient.skipped] == [(4, info.value.reason)]
    assert [c.request_id for c in lenient.sessions[0].calls] == ["r1"]


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -1, [3], {"a": 1}, "7", True, 0.5])
def test_usage_from_anthropic_takes_non_negative_integers_only(value: Any) -> None:
    with pytest.raises(ValueError, match=r"usage\.input_tokens must be a non-negative integer"):
        Usage.from_anthropic({"input_tokens": value})
    with pytest.raises(ValueError, match=r"usage\.cache_creation\.ephemeral_1h_input_tokens"):
        Usage.from_anthropic({"cache_creation": {"ephemeral_1h_input_tokens": value}})


def test_usage_from_anthropic_accepts_what_the_api_sends() -> None:
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 30,
        "cache_read_input_tokens": None,
        "cache_creation": {"ephemeral_5m_input_tokens": 10.0, "ephemeral_1h_input_tokens": 20},
        "output_tokens": 7,
        "service_tier": "standard",
    }
    assert Usage.from_anthropic(usage) == Usage(
        input_tokens=3, cache_write_5m=10, cache_write_1h=20, output_tokens=7
    )
    with pytest.raises(ValueError, match="cache_creation must be an object"):
        Usage.from_anthropic({"cache_creation": [1]})


def test_a_task_result_written_as_a_string_is_the_last_response(tmp_path: Path) -> None:
    lines = _progress_session()
    lines[-2]["toolUseResult"]["content"] = ANSWER
    sub = load_claude_code(_write(tmp_path / "s1.jsonl", lines)).sessions[0].subagents[0]
    last = sub.calls[-1].response
    assert last is not None
    assert last.content == (TextBlock(text=ANSWER),)


def test_agent_progress_is_not_read_when_the_agent_has_a_file(tmp_path: Path) -> None:
    _write(tmp_path / "s1.jsonl", _progress_session())
    (tmp_path / "s1" / "subagents").mkdir(parents=True)
    own = [
        {**_user("v1", None, "look"), "isSidechain": True, "agentId": "x1"},
        {
            **_assistant("w1", "v1", "q9", {"type": "text", "text": "seen"}, 2),
            "isSidechain": True,
            "agentId": "x1",
        },
    ]
    _write(tmp_path / "s1" / "subagents" / "agent-x1.jsonl", own)
    (sub,) = load_claude_code(tmp_path / "s1.jsonl").sessions[0].subagents
    assert [c.request_id for c in sub.calls] == ["q9"]
    assert sub.path.endswith("agent-x1.jsonl")


@pytest.mark.corpus
def test_a_reset_trigger_the_reads_contradict_is_not_a_reset(corpus: Path, tmp_path: Path) -> None:
    """spotter tool_heavy: call 2 follows a reset trigger, and its reads show the rewrite (18k
    read of the 26k the call before had cached). The same file with call 2 reading all 26k: the
    trigger reset nothing, so the reader takes no reset there, and says so."""
    source = corpus / "spotter" / "tool_heavy.jsonl"
    (session,) = load_claude_code(source).sessions
    assert session.calls[2].cache_reset == "system"
    lines = source.read_text(encoding="utf-8").split("\n")
    line = session.calls[2].line
    assert line is not None
    key = json.loads(lines[line - 1])["message"]["id"]
    for n, text in enumerate(lines):  # every record of the response carries its usage
        record = json.loads(text) if text.strip() else {}
        if record.get("type") != "assistant" or record["message"].get("id") != key:
            continue
        usage = record["message"]["usage"]
        usage["cache_read_input_tokens"] = 26_006
        usage["cache_creation_input_tokens"] = 498
        usage["cache_creation"] = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 498}
        lines[n] = json.dumps(record)
    edited = tmp_path / "tool_heavy.jsonl"
    edited.write_text("\n".join(lines), encoding="utf-8")
    (read_through,) = load_claude_code(edited).sessions
    assert read_through.calls[2].cache_reset is None
    assert any("read the previous call's cache in full (calls 2)" in n for n in read_through.notes)
