"""tau2-bench results: the corpus file counted independently, and hand-built edge cases."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import detect, load
from contextkit.formats.tau.tau2_bench import READER, USER_SIMULATOR
from contextkit.messages import TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.session import Session, Usage
from corpus_paths import corpus_files

pytestmark = pytest.mark.filterwarnings("error")

CORPUS_FILE = "tau2-bench/gpt-4.1_airline_default_gpt-4.1_1trials.json"
_COST = re.compile(r"^recorded cost: \$([0-9.]+) ")


def recorded_cost(session: Session) -> float:
    (cost,) = [float(m.group(1)) for n in session.notes if (m := _COST.match(n))]
    return cost


def _is_call(message: dict[str, Any]) -> bool:
    return message.get("usage") is not None or message.get("raw_data") is not None


def _by_hand(path: Path) -> dict[str, dict[str, float]]:
    """Calls, tokens and cost per side, counted with a plain loop over the JSON."""
    totals = {side: {"calls": 0, "prompt": 0, "completion": 0, "cost": 0.0} for side in ("a", "u")}
    for simulation in json.loads(path.read_text())["simulations"]:
        for message in simulation["messages"]:
            if message["role"] == "tool" or not _is_call(message):
                continue
            side = totals["a" if message["role"] == "assistant" else "u"]
            side["calls"] += 1
            side["prompt"] += message["usage"]["prompt_tokens"]
            side["completion"] += message["usage"]["completion_tokens"]
            side["cost"] += message["cost"]
    return totals


@pytest.mark.corpus
def test_corpus_counts_usage_and_cost(corpus: Path) -> None:
    path = corpus / CORPUS_FILE
    hand = _by_hand(path)
    # 20 simulations; 226 assistant messages of which 20 are tau2's fixed greeting (no usage, no
    # cost): 206 agent calls; 136 user-simulator messages, every one with usage.
    assert (hand["a"]["calls"], hand["u"]["calls"]) == (206, 136)
    assert detect(path).name == "tau2-bench"
    loaded = load(path)
    assert loaded.skipped == ()
    assert len(loaded.sessions) == 20
    assert loaded.calls == 206
    users = [sub for s in loaded.sessions for sub in s.subagents]
    assert len(users) == 20
    assert sum(len(u.calls) for u in users) == 136
    for side, sessions in (("a", loaded.sessions), ("u", tuple(users))):
        usages = [c.usage for s in sessions for c in s.calls if c.usage is not None]
        assert len(usages) == hand[side]["calls"]
        assert sum(u.input_tokens for u in usages) == hand[side]["prompt"]
        assert sum(u.cache_read + u.cache_write for u in usages) == 0  # tau2 keeps no split
        assert sum(u.output_tokens for u in usages) == hand[side]["completion"]
        assert sum(map(recorded_cost, sessions)) == pytest.approx(hand[side]["cost"], abs=1e-5)
    assert round(sum(map(recorded_cost, loaded.sessions)), 2) == 0.78
    assert round(sum(map(recorded_cost, users)), 2) == 0.23


@pytest.mark.corpus
def test_corpus_agent_and_user_simulator_views(corpus: Path) -> None:
    first = load(corpus / CORPUS_FILE).sessions[0]
    assert first.session_id == "task-13-trial-0"
    assert first.model == "gpt-4.1"
    assert not first.prefix_known  # tool_defs is null in this file
    call = first.calls[0]
    assert isinstance(call.request.system, str)
    assert call.request.system.startswith("# Airline Agent Policy")
    assert [m.role for m in call.request.messages] == ["assistant", "user"]  # greeting, user
    assert call.usage == Usage(input_tokens=3346, output_tokens=57)
    assert any(b.name == "get_user_details" for c in first.calls for b in _uses(c.response))
    (user,) = first.subagents
    assert user.session_id == f"task-13-trial-0:{USER_SIMULATOR}"
    assert user.parent_session_id == first.session_id
    assert not user.prefix_known
    opening = user.calls[0]
    assert opening.request.messages[0].blocks == (TextBlock(text="Hi! How can I help you today?"),)
    assert opening.request.messages[0].role == "user"  # tau2 flips roles for the simulator
    assert opening.usage == Usage(input_tokens=450, output_tokens=51)
    for c in user.calls:  # the simulator never sees the agent's tool calls or their results
        for message in c.request.messages:
            assert not any(isinstance(b, ToolUseBlock | ToolResultBlock) for b in message.blocks)
    for session in (first, user):
        for before, after in zip(session.calls, session.calls[1:], strict=False):
            shared = before.request.messages
            assert all(a is b for a, b in zip(shared, after.request.messages, strict=False))
            assert len(after.request.messages) > len(shared)


@pytest.mark.corpus
def test_corpus_call_lines_point_at_the_message(corpus: Path) -> None:
    path = corpus / CORPUS_FILE
    lines = path.read_text().splitlines()
    session = load(path).sessions[0]
    for call in (session.calls[0], session.subagents[0].calls[0]):
        assert call.line is not None
        assert lines[call.line - 1].strip() == "{"
        role = "assistant" if call is session.calls[0] else "user"
        assert lines[call.line].strip() == f'"role": "{role}",'


@pytest.mark.corpus
def test_sniff_claims_no_other_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert READER.sniff(path, head) == (path.relative_to(corpus).as_posix() == CORPUS_FILE)


def _uses(message: object) -> list[ToolUseBlock]:
    blocks = getattr(message, "blocks", ())
    return [b for b in blocks if isinstance(b, ToolUseBlock)]


# --------------------------------------------------------------------------------------------------
# Hand-built files


def _llm(role: str, content: str | None, prompt: int, cost: float, **extra: Any) -> dict[str, Any]:
    usage = {"prompt_tokens": prompt, "completion_tokens": 5}
    return {"role": role, "content": content, "usage": usage, "cost": cost, **extra}


def _simulation(task: str, messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {"id": f"sim-{task}", "task_id": task, "trial": 0, "messages": messages, **extra}


def _conversation() -> list[Any]:
    agent_call = {"id": "a1", "name": "lookup", "arguments": {"q": 1}, "requestor": "assistant"}
    user_call = {"id": "u1", "name": "check_phone", "arguments": {}, "requestor": "user"}
    return [
        {"role": "assistant", "content": "Hi! How can I help you today?", "cost": 0.0},
        _llm("user", "my phone is broken", 100, 0.001),
        _llm("assistant", None, 300, 0.002, tool_calls=[agent_call], raw_data={"x": 1}),
        {"role": "tool", "id": "a1", "content": "found", "requestor": "assistant"},
        _llm("assistant", "Please check it.", 320, 0.003),
        _llm("user", None, 130, 0.001, tool_calls=[user_call]),
        {"role": "tool", "id": "u1", "content": "no signal", "requestor": "user", "error": True},
        _llm("user", "It says no signal. ###STOP###", 150, 0.001),
    ]


def _results(simulations: list[Any], tool_defs: Any = None) -> dict[str, Any]:
    info = {
        "agent_info": {"implementation": "llm_agent", "llm": "agent-model"},
        "user_info": {"llm": "user-model", "global_simulation_guidelines": "Play a customer."},
        "environment_info": {"domain_name": "telecom", "policy": "POLICY", "tool_defs": tool_defs},
    }
    return {
        "timestamp": "2025-08-01T00:00:00",
        "info": info,
        "tasks": [],
        "simulations": simulations,
    }


def _write(tmp_path: Path, value: Any) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(value, indent=1))
    return path


def test_two_views_of_one_simulation(tmp_path: Path) -> None:
    signature = {"name": "lookup", "doc": "Look it up.", "params": {"type": "object"}}
    path = _write(tmp_path, _results([_simulation("7", _conversation())], {"lookup": signature}))
    assert detect(path).name == "tau2-bench"
    (agent,) = load(path).sessions
    assert agent.session_id == "task-7-trial-0"
    assert agent.prefix_known  # tool_defs present
    assert [c.model for c in agent.calls] == ["agent-model", "agent-model"]
    assert [c.stop_reason for c in agent.calls] == ["tool_use", "end_turn"]
    second = agent.calls[1].request
    assert second.system == "POLICY"
    assert [(t.name, t.description) for t in second.tools] == [("lookup", "Look it up.")]
    assert second.messages[-1].blocks == (ToolResultBlock(tool_use_id="a1", content="found"),)
    assert recorded_cost(agent) == pytest.approx(0.005)
    (user,) = agent.subagents
    assert [c.model for c in user.calls] == ["user-model"] * 3
    assert user.calls[0].request.system == "Play a customer."
    assert [c.stop_reason for c in user.calls] == ["end_turn", "tool_use", "end_turn"]
    last = user.calls[2].request.messages
    assert last[-1].blocks == (
        ToolResultBlock(tool_use_id="u1", content="no signal", is_error=True),
    )
    assert last[-3].blocks == (TextBlock(text="Please check it."),)  # the agent's text, as user
    assert recorded_cost(user) == pytest.approx(0.003)
    assert not any("found" in str(m.content) for m in last)  # the agent's tool result is unseen


def test_a_simulation_with_no_messages(tmp_path: Path) -> None:
    path = _write(tmp_path, _results([_simulation("1", []), _simulation("2", _conversation())]))
    empty, full = load(path).sessions
    assert empty.calls == ()
    assert empty.subagents == ()
    assert "the simulation has no messages" in empty.notes
    assert len(full.calls) == 2


@pytest.mark.parametrize("null", [True, False])
def test_a_simulation_whose_messages_are_null_or_missing_is_named(
    tmp_path: Path, null: bool
) -> None:
    """tau2 always writes the list: a null (or absent) one is data lost, never a silent session
    with no calls (45 calls read as 31 before, with no word)."""
    lost = _simulation("1", [])
    if null:
        lost["messages"] = None
    else:
        del lost["messages"]
    path = _write(tmp_path, _results([lost, _simulation("2", _conversation())]))
    said = "null" if null else "missing"
    with pytest.raises(FormatError, match=f"simulation 0: 'messages' is {said}"):
        load(path)
    loaded = load(path, lenient=True)
    (skipped,) = loaded.skipped
    assert f"'messages' is {said}" in skipped.reason
    assert skipped.line is not None
    assert [len(s.calls) for s in loaded.sessions] == [2]


def test_bad_message_strict_and_lenient(tmp_path: Path) -> None:
    messages = _conversation()
    messages.insert(2, {"role": "robot", "content": "beep"})
    simulations = [_simulation("1", messages), "not a simulation", _simulation("3", [])]
    path = _write(tmp_path, _results(simulations))
    text = path.read_text().splitlines()
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line is not None
    assert '"role": "robot"' in text[info.value.line]
    assert "simulation 0: message 2" in info.value.reason
    loaded = load(path, lenient=True)
    assert [s.session_id for s in loaded.sessions] == ["task-1-trial-0", "task-3-trial-0"]
    robot, other = loaded.skipped
    assert robot.line == info.value.line
    assert other.line is not None
    assert "not a simulation" in text[other.line - 1]
    assert len(loaded.sessions[0].calls) == 2  # the rest of the simulation still reads


def test_multi_tool_message_and_cost_mismatch(tmp_path: Path) -> None:
    calls = [{"id": f"c{i}", "name": "lookup", "arguments": {}} for i in range(2)]
    results = [{"role": "tool", "id": f"c{i}", "content": str(i)} for i in range(2)]
    messages = [
        _llm("user", "hi", 10, 0.5),
        _llm("assistant", None, 20, 0.25, tool_calls=calls),
        {"role": "tool", "tool_messages": results},
        _llm("assistant", "done", 30, 0.25),
    ]
    path = _write(tmp_path, _results([_simulation("1", messages, agent_cost=0.4)]))
    (agent,) = load(path).sessions
    blocks = agent.calls[1].request.messages[-1].blocks
    assert [b.tool_use_id for b in blocks if isinstance(b, ToolResultBlock)] == ["c0", "c1"]
    assert recorded_cost(agent) == pytest.approx(0.5)
    assert "the simulation's agent_cost is $0.400000, not $0.500000" in agent.notes
    assert agent.calls[0].request.messages[0].role != "assistant"  # no greeting here


@pytest.mark.parametrize(
    "value",
    [
        [{"task_id": 0, "traj": [], "reward": 1.0}],  # tau-bench (the first one)
        {"info": {}, "tasks": []},  # no agent_info / user_info / environment_info
        {"simulations": [], "agent_info": {}, "user_info": {}, "environment_info": {}},
    ],
)
def test_sniff_is_conservative(tmp_path: Path, value: Any) -> None:
    path = _write(tmp_path, value)
    assert not READER.sniff(path, path.read_text())


def test_not_a_results_object(tmp_path: Path) -> None:
    path = _write(tmp_path, {"info": {}, "simulations": "none"})
    with pytest.raises(FormatError) as info:
        load(path, format="tau2-bench")
    assert info.value.line == 1
