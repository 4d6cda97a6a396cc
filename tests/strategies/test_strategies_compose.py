"""Composition: pipelines, triggers, escalation, hysteresis and the cache-aware gate."""

from __future__ import annotations

from strategy_support import coding_session, is_valid, without_thinking

from contextkit.messages import Conversation
from contextkit.pricing import ModelPrice
from contextkit.strategies import (
    AllOf,
    AnyOf,
    CacheAwareGate,
    CallFacts,
    Compacted,
    EscalateUntilFits,
    EvictToolResults,
    Hysteresis,
    OverFraction,
    OverTokens,
    Pipeline,
    Receipt,
    ReplaceWithSummary,
    SlidingWindow,
    ToolResultsOver,
    TurnsOver,
    When,
)
from contextkit.tokens import ApproxCounter


def facts(budget: int = 200_000, window: int = 200_000) -> CallFacts:
    return CallFacts(counter=ApproxCounter(), budget_tokens=budget, context_window=window)


def tokens(view: Conversation) -> int:
    return ApproxCounter().count_conversation(view)


def marker(view: Conversation, facts: CallFacts, /) -> Compacted:
    """A plain-function strategy: records the budget it was given, changes nothing."""
    receipt = Receipt(strategy="marker", action="seen", detail=str(facts.budget_tokens))
    return Compacted(view=view, receipts=(receipt,))


def test_pipeline_flattens_and_accepts_functions() -> None:
    a, b, c = EvictToolResults(), SlidingWindow(), ReplaceWithSummary()
    pipeline = (a >> b) >> (c >> marker)
    assert isinstance(pipeline, Pipeline)
    assert pipeline.steps == (a, b, c, marker)
    assert isinstance(marker >> a, Pipeline)


def test_pipeline_same_object_when_nothing_applies() -> None:
    view = coding_session(rounds=1, result_chars=50)
    out = (EvictToolResults() >> SlidingWindow())(view, facts())
    assert out.view is view
    assert out.receipts == ()


def test_pipeline_concatenates_receipts() -> None:
    view = without_thinking(coding_session(rounds=8, result_chars=4_000, turns=2))
    out = (EvictToolResults(keep_last=2) >> SlidingWindow())(view, facts(budget=1_500))
    actions = [r.action for r in out.receipts]
    assert "evicted" in actions
    assert "dropped" in actions
    assert tokens(out.view) <= 1_500
    assert is_valid(out.view)


def test_triggers_combine_and_flatten() -> None:
    view = coding_session(rounds=4, result_chars=2_000, turns=3)
    total = tokens(view)
    f = facts(window=total * 2)
    assert OverFraction(0.4)(view, f)
    assert not OverFraction(0.6)(view, f)
    assert OverTokens(total - 1)(view, f)
    assert not OverTokens(total)(view, f)
    assert TurnsOver(2)(view, f)
    assert not TurnsOver(3)(view, f)
    assert ToolResultsOver(1_000)(view, f)
    assert not ToolResultsOver(10**6)(view, f)
    either = OverTokens(10**9) | TurnsOver(2) | OverFraction(5)
    assert isinstance(either, AnyOf)
    assert len(either.triggers) == 3
    assert either(view, f)
    both = OverTokens(1) & TurnsOver(5)
    assert isinstance(both, AllOf)
    assert not both(view, f)
    assert (OverTokens(1) & (lambda v, fa: True))(view, f)


def test_when_decides_whether() -> None:
    view = coding_session(rounds=8, result_chars=4_000, turns=2)
    no = When(OverTokens(10**9), SlidingWindow(max_tokens=100))(view, facts())
    assert no.view is view
    yes = When(OverTokens(10), SlidingWindow(max_tokens=100))(view, facts())
    assert yes.view is not view


def test_escalate_stops_at_first_fit() -> None:
    view = coding_session(rounds=8, result_chars=4_000, turns=2)
    budget = tokens(view) - 2_000
    out = EscalateUntilFits(EvictToolResults(keep_last=None), SlidingWindow(), marker)(
        view, facts(budget=budget)
    )
    assert tokens(out.view) <= budget
    assert {r.strategy for r in out.receipts} == {"evict-tool-results"}
    assert EscalateUntilFits(SlidingWindow())(view, facts()).view is view


def test_hysteresis_compacts_to_low_water_then_waits() -> None:
    view = coding_session(rounds=10, result_chars=4_000, turns=2)
    window = int(tokens(view) / 0.9)  # the view is at 90% of the window
    strategy = Hysteresis(SlidingWindow(), high=0.8, low=0.5)
    out = strategy(view, facts(window=window))
    assert tokens(out.view) <= 0.5 * window
    # Grows again but stays under the high-water mark: nothing happens.
    assert strategy(out.view, facts(window=window)).view is out.view
    seen = Hysteresis(marker, high=0.8, low=0.5)(view, facts(window=window))
    assert seen.receipts[0].detail == str(int(0.5 * window))


def test_cache_gate_blocks_edits_that_do_not_pay() -> None:
    view = coding_session(rounds=8, result_chars=4_000, turns=1)
    # Evicting the last old result (late in the view) frees ~1k tokens and rewrites a little.
    late = EvictToolResults(keep_last=2, min_freed_tokens=0)
    edit = late(view, facts())
    assert edit.view is not view
    gate_short = CacheAwareGate(late, horizon_calls=1)
    assert gate_short(view, facts()).view is view  # one call: the rewrite never pays
    gate_long = CacheAwareGate(late, horizon_calls=50)
    assert gate_long(view, facts()).view == edit.view


def test_cache_gate_math_and_price() -> None:
    view = coding_session(rounds=8, result_chars=4_000, turns=1)
    f = facts()
    new = EvictToolResults(keep_last=2, min_freed_tokens=0)(view, f).view
    gate = CacheAwareGate(SlidingWindow(), horizon_calls=10)
    # Break-even horizon with Sonnet ratios (write 12.5x read): n* = (after-kept)*(w/r - 1)/freed.
    before, after = tokens(view), tokens(new)
    kept = ApproxCounter().count_conversation(view.with_messages(view.messages[:2]))
    breakeven = (after - kept) * (3.75 / 0.30 - 1) / (before - after)
    assert gate.model_copy(update={"horizon_calls": int(breakeven) + 2}).edit_pays(view, new, f)
    assert not gate.model_copy(update={"horizon_calls": max(int(breakeven) - 1, 1)}).edit_pays(
        view, new, f
    )
    # A price whose cache writes cost the same as reads makes every saving pay at once.
    flat = ModelPrice(
        model="flat", input=1, output=1, cache_write_5m=0.1, cache_write_1h=0.1, cache_read=0.1
    )
    assert gate.model_copy(update={"price": flat, "horizon_calls": 1}).edit_pays(view, new, f)


def test_cache_gate_lets_required_edits_through() -> None:
    view = without_thinking(coding_session(rounds=8, result_chars=4_000, turns=1))
    gate = CacheAwareGate(SlidingWindow(), horizon_calls=1)
    out = gate(view, facts(budget=2_000))
    assert out.view is not view
    assert tokens(out.view) <= 2_000
