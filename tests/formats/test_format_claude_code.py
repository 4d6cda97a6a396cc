"""Claude Code transcript reader: corpus counts, request reconstruction, subagents, bad input."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from datetime import date
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import detect, load
from contextkit.formats._io import read_head
from contextkit.formats.claude_code import READER, load_claude_code
from contextkit.formats.claude_code.prefix import claude_code_prefix
from contextkit.messages import Message, TextBlock, ToolResultBlock, to_payload
from contextkit.session import Session, Usage

SPOTTER_MAIN = "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
ENTIRE_33 = "entire-claude/s-33-bdd525bfa3-0.jsonl"
ENTIRE_6D = "entire-claude/s-6d-9f76bd01e9-0.jsonl"
ENTIRE_89 = "entire-claude/s-89-7eb280e769-12.jsonl"
ENTIRE_BD = "entire-claude/s-bd-7375936c5c-0.jsonl"

# Calls per file, determined by reading each file: one call per distinct requestId (message.id
# where requestId is absent, as in the codemie subagent file), requestId and message.id checked to
# map one to one; synthetic messages would not count (none in this corpus). (main calls, calls of
# each subagent in order). They agree with SOURCES.md, which counts a whole file: for
# claude-code-viewer/5c0375b4 its 20 are our 10 main calls plus the inline sidechains' 3 and 7.
# edge_cases.jsonl is tested apart: it is deliberately corrupted (see test_edge_cases_file).
# Subagents held only in agent_progress records (spotter/subagent.jsonl, entire-claude s-6d): one
# call per distinct requestId of the agent's progress messages plus its last response, which only
# the Task result holds (test_agent_progress_subagents_on_the_corpus counts them with a JSON loop).
CORPUS_CALLS: dict[str, tuple[int, tuple[int, ...]]] = {
    "claude-code-log-synthetic/representative_messages.jsonl": (5, ()),
    "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": (7, ()),
    "claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": (10, (3, 7)),
    "codemie-claude/incremental-subagents/turn-2.jsonl": (11, (6,)),
    "codemie-claude/incremental-subagents/turn-2/subagents/agent-a485154.jsonl": (6, ()),
    "codemie-claude/session-196820da.jsonl": (47, ()),
    "codemie-claude/session-9eda1058.jsonl": (5, ()),
    SPOTTER_MAIN: (152, (3, 1)),
    "spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl": (3, ()),
    "spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-acompact-fffbd0.jsonl": (1, ()),
    "spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl": (18, ()),
    "spotter/short.jsonl": (1, ()),
    "spotter/subagent.jsonl": (12, (6,)),
    "spotter/tool_heavy.jsonl": (4, ()),
    ENTIRE_33: (15, ()),
    ENTIRE_6D: (165, (25, 20, 12, 50, 10, 19, 27)),
    ENTIRE_89: (288, ()),
    ENTIRE_BD: (63, ()),
}


def _all_sessions(root: Path) -> Iterator[tuple[str, Session]]:
    for name in CORPUS_CALLS:
        for session in load_claude_code(root / name).sessions:
            for each in session.all_sessions():
                yield name, each


# --------------------------------------------------------------------------------------------------
# Corpus


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(CORPUS_CALLS))
def test_corpus_file_loads_strictly_with_expected_calls(corpus: Path, name: str) -> None:
    loaded = load_claude_code(corpus / name)
    assert loaded.format == "claude-code"
    assert loaded.skipped == ()
    assert len(loaded.sessions) == 1
    session = loaded.sessions[0]
    main, subs = CORPUS_CALLS[name]
    assert len(session.calls) == main
    assert tuple(len(s.calls) for s in session.subagents) == subs
    assert detect(corpus / name).name == "claude-code"


@pytest.mark.corpus
def test_edge_cases_file(corpus: Path) -> None:
    """claude-code-log's edge_cases.jsonl holds deliberately broken lines (``"massive error"``,
    ``42``, ``[1]``, ``message: "error"``, a misspelt ``content``, a bare string as a block).
    Accepting those silently would hide bad input, so strict names the first one and lenient
    reads the 4 real responses (lines 2, 4, 9, 17), listing each broken line."""
    path = corpus / "claude-code-log-synthetic/edge_cases.jsonl"
    with pytest.raises(FormatError) as info:
        load_claude_code(path)
    assert info.value.line == 10
    loaded = load_claude_code(path, lenient=True)
    assert [s.line for s in loaded.skipped] == [10, 11, 13, 15, 16, 18]
    session = loaded.sessions[0]
    assert [c.line for c in session.calls] == [2, 4, 9, 17]
    assert session.set_aside == {"(no type)": 1, "summary": 1}
    assert any("file order" in n for n in session.notes)


@pytest.mark.corpus
def test_usage_is_the_last_lines_usage(corpus: Path) -> None:
    path = corpus / SPOTTER_MAIN
    last: dict[str, dict[str, Any]] = {}
    for raw in path.read_text().splitlines():
        obj = json.loads(raw)
        if obj.get("type") == "assistant" and not obj.get("isSidechain"):
            last[obj["requestId"]] = obj["message"]["usage"]
    session = load_claude_code(path).sessions[0]
    assert len(last) == len(session.calls)
    for call in session.calls:
        assert call.request_id is not None
        recorded = Usage.from_anthropic(last[call.request_id])
        if call.output_estimated:  # a stream-start placeholder, counted from the content
            assert call.usage is not None
            assert call.usage.output_tokens > recorded.output_tokens
            recorded = recorded.model_copy(update={"output_tokens": call.usage.output_tokens})
        assert call.usage == recorded
    assert sum(c.output_estimated for c in session.calls) == 15


@pytest.mark.corpus
def test_requests_are_valid_api_message_arrays(corpus: Path) -> None:
    """Each request ends with a user message, roles alternate, every tool_use is answered in the
    next user message (results first) when the file has its result, and no result is orphaned."""
    for name, session in _all_sessions(corpus):
        in_file = {
            r.tool_use_id
            for c in session.calls
            for m in c.request.messages
            for r in m.tool_results()
        }
        for call in session.calls:
            _check_request(call.request.messages, in_file, f"{name}:{call.line}")


def _check_request(messages: Sequence[Message], in_file: set[str], where: str) -> None:
    assert messages, where
    assert messages[-1].role == "user", where
    for before, after in pairwise(messages):
        assert before.role != after.role, where
        asked = {t.id for t in before.tool_uses()}
        answered = {r.tool_use_id for r in after.tool_results()}
        assert answered <= asked, where
        assert asked & in_file <= answered, where
        kinds = [isinstance(b, ToolResultBlock) for b in after.blocks]
        assert kinds == sorted(kinds, reverse=True), where


@pytest.mark.corpus
def test_consecutive_requests_share_message_objects(corpus: Path) -> None:
    session = load_claude_code(corpus / SPOTTER_MAIN).sessions[0]
    for k in range(1, len(session.calls)):
        if k in session.compactions:
            continue
        before, now = session.calls[k - 1], session.calls[k]
        shared = before.request.messages[:-1]  # the last user message may grow
        assert all(a is b for a, b in zip(shared, now.request.messages, strict=False))
        assert any(m is before.response for m in now.request.messages)


@pytest.mark.corpus
def test_compaction_on_spotter_session(corpus: Path) -> None:
    session = load_claude_code(corpus / SPOTTER_MAIN).sessions[0]
    assert session.compactions == (102,)
    first = session.calls[102].request.messages[0]
    assert first.role == "user"
    assert str(first.content).startswith("This session is being continued")
    assert len(session.calls[101].request.messages) > 200
    assert any("trigger auto" in n and "167094" in n for n in session.notes)
    assert session.set_aside["system/compact_boundary"] == 1
    assert session.set_aside["progress"] == 1333


@pytest.mark.corpus
def test_subagents_are_linked_to_their_parent(corpus: Path) -> None:
    main = load_claude_code(corpus / SPOTTER_MAIN).sessions[0]
    agent, compact = main.subagents
    assert agent.session_id == "a881341"
    assert agent.parent_session_id == main.session_id
    assert agent.parent_tool_use_id == "toolu_01VmaERAwhb19LGUwu9GenaK"
    assert compact.session_id == "acompact-fffbd0"
    assert compact.parent_tool_use_id is None
    # The compaction request continues the parent's history: call 101's request and response.
    request = compact.calls[0].request.messages
    assert request[: len(main.calls[101].request.messages)] == main.calls[101].request.messages
    assert any(m is main.calls[101].response for m in request)

    turn2 = load_claude_code(corpus / "codemie-claude/incremental-subagents/turn-2.jsonl")
    assert turn2.sessions[0].subagents[0].parent_tool_use_id == (
        "toolu_bdrk_019PUUtqzQg8U5ogfuyQ7yLV"
    )
    viewer = load_claude_code(
        corpus / "claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    )
    assert [s.parent_tool_use_id for s in viewer.sessions[0].subagents] == [
        "toolu_014YF9TXhDRR7BnpasNJ7gjC",
        "toolu_01LKfUwrsnof18CpWZQcJH44",
    ]


@pytest.mark.corpus
def test_subagent_file_loaded_directly(corpus: Path) -> None:
    linked = load_claude_code(
        corpus / "codemie-claude/incremental-subagents/turn-2/subagents/agent-a485154.jsonl"
    ).sessions[0]
    assert linked.parent_tool_use_id == "toolu_bdrk_019PUUtqzQg8U5ogfuyQ7yLV"
    orphan = load_claude_code(
        corpus / "spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl"
    ).sessions[0]
    assert orphan.parent_session_id == "6c2214d7-b87e-4432-8e41-22ba294ea584"
    assert orphan.parent_tool_use_id is None
    assert any("not found" in n for n in orphan.notes)


@pytest.mark.corpus
def test_prefix_is_unknown_everywhere(corpus: Path) -> None:
    for _, session in _all_sessions(corpus):
        assert session.prefix_known is False
        assert "system prompt" in session.notes[0]
        assert all(not c.exact and c.request.system is None for c in session.calls)


@pytest.mark.corpus
def test_large_session_loads_fast(corpus: Path) -> None:
    start = time.perf_counter()
    session = load_claude_code(corpus / SPOTTER_MAIN).sessions[0]
    elapsed = time.perf_counter() - start
    assert len(session.calls) == 152
    assert elapsed < 2.0, f"{elapsed:.2f} s"


# --------------------------------------------------------------------------------------------------
# Hand-written fixtures


def _user(uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "isSidechain": False,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": content},
        **extra,
    }


def _assistant(
    uuid: str, parent: str | None, request: str, block: dict[str, Any], output: int = 1
) -> dict[str, Any]:
    usage = {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": output}
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
            "model": "claude-opus-4-6",
            "content": [block],
            "stop_reason": None,
            "usage": usage,
        },
    }


def _tool_use(tid: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": "Read", "input": {"path": tid}}


def _result(tid: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tid, "content": f"out {tid}"}


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _parallel_session() -> list[Any]:
    """One response with two tool_uses; results on side branches, written between its lines."""
    return [
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
        _user("u1", None, "read both"),
        _assistant("a1", "u1", "r1", {"type": "text", "text": "ok"}, output=3),
        _assistant("a2", "a1", "r1", _tool_use("t1"), output=7),
        _user("u2", "a2", [_result("t1")]),
        {"type": "progress", "uuid": "p1", "parentUuid": "u2", "data": {"type": "hook_progress"}},
        _assistant("a3", "p1", "r1", _tool_use("t2"), output=9),
        _user("u3", "a3", [_result("t2")]),
        _user("u4", "u3", [{"type": "text", "text": "and then?"}]),
        _assistant("a4", "u4", "r2", {"type": "text", "text": "done"}, output=2),
    ]


def test_parallel_results_and_streamed_lines_make_one_exchange(tmp_path: Path) -> None:
    path = _write(tmp_path / "s1.jsonl", _parallel_session())
    session = load_claude_code(path).sessions[0]
    assert [c.request_id for c in session.calls] == ["r1", "r2"]
    first, second = session.calls
    assert first.usage == Usage(input_tokens=10, cache_read=5, output_tokens=9)
    assert first.stop_reason == "tool_use"
    assert second.stop_reason == "end_turn"
    assert any("inferred" in n for n in session.notes)
    assert [m.role for m in first.request.messages] == ["user"]
    assistant, user = second.request.messages[1:]
    assert assistant is first.response
    assert [t.id for t in assistant.tool_uses()] == ["t1", "t2"]
    assert [b.type for b in user.blocks] == ["tool_result", "tool_result", "text"]
    assert session.set_aside == {"file-history-snapshot": 1, "progress": 1}


def test_side_branch_results_are_taken_in(tmp_path: Path) -> None:
    lines = [
        _user("u1", None, "go"),
        _assistant("a1", "u1", "r1", _tool_use("t1")),
        _assistant("a2", "a1", "r1", _tool_use("t2")),
        _user("u2", "a1", [_result("t1")]),  # parent: the line of its own tool_use
        _user("u3", "a2", [_result("t2")]),
        _assistant("a3", "u3", "r2", {"type": "text", "text": "done"}),
    ]
    session = load_claude_code(_write(tmp_path / "s.jsonl", lines)).sessions[0]
    last = session.calls[1].request.messages[-1]
    assert [r.tool_use_id for r in last.tool_results()] == ["t1", "t2"]


def test_synthetic_messages_are_not_calls(tmp_path: Path) -> None:
    synthetic = _assistant("x1", "u1", "ignored", {"type": "text", "text": "API Error: 529"})
    synthetic["isApiErrorMessage"] = True
    synthetic["message"]["model"] = "<synthetic>"
    del synthetic["requestId"]
    lines = [
        _user("u1", None, "hi"),
        synthetic,
        _user("u2", "x1", "try again"),
        _assistant("a1", "u2", "r1", {"type": "text", "text": "hello"}),
    ]
    session = load_claude_code(_write(tmp_path / "s.jsonl", lines)).sessions[0]
    assert len(session.calls) == 1
    (request,) = session.calls[0].request.messages
    assert [b.type for b in request.blocks] == ["text", "text"]
    assert session.set_aside == {"assistant/synthetic": 1}


def test_compaction_boundary_restarts_the_chain(tmp_path: Path) -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b1",
        "parentUuid": None,
        "logicalParentUuid": "a1",
        "compactMetadata": {"trigger": "manual", "preTokens": 1234},
    }
    lines = [
        _user("u1", None, "long talk"),
        _assistant("a1", "u1", "r1", {"type": "text", "text": "yes"}),
        boundary,
        _user("s1", "b1", "Summary: long talk", isCompactSummary=True),
        _assistant("a2", "s1", "r2", {"type": "text", "text": "go on"}),
    ]
    session = load_claude_code(_write(tmp_path / "s.jsonl", lines)).sessions[0]
    assert session.compactions == (1,)
    assert [m.content for m in session.calls[1].request.messages] == ["Summary: long talk"]
    assert any("trigger manual" in n for n in session.notes)


def test_subagent_folder_is_linked(tmp_path: Path) -> None:
    task = {"type": "tool_use", "id": "task1", "name": "Task", "input": {"prompt": "look"}}
    done = _user("u2", "a1", [_result("task1")], toolUseResult={"agentId": "abc"})
    _write(
        tmp_path / "s1.jsonl",
        [
            _user("u1", None, "delegate"),
            _assistant("a1", "u1", "r1", task),
            done,
            _assistant("a2", "u2", "r2", {"type": "text", "text": "ok"}),
        ],
    )
    agent_lines = [
        {**_user("v1", None, "look"), "isSidechain": True, "agentId": "abc"},
        {**_assistant("w1", "v1", "q1", {"type": "text", "text": "seen"}), "isSidechain": True},
    ]
    (tmp_path / "s1" / "subagents").mkdir(parents=True)
    agent_file = _write(tmp_path / "s1" / "subagents" / "agent-abc.jsonl", agent_lines)
    main = load_claude_code(tmp_path / "s1.jsonl").sessions[0]
    (sub,) = main.subagents
    assert (sub.session_id, sub.parent_session_id, sub.parent_tool_use_id) == ("abc", "s1", "task1")
    assert len(sub.calls) == 1
    alone = load_claude_code(agent_file).sessions[0]
    assert alone.parent_tool_use_id == "task1"
    (tmp_path / "s1.jsonl").unlink()
    orphan = load_claude_code(agent_file).sessions[0]
    assert orphan.parent_tool_use_id is None
    assert any("not found" in n for n in orphan.notes)


# --------------------------------------------------------------------------------------------------
# Bad input


def _bad_lines(tmp_path: Path) -> Path:
    good = [json.dumps(x).encode() for x in _parallel_session()]
    wrong_content = _user("z1", "u4", 42)
    wrong_usage = _assistant("z2", "u4", "r9", {"type": "text", "text": "x"})
    wrong_usage["message"]["usage"] = "lots"
    lines = [
        *good[:3],
        b'{"type": "user", "uuid": "cut", "message": {"role": "us',  # truncated line
        *good[3:6],
        b'{"type": "user", "message": {"content": "caf\xe9"}}',  # invalid UTF-8
        json.dumps(wrong_content).encode(),
        json.dumps(wrong_usage).encode(),
        *good[6:],
    ]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize(
    ("drop", "line", "reason"),
    [
        (0, 4, "not valid JSON"),
        (1, 8, "invalid UTF-8"),
        (2, 9, "message.content must be a string or a list of blocks, found int"),
        (3, 10, "message.usage must be an object"),
    ],
)
def test_strict_names_the_bad_line(tmp_path: Path, drop: int, line: int, reason: str) -> None:
    path = _bad_lines(tmp_path)
    # Keep only the one bad line under test (and every good line) by blanking the others.
    raw = path.read_bytes().split(b"\n")
    for other, number in enumerate((4, 8, 9, 10)):
        if other != drop:
            raw[number - 1] = b""
    path.write_bytes(b"\n".join(raw))
    with pytest.raises(FormatError) as info:
        load_claude_code(path)
    assert info.value.line == line
    assert info.value.path == str(path)
    assert reason in info.value.reason


def test_lenient_skips_and_lists_every_bad_line(tmp_path: Path) -> None:
    loaded = load_claude_code(_bad_lines(tmp_path), lenient=True)
    assert [s.line for s in loaded.skipped] == [4, 8, 9, 10]
    assert all(s.path.endswith("bad.jsonl") for s in loaded.skipped)
    assert [c.request_id for c in loaded.sessions[0].calls] == ["r1", "r2"]


def test_bad_block_and_bad_field_types(tmp_path: Path) -> None:
    bad_block = _user("u9", None, ["just a string"])
    with pytest.raises(FormatError, match=r"message\.content\[0\]"):
        load_claude_code(_write(tmp_path / "a.jsonl", [bad_block]))
    bad_parent = _user("u9", None, "x")
    bad_parent["parentUuid"] = 7
    with pytest.raises(FormatError, match="parentUuid"):
        load_claude_code(_write(tmp_path / "b.jsonl", [bad_parent]))


# --------------------------------------------------------------------------------------------------
# Sniffing and registry


def test_sniff_accepts_summary_or_snapshot_first(tmp_path: Path) -> None:
    summary = {"type": "summary", "summary": "t", "leafUuid": "u1"}
    path = _write(tmp_path / "s.jsonl", [summary, *_parallel_session()])
    assert READER.sniff(path, read_head(path))
    assert detect(path).name == "claude-code"
    assert len(load(path).sessions[0].calls) == 2
    huge = {"type": "file-history-snapshot", "messageId": "m", "snapshot": {"x": "y" * 70000}}
    big = _write(tmp_path / "big.jsonl", [huge, *_parallel_session()])
    assert READER.sniff(big, read_head(big))


def test_sniff_rejects_other_jsonl(tmp_path: Path) -> None:
    other = [{"type": "session_meta", "payload": {}}, {"role": "user", "content": "hi"}]
    path = _write(tmp_path / "o.jsonl", other)
    assert not READER.sniff(path, read_head(path))


def test_a_missing_parent_record_is_reported_not_hidden(corpus: Path, tmp_path: Path) -> None:
    source = corpus / "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    gap = tmp_path / "gap.jsonl"
    gap.write_text("".join(lines[:5] + lines[6:]), encoding="utf-8")  # line 6 removed
    notes = load(gap).sessions[0].notes
    assert any("parentUuid the file does not hold (first at line 6)" in n for n in notes)
    assert not any("parentUuid the file" in n for n in load(source).sessions[0].notes)


def test_harness_cache_resets_are_marked_on_the_call_after_their_trigger(tmp_path: Path) -> None:
    notification = "<task-notification>\n<task-id>b0</task-id>\n<status>completed</status>"
    mcp = "<command-name>/mcp</command-name>\n<command-message>mcp</command-message>"
    lines = [
        _user("u1", None, "start"),
        _assistant("a1", "u1", "r1", {"type": "text", "text": "ok"}),
        _user("u2", "a1", notification),
        _assistant("a2", "u2", "r2", {"type": "text", "text": "noted"}),
        _user("u3", "a2", [{"type": "text", "text": "go on"}]),
        _assistant("a3", "u3", "r3", {"type": "text", "text": "going"}),
        _user("u4", "a3", [{"type": "text", "text": mcp}]),
        _assistant("a4", "u4", "r4", {"type": "text", "text": "reconnected"}),
        _user("u5", "a4", "why did <task-notification> and /mcp not show up?"),
        _assistant("a5", "u5", "r5", {"type": "text", "text": "they did"}),  # quoted: no reset
    ]
    session = load_claude_code(_write(tmp_path / "s1.jsonl", lines)).sessions[0]
    assert [c.cache_reset for c in session.calls] == [None, "messages", None, "system", None]


def test_a_resumed_session_rewrites_the_system_prompt(tmp_path: Path) -> None:
    """A new process took the session up: after ``/exit``, or where the ``SessionStart`` hook
    ran with the ``resume`` matcher (a progress record between the calls)."""
    exit_text = "<command-name>/exit</command-name>\n<command-message>exit</command-message>"
    lines = [
        _user("u1", None, "start"),
        _assistant("a1", "u1", "r1", {"type": "text", "text": "ok"}),
        _user("u2", "a1", [{"type": "text", "text": exit_text}, {"type": "text", "text": "back"}]),
        _assistant("a2", "u2", "r2", {"type": "text", "text": "hello again"}),
        _user("u3", "a2", "go on"),
        _assistant("a3", "u3", "r3", {"type": "text", "text": "going"}),
        {
            "type": "progress",
            "uuid": "p1",
            "parentUuid": "a3",
            "timestamp": "2026-01-01T00:12:00.000Z",
            "data": {
                "type": "hook_progress",
                "hookEvent": "SessionStart",
                "hookName": "SessionStart:resume",
            },
        },
        _user("u4", "p1", "and now?"),
        _assistant("a4", "u4", "r4", {"type": "text", "text": "now this"}),
        _user("u5", "a4", "more"),
        _assistant("a5", "u5", "r5", {"type": "text", "text": "more"}),
    ]
    for minute, index in enumerate((1, 3, 5, 8, 10)):
        lines[index]["timestamp"] = f"2026-01-01T00:{minute * 5:02d}:01.000Z"
    session = load_claude_code(_write(tmp_path / "s1.jsonl", lines)).sessions[0]
    assert [c.cache_reset for c in session.calls] == [None, "system", None, "system", None]
    assert session.resumes == (1, 3)


def test_harness_cache_resets_on_the_spotter_session(corpus: Path) -> None:
    """Both task notifications of the recorded session, each on the call that first sends it."""
    session = load(corpus / "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl").sessions[0]
    reset = [i for i, c in enumerate(session.calls) if c.cache_reset]
    assert reset == [31, 149]
    assert all(session.calls[i].cache_reset == "messages" for i in reset)
    for i in reset:  # the recorded read stops at the end of tools + system: the messages rewritten
        usage, before = session.calls[i].usage, session.calls[i - 1].usage
        assert usage is not None
        assert before is not None
        assert usage.cache_read < before.total_input / 3


# --------------------------------------------------------------------------------------------------
# Attachments and preserved segments, as Claude Code 2.1.197 writes and sends them (the real CLI's
# requests are compared in test_claude_code_cli.py; these cases pin the rules without it)


def _attachment(uuid: str, parent: str, attachment: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "attachment",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "isSidechain": False,
        "attachment": attachment,
        "version": "2.1.197",
    }


AGENTS = {
    "type": "agent_listing_delta",
    "addedTypes": ["Explore"],
    "addedLines": ["- Explore: search code"],
    "removedTypes": [],
    "isInitial": True,
    "showConcurrencyNote": True,
}
AGENTS_TEXT = (
    "<system-reminder>\nAvailable agent types for the Agent tool:\n- Explore: search code\n\n"
    "When you launch multiple agents for independent work, send them in a single message with "
    "multiple tool uses so they run concurrently.\n</system-reminder>"
)
SKILLS = {"type": "skill_listing", "content": "- init: write CLAUDE.md", "isInitial": True}
SKILLS_TEXT = (
    "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n"
    "- init: write CLAUDE.md\n</system-reminder>"
)


def test_attachments_go_before_the_prompt_or_into_the_last_tool_result(tmp_path: Path) -> None:
    lines = [
        _user("u1", None, "fix it"),
        _attachment("x1", "u1", AGENTS),
        _attachment("x2", "x1", SKILLS),
        _attachment("x3", "x2", {"type": "some_future_kind", "data": 1}),
        _assistant("a1", "x3", "r1", _tool_use("t1")),
        _user("u2", "a1", [{**_result("t1"), "is_error": False}]),
        _attachment("x4", "u2", AGENTS),
        _assistant("a2", "x4", "r2", {"type": "text", "text": "done"}),
    ]
    loaded = load_claude_code(_write(tmp_path / "s.jsonl", lines))
    session = loaded.sessions[0]
    first, second = session.calls
    prompt = first.request.messages[0]
    assert [to_payload(b) for b in prompt.blocks] == [
        {"type": "text", "text": AGENTS_TEXT},
        {"type": "text", "text": SKILLS_TEXT + "\n"},  # one message, joined to the prompt's (2.1+)
        {"type": "text", "text": "fix it"},
    ]
    result = second.request.messages[2].blocks
    assert [to_payload(b) for b in result] == [
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": "out t1\n\n" + AGENTS_TEXT,
            "is_error": False,
        }
    ]
    assert session.set_aside == {"attachment/some_future_kind": 1}


def test_reminders_join_a_tool_result_holding_blocks(tmp_path: Path) -> None:
    blocks = [{"type": "text", "text": "line one\n"}]
    lines = [
        _user("u1", None, "go"),
        _assistant("a1", "u1", "r1", _tool_use("t1")),
        _user("u2", "a1", [{**_result("t1"), "content": blocks}]),
        _attachment("x1", "u2", SKILLS),
        _attachment("x2", "x1", AGENTS),
        _assistant("a2", "x2", "r2", {"type": "text", "text": "done"}),
    ]
    session = load_claude_code(_write(tmp_path / "s.jsonl", lines)).sessions[0]
    (result,) = session.calls[1].request.messages[2].blocks
    assert isinstance(result, ToolResultBlock)
    assert isinstance(result.content, tuple)
    joined = f"line one\n\n{SKILLS_TEXT}\n\n{AGENTS_TEXT}"
    assert [to_payload(b) for b in result.content] == [{"type": "text", "text": joined}]


def test_a_preserved_segment_follows_the_summary(tmp_path: Path) -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b1",
        "parentUuid": None,
        "logicalParentUuid": "u2",
        "compactMetadata": {
            "trigger": "auto",
            "preTokens": 75_012,
            "preservedSegment": {"headUuid": "a1", "anchorUuid": "s1", "tailUuid": "u2"},
        },
    }
    lines = [
        _user("u1", None, "long talk"),
        _assistant("a1", "u1", "r1", _tool_use("t1")),
        _user("u2", "a1", [_result("t1")]),
        boundary,
        _user("s1", "b1", "Summary: long talk", isCompactSummary=True),
        _attachment("x1", "s1", AGENTS),
        _assistant("a2", "x1", "r2", {"type": "text", "text": "go on"}),
    ]
    session = load_claude_code(_write(tmp_path / "s.jsonl", lines)).sessions[0]
    assert session.compactions == (1,)
    summary, kept_use, kept_result = session.calls[1].request.messages
    assert summary.content == "Summary: long talk"
    assert kept_use is session.calls[0].response
    assert [to_payload(b) for b in kept_result.blocks] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "out t1\n\n" + AGENTS_TEXT}
    ]


def test_a_record_written_again_is_read_once(tmp_path: Path) -> None:
    use = _assistant("a1", "u1", "r1", _tool_use("t1"))
    result = _user("u2", "a1", [_result("t1")])
    lines = [
        _user("u1", None, "go"),
        use,
        result,
        {**use, "slug": "a-name"},
        {**result, "slug": "a-name"},
        _assistant("a2", "u2", "r2", {"type": "text", "text": "done"}),
    ]
    session = load_claude_code(_write(tmp_path / "s.jsonl", lines)).sessions[0]
    assert [len(m.blocks) for m in session.calls[1].request.messages] == [1, 1, 1]
    assert session.set_aside == {"repeated record": 2}


def test_the_recorded_hidden_prefix_of_2_1_197() -> None:
    prefix = claude_code_prefix("2.1.197")
    assert prefix is not None
    assert prefix.seen == date(2026, 12, 2)
    assert claude_code_prefix("2.1.197.1f1") == prefix
    assert claude_code_prefix("2.1.197 (Claude Code)") == prefix
    assert claude_code_prefix("0.0.1") is None
    main = prefix.main
    assert [b.cache_control for b in main.system] == [None, "ephemeral", "ephemeral"]
    assert 25_000 < main.system_chars < 28_000
    assert main.tool_count == len(main.tool_names) == 24
    assert main.thinking == {"type": "enabled", "budget_tokens": 31_999}
    assert main.context_management == {
        "edits": [{"type": "clear_thinking_20251015", "keep": "all"}]
    }
    assert "context-management-2025-06-27" in main.betas
    assert prefix.subagent is not None
    assert prefix.subagent.thinking == {"type": "disabled"}
    assert prefix.subagent.tool_count < main.tool_count


def test_a_queued_message_joins_the_tool_result_it_came_with(tmp_path: Path) -> None:
    queued = {"type": "queued_command", "prompt": "also this", "commandMode": "prompt"}
    lines = [
        _user("u1", None, "go"),
        _assistant("a1", "u1", "r1", _tool_use("t1")),
        _user("u2", "a1", [_result("t1")]),
        _attachment("x1", "u2", queued),
        _attachment("x2", "x1", {**queued, "origin": {"kind": "channel"}}),
        _assistant("a2", "x2", "r2", {"type": "text", "text": "done"}),
    ]
    session = load_claude_code(_write(tmp_path / "s.jsonl", lines)).sessions[0]
    (result,) = session.calls[1].request.messages[2].blocks
    assert isinstance(result, ToolResultBlock)
    assert result.content == (
        "out t1\n\n<system-reminder>\nThe user sent a new message while you were working:\n"
        "also this\n\nIMPORTANT: After completing your current task, you MUST address the user's "
        "message above. Do not ignore it.\n</system-reminder>"
    )
    assert session.set_aside == {"attachment/queued_command": 1}  # another origin: not known


def test_user_records_join_with_a_newline_from_2_1_only(tmp_path: Path) -> None:
    def first_message(version: str | None) -> list[str]:
        extra = {"version": version} if version else {}
        lines = [
            _user("u1", None, "<command-name>/greet</command-name>", **extra),
            _user("u2", "u1", [{"type": "text", "text": "Say hello."}], **extra),
            _assistant("a1", "u2", "r1", {"type": "text", "text": "hello"}),
        ]
        loaded = load_claude_code(_write(tmp_path / f"{version}.jsonl", lines))
        message = loaded.sessions[0].calls[0].request.messages[0]
        return [b.text for b in message.blocks if isinstance(b, TextBlock)]

    assert first_message("2.1.197") == ["<command-name>/greet</command-name>\n", "Say hello."]
    assert first_message("1.0.6") == ["<command-name>/greet</command-name>", "Say hello."]
    assert first_message(None) == ["<command-name>/greet</command-name>", "Say hello."]
