"""Probes of what the agent must still know (:mod:`contextkit.replay._probes`)."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import pytest

from contextkit.formats import load
from contextkit.messages import Conversation, Message, TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.replay import replay, run_strategy
from contextkit.replay._probes import questions
from contextkit.session import Call, Session
from contextkit.strategies import PRESET_NAMES, CallFacts, Compacted

MODEL = "claude-sonnet-4-5"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TASK = "Port the billing module to the new payments API and keep the old tests green."
RULE = "Do not touch the migrations folder."


def _text(role: Literal["user", "assistant"], text: str) -> Message:
    return Message(role=role, content=(TextBlock(text=text),))


def _tape() -> list[Message]:
    read = ToolUseBlock(id="r1", name="Read", input={"file_path": "src/billing/api.py"})
    run = ToolUseBlock(id="b1", name="Bash", input={"command": "pytest -q"})
    failing = "FAILED tests/test_api.py::test_refund - KeyError: 'currency'\n" + "trace\n" * 50
    return [
        _text("user", f"{TASK} {RULE} <system-reminder>Always answer in French.</system-reminder>"),
        Message(role="assistant", content=(read,)),
        Message(role="user", content=(ToolResultBlock(tool_use_id="r1", content="x = 1\n" * 80),)),
        Message(role="assistant", content=(run,)),
        Message(
            role="user",
            content=(ToolResultBlock(tool_use_id="b1", content=failing, is_error=True),),
        ),
    ]


def test_the_questions_come_from_the_tape() -> None:
    asked = questions(Conversation(model=MODEL, messages=tuple(_tape())))
    assert asked["artifacts"] == ("src/billing/api.py",)
    assert asked["task"] == (f"{TASK} {RULE}",)  # the harness's reminder is not the task
    assert asked["instructions"] == (RULE,)  # the harness's injected reminder is not the user's
    assert asked["errors"] == ("FAILED tests/test_api.py::test_refund - KeyError: 'currency'",)
    # a new request the user typed closes the errors of the turn before it
    later = Conversation(model=MODEL, messages=(*_tape(), _text("user", "Now the invoices.")))
    assert questions(later)["errors"] == ()


def test_a_summary_in_its_own_words_passes_task_and_files() -> None:
    """A summary restates the task and names files as a person would: the task passes on most of
    its words, a file on its last two parts or a distinctive name; a view that lost them fails."""
    from contextkit.replay._probes import ProbeScore  # noqa: PLC0415

    tape = Conversation(model=MODEL, messages=tuple(_tape()))

    def asked(text: str) -> dict[str, float | None]:
        score = ProbeScore()
        score.ask(0, tape, Conversation(model=MODEL, messages=(_text("user", text),)))
        return score.shares()

    restated = asked("We port the billing module onto the payments API; old tests stay green.")
    assert restated["task"] == 1.0
    assert restated["artifacts"] == 0.0
    assert asked("Edited billing/api.py so far.")["artifacts"] == 1.0
    assert asked("Edited api.py so far.")["artifacts"] == 0.0  # too short a name to find again
    assert asked("The user wants something about payments.")["task"] == 0.0


def test_the_open_todo_items_are_the_next_steps() -> None:
    todos = {
        "todos": [
            {"content": "Read   the payments API", "status": "completed"},
            {"content": "Write the refund test", "status": "in_progress"},
            {"content": "Port the invoices", "status": "pending"},
        ]
    }
    plan = ToolUseBlock(id="p1", name="TodoWrite", input=todos)
    tape = Conversation(
        model=MODEL,
        messages=(*_tape(), Message(role="assistant", content=(plan,))),
    )
    assert questions(tape)["next"] == ("Write the refund test", "Port the invoices")
    from contextkit.replay._probes import ProbeScore  # noqa: PLC0415

    score = ProbeScore()
    score.ask(
        0, tape, Conversation(model=MODEL, messages=(_text("user", "Write the refund test"),))
    )
    assert score.shares()["next"] == 0.5


def test_the_latest_decisions_are_asked_and_pass_restated() -> None:
    from contextkit.replay._probes import MAX_DECISIONS, ProbeScore  # noqa: PLC0415

    topics = [
        "parser",
        "cache",
        "router",
        "logger",
        "schema",
        "client",
        "server",
        "worker",
        "queue",
        "tokens",
        "prices",
        "ledger",
    ]
    said = [f"I decided to rewrite the {t} module instead of patching it." for t in topics]
    tape = Conversation(
        model=MODEL,
        messages=(*_tape(), *(_text("assistant", s) for s in said), _text("user", "go")),
    )
    asked = questions(tape)["decisions"]
    assert len(asked) == MAX_DECISIONS
    assert asked[-1] == said[-1]
    assert said[0] not in asked  # the oldest choices are not the question

    def share(text: str) -> float | None:
        score = ProbeScore()
        score.ask(0, tape, Conversation(model=MODEL, messages=(_text("user", text),)))
        return score.shares()["decisions"]

    assert share(" ".join(said)) == 1.0
    restated = "We rewrite the ledger module (decided), instead of patching."
    assert share(restated) == 0.1  # restated, one of ten
    assert share("Nothing about choices here.") == 0.0


def _session() -> Session:
    tape = _tape()
    calls = []
    for k in (0, 2, 4):
        request = Conversation(model=MODEL, messages=tuple(tape[: k + 1]))
        response = tape[k + 1] if k + 1 < len(tape) else _text("assistant", "The refund fails.")
        calls.append(Call(request=request, response=response, timestamp=T0 + timedelta(seconds=k)))
    return Session(path="<built>", format="claude-code", calls=tuple(calls))


def _forgetting(view: Conversation, facts: CallFacts, /) -> Compacted:
    """Drops what a careless compaction drops: the opening request and the failing run."""
    if len(view.messages) < 5:
        return Compacted(view=view)
    kept = (_text("user", "Continue."), *view.messages[1:3], _text("assistant", "ok"))
    return Compacted(view=view.model_copy(update={"messages": (*kept, view.messages[-1])[-4:]}))


def test_a_view_that_forgot_the_task_and_the_rules_fails_their_probes() -> None:
    result = replay(_session(), _forgetting, name="forgetting")
    summary = result.summary()
    assert summary["probes"] == 4
    assert summary["probe_task"] == 0.0
    assert summary["probe_instructions"] == 0.0
    assert summary["probe_artifacts"] == 1.0  # the Read call is still in the view
    failed = {f["category"] for f in result.to_json()["probe_failures"]}
    assert failed == {"task", "instructions"}
    # the full tape asks nothing: probes are asked where a strategy edited the view
    assert (
        replay(_session(), lambda v, f, /: Compacted(view=v), name="none").summary()["probes"] == 0
    )


@pytest.mark.corpus
def test_the_presets_are_probed_on_a_corpus_session(corpus: Path) -> None:
    """spotter (152 calls): every preset that edits the view is asked probes; clearing old tool
    results loses the open errors of the turn, which a summary keeps (measured: 0.09 against
    1.00)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = load(corpus / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl").sessions[
            0
        ]
        summaries = {name: run_strategy(session, name).summary() for name in PRESET_NAMES}
    for name, s in summaries.items():
        assert (s["probes"] > 0) == (s["compactions"] > 0), name
    assert summaries["evict-tool-results"]["probe_errors"] < 0.5
    assert summaries["summary"]["probe_errors"] == 1.0


def test_a_custom_tool_call_with_text_input_is_read() -> None:
    """Codex's ``apply_patch`` is a custom tool whose input is the patch text, not an object
    (every corpus replay failed on it before)."""
    from contextkit.replay._probes import view_text  # noqa: PLC0415

    patch = ToolUseBlock.model_validate(
        {"type": "tool_use", "id": "p1", "name": "apply_patch", "input": "*** Begin Patch"}
    )
    view = Conversation(
        model=MODEL, messages=(_text("user", TASK), Message(role="assistant", content=(patch,)))
    )
    assert questions(view)["artifacts"] == ()
    assert "*** Begin Patch" in view_text(view)
