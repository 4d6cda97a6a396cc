"""Property tests: every built-in strategy and several pipelines, on random valid conversations.

For each: the result validates (``contextkit.messages.validate``, strict rules), never holds more
tokens than the input (memory files excepted: they add by design), keeps the system prompt, the
memory files and the latest user message, leaves its input untouched, and is stable (applying it
again to its own output changes nothing, and returns that very object).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategy_support import ends_with, valid_conversations

from contextkit.messages import Conversation, validate
from contextkit.strategies import (
    PRESETS,
    AnthropicClearToolUses,
    AnthropicCompact,
    CacheAwareGate,
    CacheTimed,
    CallFacts,
    ClearThinking,
    EscalateUntilFits,
    EvictToolResults,
    Hysteresis,
    OverFraction,
    PrependMemoryFiles,
    ReplaceWithSummary,
    SlidingWindow,
    Strategy,
    ToolResultsOver,
    TurnsOver,
    When,
    is_memory_block,
    is_summary_block,
    strategy_from_spec,
)
from contextkit.strategies._structure import last_turn_start
from contextkit.testing.strategies import valid_conversations as shared_conversations
from contextkit.tokens import ApproxCounter

# contextkit.testing's generator (odd text, server tools, results in any order, unknown blocks)
# and this suite's own (realistic sizes, so that budgets bite and strategies really apply).
conversations = st.one_of(
    shared_conversations(max_turns=4, max_rounds=4, end="user"), valid_conversations()
)


def is_valid(view: Conversation, rules: str) -> bool:
    return validate(view, provider=rules) == ()


class DictReader:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read(self, path: str) -> str | None:
        return self.files.get(path)


MEMORY = PrependMemoryFiles(
    paths=("CLAUDE.md",), reader=DictReader({"CLAUDE.md": "Run `make test` before committing."})
)

STRATEGIES: dict[str, Strategy] = {
    "sliding-window": SlidingWindow(),
    "sliding-window-unpinned": SlidingWindow(pin_first=False),
    "sliding-window-turns": SlidingWindow(keep_turns=1),
    "evict": EvictToolResults(keep_last=2, min_freed_tokens=0),
    "evict-budget": EvictToolResults(keep_last=None, min_result_tokens=0, clear_inputs=True),
    "evict-tokens": EvictToolResults(keep_last=None, keep_tokens=800, exclude_tools=("Grep",)),
    "summary": ReplaceWithSummary(keep_last_turns=1),
    "summary-unpinned": ReplaceWithSummary(keep_last_turns=2, pin_first=False),
    "clear-thinking": ClearThinking(keep_turns=1),
    "clear-thinking-0": ClearThinking(keep_turns=0),
    "anthropic-clear": AnthropicClearToolUses(trigger_tokens=500, keep=1, clear_tool_inputs=True),
    "anthropic-compact": AnthropicCompact(trigger_tokens=50_000),
    "pipe-evict-window": EvictToolResults(min_freed_tokens=0) >> SlidingWindow(),
    "pipe-when-summary": When(OverFraction(0.5) | TurnsOver(2), ReplaceWithSummary())
    >> SlidingWindow(),
    "escalate": EscalateUntilFits(
        ClearThinking(), EvictToolResults(keep_last=None), ReplaceWithSummary(), SlidingWindow()
    ),
    "hysteresis": Hysteresis(SlidingWindow(), high=0.6, low=0.3),
    "gate": CacheAwareGate(EvictToolResults(min_freed_tokens=0), horizon_calls=5),
    "memory-pipe": MEMORY >> EvictToolResults() >> ReplaceWithSummary() >> SlidingWindow(),
    # In-turn compaction, cache-aware timing and edit-input clearing (issue 17).
    "summary-in-turn": ReplaceWithSummary(keep_last_rounds=1),
    "summary-in-turn-unpinned": ReplaceWithSummary(keep_last_rounds=2, pin_first=False),
    "compact-in-turn": AnthropicCompact(trigger_tokens=50_000, keep_last_rounds=1),
    "sliding-in-turn": SlidingWindow(keep_last_rounds=2),
    "sliding-not-in-turn": SlidingWindow(in_turn=False),
    "evict-edits": EvictToolResults(keep_last=1, min_freed_tokens=0, clear_edit_inputs=True),
    "cache-timed-summary": When(
        CacheTimed(when_cold=OverFraction(0.1), when_warm=OverFraction(0.5)),
        ReplaceWithSummary(keep_last_rounds=1),
    ),
    "cache-timed-evict": When(
        CacheTimed(when_cold=ToolResultsOver(100), when_warm=ToolResultsOver(5_000)),
        EvictToolResults(clear_edit_inputs=True, min_freed_tokens=0),
    ),
    "hysteresis-cold": Hysteresis(SlidingWindow(), high=0.6, low=0.3, when_cold=0.4),
    **{f"preset-{name}": strategy_from_spec(name) for name in PRESETS},
}
ADDS_TOKENS = {"memory-pipe"}
FITS_BUDGET = {
    "sliding-window",
    "sliding-window-unpinned",
    "pipe-evict-window",
    "escalate",
}

budgets = st.integers(300, 30_000)


# The compaction emulation cannot trigger below 50,000 tokens (the API's minimum): count its
# views with a tiny characters-per-token ratio so that random views reach the trigger.
CHARS_PER_TOKEN = {
    "anthropic-compact": 0.05,
    "compact-in-turn": 0.05,
    "preset-anthropic-compact": 0.05,
}
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
gaps = st.sampled_from([None, 10.0, 4_000.0])
"""Seconds since the previous call: first call, a warm cache, a pause over the 1h TTL."""


def _facts(
    budget: int, window: int | None = None, name: str = "", gap_s: float | None = None
) -> CallFacts:
    counter = ApproxCounter(CHARS_PER_TOKEN.get(name, 4.0))
    previous = None if gap_s is None else NOW - timedelta(seconds=gap_s)
    return CallFacts(
        counter=counter,
        budget_tokens=budget,
        context_window=window or budget,
        now=NOW,
        previous_call_at=previous,
        cache_ttl_s=3_600,
    )


def _keeps_latest_request(view: Conversation, out: Conversation) -> bool:
    """The latest request's own blocks are still in the view, verbatim (a summary may join them
    in their message, before them)."""
    latest = last_turn_start(view.messages)
    if latest is None:
        return True
    own = tuple(b for b in view.messages[latest].blocks if not is_summary_block(b))
    return not own or any(
        m.role == "user" and m.blocks[-len(own) :] == own for m in reversed(out.messages)
    )


def _snapshot(view: Conversation) -> Any:
    return view.model_dump()


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(view=conversations, budget=budgets, gap_s=gaps)
def test_invariants(name: str, view: Conversation, budget: int, gap_s: float | None) -> None:
    rules = "strict" if is_valid(view, "strict") else "anthropic"
    assert is_valid(view, rules)
    strategy = STRATEGIES[name]
    facts = _facts(budget, name=name, gap_s=gap_s)
    before = _snapshot(view)
    result = strategy(view, facts)
    out = result.view
    counter = facts.counter

    assert _snapshot(view) == before, "the input was mutated"
    assert is_valid(out, rules), validate(out, provider=rules)
    if name not in ADDS_TOKENS:
        assert counter.count_conversation(out) <= counter.count_conversation(view)
    assert out.system_blocks[: len(view.system_blocks)] == view.system_blocks
    assert out.messages[-1].role == "user"
    assert ends_with(out.messages[-1], view.messages[-1].blocks)
    assert _keeps_latest_request(view, out), "a compaction removed the latest user request"
    if name == "memory-pipe":
        assert any(is_memory_block(b) for b in out.system_blocks)
    if out is view:  # nothing changed; only a summary that was made and discarded is billed
        assert all(
            r.action == "summary_discarded" and r.tokens_freed == 0 for r in result.receipts
        ), result.receipts
    else:
        assert result.receipts, "a change without a receipt"
    # Unchanged messages are the same objects (structural sharing).
    originals = {id(m) for m in view.messages}
    assert sum(id(m) in originals for m in out.messages) >= min(1, len(out.messages) - 1)


@pytest.mark.parametrize("name", sorted(FITS_BUDGET))
@settings(max_examples=60, deadline=None)
@given(view=conversations, budget=budgets)
def test_fits_budget_when_possible(name: str, view: Conversation, budget: int) -> None:
    facts = _facts(budget)
    out = STRATEGIES[name](view, facts).view
    tokens = facts.counter.count_conversation(out)
    if tokens > budget:
        # Not possible: the smallest view the window can make does not fit either.
        smallest = SlidingWindow(max_tokens=1)(view, facts).view
        assert facts.counter.count_conversation(smallest) > budget
        assert tokens <= facts.counter.count_conversation(view)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(view=conversations, budget=budgets, gap_s=gaps)
def test_stable_on_own_output(
    name: str, view: Conversation, budget: int, gap_s: float | None
) -> None:
    """Once applied, applying again changes nothing: the cached prefix stays stable."""
    strategy = STRATEGIES[name]
    facts = _facts(budget, name=name, gap_s=gap_s)
    once = strategy(view, facts).view
    twice = strategy(once, facts)
    assert twice.view is once, twice.receipts


@settings(max_examples=40, deadline=None)
@given(view=conversations)
def test_nothing_applies_returns_same_object(view: Conversation) -> None:
    roomy = _facts(10_000_000)
    for strategy in (
        SlidingWindow(),
        EvictToolResults(keep_last=None),
        AnthropicClearToolUses(),
        AnthropicCompact(),
        Hysteresis(SlidingWindow()),
        When(OverFraction(0.5), ReplaceWithSummary()),
        EscalateUntilFits(SlidingWindow()),
        CacheAwareGate(SlidingWindow()),
        ReplaceWithSummary(keep_last_turns=10),
    ):
        result = strategy(view, roomy)
        assert result.view is view, strategy
        assert result.receipts == ()
