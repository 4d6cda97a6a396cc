"""In-turn compaction, triggers that count the whole request, cache-aware timing, edit-input
clearing and the hand-off summary: unit tests on hand-built sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from strategy_support import assistant, call, filler, is_valid, result, thinking, user

from contextkit.engine import ContextEngine
from contextkit.formats import load
from contextkit.messages import (
    CompactionBlock,
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from contextkit.replay import replay
from contextkit.session import Usage
from contextkit.strategies import (
    CLEARED_FIELD_PREFIX,
    AnthropicClearToolUses,
    AnthropicCompact,
    CacheTimed,
    CallFacts,
    ColdCache,
    Compacted,
    EvictToolResults,
    ExtractiveSummariser,
    Hysteresis,
    OverFraction,
    OverTokens,
    ReplaceWithSummary,
    ScriptedSummariser,
    SlidingWindow,
    ToolResultsOver,
    is_summary_block,
)
from contextkit.tokens import ApproxCounter

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def facts(budget: int = 200_000, window: int = 200_000, **update: object) -> CallFacts:
    base = CallFacts(counter=ApproxCounter(), budget_tokens=budget, context_window=window, now=T0)
    return base.model_copy(update=update) if update else base


def one_prompt(rounds: int, chars: int = 3_000, with_thinking: bool = True) -> Conversation:
    """One user request, then ``rounds`` tool rounds (each with signed thinking)."""
    messages: list[Message] = [user("Port the billing module to the new API; do not touch tests/.")]
    for i in range(rounds):
        head = (thinking(f"step {i}"),) if with_thinking else ()
        messages.append(assistant(*head, call(f"t{i}", "Read", file_path=f"src/m{i}.py")))
        messages.append(user(result(f"t{i}", filler(chars, seed=i))))
    return Conversation(system="You are a coding agent.", messages=tuple(messages))


def _request_kept(out: Conversation, request: Message) -> bool:
    own = tuple(b for b in request.blocks if not is_summary_block(b))
    return any(m.role == "user" and m.blocks[-len(own) :] == own for m in out.messages)


# --- 1. in-turn compaction -----------------------------------------------------------------------


def test_summary_cuts_inside_a_one_prompt_session() -> None:
    view = one_prompt(200, chars=400)
    assert ReplaceWithSummary()(view, facts()).view is view  # whole turns only: nothing to cut
    out = ReplaceWithSummary(keep_last_rounds=3)(view, facts())
    new = out.view
    assert is_valid(new)
    assert len(new.messages) == 1 + 2 * 3
    head = new.messages[0]
    assert isinstance(head.blocks[0], TextBlock)
    assert is_summary_block(head.blocks[0])
    assert head.blocks[1:] == view.messages[0].blocks  # the request, verbatim
    assert all(a is b for a, b in zip(new.messages[1:], view.messages[-6:], strict=True))
    kept = [b for m in new.messages for b in m.blocks if isinstance(b, ThinkingBlock)]
    assert kept == [thinking(f"step {i}") for i in (197, 198, 199)]  # signed, untouched
    assert out.receipts[0].action == "summarised"
    assert out.receipts[0].tokens_freed > 0
    assert "Port the billing module" in head.blocks[0].text


def test_in_turn_summary_again_folds_the_first_and_keeps_one_summary() -> None:
    strategy = ReplaceWithSummary(keep_last_rounds=2)
    once = strategy(one_prompt(20, chars=800), facts()).view
    assert strategy(once, facts()).view is once  # stable on its own output
    grown = once.append(
        assistant(call("n1", "Edit", file_path="src/new.py", old_string="a", new_string="b")),
        user(result("n1", "ok")),
        assistant(call("n2", "Bash", command="pytest -q")),
        user(result("n2", "Exit code 1\nFAILED tests/test_new.py::test_x - AssertionError")),
    )
    twice = strategy(grown, facts()).view
    summaries = [b for m in twice.messages for b in m.blocks if is_summary_block(b)]
    assert len(summaries) == 1
    text = summaries[0].text  # type: ignore[union-attr]
    assert "- Port the billing module" in text  # the goal survives the second summary
    assert "src/m0.py" in text  # carried over from the first summary
    assert _request_kept(twice, grown.messages[0])
    assert is_valid(twice)


def test_in_turn_summary_of_a_multi_turn_session_pins_the_task() -> None:
    earlier = one_prompt(3, chars=2_000, with_thinking=False).messages
    latest = one_prompt(10, chars=2_000).messages
    closing = assistant("Done with the first part.")
    second = user("Now also port the refunds module.")
    view = Conversation(messages=(*earlier, closing, second, *latest[1:]))
    out = ReplaceWithSummary(keep_last_rounds=2)(view, facts()).view
    head = out.messages[0]
    assert head.blocks[0] == earlier[0].blocks[0]  # the pinned task
    assert is_summary_block(head.blocks[1])
    assert head.blocks[2:] == second.blocks  # the latest request, verbatim
    assert out.messages[1:] == view.messages[-4:]
    assert is_valid(out)


def test_sliding_window_keeps_request_and_last_rounds() -> None:
    view = one_prompt(50)
    out = SlidingWindow(keep_last_rounds=3)(view, facts(budget=3_000)).view
    assert out.messages[0] is view.messages[0]
    assert out.messages[1:] == view.messages[-6:]
    assert is_valid(out)


def test_anthropic_compact_in_turn_leads_with_the_block_then_the_request() -> None:
    view = one_prompt(200, chars=1_200)
    out = AnthropicCompact(trigger_tokens=50_000)(view, facts()).view
    head = out.messages[0]
    assert isinstance(head.blocks[0], CompactionBlock)
    assert head.blocks[1:] == view.messages[0].blocks
    assert out.messages[1:] == view.messages[-6:]  # keep_last_rounds=3 by default
    assert is_valid(out)
    whole_turns = AnthropicCompact(trigger_tokens=50_000, keep_last_rounds=None)
    assert whole_turns(view, facts()).view is view


def test_discarded_summary_is_still_billed() -> None:
    usage = Usage(input_tokens=900, output_tokens=50)
    long = "x" * 50_000
    summariser = ScriptedSummariser(script=(long,), usage=usage)
    view = one_prompt(5, chars=100)
    out = ReplaceWithSummary(summariser, keep_last_rounds=1)(view, facts())
    assert out.view is view
    assert [r.action for r in out.receipts] == ["summary_discarded"]
    assert out.receipts[0].usage == usage


# --- 2. triggers count what the server counts ----------------------------------------------------


def test_triggers_and_budgets_count_the_prefix() -> None:
    view = one_prompt(10, chars=2_000)
    counted = ApproxCounter().count_conversation(view)
    bare, with_prefix = facts(), facts(prefix_tokens=26_000)
    assert with_prefix.input_tokens(view) > counted + 25_000
    assert not OverTokens(counted + 1_000)(view, bare)
    assert OverTokens(counted + 1_000)(view, with_prefix)
    assert OverFraction(0.5)(view, facts(window=60_000, prefix_tokens=26_000))
    assert not OverFraction(0.5)(view, facts(window=60_000))
    server = AnthropicClearToolUses(trigger_tokens=counted + 1_000)
    assert not server.fires(view, bare)
    assert server.fires(view, with_prefix)
    # A budget that holds the messages but not the prefix makes the window cut.
    roomy = facts(budget=counted + 1_000)
    assert SlidingWindow()(view, roomy).view is view
    cut = SlidingWindow()(view, roomy.model_copy(update={"prefix_tokens": 26_000})).view
    assert len(cut.messages) < len(view.messages)


# --- 3. cache-aware timing -----------------------------------------------------------------------


def test_cold_cache_trigger() -> None:
    view = one_prompt(1)
    cold = ColdCache()
    assert not cold(view, facts())  # first call: nothing to say
    assert not cold(view, facts(previous_call_at=T0 - timedelta(minutes=4)))
    assert cold(view, facts(previous_call_at=T0 - timedelta(minutes=6)))
    assert not cold(view, facts(previous_call_at=T0 - timedelta(minutes=6), cache_ttl_s=3600))
    assert ColdCache(ttl_s=60)(view, facts(previous_call_at=T0 - timedelta(minutes=2)))
    assert cold(view, facts(model="claude-opus-4-6", previous_model="claude-sonnet-4-5"))
    assert not ColdCache(on_model_change=False)(
        view, facts(model="claude-opus-4-6", previous_model="claude-sonnet-4-5")
    )
    assert cold(view, facts(cache_reset=True))


def test_cache_timed_batches_when_warm_and_acts_early_when_cold() -> None:
    view = one_prompt(10, chars=2_000)  # about 5k tokens of results
    planner = CacheTimed(when_cold=ToolResultsOver(2_000), when_warm=ToolResultsOver(30_000))
    warm = facts(previous_call_at=T0 - timedelta(seconds=30))
    pause = facts(previous_call_at=T0 - timedelta(minutes=17))
    assert not planner(view, warm)
    assert planner(view, pause)
    big = one_prompt(100, chars=2_000)
    assert planner(big, warm)


def test_hysteresis_slides_when_cold_above_its_cold_mark() -> None:
    view = one_prompt(40, chars=2_000)
    total = ApproxCounter().count_conversation(view)
    window = int(total / 0.6)  # the view holds 60% of the window: under the 80% mark
    strategy = Hysteresis(SlidingWindow(), when_cold=0.55)
    warm = facts(window=window, budget=window, previous_call_at=T0 - timedelta(seconds=10))
    cold = warm.model_copy(update={"previous_call_at": T0 - timedelta(minutes=10)})
    assert strategy(view, warm).view is view
    out = strategy(view, cold).view
    assert ApproxCounter().count_conversation(out) <= 0.5 * window
    assert is_valid(out)


def test_evict_clears_old_edit_inputs_and_keeps_the_call_valid() -> None:
    old, new = filler(3_000, seed=1), filler(3_000, seed=2)
    messages: list[Message] = [user("Refactor src/a.py")]
    for i in range(6):
        edit = call(f"e{i}", "Edit", file_path="src/a.py", old_string=old, new_string=new)
        messages += [assistant(edit), user(result(f"e{i}", "The file was updated."))]
    view = Conversation(messages=tuple(messages))
    plain = EvictToolResults(keep_last=2, min_freed_tokens=0)
    assert plain(view, facts()).view is view  # the results are tiny: nothing to evict
    strategy = EvictToolResults(keep_last=2, min_freed_tokens=0, clear_edit_inputs=True)
    out = strategy(view, facts())
    uses = [b for m in out.view.messages for b in m.blocks if isinstance(b, ToolUseBlock)]
    for use in uses[:4]:
        assert isinstance(use.input, dict)
        assert use.input["file_path"] == "src/a.py"
        assert str(use.input["old_string"]).startswith(CLEARED_FIELD_PREFIX)
        assert str(use.input["new_string"]).startswith(CLEARED_FIELD_PREFIX)
    original = [b for m in view.messages for b in m.blocks if isinstance(b, ToolUseBlock)]
    assert uses[4:] == original[4:]  # the calls of the results kept stay whole
    assert {r.action for r in out.receipts} == {"cleared_input"}
    assert is_valid(out.view)
    assert strategy(out.view, facts()).view is out.view  # stable: the markers are final


# --- 4. the hand-off summary ---------------------------------------------------------------------


def test_handoff_sections_and_real_errors_only() -> None:
    source = 'def parse(x):\n    raise ValueError("error: bad input")\n'
    messages = (
        user("Fix the parser in src/parse.py. Never change the public API."),
        assistant("Reading it.", call("r1", "Read", file_path="src/parse.py")),
        user(result("r1", source)),  # a source line with "error" in it is not an error
        assistant(call("b1", "Bash", command="pytest -q tests/test_parse.py")),
        user(result("b1", "Exit code 1\n1 failed\nE   AssertionError: 3 != 4", is_error=True)),
        assistant(
            "The root cause is an off-by-one in the loop.",
            call("e1", "Edit", file_path="src/parse.py", old_string="i", new_string="i + 1"),
        ),
        user(result("e1", "The file src/parse.py has been updated.")),
        assistant(call("b2", "Bash", command="ruff check src")),
        user(result("b2", "src/parse.py:3:1: F401 unused import\nExit code 1", is_error=True)),
        assistant(call("b3", "Bash", command="pytest -q tests/test_parse.py")),
        user(result("b3", "1 passed")),
        assistant(
            call(
                "t1",
                "TodoWrite",
                todos=[
                    {"content": "fix the parser", "status": "completed"},
                    {"content": "remove the unused import", "status": "in_progress"},
                ],
            )
        ),
        user(result("t1", "Todos updated")),
    )
    text = ExtractiveSummariser().summarise(messages, facts()).text
    sections = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert sections == [
        "Goal and constraints",
        "Latest request",
        "Done",
        "Files read",
        "Files modified",
        "Decisions",
        "Open errors",
        "Next steps",
    ]
    assert "- Fix the parser in src/parse.py. Never change the public API." in text
    assert "- Never change the public API." in text
    assert "## Files read\n- src/parse.py" in text
    assert "## Files modified\n- src/parse.py" in text
    assert "- ran `pytest -q tests/test_parse.py` (failed)" in text
    assert "- edited src/parse.py" in text
    open_errors = text.split("## Open errors\n")[1].split("\n## ")[0]
    assert "ruff check src" in open_errors
    assert "F401" in open_errors
    assert "pytest" not in open_errors  # it passed later: not open
    assert "ValueError" not in text  # a source line, not an error
    assert "## Next steps\n- [in_progress] remove the unused import" in text
    assert "fix the parser" not in text.split("## Next steps")[1]


# --- the replay fills the facts --------------------------------------------------------------


@pytest.mark.corpus
def test_replay_facts_count_the_hidden_prefix_and_the_cache_clock(corpus: Path) -> None:
    path = corpus / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    session = load(path).sessions[0]
    seen: list[CallFacts] = []

    def spy(view: Conversation, facts: CallFacts) -> Compacted:
        seen.append(facts)
        return Compacted(view=view)

    replay(session, spy, counter=ApproxCounter())
    assert len(seen) == len(session.calls)
    assert {f.context_window for f in seen} == {200_000}  # Claude Code ran Opus 4.6 at 200k
    assert all(f.prefix_tokens is not None and 20_000 < f.prefix_tokens < 40_000 for f in seen)
    assert seen[0].previous_call_at is None
    assert all(f.previous_call_at is not None for f in seen[1:])
    assert seen[0].cache_ttl_s == 3_600  # the harness wrote 1h entries
    cold = [k for k, f in enumerate(seen) if ColdCache()(Conversation(), f)]
    switched = [k for k, f in enumerate(seen) if f.previous_model not in (None, f.model)]
    assert cold
    assert set(switched) <= set(cold)


def test_the_engine_tells_strategies_when_the_cache_went_cold() -> None:
    times = iter([T0, T0 + timedelta(seconds=5), T0 + timedelta(minutes=20)] * 2)
    seen: list[bool] = []

    def spy(view: Conversation, facts: CallFacts) -> Compacted:
        seen.append(ColdCache()(view, facts))
        return Compacted(view=view)

    engine = ContextEngine(spy, model="claude-opus-4-6", clock=lambda: next(times))
    engine.add(user("Start."))
    for i in range(2):
        engine.prepare()  # clock: T0, then T0 + 20 min
        engine.record(assistant(call(f"c{i}", "Read", file_path="a.py")), stop_reason="tool_use")
        engine.add(user(result(f"c{i}", "text")))  # recorded at T0 + 5 s
    assert seen == [False, True]  # 19 minutes since the last call: over the 5-minute TTL
