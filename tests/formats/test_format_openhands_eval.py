"""OpenHands evaluation output.jsonl: the corpus file counted independently, hand-built cases."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError
from contextkit.formats import detect, load
from contextkit.formats.openhands.evaluation import READER
from contextkit.formats.openhands.trajectory import READER as TRAJECTORY_READER
from contextkit.messages import ToolResultBlock, ToolUseBlock
from contextkit.session import Session, Usage
from corpus_paths import corpus_files

pytestmark = pytest.mark.filterwarnings("error")

CORPUS_FILE = "openhands-eval/multi_swe_bench-example-output.jsonl"
_COST = re.compile(r"^recorded cost: \$([0-9.]+) ")


def recorded_cost(session: Session) -> float:
    (cost,) = [float(m.group(1)) for n in session.notes if (m := _COST.match(n))]
    return cost


def _by_hand(path: Path) -> list[tuple[str, int, int, int]]:
    """Per line: instance id, LLM responses (distinct model_response ids), prompt, completion."""
    out = []
    for raw in path.read_text().splitlines():
        record = json.loads(raw)
        responses: dict[str, dict[str, int]] = {}
        for event in record["history"]:
            if event["source"] != "agent" or "action" not in event:
                continue
            metadata = event.get("tool_call_metadata")
            if metadata is None:
                assert event["action"] == "system"  # every other agent action is a tool call
                continue
            response = metadata["model_response"]
            responses[response["id"]] = response["usage"]
        prompt = sum(u["prompt_tokens"] for u in responses.values())
        completion = sum(u["completion_tokens"] for u in responses.values())
        out.append((record["instance_id"], len(responses), prompt, completion))
    return out


@pytest.mark.corpus
def test_corpus_counts_and_usage(corpus: Path) -> None:
    path = corpus / CORPUS_FILE
    hand = _by_hand(path)
    assert [n for _, n, _, _ in hand] == [23, 33, 49]  # 105 calls
    assert detect(path).name == "openhands-eval"
    loaded = load(path)
    assert loaded.skipped == ()
    assert loaded.calls == 105
    assert [s.session_id for s in loaded.sessions] == [i for i, _, _, _ in hand]
    totals = [json.loads(raw)["metrics"] for raw in path.read_text().splitlines()]
    for session, (_, calls, prompt, completion), metrics in zip(
        loaded.sessions, hand, totals, strict=True
    ):
        assert len(session.calls) == calls
        usages = [c.usage for c in session.calls if c.usage is not None]
        assert len(usages) == calls
        assert sum(u.total_input for u in usages) == prompt
        assert sum(u.output_tokens for u in usages) == completion
        # ... which is what OpenHands accumulated for the instance
        assert prompt == metrics["accumulated_token_usage"]["prompt_tokens"]
        assert completion == metrics["accumulated_token_usage"]["completion_tokens"]
        assert recorded_cost(session) == 0.0
        assert any("read it as unknown" in n for n in session.notes)
        assert session.model == "meta-llama/llama-4-maverick"
        assert session.prefix_known  # the history starts with the system action
        assert [c.line for c in session.calls] == [loaded.sessions.index(session) + 1] * calls
    last = loaded.sessions[2]
    assert any("maximum iteration" in n for n in last.notes)


@pytest.mark.corpus
def test_corpus_requests(corpus: Path) -> None:
    session = load(corpus / CORPUS_FILE).sessions[0]
    first, second = session.calls[:2]
    assert first.request.system is not None
    assert len(first.request.tools) > 0
    assert first.usage == Usage(input_tokens=5920, output_tokens=128)
    # the provider said "stop" with a tool call: the turn goes on
    assert first.stop_reason == "tool_use"
    assert first.response is not None
    (use,) = [b for b in first.response.blocks if isinstance(b, ToolUseBlock)]
    results = [b for b in second.request.messages[-1].blocks if isinstance(b, ToolResultBlock)]
    assert [r.tool_use_id for r in results] == [use.id]
    for before, after in zip(session.calls, session.calls[1:], strict=False):
        shared = before.request.messages
        assert all(a is b for a, b in zip(shared, after.request.messages, strict=False))


@pytest.mark.corpus
def test_sniff_claims_no_other_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        mine = path.relative_to(corpus).as_posix() == CORPUS_FILE
        assert READER.sniff(path, head) == mine, path
        if mine:
            assert not TRAJECTORY_READER.sniff(path, head)


# --------------------------------------------------------------------------------------------------
# Hand-built files


def _event(i: int, source: str, **fields: Any) -> dict[str, Any]:
    return {"id": i, "timestamp": "2025-04-30T16:32:54", "source": source, "message": "", **fields}


def _tool_call(i: int, call_id: str, response_id: str, usage: Any = None) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": "run", "arguments": "{}"}}
    message = {"role": "assistant", "content": "looking", "tool_calls": [call]}
    response: dict[str, Any] = {"id": response_id, "choices": [{"message": message}]}
    if usage is not None:
        response["usage"] = usage
    metadata = {"function_name": "run", "tool_call_id": call_id, "model_response": response}
    return _event(i, "agent", action="run", args={"command": "ls"}, tool_call_metadata=metadata)


def _history() -> list[dict[str, Any]]:
    tools = [{"type": "function", "function": {"name": "run", "parameters": {}}}]
    usage = {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": None}
    return [
        _event(0, "agent", action="system", args={"content": "SYS", "tools": tools}),
        _event(1, "user", action="message", args={"content": "fix it"}),
        _tool_call(2, "t1", "r1", usage),
        _event(3, "agent", observation="run", content="a.c", cause=2, extras={}),
        _event(4, "environment", action="mystery", args={}),  # a kind no one knows
        _tool_call(5, "t2", "r2"),  # no usage in the response: from the instance's metrics
    ]


def _instance(instance_id: str, history: Any, **extra: Any) -> dict[str, Any]:
    metrics = {
        "accumulated_cost": 0.25,
        "token_usages": [{"prompt_tokens": 150, "completion_tokens": 9, "response_id": "r2"}],
    }
    metadata = {"llm_config": {"model": "anthropic/claude-x"}}
    record = {"instance_id": instance_id, "instruction": "fix it", "metadata": metadata}
    return {**record, "history": history, "metrics": metrics, "error": None, **extra}


def _write(tmp_path: Path, lines: list[Any]) -> Path:
    path = tmp_path / "output.jsonl"
    text = [v if isinstance(v, str) else json.dumps(v) for v in lines]
    path.write_text("\n".join(text) + "\n")
    return path


def test_instance_calls_usage_and_set_aside(tmp_path: Path) -> None:
    path = _write(tmp_path, [_instance("repo__x-1", _history())])
    assert detect(path).name == "openhands-eval"
    (session,) = load(path).sessions
    assert session.session_id == "repo__x-1"
    assert session.prefix_known
    first, second = session.calls
    assert first.usage == Usage(input_tokens=100, output_tokens=7)
    assert second.usage == Usage(input_tokens=150, output_tokens=9)  # metrics.token_usages
    assert [c.model for c in session.calls] == ["anthropic/claude-x"] * 2  # llm_config.model
    assert second.request.messages[-1].blocks == (ToolResultBlock(tool_use_id="t1", content="a.c"),)
    assert dict(session.set_aside) == {"action:mystery": 1}
    assert recorded_cost(session) == 0.25
    assert not any("unknown" in n for n in session.notes)


def test_instance_with_no_history(tmp_path: Path) -> None:
    lines = [
        _instance("a", [], error="RuntimeError: sandbox failed"),
        _instance("b", None),
        _instance("c", _history()),
    ]
    path = _write(tmp_path, lines)
    assert detect(path).name == "openhands-eval"
    empty, null, full = load(path).sessions
    for session in (empty, null):
        assert session.calls == ()
        assert any("no history" in n for n in session.notes)
    assert "the run ended with an error: RuntimeError: sandbox failed" in empty.notes
    assert len(full.calls) == 2


def test_bad_line_and_bad_event_strict_and_lenient(tmp_path: Path) -> None:
    history = _history()
    history.insert(2, {"id": 9, "source": "agent"})  # neither action nor observation
    lines = [
        _instance("a", _history()),
        '{"instance_id": "b", "hist',
        _instance("c", history),
        {"instance_id": "d", "history": "none"},
        {"history": []},
    ]
    path = _write(tmp_path, lines)
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line == 2
    loaded = load(path, lenient=True)
    assert [r.line for r in loaded.skipped] == [2, 3, 4, 5]
    assert "instance c: event 2" in loaded.skipped[1].reason
    assert [s.session_id for s in loaded.sessions] == ["a", "c"]
    assert len(loaded.sessions[1].calls) == 2  # the bad event alone was skipped
    with pytest.raises(FormatError) as event_error:
        load(_write(tmp_path, [lines[2]]))
    assert event_error.value.line == 1
    assert "'action' or 'observation'" in event_error.value.reason


@pytest.mark.parametrize(
    "value",
    [
        [_event(0, "user", action="message", args={"content": "x"})],  # an OpenHands trajectory
        {"trajectory": [_event(0, "user", action="message", args={})]},  # the server's export
        {"history": [], "trajectory": [], "info": {}},  # a SWE-agent .traj
        {"instance_id": "x", "model_patch": "diff", "model_name_or_path": "m"},  # predictions
        {"instance_id": "x", "history": [{"role": "user", "content": "hi"}]},  # not events
    ],
)
def test_sniff_is_conservative(tmp_path: Path, value: Any) -> None:
    path = _write(tmp_path, [value])
    assert not READER.sniff(path, path.read_text())


def test_trajectory_reader_leaves_the_output_alone(tmp_path: Path) -> None:
    path = _write(tmp_path, [_instance("a", _history())])
    assert not TRAJECTORY_READER.sniff(path, path.read_text())
