"""Recovery cost (:mod:`contextkit.replay._recovery`): what getting back what a strategy dropped
costs the agent, and the best strategy by cost + recovery."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import pytest

from contextkit.accounting import price_session
from contextkit.formats import load
from contextkit.messages import Conversation, Message, TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.pricing import PER_MILLION
from contextkit.replay import best_strategy, replay, run_strategy
from contextkit.session import Call, Session, Usage
from contextkit.strategies import PRESET_NAMES, CallFacts, Compacted
from contextkit.testing import fixed_price

MODEL = "claude-sonnet-4-5"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PRICE = fixed_price(MODEL)
PLACEHOLDER = "[cleared]"


def _text(role: Literal["user", "assistant"], text: str) -> Message:
    return Message(role=role, content=(TextBlock(text=text),))


def _session(subagent_usage: Usage | None = None) -> Session:
    """A user asks (naming ``docs/SPEC-7.md``), a Read returns ``INVOICE_HALF_EVEN`` and a
    Task's report names ``ERR_LEDGER_42``; the last response uses all three."""
    ask = _text("user", "Fix the invoice rounding as docs/SPEC-7.md says " + "please " * 40)
    read = ToolUseBlock(id="r1", name="Read", input={"file_path": "src/billing/invoice.py"})
    task = ToolUseBlock(id="t1", name="Task", input={"prompt": "find the failing ledger test"})
    body = "ROUNDING = INVOICE_HALF_EVEN  # the mode the invoices use\n" * 40
    report = "The ledger test fails with ERR_LEDGER_42 in tests/test_ledger.py " * 30
    history: list[Message] = [ask]
    turns = [
        (
            Message(role="assistant", content=(read,)),
            ToolResultBlock(tool_use_id="r1", content=body),
        ),
        (
            Message(role="assistant", content=(task,)),
            ToolResultBlock(tool_use_id="t1", content=report),
        ),
    ]
    calls: list[Call] = []
    for k, (answer, result) in enumerate(turns):
        request = Conversation(model=MODEL, messages=tuple(history))
        calls.append(Call(request=request, response=answer, timestamp=T0 + timedelta(seconds=k)))
        history += [answer, Message(role="user", content=(result,))]
    final = _text(
        "assistant",
        "Per docs/SPEC-7.md, INVOICE_HALF_EVEN rounds late; ERR_LEDGER_42 comes from it.",
    )
    request = Conversation(model=MODEL, messages=tuple(history))
    calls.append(Call(request=request, response=final, timestamp=T0 + timedelta(seconds=5)))
    sub_call = Call(
        request=Conversation(
            model=MODEL, messages=(_text("user", "find the failing ledger test"),)
        ),
        response=_text("assistant", report[:200]),
        usage=subagent_usage,
        model=MODEL,
        timestamp=T0 + timedelta(seconds=2),
    )
    sub = Session(path="<sub>", format="claude-code", calls=(sub_call,), parent_tool_use_id="t1")
    return Session(path="<built>", format="claude-code", calls=tuple(calls), subagents=(sub,))


def _cleared(message: Message, ids: tuple[str, ...]) -> Message:
    if isinstance(message.content, str):
        return message
    blocks = tuple(
        b.model_copy(update={"content": PLACEHOLDER})
        if isinstance(b, ToolResultBlock) and b.tool_use_id in ids
        else b
        for b in message.content
    )
    return message.model_copy(update={"content": blocks})


def _dropping(*ids: str, user_text: bool = False) -> Callable[[Conversation, CallFacts], Compacted]:
    """A strategy that clears the results of ``ids`` (and, asked, rewrites the first user
    message) once the view holds them."""

    def strategy(view: Conversation, facts: CallFacts, /) -> Compacted:
        messages = [
            _text("user", "Fix the invoice rounding.")
            if user_text and i == 0
            else _cleared(m, ids)
            if m.role == "user"
            else m
            for i, m in enumerate(view.messages)
        ]
        if tuple(messages) == tuple(view.messages):
            return Compacted(view=view)
        return Compacted(view=view.model_copy(update={"messages": tuple(messages)}))

    return strategy


def test_a_dropped_tool_result_costs_one_more_round_trip() -> None:
    session = _session()
    result = replay(session, _dropping("r1"), name="drop-read", price=PRICE)
    (recovery,) = [r for r in result.recoveries if r.kind == "tool"]
    assert recovery.call == 2
    assert recovery.source.startswith("Read (file_path=src/billing/invoice.py")
    assert recovery.recoverable
    context = result.rows[2].context_tokens
    expected = (context * PRICE.cache_read + recovery.tokens * PRICE.cache_write_5m) / PER_MILLION
    assert recovery.cost_usd is not None
    assert recovery.cost_usd >= expected  # plus the tool call written again as output
    assert recovery.cost_usd < expected + 100 * PRICE.output / PER_MILLION
    summary = result.summary()
    assert summary["recovery_usd"] == pytest.approx(recovery.cost_usd)
    assert summary["cost_plus_recovery_usd"] == pytest.approx(
        summary["cost_usd"] + recovery.cost_usd
    )
    assert [r["kind"] for r in result.to_json()["recoveries"]] == ["tool"]


