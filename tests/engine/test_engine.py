"""ContextEngine: tape and view, breakpoints, verdicts, audit log, checkpoints, resume."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from contextkit.engine import (
    FINAL_STOPS,
    INCOMPLETE_STOPS,
    MAX_BREAKPOINTS,
    CheckpointError,
    CheckpointWriter,
    ContextEngine,
    EngineState,
    count_breakpoints,
    place_breakpoints,
    read_checkpoint,
    verdict,
)
from contextkit.errors import ContextkitError
from contextkit.messages import (
    INTERRUPTED_TEXT,
    Conversation,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    to_payload,
    validate,
)
from contextkit.session import Usage
from contextkit.strategies import CallFacts, Compacted, EvictToolResults, is_evicted
from contextkit.testing import (
    FixedCounter,
    assistant,
    conversation,
    thinking,
    tool_result,
    tool_use,
    user,
)

TOOLS = (Tool(name="read", description="Read a file.", input_schema={"type": "object"}),)
BIG = "data line\n" * 400  # 1,000 tokens with FixedCounter


def _engine(strategy: Any = None, **options: Any) -> ContextEngine:
    return ContextEngine(
        strategy, model="m", system="Be brief.", tools=TOOLS, counter=FixedCounter(), **options
    )


def _round(engine: ContextEngine, i: int, result: str = BIG) -> None:
    """One tool round: prepare, record a tool call, add its result."""
    engine.prepare()
    engine.record(assistant(f"step {i}", tool_uses=[tool_use(f"t{i}")]), stop_reason="tool_use")
    engine.add(user(tool_result(f"t{i}", result)))


def _marks(request: Conversation) -> list[str]:
    """Where the breakpoints are: tools, system, or a message index."""
    found = ["tools" for t in request.tools if (t.model_extra or {}).get("cache_control")]
    found += ["system" for b in request.system_blocks if (b.model_extra or {}).get("cache_control")]
    for i, message in enumerate(request.messages):
        found += [str(i) for b in message.blocks if (b.model_extra or {}).get("cache_control")]
    return found


# -- tape and view ------------------------------------------------------------------------------


def test_tape_is_append_only_whatever_the_view_does() -> None:
    engine = _engine(EvictToolResults(keep_last=1, min_freed_tokens=0))
    engine.add(user("task"))
    tapes = [engine.tape]
    for i in range(5):
        _round(engine, i)
        tapes.append(engine.tape)
    for before, after in itertools.pairwise(tapes):
        assert after[: len(before)] == before
        assert all(a is b for a, b in zip(before, after, strict=False))
    assert len(engine.tape) == 11
    assert not any(is_evicted(b) for m in engine.tape for b in m.tool_results())
    assert sum(is_evicted(b) for m in engine.view.messages for b in m.tool_results()) >= 3


def test_view_is_path_dependent_an_eviction_stays() -> None:
    engine = _engine(EvictToolResults(keep_last=1, min_freed_tokens=0))
    engine.add(user("task"))
    for i in range(3):
        _round(engine, i)
    engine.prepare()
    evicted = engine.view.messages[2]
    assert is_evicted(next(evicted.tool_results()))
    engine.record(assistant("step 3", tool_uses=[tool_use("t3")]), stop_reason="tool_use")
    engine.add(user(tool_result("t3", "short")))  # nothing more to evict: the decision stays
    for _ in range(3):
        engine.prepare()
        assert engine.view.messages[2] is evicted
    assert engine.tape[2] is not evicted


def test_same_view_object_when_the_strategy_does_nothing() -> None:
    seen: list[Conversation] = []

    def keep(view: Conversation, facts: CallFacts, /) -> Compacted:
        seen.append(view)
        return Compacted(view=view)

    engine = _engine(keep)
    engine.add(user("task"))
    view = engine.view
    prepared = engine.prepare()
    assert prepared.view is view
    assert engine.view is view
    assert seen == [view]
    assert engine.receipts == ()
    assert engine.prepare().view is view  # preparing again changes nothing either


def test_strategy_facts_carry_the_engines_settings() -> None:
    facts: list[CallFacts] = []

    def spy(view: Conversation, f: CallFacts, /) -> Compacted:
        facts.append(f)
        return Compacted(view=view)

    engine = _engine(spy, budget_tokens=1234, context_window=5678)
    engine.add(user("task"))
    _round(engine, 0)
    engine.prepare()
    assert [(f.budget_tokens, f.context_window, f.model) for f in facts] == [(1234, 5678, "m")] * 2
    assert [f.call_index for f in facts] == [0, 1]


def test_record_needs_a_prepared_request() -> None:
    engine = _engine()
    engine.add(user("task"))
    with pytest.raises(ContextkitError, match="prepare"):
        engine.record(assistant("hi"), stop_reason="end_turn")


def test_reset_view_after_an_edited_history_leaves_a_receipt() -> None:
    engine = _engine(EvictToolResults(keep_last=0, min_freed_tokens=0))
    engine.add(user("task"))
    _round(engine, 0)
    _round(engine, 1)
    engine.prepare()
    edited = [user("new task")]
    engine.reset_view(edited)
    assert engine.view.messages == tuple(edited)
    assert engine.tape == tuple(edited)
    assert engine.receipts[-1].action == "reset"


def test_configure_changes_the_head_and_keeps_the_messages() -> None:
    engine = _engine()
    engine.add(user("task"))
    messages = engine.view.messages
    assert engine.configure(model="m", system="Be brief.", tools=TOOLS) is False
    assert engine.configure(model="m2", system="Other.", params={"max_tokens": 9}) is True
    assert engine.view.messages is messages
    assert to_payload(engine.prepare().view) == {
        "model": "m2",
        "system": "Other.",
        "max_tokens": 9,
        "messages": [{"role": "user", "content": "task"}],
    }


# -- breakpoints -------------------------------------------------------------------------------


def test_breakpoints_on_tools_system_previous_end_and_last_message() -> None:
    engine = _engine()
    engine.add(user("task"))
    first = engine.prepare().request
    assert _marks(first) == ["tools", "system", "0"]
    engine.record(assistant("a", tool_uses=[tool_use("t0")]), stop_reason="tool_use")
    engine.add(user(tool_result("t0", "r0")))
    second = engine.prepare().request
    assert _marks(second) == ["tools", "system", "0", "2"]  # previous end (0) and last (2)
    assert engine.view.messages[0].content == "task"  # the view itself never carries them
    assert count_breakpoints(engine.view) == 0


def test_never_more_than_four_breakpoints_counting_the_callers_own() -> None:
    marked = TextBlock.model_validate(
        {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    )
    view = conversation(
        user(marked, "task"),
        assistant("a", tool_uses=[tool_use("t0")]),
        user(tool_result("t0"), marked),
        system=[marked, TextBlock(text="s")],
        tools=TOOLS,
    )
    assert count_breakpoints(view) == 3
    request = place_breakpoints(view, previous_end=view.messages[0])
    assert count_breakpoints(request) == MAX_BREAKPOINTS
    auto = view.model_copy(update={"cache_control": {"type": "ephemeral"}})
    assert count_breakpoints(place_breakpoints(auto)) == MAX_BREAKPOINTS


def test_breakpoints_never_on_thinking_blocks() -> None:
    view = conversation(
        user("task"),
        assistant(thinking("hmm"), RedactedThinkingBlock(data="xyz")),
    )
    request = place_breakpoints(view)
    assert count_breakpoints(request) == 0
    assert request.messages[-1] is view.messages[-1]
    mixed = conversation(user("task"), assistant("text first", thinking("then thought")))
    last = place_breakpoints(mixed).messages[-1].blocks
    assert (last[0].model_extra or {}).get("cache_control") == {"type": "ephemeral"}
    assert isinstance(last[1], ThinkingBlock)
    assert not (last[1].model_extra or {}).get("cache_control")


# -- verdicts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stop", sorted(INCOMPLETE_STOPS))
def test_short_stops_are_incomplete_never_final(stop: str) -> None:
    v = verdict(stop, assistant("partial"))
    assert v.incomplete
    assert not v.finished


@pytest.mark.parametrize("stop", sorted(FINAL_STOPS))
def test_final_stops_finish(stop: str) -> None:
    v = verdict(stop, assistant("answer"))
    assert (v.finished, v.needs_tools, v.incomplete) == (True, False, False)


def test_tool_use_asks_for_tools_and_unknown_stop_is_incomplete() -> None:
    call = assistant(tool_uses=[tool_use("t1")])
    assert verdict("tool_use", call).needs_tools
    assert not verdict("tool_use", call).finished
    assert verdict(None, assistant("?")).incomplete
    assert not verdict("end_turn", call).finished  # a final stop with a pending call is not final


def test_record_returns_the_verdict() -> None:
    engine = _engine()
    engine.add(user("task"))
    engine.prepare()
    v = engine.record(assistant("cut"), stop_reason="max_tokens", usage=Usage(output_tokens=5))
    assert v.incomplete
    assert not v.finished
    assert engine.calls[0].stop_reason == "max_tokens"


# -- audit ------------------------------------------------------------------------------------


def test_audit_lines_are_the_requests_sent(tmp_path: Path) -> None:
    audit = tmp_path / "audit" / "calls.jsonl"
    engine = _engine(EvictToolResults(keep_last=1, min_freed_tokens=0), audit_path=audit)
    engine.add(user("task"))
    sent = []
    for i in range(4):
        sent.append(to_payload(engine.prepare().request))
        engine.record(assistant(f"s{i}", tool_uses=[tool_use(f"t{i}")]), stop_reason="tool_use")
        engine.add(user(tool_result(f"t{i}", BIG)))
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [line["request"] for line in lines] == sent
    assert [line["call"] for line in lines] == [0, 1, 2, 3]
    assert {line["stop_reason"] for line in lines} == {"tool_use"}
    assert audit.stat().st_mode & 0o777 == 0o600  # full request bodies: private, as the checkpoint


def test_the_audit_line_follows_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed checkpoint write leaves no audit line saying the call was sent and recorded."""
    audit, ckpt = tmp_path / "calls.jsonl", tmp_path / "engine.ckpt"
    engine = _engine(None, audit_path=audit, checkpoint_path=ckpt)
    engine.add(user("task"))
    engine.prepare()

    def disk_full(record: bytes) -> None:
        raise OSError(28, "No space left on device")

    assert engine._writer is not None
    monkeypatch.setattr(engine._writer, "_append", disk_full)
    with pytest.raises(CheckpointError, match="No space left"):
        engine.record(assistant("done"), stop_reason="end_turn")
    assert not audit.exists()


