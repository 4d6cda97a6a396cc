"""Agent-trajectory readers: SWE-agent, mini-swe-agent, tau-bench, OpenHands, Gemini CLI.

Corpus tests read the real files from $CONTEXTKIT_CORPUS (call counts are justified per file);
fixture tests use small hand-written files for the shapes and the errors the corpus lacks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import detect, load
from contextkit.messages import TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.session import Call, LoadedFile, Usage

pytestmark = pytest.mark.filterwarnings("error")

# (file, format, sessions, calls). Why each count:
CORPUS: list[tuple[str, str, int, int]] = [
    # 4 assistant messages in `history` + the final `submit` step, which the trajectory has (5
    # steps, model_stats api_calls=5) but the history was saved without.
    ("swe-agent/6e44b9__sweagenttestrepo-1c2844.traj", "swe-agent", 1, 5),
    # 12 history messages: system, instance, then 5 assistant/tool pairs; no trajectory.
    ("swe-agent/function_calling_simple.traj", "swe-agent", 1, 5),
    # 0.x: 43 messages = system + instance + 21 (assistant, observation) pairs minus the last
    # observation; 21 trajectory steps.
    ("swe-agent/i_got_id_demo.traj", "swe-agent", 1, 21),
    # 13 assistant messages with tool_calls, 13 steps, api_calls=13.
    ("swe-agent/marshmallow-code__marshmallow-1867.traj", "swe-agent", 1, 13),
    # 0.x with a demonstration (is_demo user message, not a call): 12 assistant messages.
    ("swe-agent/pydicom__pydicom-1458.traj", "swe-agent", 1, 12),
    ("swe-agent/swe-agent__test-repo-i1.traj", "swe-agent", 1, 5),
    # 22 messages: system, task, then 10 (assistant, observation) pairs.
    ("mini-swe-agent/github_issue.traj.json", "mini-swe-agent", 1, 10),
    # 6 messages: system, task, 2 pairs.
    ("mini-swe-agent/local.traj.json", "mini-swe-agent", 1, 2),
    # 100 results; 1229 assistant messages in all their `traj` lists.
    ("tau-bench/gpt-4o-airline-first100.json", "tau-bench", 100, 1229),
    # 2 agent actions with tool_call_metadata (edit, finish), distinct responses.
    ("openhands/basic.json", "openhands", 1, 2),
    # 4 tool-call responses + the agent's closing `message` action (an LLM reply without tools).
    ("openhands/basic_gui_mode.json", "openhands", 1, 5),
    # 2 agent `message` actions without metadata + the `finish` tool call.
    ("openhands/basic_interactions.json", "openhands", 1, 3),
    ("openhands/wrong_initial_state.json", "openhands", 1, 4),
    # 11 gemini records; one record holds 3 runs of tool calls (timestamps 21:48:11, 21:49:35,
    # 21:49:40): 2 more responses appended to it by Gemini CLI.
    ("codemie-gemini/session-2025-12-01T21-45-5b959dae.json", "gemini-cli", 1, 13),
    # 9 gemini records; appended responses: 2 in the 9-call record (3 timestamps), 1 each in
    # the two read_file/write_file records.
    ("codemie-gemini/session-2026-01-16T11-01-file-ops-37b7abef.json", "gemini-cli", 1, 13),
]


def _all_calls(loaded: LoadedFile) -> list[Call]:
    return [c for s in loaded.sessions for sub in s.all_sessions() for c in sub.calls]


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "fmt", "sessions", "calls"), CORPUS)
def test_corpus_file_loads(corpus: Path, name: str, fmt: str, sessions: int, calls: int) -> None:
    path = corpus / name
    assert detect(path).name == fmt
    loaded = load(path)
    assert loaded.format == fmt
    assert len(loaded.sessions) == sessions
    assert loaded.calls == calls
    assert loaded.skipped == ()
    for call in _all_calls(loaded):
        assert not call.exact
        assert call.response is not None
        assert call.response.role == "assistant"
        last = call.request.messages[-1]
        assert last.role == "user"
        assert isinstance(last.blocks[0], TextBlock | ToolResultBlock)


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "fmt", "sessions", "calls"), CORPUS)
def test_consecutive_requests_share_messages(
    corpus: Path, name: str, fmt: str, sessions: int, calls: int
) -> None:
    for session in load(corpus / name).sessions:
        for before, after in zip(session.calls, session.calls[1:], strict=False):
            shared = before.request.messages
            assert after.request.messages[: len(shared)] == shared
            assert all(a is b for a, b in zip(shared, after.request.messages, strict=False))


@pytest.mark.corpus
def test_openhands_usage_by_hand(corpus: Path) -> None:
    # basic.json, event 5: prompt_tokens 4646 = 6 + 1158 written + 3482 read; completion 177.
    calls = load(corpus / "openhands/basic.json").sessions[0].calls
    assert calls[1].usage == Usage(
        input_tokens=6, cache_write_5m=1158, cache_read=3482, output_tokens=177
    )
    assert calls[1].model == "claude-3-5-sonnet-20241022"
    # basic_interactions.json, finish: gpt-4o prompt 2473 of which 2304 cached, completion 10.
    session = load(corpus / "openhands/basic_interactions.json").sessions[0]
    assert [c.usage is not None for c in session.calls] == [False, False, True]
    assert session.calls[2].usage == Usage(input_tokens=169, cache_read=2304, output_tokens=10)
    assert not session.prefix_known


@pytest.mark.corpus
def test_gemini_usage_by_hand(corpus: Path) -> None:
    session = load(corpus / "codemie-gemini/session-2025-12-01T21-45-5b959dae.json").sessions[0]
    # message 6374d005: input 7973 (5675 cached), output 40, thoughts 131.
    assert session.calls[5].usage == Usage(input_tokens=2298, cache_read=5675, output_tokens=171)
    assert session.calls[0].usage == Usage(input_tokens=2752, output_tokens=55 + 156)
    # The responses Gemini CLI appended to record 1c56e562 have no tokens of their own.
    assert [c.usage is None for c in session.calls[7:10]] == [False, True, True]
    assert session.model == "gemini-3-pro-image-preview"
    assert session.session_id == "5b959dae-8655-4cd1-b10f-720b8c336ea2"


@pytest.mark.corpus
def test_swe_agent_and_tau_bench_have_no_per_call_usage(corpus: Path) -> None:
    swe = load(corpus / "swe-agent/6e44b9__sweagenttestrepo-1c2844.traj").sessions[0]
    assert all(c.usage is None for c in swe.calls)
    assert swe.model == "gpt-4o"
    assert swe.prefix_known
    assert any("tokens_sent=7141" in n for n in swe.notes)
    tau = load(corpus / "tau-bench/gpt-4o-airline-first100.json")
    assert all(c.usage is None and c.model is None for c in _all_calls(tau))
    assert tau.sessions[0].session_id == "task-0-trial-0"
    assert tau.sessions[0].prefix_known


@pytest.mark.corpus
def test_call_lines_point_at_the_response(corpus: Path) -> None:
    path = corpus / "openhands/basic.json"
    lines = path.read_text().splitlines()
    call = load(path).sessions[0].calls[0]
    assert call.line is not None
    assert lines[call.line].strip() == '"id": 3,'
    tau = corpus / "tau-bench/gpt-4o-airline-first100.json"
    first = load(tau).sessions[0].calls[0]
    assert first.line is not None
    assert '"role": "assistant"' in "\n".join(tau.read_text().splitlines()[first.line - 1 :][:6])


# --------------------------------------------------------------------------------------------------
# Fixtures


def _write(tmp_path: Path, name: str, value: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, indent=1))
    return path


def _chat(n_pairs: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hi"},
    ]
    for i in range(n_pairs):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "name": "f", "content": "ok"})
    out.append({"role": "assistant", "content": "done"})
    return out


def _tau(traj: Any, task: int = 0) -> dict[str, Any]:
    return {"task_id": task, "reward": 1.0, "info": {}, "traj": traj, "trial": 0}


def test_tau_bench_fixture(tmp_path: Path) -> None:
    path = _write(tmp_path, "results.json", [_tau(_chat(2)), _tau(_chat(0), task=1)])
    loaded = load(path)
    assert loaded.format == "tau-bench"
    assert [len(s.calls) for s in loaded.sessions] == [3, 1]
    first = loaded.sessions[0].calls
    assert [c.stop_reason for c in first] == ["tool_use", "tool_use", "end_turn"]
    assert first[0].request.system == "policy"
    assert isinstance(first[1].request.messages[-1].blocks[0], ToolResultBlock)


def test_tau_bench_lenient_skips(tmp_path: Path) -> None:
    bad_message = [*_chat(1)[:2], {"role": "robot", "content": "?"}, *_chat(1)[2:]]
    results = [_tau(_chat(1)), _tau("not a list", task=1), _tau(bad_message, task=2)]
    path = _write(tmp_path, "results.json", results)
    with pytest.raises(FormatError) as info:
        load(path)
    text = path.read_text().splitlines()
    assert info.value.line is not None
    assert '"task_id": 1' in text[info.value.line]
    loaded = load(path, lenient=True)
    assert [s.session_id for s in loaded.sessions] == ["task-0-trial-0", "task-2-trial-0"]
    assert len(loaded.skipped) == 2
    robot = loaded.skipped[1]
    assert robot.line is not None
    assert "robot" in text[robot.line]
    assert "message 2" in robot.reason
    assert len(loaded.sessions[1].calls) == 2


def _swe_history(agent: str = "main") -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "sys", "agent": agent, "message_type": "system_prompt"},
        {"role": "user", "content": "task", "agent": agent, "message_type": "observation"},
        {"role": "assistant", "content": "ls", "thought": "t", "action": "ls", "agent": agent},
        {"role": "user", "content": "a b", "agent": agent, "message_type": "observation"},
        {"role": "assistant", "content": "submit", "action": "submit", "agent": agent},
    ]


def test_swe_agent_attempts_subagents_and_demos(tmp_path: Path) -> None:
    history = _swe_history()
    demo = {"role": "assistant", "content": "demo", "agent": "main", "is_demo": True}
    history.insert(2, demo)
    sub = _swe_history("sub")[1:]
    run = {"history": history + sub, "trajectory": [], "info": {"model_stats": {"api_calls": 2}}}
    path = _write(tmp_path, "x.traj", {"attempts": [run, run], **run})
    loaded = load(path)
    assert loaded.format == "swe-agent"
    assert [s.session_id for s in loaded.sessions] == ["x#attempt-0", "x#attempt-1"]
    main = loaded.sessions[0]
    assert len(main.calls) == 2  # the demonstration is part of the request, not a call
    assert main.calls[0].request.messages[1].content == "demo"
    assert [s.session_id for s in main.subagents] == ["x#attempt-0:sub"]
    assert len(main.subagents[0].calls) == 2
    assert not main.subagents[0].prefix_known  # the sub-agent's messages have no system prompt


def test_swe_agent_steps_without_history(tmp_path: Path) -> None:
    steps = [
        {"action": "ls", "observation": "a", "response": "r1", "thought": "t", "state": {}},
        {"action": "submit", "observation": "", "response": "r2", "thought": "", "state": {}},
    ]
    loaded = load(_write(tmp_path, "y.traj", {"trajectory": steps, "info": {}}))
    calls = loaded.sessions[0].calls
    assert [c.response.content if c.response else None for c in calls] == ["r1", "r2"]
    assert not loaded.sessions[0].prefix_known
    assert calls[0].line == 3
    assert calls[1].line is not None


def test_swe_agent_bad_message_line(tmp_path: Path) -> None:
    history = _swe_history()
    history[3] = {"role": "user", "content": 7, "agent": "main"}
    path = _write(tmp_path, "z.traj", {"history": history, "trajectory": []})
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line is not None
    element = path.read_text().splitlines()[info.value.line - 1 : info.value.line + 3]
    assert element[0].strip() == "{"
    assert '"content": 7' in "\n".join(element)
    loaded = load(path, lenient=True)
    assert len(loaded.skipped) == 1
    assert len(loaded.sessions[0].calls) == 2


def test_mini_swe_agent_v2_usage_and_exit(tmp_path: Path) -> None:
    response = {
        "id": "r1",
        "model": "claude-sonnet-4-5",
        "choices": [{"finish_reason": "stop", "message": {"role": "assistant"}}],
        "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 9,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 15,
        },
    }
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": "```mswea_bash_command\nls\n```",
            "extra": {"response": response, "timestamp": 1_700_000_000.5},
        },
        {"role": "user", "content": "<returncode>0</returncode>", "extra": {"returncode": 0}},
        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
    ]
    value = {
        "info": {"mini_version": "2.0.0"},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }
    loaded = load(_write(tmp_path, "run.traj.json", value))
    session = loaded.sessions[0]
    assert loaded.format == "mini-swe-agent"
    (call,) = session.calls
    assert call.usage == Usage(input_tokens=5, cache_write_5m=15, cache_read=100, output_tokens=9)
    assert call.model == "claude-sonnet-4-5"
    assert call.stop_reason == "end_turn"
    assert call.timestamp is not None
    assert call.request_id == "r1"
    assert dict(session.set_aside) == {"exit": 1}
    assert "extra" not in (session.calls[0].request.messages[0].model_extra or {})


def _event(i: int, source: str, **fields: Any) -> dict[str, Any]:
    return {"id": i, "timestamp": "2025-01-01T00:00:00", "source": source, "message": "", **fields}


def _metadata(call_id: str, response_id: str, calls: list[str]) -> dict[str, Any]:
    tool_calls = [
        {"id": c, "type": "function", "function": {"name": "run", "arguments": "{}"}} for c in calls
    ]
    message = {"role": "assistant", "content": "thinking", "tool_calls": tool_calls}
    response = {
        "id": response_id,
        "model": "m",
        "choices": [{"message": message}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 5},
    }
    return {"function_name": "run", "tool_call_id": call_id, "model_response": response}


def test_openhands_parallel_calls_system_and_metrics(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "run", "parameters": {}}}]
    metrics = {
        "token_usages": [
            {
                "model": "m2",
                "prompt_tokens": 70,
                "completion_tokens": 3,
                "cache_read_tokens": 60,
                "response_id": "r9",
            }
        ]
    }
    events = [
        _event(0, "agent", action="system", args={"content": "SYS", "tools": tools}),
        _event(1, "user", action="message", args={"content": "go"}),
        _event(
            2, "agent", action="run", args={}, tool_call_metadata=_metadata("a", "r1", ["a", "b"])
        ),
        _event(
            3, "agent", action="run", args={}, tool_call_metadata=_metadata("b", "r1", ["a", "b"])
        ),
        _event(
            4,
            "agent",
            observation="run",
            content="A",
            cause=2,
            extras={},
            tool_call_metadata={"tool_call_id": "a"},
        ),
        _event(5, "agent", observation="run", content="B", cause=3, extras={}),
        _event(6, "environment", observation="agent_state_changed", content="", extras={}),
        _event(7, "agent", action="message", args={"content": "done"}, llm_metrics=metrics),
    ]
    loaded = load(_write(tmp_path, "events.json", events))
    session = loaded.sessions[0]
    assert loaded.format == "openhands"
    assert session.prefix_known
    first, second = session.calls
    assert first.request.system == "SYS"
    assert [t.name for t in first.request.tools] == ["run"]
    assert first.response is not None
    assert [b.id for b in first.response.blocks if isinstance(b, ToolUseBlock)] == ["a", "b"]
    results = second.request.messages[-1].blocks
    assert [b.tool_use_id for b in results if isinstance(b, ToolResultBlock)] == ["a", "b"]
    assert second.usage == Usage(input_tokens=10, cache_read=60, output_tokens=3)
    assert second.model == "m2"
    assert dict(session.set_aside) == {"observation:agent_state_changed": 1}


def _gemini_jsonl(tmp_path: Path, lines: list[Any]) -> Path:
    path = tmp_path / "session-x.jsonl"
    path.write_text("\n".join(v if isinstance(v, str) else json.dumps(v) for v in lines) + "\n")
    return path


def test_gemini_jsonl_updates_and_rewind(tmp_path: Path) -> None:
    call = {
        "id": "t1",
        "name": "read_file",
        "args": {"p": 1},
        "status": "success",
        "timestamp": "2026-01-01T00:00:01Z",
        "result": [
            {"functionResponse": {"id": "t1", "name": "read_file", "response": {"output": "text"}}}
        ],
    }
    gemini = {"id": "g1", "type": "gemini", "content": "", "model": "gemini-x"}
    tokens = {"input": 100, "output": 4, "cached": 60, "thoughts": 6, "tool": 2, "total": 112}
    path = _gemini_jsonl(
        tmp_path,
        [
            {"sessionId": "s", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z"},
            {"id": "u1", "type": "user", "content": [{"text": "read it"}]},
            gemini,
            {**gemini, "toolCalls": [call], "tokens": tokens},  # the same record, updated
            {"id": "i1", "type": "info", "content": "note"},
            {"id": "u2", "type": "user", "content": "later"},
            {"id": "g2", "type": "gemini", "content": "gone"},
            {"$rewindTo": "u2"},
            {"id": "g3", "type": "gemini", "content": "fine"},
            {"$set": {"summary": "s"}},
        ],
    )
    loaded = load(path)
    session = loaded.sessions[0]
    assert loaded.format == "gemini-cli"
    assert session.session_id == "s"
    first, second = session.calls
    assert first.usage == Usage(input_tokens=42, cache_read=60, output_tokens=10)
    assert first.line == 4
    assert second.line == 9
    assert second.request.messages[-1].blocks == (
        ToolResultBlock(tool_use_id="t1", content="text"),
    )
    assert second.response is not None
    assert second.response.blocks == (TextBlock(text="fine"),)
    assert dict(session.set_aside) == {"info": 1, "rewound message": 2}  # u2 and g2


def test_gemini_jsonl_bad_line_lenient(tmp_path: Path) -> None:
    meta = {"sessionId": "s", "projectHash": "h"}
    path = _gemini_jsonl(
        tmp_path,
        [
            meta,
            {"id": "u", "type": "user", "content": "x"},
            '{"id": "g", "ty',
            {"id": "g", "type": "gemini", "content": "y", "toolCalls": "no"},
        ],
    )
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line == 3
    loaded = load(path, lenient=True)
    assert [r.line for r in loaded.skipped] == [3, 4]
    assert loaded.calls == 0


TRUNCATED = {
    "tau.json": json.dumps([_tau(_chat(1))], indent=1),
    "swe.traj": json.dumps({"history": _swe_history(), "trajectory": []}, indent=1),
    "mini.traj.json": json.dumps(_chat(1), indent=1),
    "events.json": json.dumps([_event(0, "user", action="message", args={"content": "x"})]),
    "session.json": json.dumps({"sessionId": "s", "projectHash": "h", "messages": []}, indent=1),
}


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("tau.json", "tau-bench"),
        ("swe.traj", "swe-agent"),
        ("mini.traj.json", "mini-swe-agent"),
        ("events.json", "openhands"),
        ("session.json", "gemini-cli"),
    ],
)
def test_truncated_json_is_a_format_error(tmp_path: Path, name: str, fmt: str) -> None:
    text = TRUNCATED[name]
    whole = tmp_path / name
    whole.write_text(text)
    assert detect(whole).name == fmt
    cut = tmp_path / f"cut-{name}"
    cut.write_text(text[: len(text) * 2 // 3])
    with pytest.raises(FormatError) as info:
        load(cut, format=fmt)
    assert info.value.line is not None


@pytest.mark.parametrize(
    "fmt", ["tau-bench", "swe-agent", "mini-swe-agent", "openhands", "gemini-cli"]
)
def test_a_file_of_another_format_is_refused(tmp_path: Path, fmt: str) -> None:
    others = {name: text for name, text in TRUNCATED.items() if detect_name(tmp_path, name) != fmt}
    for name, text in others.items():
        path = tmp_path / f"other-{name}"
        path.write_text(text)
        with pytest.raises(FormatError):
            load(path, format=fmt)


def detect_name(tmp_path: Path, name: str) -> str:
    path = tmp_path / f"probe-{name}"
    path.write_text(TRUNCATED[name])
    return detect(path).name