def test_a_subagent_report_costs_the_subagent_again() -> None:
    usage = Usage(input_tokens=40_000, output_tokens=3_000)
    session = _session(subagent_usage=usage)
    result = replay(session, _dropping("t1"), name="drop-report", price=PRICE)
    (recovery,) = [r for r in result.recoveries if r.kind == "subagent"]
    ledger = price_session(session.subagents[0], output="recorded")
    assert ledger.recorded is not None
    assert recovery.cost_usd is not None
    assert recovery.cost_usd >= float(ledger.recorded.total_cost or 0) > 0.1
    assert result.summary()["subagent_reruns"] == 1
    # Without the subagent's run in the file, nothing can reproduce its report.
    orphan = session.model_copy(update={"subagents": ()})
    without = replay(orphan, _dropping("t1"), price=PRICE)
    (lost,) = without.recoveries
    assert (lost.kind, lost.recoverable, lost.cost_usd) == ("subagent", False, None)
    # With the retrieve tool, the report comes back from the tape in one round trip, run or not.
    assert result.retrieval is not None
    assert without.retrieval is not None
    (back,) = result.retrieval
    (found,) = without.retrieval
    assert back.recoverable
    assert found.recoverable
    assert back.cost_usd is not None
    assert back.cost_usd < 0.05 < recovery.cost_usd
    summary = result.summary()
    carried = result.retrieval_overhead_usd
    assert carried is not None
    assert carried > 0
    assert summary["cost_plus_recovery_with_retrieval_usd"] == pytest.approx(
        summary["cost_usd"] + back.cost_usd + carried
    )
    assert summary["cost_plus_recovery_with_retrieval_usd"] < summary["cost_plus_recovery_usd"]
    assert without.summary()["cost_plus_recovery_usd"] is None
    assert without.summary()["cost_plus_recovery_with_retrieval_usd"] is not None


def test_text_the_user_typed_is_an_unrecoverable_loss_and_never_best() -> None:
    session = _session()
    lossy = replay(session, _dropping(user_text=True), name="lossy", price=PRICE)
    (lost,) = lossy.recoveries
    assert (lost.kind, lost.recoverable) == ("user", False)
    assert lossy.retrieval is not None
    assert [r.recoverable for r in lossy.retrieval] == [False]  # typed text has no handle
    assert "docs/SPEC-7.md" in lost.facts
    summaries = {
        "lossy": lossy.summary(),
        "drop-read": replay(session, _dropping("r1"), name="drop-read", price=PRICE).summary(),
    }
    assert summaries["lossy"]["unrecoverable"] == 1
    assert best_strategy(summaries) == "drop-read"
    assert best_strategy({"lossy": summaries["lossy"]}) is None


@pytest.mark.corpus
def test_dropping_a_corpus_subagent_report_is_charged_its_run_and_is_not_best(
    corpus: Path,
) -> None:
    """entire-claude s-6d: the presets that clear a Task report a later call uses are charged at
    least that subagent's recorded cost, and none of them is best while a preset without such a
    loss qualifies."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = load(corpus / "entire-claude" / "s-6d-9f76bd01e9-0.jsonl").sessions[0]
        runs = {name: run_strategy(session, name) for name in PRESET_NAMES}
        costs = {
            sub.parent_tool_use_id: price_session(sub, output="recorded").recorded
            for sub in session.subagents
        }
    reruns = 0
    for name, result in runs.items():
        for recovery in result.recoveries:
            if recovery.kind != "subagent":
                continue
            reruns += 1
            assert recovery.recoverable, name
            assert recovery.cost_usd is not None
            run_costs = [float(t.total_cost or 0) for t in costs.values() if t is not None]
            assert recovery.cost_usd >= min(run_costs), name
    assert reruns >= 5  # most presets clear one at least: the test sees the case
    summaries = {name: r.summary() for name, r in runs.items()}
    best = best_strategy(summaries)
    assert best is not None
    assert summaries[best]["subagent_reruns"] == 0


@pytest.mark.corpus
def test_replay_explain_lists_each_recovery_with_and_without_retrieval(corpus: Path) -> None:
    """``replay --explain``: every recovery (call, kind, what held it, its price and its price
    with the retrieve tool), every failed probe; the JSON lists the same recoveries."""
    from typer.testing import CliRunner  # noqa: PLC0415

    from contextkit.cli import app  # noqa: PLC0415

    path = str(corpus / "entire-claude" / "s-6d-9f76bd01e9-0.jsonl")
    args = ["replay", path, "-s", "evict-then-summary", "--wide"]
    shown = CliRunner().invoke(app, [*args, "--explain"], env={"COLUMNS": "220"})
    assert shown.exit_code == 0, shown.output
    doc = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert doc["recoveries"]
    text = shown.stdout
    assert "recoveries: what later calls needed that evict-then-summary had dropped" in text
    assert "with retrieval" in text
    rows = re.findall(r"^(\d+)\s+(tool|subagent|user|own)\s", text, re.MULTILINE)
    assert rows == [(str(r["call"]), r["kind"]) for r in doc["recoveries"]]
    subagent = [r for r in doc["recoveries"] if r["kind"] == "subagent"]
    assert subagent  # the Task report this preset clears, charged its run (then one round trip)
    assert (
        doc["summary"]["cost_plus_recovery_with_retrieval_usd"]
        < (doc["summary"]["cost_plus_recovery_usd"])
    )
    assert "probe failed at call" in text
