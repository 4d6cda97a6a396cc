"""The summariser's receipt in a replay: every summary call a strategy makes is billed (as the
provider billed it, or modelled for the offline hand-off), also when the summary is discarded,
and shown apart from the requests' cost."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from contextkit.messages import Conversation, Message
from contextkit.replay import Replay, replay
from contextkit.replay._summariser import modelled_usage
from contextkit.session import Call, Session, Usage
from contextkit.strategies import (
    SUMMARY_INSTRUCTION,
    CallFacts,
    Compacted,
    ReplaceWithSummary,
    ScriptedSummariser,
    Strategy,
)
from contextkit.testing import (
    FixedCounter,
    assistant,
    conversation,
    fixed_price,
    tool_result,
    tool_use,
    user,
)

PRICE = fixed_price("test")
MODEL = "claude-sonnet-4-5-20250929"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
AT = 4  # the call at which the test strategies summarise


def _session(rounds: int = 6, pause_before: int | None = None) -> Session:
    """One prompt worked through with ``rounds`` tool calls, 10 s apart (``pause_before``: that
    call comes 10 minutes after the one before it: the 5-minute cache is cold)."""
    history: list[Message] = [user("Fix the failing test in orders/service.py")]
    calls = []
    at = START
    for i in range(rounds + 1):
        at += timedelta(minutes=10) if i == pause_before else timedelta(seconds=10)
        last = i == rounds
        response = (
            assistant("done: compute_total fixed")
            if last
            else assistant(f"Step {i}: reading", tool_uses=[tool_use(f"t{i}", "Read")])
        )
        request = conversation(*history, system="You are a test agent.", model=MODEL)
        calls.append(Call(request=request, response=response, model=MODEL, timestamp=at))
        body = f"def compute_total_{i}(): return {4700 + i}\n" + "x" * 2_000
        history = [*history, response, user(tool_result(f"t{i}", body))]
    return Session(path="hand-built", format="test", calls=tuple(calls))


@dataclass
class At:
    """``inner`` at call ``index`` only; the view as it is elsewhere."""

    inner: Strategy
    index: int = AT

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        return self.inner(view, facts) if facts.call_index == self.index else Compacted(view=view)


def _run(session: Session, text: str, usage: Usage | None) -> Replay:
    summariser = ScriptedSummariser(script=(text,), usage=usage, model=None)  # the call's
    strategy = At(ReplaceWithSummary(summariser, keep_last_rounds=1))
    return replay(session, strategy, name="summary", counter=FixedCounter(), price=PRICE)


def _requests_cost(done: Replay) -> float:
    cost = done.ledger.simulated.total_cost
    assert cost is not None
    return cost


def _rows_add_up(done: Replay) -> None:
    rows = done.rows
    assert all(r.cost_usd is not None for r in rows)
    assert math.isclose(sum(r.cost_usd or 0.0 for r in rows), done.summary()["cost_usd"])
    assert math.isclose(sum(r.summariser_usd or 0.0 for r in rows), done.summariser_usd or 0.0)


def test_a_billed_summary_call_is_added_to_the_totals_and_its_row() -> None:
    usage = Usage(input_tokens=120, cache_read=5_000, output_tokens=300)
    done = _run(_session(), "short hand-off: compute_total fixed", usage)
    expected = PRICE.cost(usage)
    summary = done.summary()
    assert summary["compactions"] == 1
    assert summary["summariser_calls"] == 1
    assert summary["summariser_usd"] == pytest.approx(expected)
    assert summary["cost_usd"] == pytest.approx(_requests_cost(done) + expected)
    assert summary["simulated_cost_usd"] == pytest.approx(_requests_cost(done) + expected)
    assert done.cost_usd == pytest.approx(_requests_cost(done) + expected)
    (call,) = done.summariser
    assert (call.call, call.usage, call.modelled) == (AT, usage, False)
    assert done.rows[AT].summariser_usd == pytest.approx(expected)
    assert [r.summariser_usd for i, r in enumerate(done.rows) if i != AT] == [0.0] * (
        len(done.rows) - 1
    )
    _rows_add_up(done)


def test_a_discarded_summary_is_billed_but_is_no_compaction() -> None:
    usage = Usage(input_tokens=900, output_tokens=50)
    done = _run(_session(), "x" * 200_000, usage)  # larger than what it would replace
    assert [r.action for r in done.receipts[AT]] == ["summary_discarded"]
    summary = done.summary()
    assert summary["compactions"] == 0
    assert not done.rows[AT].compacted
    assert summary["summariser_calls"] == 1
    assert summary["summariser_usd"] == pytest.approx(PRICE.cost(usage))
    assert summary["cost_usd"] == pytest.approx(_requests_cost(done) + PRICE.cost(usage))
    # The views are those of a strategy that never acts.
    assert all(v is t for v, t in zip(done.views, done.tapes, strict=True))
    _rows_add_up(done)


def _expected_modelled(session: Session, output: int, warm: bool) -> Usage:
    """By hand: the summary request is call AT's request plus the instruction; what call AT - 1
    sent is read from the cache when it is warm; the rest is written; the output is the text."""
    counter = FixedCounter()
    whole = counter.count_conversation(session.calls[AT].request)
    cached = counter.count_conversation(session.calls[AT - 1].request) if warm else 0
    return Usage(
        input_tokens=counter.count_text(SUMMARY_INSTRUCTION),
        cache_read=cached,
        cache_write_5m=whole - cached,
        output_tokens=output,
    )


@pytest.mark.parametrize("pause_before", [None, AT])
def test_an_offline_summary_is_priced_as_the_model_call_it_stands_for(
    pause_before: int | None,
) -> None:
    session = _session(pause_before=pause_before)
    text = "hand-off: compute_total_0 returns 4700"
    done = _run(session, text, None)
    (receipt,) = done.receipts[AT]
    assert receipt.usage is None
    assert receipt.summary_tokens == FixedCounter().count_text(text)
    (call,) = done.summariser
    assert call.modelled
    expected = _expected_modelled(session, receipt.summary_tokens, warm=pause_before is None)
    assert call.usage == expected
    assert call.cost_usd == pytest.approx(PRICE.cost(expected))
    assert done.summary()["cost_usd"] == pytest.approx(_requests_cost(done) + PRICE.cost(expected))
    _rows_add_up(done)


def test_an_offline_discarded_summary_is_modelled_too() -> None:
    done = _run(_session(), "y" * 200_000, None)
    (receipt,) = done.receipts[AT]
    assert receipt.action == "summary_discarded"
    (call,) = done.summariser
    assert call.modelled
    assert call.usage.output_tokens == 50_000
    assert done.summary()["summariser_usd"] == pytest.approx(PRICE.cost(call.usage))


def test_one_hour_cache_writes_are_modelled_as_such() -> None:
    view = conversation(user("a" * 400), assistant("b" * 400), user("c" * 400), model=MODEL)
    previous = view.with_messages(view.messages[:2])
    facts = CallFacts(counter=FixedCounter(), cache_ttl_s=3_600, model=MODEL)
    usage = modelled_usage(view, previous, facts, 10)
    assert usage.cache_write_5m == 0
    assert usage.cache_write_1h == FixedCounter().count_conversation(view) - usage.cache_read
    assert usage.cache_read == FixedCounter().count_conversation(previous)


def test_strategies_without_summaries_bill_nothing() -> None:
    done = replay(_session(), At(_evict_all), counter=FixedCounter(), price=PRICE)
    summary = done.summary()
    assert (summary["summariser_calls"], summary["summariser_usd"]) == (0, 0.0)
    assert summary["cost_usd"] == pytest.approx(_requests_cost(done))


def _evict_all(view: Conversation, facts: CallFacts, /) -> Compacted:
    from contextkit.strategies import EvictToolResults  # noqa: PLC0415

    return EvictToolResults(keep_last=1)(view, facts)


def test_a_summariser_model_without_a_price_leaves_the_cost_unknown() -> None:
    summariser = ScriptedSummariser(
        script=("hand-off",), usage=Usage(output_tokens=10), model="unpriced-summariser"
    )
    strategy = At(ReplaceWithSummary(summariser, keep_last_rounds=1))
    with pytest.warns(UserWarning, match="no price known for model 'unpriced-summariser'"):
        done = replay(_session(), strategy, counter=FixedCounter(), price=PRICE)
    assert done.summariser_usd is None
    assert done.summary()["cost_usd"] is None
    assert done.cost_usd is None
    assert done.rows[AT].cost_usd is None
    assert done.rows[AT - 1].cost_usd is not None


def test_compare_shows_the_summariser_apart_when_wide() -> None:
    from contextkit.cli import replay as cli_replay  # noqa: PLC0415

    usage = Usage(input_tokens=120, cache_read=5_000, output_tokens=300)
    summary = _run(_session(), "short hand-off", usage).summary()
    wide = dict(
        zip(
            [k for _, k, _ in cli_replay._columns(True)],
            cli_replay._summary_cells(summary, True),
            strict=True,
        )
    )
    assert wide["summariser_usd"] == f"${PRICE.cost(usage):.4f}"
    assert "summariser_usd" not in [k for _, k, _ in cli_replay._columns(False)]