# -- checkpoints ---------------------------------------------------------------------------------


def _same_state(a: EngineState, b: EngineState) -> None:
    assert [to_payload(m) for m in a.tape] == [to_payload(m) for m in b.tape]
    assert to_payload(a.view) == to_payload(b.view)
    assert [to_payload(c.request) for c in a.calls] == [to_payload(c.request) for c in b.calls]
    assert [c.usage for c in a.calls] == [c.usage for c in b.calls]
    assert a.receipts == b.receipts


def test_checkpoint_round_trips_the_state_exactly(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    engine = _engine(EvictToolResults(keep_last=1, min_freed_tokens=0), checkpoint_path=path)
    engine.add(user("task"))
    for i in range(6):
        _round(engine, i)
    engine.reset_view()
    _round(engine, 6)
    _same_state(read_checkpoint(path), engine._state())
    # Requests are stored as references: the file is far smaller than 7 copies of the history.
    assert path.stat().st_size < 3 * len(json.dumps([to_payload(m) for m in engine.tape]))


def test_a_torn_last_line_is_ignored_and_a_damaged_one_named(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    engine = _engine(checkpoint_path=path)
    engine.add(user("task"))
    _round(engine, 0)
    good = path.read_text()
    _round(engine, 1)
    full = path.read_text()
    path.write_text(full[: len(good) + 40])  # the next line was cut mid-write
    assert len(read_checkpoint(path).tape) == 3
    path.write_text(good + "{not json}\n" + full[len(good) :])
    with pytest.raises(CheckpointError, match=r"engine.ckpt:\d+: damaged"):
        read_checkpoint(path)
    path.write_text('{"format": "other"}\n')
    with pytest.raises(CheckpointError, match="not a contextkit checkpoint"):
        read_checkpoint(path)
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        read_checkpoint(tmp_path / "missing")


def test_checkpoint_is_loadable_while_it_is_being_written(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    engine = _engine(checkpoint_path=path, checkpoint_fsync=False)
    engine.add(user("task"))
    seen: list[int] = []
    errors: list[Exception] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                seen.append(len(read_checkpoint(path).tape))
            except Exception as exc:  # any failure to load is what this test looks for
                errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        # Write until the reader has loaded the file a good number of times while it grew. On a
        # loaded machine the reader thread may get few turns of the interpreter in a fixed number
        # of rounds (3 reads in 3,000 rounds was seen): each round hands it the interpreter.
        i = 0
        while i < 150 or (len(seen) + len(errors) <= 10 and i < 3000):
            _round(engine, i, result=f"result {i}\n" * 50)
            i += 1
            time.sleep(0.0005)
    finally:
        done.set()
        thread.join()
    assert errors == []
    assert len(seen) > 10
    assert seen == sorted(seen)  # states only move forward
    assert len(read_checkpoint(path).tape) == 1 + 2 * i  # the task, then a call and result a round


_WRITER = """
import sys
from contextkit.engine import ContextEngine
from contextkit.testing import assistant, tool_result, tool_use, user
engine = ContextEngine(model="m", checkpoint_path=sys.argv[1], checkpoint_fsync=False)
engine.add(user("task"))
print("ready", flush=True)
i = 0
while True:
    engine.prepare()
    engine.record(assistant(f"s{i}", tool_uses=[tool_use(f"t{i}")]), stop_reason="tool_use")
    engine.add(user(tool_result(f"t{i}", "payload " * 20000)))
    i += 1
"""


def test_checkpoint_survives_sigkill_mid_write(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    for delay in (0.3, 0.55, 0.8):
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        state = read_checkpoint(path)
        assert validate(state.view) == () or state.view.messages[-1].role == "assistant"
        assert len(state.tape) - 1 in (2 * len(state.calls), 2 * len(state.calls) - 1)


def test_resume_answers_a_dangling_tool_use_with_an_interrupted_result(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    engine = _engine(checkpoint_path=path)
    engine.add(user("task"))
    _round(engine, 0)
    engine.prepare()
    engine.record(assistant("run it", tool_uses=[tool_use("t1")]), stop_reason="tool_use")
    del engine  # the process dies while tool t1 runs

    resumed, receipts = ContextEngine.resume(path, counter=FixedCounter())
    assert [(r.strategy, r.action, r.tool_use_id) for r in receipts] == [
        ("repair", "inserted", "t1")
    ]
    answer = resumed.tape[-1]
    result = answer.blocks[0]
    assert isinstance(result, ToolResultBlock)
    assert (result.tool_use_id, result.content, result.is_error) == ("t1", INTERRUPTED_TEXT, True)
    assert resumed.view.messages[-1] is answer
    assert validate(resumed.view) == ()
    assert len(resumed.calls) == 2
    assert resumed.receipts[-1] == receipts[-1]
    # The loop goes on from there, and the previous request's end is still a breakpoint.
    request = resumed.prepare().request
    assert _marks(request) == ["tools", "system", "2", "4"]
    resumed.record(assistant("done"), stop_reason="end_turn")
    again, more = ContextEngine.resume(path)
    assert more == ()
    assert len(again.calls) == 3


def test_resume_of_a_clean_checkpoint_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    engine = _engine(checkpoint_path=path)
    engine.add(user("task"))
    _round(engine, 0)
    resumed, receipts = ContextEngine.resume(path)
    assert receipts == ()
    _same_state(resumed._state(), engine._state())


def test_checkpoint_writer_rewrites_compactly(tmp_path: Path) -> None:
    path = tmp_path / "w.ckpt"
    writer = CheckpointWriter(path, fsync=False)
    messages: tuple[Message, ...] = (user("a"),)
    state = EngineState(tape=messages, view=conversation(*messages), calls=(), receipts=())
    writer.save(state)
    writer.save(state)  # nothing changed: nothing appended
    assert len(path.read_text().splitlines()) == 2
    writer.rewrite(state)
    assert len(path.read_text().splitlines()) == 2


def test_the_retrieve_tool_answers_from_the_tape_and_says_when_it_cannot() -> None:
    from contextkit.engine import RETRIEVE_TOOL_NAME  # noqa: PLC0415

    evict = EvictToolResults(keep_last=1, min_freed_tokens=0, min_result_tokens=0)
    engine = ContextEngine(evict, retrieval=True)
    engine.add(user("Read both files."))
    for n in range(2):
        engine.prepare()
        engine.record(assistant(tool_use(f"t{n}", "read_file", {"path": f"f{n}.py"})))
        engine.add(user(tool_result(f"t{n}", f"contents of f{n} " + "y" * 300)))
    request = engine.prepare().request
    assert request.tools[-1].name == RETRIEVE_TOOL_NAME
    first = request.messages[2].blocks[0]
    assert isinstance(first, ToolResultBlock)
    assert first.tool_use_id == "t0"
    assert is_evicted(first)

    def ask(*handles: str, other: bool = False) -> Any:
        uses = [
            tool_use(f"r{i}", RETRIEVE_TOOL_NAME, {"tool_use_id": h}) for i, h in enumerate(handles)
        ]
        if other:
            uses.append(tool_use("x", "read_file", {"path": "g.py"}))
        return engine.retrieval_answer(assistant(*uses))

    reply = ask("t0", "nope")
    assert reply is not None
    found, missing = reply.blocks
    assert isinstance(found, ToolResultBlock)
    assert isinstance(missing, ToolResultBlock)
    assert found.text.startswith("contents of f0 ")
    assert missing.is_error
    assert "'nope'" in missing.text
    assert "t0" in missing.text
    assert ask("t0", other=True) is None  # mixed with the harness's own tools: not answered
    plain = ContextEngine()
    plain.add(user("hi"))
    assert plain.prepare().request.tools == ()
    assert plain.retrieval_answer(assistant(tool_use("r", RETRIEVE_TOOL_NAME, {}))) is None
