"""ATIF (Harbor's Agent Trajectory Interchange Format, v1.4): written from every corpus session and
read back to the same calls on everything ATIF carries; what it cannot carry is listed."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.errors import FormatError
from contextkit.formats import detect, load
from contextkit.formats.atif import SCHEMA_VERSION, to_atif
from contextkit.messages import (
    Block,
    Conversation,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from contextkit.session import Call, Session
from corpus_paths import readable_corpus_files

# --------------------------------------------------------------------------------------------------
# What ATIF carries: the projection a round trip must keep


def _texts(blocks: tuple[Block, ...], kind: type[Block]) -> str:
    return "\n\n".join(
        b.text if isinstance(b, TextBlock) else b.thinking if isinstance(b, ThinkingBlock) else ""
        for b in blocks
        if type(b) is kind
    )


def _result_text(block: ToolResultBlock) -> str | None:
    if isinstance(block.content, tuple):
        return "\n".join(b.text for b in block.content if isinstance(b, TextBlock))
    return block.content


def project_message(message: Message) -> tuple[Any, ...]:
    blocks = message.blocks
    tools = tuple(
        (b.id, b.name, json.dumps(b.input, sort_keys=True))
        for b in blocks
        if isinstance(b, ToolUseBlock)
    )
    results = tuple(
        (b.tool_use_id, _result_text(b), bool(b.is_error))
        for b in blocks
        if isinstance(b, ToolResultBlock)
    )
    return (
        message.role,
        _texts(blocks, TextBlock),
        _texts(blocks, ThinkingBlock),
        tools,
        results,
    )


def _system_text(system: str | tuple[Block, ...] | None) -> str | None:
    if system is None or isinstance(system, str):
        return system
    return "\n\n".join(b.text for b in system if isinstance(b, TextBlock))


def project_call(call: Call) -> tuple[Any, ...]:
    request = call.request
    return (
        tuple(project_message(m) for m in request.messages),
        _system_text(request.system),
        tuple(t.model_dump(mode="json", exclude_none=True) for t in request.tools),
        None if call.response is None else project_message(call.response),
        call.usage,
        call.model,
        call.timestamp,
        call.stop_reason,
        call.request_id,
        call.cache_reset,
        call.output_estimated,
        call.route,
    )


def project_session(session: Session) -> tuple[Any, ...]:
    return (
        session.session_id,
        session.format,
        session.prefix_known,
        session.compactions,
        session.harness_compaction,
        session.context_window,
        dict(session.set_aside),
        tuple(project_call(c) for c in session.calls),
    )


def write_tree(session: Session, path: Path) -> Counter[str]:
    """``session`` and its subagents as ATIF files (subagents beside it); the warning codes."""
    paths = {
        (sub.session_id or f"sub{i}"): f"{path.stem}.sub{i}.json"
        for i, sub in enumerate(session.subagents)
    }
    doc, warnings = to_atif(session, subagent_paths=paths)
    path.write_text(json.dumps(doc), encoding="utf-8")
    codes = Counter(w.code for w in warnings)
    for i, sub in enumerate(session.subagents):
        codes += write_tree(sub, path.parent / f"{path.stem}.sub{i}.json")
    return codes


def assert_same_tree(original: Session, back: Session) -> None:
    assert project_session(back) == project_session(original)
    assert len(back.subagents) == len(original.subagents)
    for sub, sub_back in zip(original.subagents, back.subagents, strict=True):
        assert sub_back.parent_tool_use_id == sub.parent_tool_use_id
        assert_same_tree(sub, sub_back)


# --------------------------------------------------------------------------------------------------
# Hand-built sessions


def _tools() -> tuple[Tool, ...]:
    return (Tool(name="Read", description="read a file", input_schema={"type": "object"}),)


def _session() -> Session:
    user = Message(role="user", content="fix the bug")
    think = ThinkingBlock(thinking="look first", signature="sig")
    first = Message(
        role="assistant",
        content=(think, TextBlock(text="reading"), ToolUseBlock(id="t1", name="Read", input={})),
    )
    result = Message(
        role="user",
        content=(
            ToolResultBlock(tool_use_id="t1", content="x = 1", is_error=True),
            TextBlock(text="also this"),
        ),
    )
    done = Message(role="assistant", content=(TextBlock(text="fixed"),))
    summary = Message(role="user", content="summary of earlier work")
    after = Message(role="assistant", content=(TextBlock(text="continuing"),))
    when = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    base = Conversation(system="be brief", tools=_tools(), messages=(user,))
    calls = (
        Call(
            request=base,
            response=first,
            usage=Usage(input_tokens=10, cache_write_5m=100, cache_write_1h=5, output_tokens=7),
            model="claude-sonnet-4-5",
            timestamp=when,
            stop_reason="tool_use",
        ),
        Call(
            request=base.model_copy(update={"messages": (user, first, result)}),
            response=done,
            usage=Usage(input_tokens=3, cache_read=105, output_tokens=2),
            model="claude-sonnet-4-5",
            stop_reason="end_turn",
        ),
        Call(  # the harness compacted: a request that does not extend the last one
            request=base.model_copy(update={"messages": (summary,)}),
            response=after,
            model="claude-sonnet-4-5",
            cache_reset="messages",
        ),
    )
    return Session(
        path="x.jsonl", format="claude-code", session_id="s1", calls=calls, compactions=(2,)
    )


def test_a_session_round_trips_with_its_compaction(tmp_path: Path) -> None:
    session = _session()
    codes = write_tree(session, tmp_path / "t.json")
    back = load(tmp_path / "t.json")
    assert back.format == "atif"
    assert_same_tree(session, back.sessions[0])
    assert codes == Counter({"thinking_signature_dropped": 1})


def test_the_document_follows_the_rfc(tmp_path: Path) -> None:
    doc, _ = to_atif(_session(), costs=[0.5, 0.25, None])
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["agent"] == {
        "name": "claude-code",
        "version": "unknown",
        "model_name": "claude-sonnet-4-5",
    }
    steps = doc["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert [s["source"] for s in steps] == [
        "system", "user", "agent", "user", "agent", "system", "user", "agent",
    ]  # fmt: skip
    first = steps[2]
    assert first["reasoning_content"] == "look first"
    assert first["tool_calls"] == [{"tool_call_id": "t1", "function_name": "Read", "arguments": {}}]
    assert first["observation"] == {"results": [{"source_call_id": "t1", "content": "x = 1"}]}
    assert first["metrics"]["prompt_tokens"] == 115  # all input, cached or not
    assert first["metrics"]["extra"]["cache_creation_input_tokens"] == 105
    assert first["metrics"]["cost_usd"] == 0.5
    assert steps[4]["metrics"]["cached_tokens"] == 105
    assert steps[5]["extra"]["contextkit"]["context_reset"] is True
    assert doc["final_metrics"]["total_prompt_tokens"] == 115 + 108
    assert "total_cost_usd" not in doc["final_metrics"]  # one call's cost is unknown


def test_what_atif_cannot_carry_is_listed() -> None:
    image = ImageBlock(source={"type": "base64", "media_type": "image/png", "data": "AAAA"})
    user = Message(
        role="user",
        content=(TextBlock.model_validate({"text": "a", "cache_control": {"type": "ephemeral"}}),),
    )
    shot = Message(role="user", content=(image, TextBlock(text="see")))
    reply = Message(role="assistant", content="ok")
    request = Conversation.model_validate({"messages": (user, reply, shot), "max_tokens": 100})
    session = Session(path="x", format="anthropic", calls=(Call(request=request, response=reply),))
    _, warnings = to_atif(session)
    codes = {w.code: w.location for w in warnings}
    assert codes == {
        "request_params_dropped": "call 0",
        "cache_control_dropped": "call 0 messages[0].content[0]",
        "image_dropped": "call 0 messages[2].content[0]",
    }


RFC_EXAMPLE = {
    "schema_version": "ATIF-v1.4",
    "session_id": "025B810F",
    "agent": {"name": "harbor-agent", "version": "1.0.0", "model_name": "gemini-2.5-flash"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "What is the price of GOOGL?"},
        {
            "step_id": 2,
            "timestamp": "2025-10-11T10:30:02Z",
            "source": "agent",
            "message": "I will search.",
            "reasoning_content": "Two data points.",
            "tool_calls": [
                {"tool_call_id": "p1", "function_name": "search", "arguments": {"t": "GOOGL"}},
            ],
            "observation": {"results": [{"source_call_id": "p1", "content": "$185.35"}]},
            "metrics": {"prompt_tokens": 520, "completion_tokens": 80, "cached_tokens": 200},
        },
        {
            "step_id": 3,
            "source": "agent",
            "message": "GOOGL trades at $185.35.",
            "metrics": {"prompt_tokens": 600, "completion_tokens": 44, "extra": {"r": 12}},
        },
    ],
}


def test_a_foreign_atif_file_reads(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(RFC_EXAMPLE, indent=2), encoding="utf-8")
    assert detect(path).name == "atif"
    (session,) = load(path).sessions
    assert session.format == "harbor-agent"
    assert len(session.calls) == 2
    first, second = session.calls
    assert first.usage == Usage(input_tokens=320, cache_read=200, output_tokens=80)
    assert first.model == "gemini-2.5-flash"
    assert first.timestamp == datetime(2025, 10, 11, 10, 30, 2, tzinfo=UTC)
    assert [m.role for m in second.request.messages] == ["user", "assistant", "user"]
    result = second.request.messages[2].blocks[0]
    assert isinstance(result, ToolResultBlock)
    assert result.content == "$185.35"
    assert second.usage == Usage(input_tokens=600, output_tokens=44)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"source": "robot"}, "'source' must be system, user or agent"),
        ({"message": ["x"]}, "'message' must be a string, found a list"),
        ({"metrics": {"prompt_tokens": -4}}, "'prompt_tokens' must be a non-negative integer"),
        ({"metrics": {"prompt_tokens": 5, "cached_tokens": 9}}, "is less than cached_tokens"),
        ({"tool_calls": [{"function_name": "x"}]}, "needs string 'tool_call_id'"),
    ],
)
def test_a_bad_step_names_file_and_line(
    tmp_path: Path, change: dict[str, Any], reason: str
) -> None:
    doc = json.loads(json.dumps(RFC_EXAMPLE))
    doc["steps"][2].update(change)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if '"step_id": 3' in t)
    with pytest.raises(FormatError, match=reason) as raised:
        load(path)
    assert raised.value.line == line - 1  # where the step's object opens
    lenient = load(path, lenient=True)
    assert len(lenient.sessions[0].calls) == 1
    assert [s.line for s in lenient.skipped] == [line - 1]


def test_not_atif_is_named(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"schema_version": "ATIF-v2.0", "steps": []}), encoding="utf-8")
    with pytest.raises(FormatError, match=r"schema_version must be 'ATIF-v1\.x'"):
        load(path, format="atif")


def test_convert_to_atif_writes_a_file_load_reads(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_text(json.dumps(RFC_EXAMPLE), encoding="utf-8")
    out = tmp_path / "out.json"
    result = CliRunner().invoke(app, ["convert", str(source), "--to", "atif", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert detect(out).name == "atif"
    assert_same_tree(load(source).sessions[0], load(out).sessions[0])


# --------------------------------------------------------------------------------------------------
# Every corpus session


@pytest.mark.corpus
@pytest.mark.slow
def test_every_corpus_session_round_trips(corpus: Path, tmp_path: Path) -> None:
    codes: Counter[str] = Counter()
    sessions = calls = 0
    failed: list[str] = []
    for index, path in enumerate(readable_corpus_files(corpus)):
        for number, session in enumerate(load(path, lenient=True).sessions):
            out = tmp_path / f"f{index}-{number}.json"
            codes += write_tree(session, out)
            back = load(out)
            try:
                assert back.format == "atif"
                assert_same_tree(session, back.sessions[0])
            except AssertionError:
                failed.append(f"{path.relative_to(corpus)} session {number}")
            sessions += 1
            calls += sum(len(s.calls) for s in session.all_sessions())
    assert failed == []
    assert sessions > 50
    assert calls > 4000
    # What ATIF has no field for in this corpus (a guard that the list stays honest, not empty).
    assert "thinking_signature_dropped" in codes


@pytest.mark.corpus
def test_subagents_that_share_an_id_get_a_file_each(corpus: Path, tmp_path: Path) -> None:
    """A session whose subagents share an id (here a subagent file copied beside itself) is
    written as one ATIF file per subagent, each referenced once (before, later ones overwrote
    earlier ones: 11 subagents, 7 files)."""
    import shutil  # noqa: PLC0415

    source = corpus / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d"
    session_file = tmp_path / f"{source.name}.jsonl"
    shutil.copy(source.with_suffix(".jsonl"), session_file)
    shutil.copytree(source, tmp_path / source.name)
    sub = tmp_path / source.name / "subagents" / "agent-a881341.jsonl"
    for copy in ("agent-a881341b.jsonl", "agent-a881341c.jsonl"):
        shutil.copy(sub, sub.with_name(copy))
    (top,) = load(session_file).sessions
    ids = [s.session_id for s in top.subagents]
    assert len(ids) > len(set(ids))  # the case: ids shared
    out = tmp_path / "out" / "run.json"
    out.parent.mkdir()
    result = CliRunner().invoke(app, ["convert", str(session_file), "--to", "atif", "-o", str(out)])
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in out.parent.iterdir())
    assert len(files) == 1 + len(top.subagents)
    doc = json.loads(out.read_text(encoding="utf-8"))
    refs = [
        ref["trajectory_path"]
        for step in doc["steps"]
        for r in step.get("observation", {}).get("results", ())
        for ref in r.get("subagent_trajectory_ref", ())
    ]
    assert sorted(refs) == sorted(f for f in files if f != out.name)
