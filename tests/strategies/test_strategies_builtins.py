"""Unit tests of each built-in strategy on hand-built sessions: what it removes, what it keeps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from strategy_support import (
    assistant,
    call,
    coding_session,
    is_valid,
    result,
    thinking,
    user,
    without_thinking,
)

from contextkit.errors import ConfigError
from contextkit.messages import (
    Block,
    CompactionBlock,
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
)
from contextkit.session import Usage
from contextkit.strategies import (
    PLACEHOLDER_PREFIX,
    AnthropicClearToolUses,
    AnthropicCompact,
    CallFacts,
    ClearThinking,
    EvictToolResults,
    ExtractiveSummariser,
    PrependMemoryFiles,
    ReplaceWithSummary,
    ScriptedSummariser,
    SlidingWindow,
    is_evicted,
    is_memory_block,
)
from contextkit.strategies._summarisers import SUMMARY_OPEN
from contextkit.tokens import ApproxCounter


def facts(budget: int = 200_000, window: int = 200_000) -> CallFacts:
    return CallFacts(counter=ApproxCounter(), budget_tokens=budget, context_window=window)


def tokens(view: Conversation) -> int:
    return ApproxCounter().count_conversation(view)


def text_of(block: Block) -> str:
    assert isinstance(block, TextBlock)
    return block.text


# --- SlidingWindow --------------------------------------------------------------------------------


def test_window_keeps_task_and_latest_and_fits() -> None:
    # No thinking: the latest turn's oldest rounds may go (with thinking they may not, below).
    view = without_thinking(coding_session(rounds=8, result_chars=4_000, turns=2))
    out = SlidingWindow()(view, facts(budget=6_000)).view
    assert tokens(out) <= 6_000 < tokens(view)
    assert out.messages[0] is view.messages[0]
    assert out.messages[-1] is view.messages[-1]
    assert out.messages[1].role == "assistant"
    assert is_valid(out)
    # Later turn's opening message is kept when the old turn alone makes room.
    latest = view.messages[18]
    assert latest.blocks[0] == TextBlock(
        text="Task 1: fix the failing test in src/orders/service.py"
    )


def test_window_never_splits_parallel_group() -> None:
    view = Conversation(
        messages=(
            user("go"),
            assistant(call("a"), call("b")),
            user(result("a", "x" * 4000), result("b", "y" * 4000)),
            assistant(call("c")),
            user(result("c", "z" * 40)),
        )
    )
    out = SlidingWindow()(view, facts(budget=100)).view
    assert [m.role for m in out.messages] == ["user", "assistant", "user"]
    assert out.messages[1] is view.messages[3]
    assert is_valid(out)


def test_window_keep_turns() -> None:
    view = coding_session(rounds=2, result_chars=100, turns=3)
    out = SlidingWindow(keep_turns=1)(view, facts()).view
    assert out.messages[0] is view.messages[0]
    assert sum(1 for m in out.messages if m.blocks[0].type == "text" and m.role == "user") == 2
    assert is_valid(out)


def test_window_same_object_when_it_fits() -> None:
    view = coding_session(rounds=2, result_chars=100)
    result_ = SlidingWindow()(view, facts())
    assert result_.view is view
    assert result_.receipts == ()


# --- EvictToolResults -----------------------------------------------------------------------------


def test_evict_placeholder_and_keep_last() -> None:
    view = coding_session(rounds=6, result_chars=4_000, turns=1)
    out = EvictToolResults(keep_last=2)(view, facts())
    results = [b for m in out.view.messages for b in m.tool_results()]
    evicted = [r for r in results if is_evicted(r)]
    assert len(evicted) == 4
    text = evicted[0].content
    assert isinstance(text, str)
    assert text.startswith(PLACEHOLDER_PREFIX)
    assert "Read" in text
    assert "toolu_001" in text
    assert "characters" in text
    assert out.tokens_freed == tokens(view) - tokens(out.view)
    assert {r.action for r in out.receipts} == {"evicted"}
    assert is_valid(out.view)


def test_evict_is_stable_and_byte_identical_later() -> None:
    view = coding_session(rounds=6, result_chars=4_000, turns=1)
    strategy = EvictToolResults(keep_last=2)
    first = strategy(view, facts()).view
    # Two more rounds arrive; the earlier placeholders stay byte-identical.
    grown = first.append(
        assistant(call("toolu_100")),
        user(result("toolu_100", "new " * 2_000)),
        assistant(call("toolu_101")),
        user(result("toolu_101", "newer " * 2_000)),
    )
    second = strategy(grown, facts()).view
    for i, message in enumerate(first.messages):
        if any(is_evicted(r) for r in message.tool_results()):
            assert second.messages[i] is message  # same object, so the same bytes
    assert strategy(second, facts()).view is second


def test_evict_min_freed_guard_returns_same_view() -> None:
    view = coding_session(rounds=4, result_chars=600, turns=1)
    out = EvictToolResults(keep_last=2, min_freed_tokens=100_000)(view, facts())
    assert out.view is view
    over = EvictToolResults(keep_last=2, min_freed_tokens=100_000)(view, facts(budget=100))
    assert over.view is not view  # over budget: any help counts


def test_evict_never_touches_last_message_and_respects_exclude() -> None:
    view = coding_session(rounds=3, result_chars=4_000, turns=1)
    out = EvictToolResults(keep_last=0)(view, facts()).view
    assert out.messages[-1] is view.messages[-1]
    kept = EvictToolResults(keep_last=0, exclude_tools=("Read",))(view, facts())
    assert kept.view is view


def test_evict_clear_inputs() -> None:
    big = "x" * 2_000
    view = Conversation(
        messages=(
            user("go"),
            assistant(call("a", "Write", path="f.py", body=big)),
            user(result("a", "written " * 300)),
            assistant(call("b")),
            user(result("b", "ok")),
        )
    )
    out = EvictToolResults(keep_last=0, clear_inputs=True, min_freed_tokens=0)(view, facts())
    use = next(out.view.messages[1].tool_uses())
    assert "contextkit_cleared" in use.input
    assert {r.action for r in out.receipts} == {"evicted", "cleared_input"}
    assert is_valid(out.view)


def test_evict_budget_mode_stops_when_it_fits() -> None:
    view = coding_session(rounds=6, result_chars=4_000, turns=1)
    budget = tokens(view) - 1_500
    out = EvictToolResults(keep_last=None)(view, facts(budget=budget))
    assert tokens(out.view) <= budget
    assert len(out.receipts) == 2  # two results of ~1,000 tokens were enough


# --- ReplaceWithSummary ---------------------------------------------------------------------------


def test_summary_layout_and_usage_on_receipt() -> None:
    view = coding_session(rounds=3, result_chars=2_000, turns=3)
    usage = Usage(input_tokens=1_000, output_tokens=200)
    summariser = ScriptedSummariser(script=("the summary",), usage=usage, model="cheap")
    out = ReplaceWithSummary(summariser, keep_last_turns=1)(view, facts())
    first = out.view.messages[0]
    assert first.blocks[0] == view.messages[0].blocks[0]  # pinned task
    assert isinstance(first.blocks[1], TextBlock)
    assert first.blocks[1].text.startswith(SUMMARY_OPEN)
    assert out.view.messages[1].role == "assistant"
    assert out.view.messages[-1] is view.messages[-1]
    assert out.receipts[0].usage == usage
    assert out.receipts[0].model == "cheap"
    assert is_valid(out.view)
    summariser.assert_done()
    assert summariser.calls[0].messages[0] is view.messages[1]  # the pinned task is not in the span


def test_summary_twice_does_not_nest_or_duplicate_task() -> None:
    view = coding_session(rounds=2, result_chars=1_000, turns=3)
    strategy = ReplaceWithSummary(keep_last_turns=1)
    once = strategy(view, facts()).view
    grown = once.append(
        assistant("Answer to task 2."), user("Task 3: also update the docs for `OrderService`")
    )
    twice = strategy(grown, facts()).view
    first = twice.messages[0]
    assert len(first.blocks) == 2
    text = first.blocks[1]
    assert isinstance(text, TextBlock)
    assert text.text.count(SUMMARY_OPEN) == 1
    assert "Task 0" not in text.text  # the pinned task stays apart, verbatim
    assert "Task 1" in text.text
    assert "Task 2" in text.text


def test_extractive_summary_sections() -> None:
    view = Conversation(
        messages=(
            user("Fix the bug in src/orders/service.py"),
            assistant("I'll read the file first.", call("a", "Read", path="src/orders/service.py")),
            user(result("a", "Traceback\nValueError: invalid literal for int()", is_error=True)),
            assistant("The root cause is the currency parser. TODO: add a test for refunds."),
        )
    )
    text = ExtractiveSummariser().summarise(view.messages, facts()).text
    for needle in (
        "## Goal and constraints\n- Fix the bug in src/orders/service.py",
        "## Latest request\n- Fix the bug in src/orders/service.py",
        "## Files read\n- src/orders/service.py",
        "## Open errors\n- read src/orders/service.py: ValueError: invalid literal for int()",
        "## Decisions\n- The root cause is the currency parser.",
        "## Next steps\n- TODO: add a test for refunds.",
    ):
        assert needle in text


REPORT = "\n\n".join(
    [
        "The CLI attributes cost per session by reading usage from the JSONL transcripts.",
        "Some background prose about how the tool evolved over many releases. " * 40,
        "## Key files\n- src/cli/attribution.ts holds the per-model split\n"
        "- src/cli/rates.ts caches prices for 24h",
        "More prose that repeats what the files say in other words. " * 40,
        "Conclusion: attribution keys on message.id, and dedupe drops 12% of rows.",
    ]
)


def test_extractive_summary_keeps_findings_and_what_the_user_typed() -> None:
    """A subagent's report leaves its answer in the summary (opening and closing paragraphs,
    headings and list items), not only "called Task"; earlier typed messages and constraint
    sentences stay verbatim."""
    view = Conversation(
        messages=(
            user("Compare the two attribution approaches. Never change the public API."),
            assistant("Delegating.", call("t", "Task", description="Analyze CLI attribution")),
            user(result("t", REPORT)),
            assistant("Noted."),
            user("Also   check the refunds path, and do not touch tests/golden."),
            assistant("Will do."),
            user("Go on."),
        )
    )
    text = ExtractiveSummariser().summarise(view.messages, facts()).text
    findings = text.split("## Findings\n", 1)[1].split("\n## ", 1)[0]
    for needle in (
        "Analyze CLI attribution: The CLI attributes cost per session",
        "- src/cli/attribution.ts holds the per-model split",
        "- src/cli/rates.ts caches prices for 24h",
        "Conclusion: attribution keys on message.id, and dedupe drops 12% of rows.",
    ):
        assert needle in findings
    assert "Some background prose" not in findings  # the middle prose is what gives way
    assert len(findings) <= ExtractiveSummariser().finding_chars + 200
    typed = text.split("## User messages\n", 1)[1].split("\n## ", 1)[0]
    assert "- Also check the refunds path, and do not touch tests/golden." in typed
    assert "Go on." not in typed  # the latest request has its own section
    assert "- Never change the public API." in text


def test_extractive_summary_budgets_keep_the_newest() -> None:
    many = tuple(
        m
        for i in range(30)
        for m in (user(f"Request {i}: " + "word " * 60), assistant(f"Done {i}."))
    )
    summariser = ExtractiveSummariser(max_user_chars=1_000)
    text = summariser.summarise(many, facts()).text
    typed = text.split("## User messages\n", 1)[1].split("\n## ", 1)[0]
    assert "Request 28:" in typed
    assert "Request 27:" in typed
    assert "Request 5:" not in typed
    assert len(typed) <= 1_000 + 100
    again = summariser.summarise((user(text), assistant("ok"), user("next")), facts()).text
    assert "Request 28:" in again  # a summary of a summary carries the messages forward


# --- PrependMemoryFiles ---------------------------------------------------------------------------


def test_memory_files_in_system_rereads_on_change(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_text("Use tabs.", encoding="utf-8")
    view = coding_session(rounds=1, result_chars=100)
    strategy = PrependMemoryFiles(paths=(str(path),))
    first = strategy(view, facts()).view
    assert first.system_blocks[0] == view.system_blocks[0]
    assert is_memory_block(first.system_blocks[1])
    assert "Use tabs." in text_of(first.system_blocks[1])
    assert strategy(first, facts()).view is first  # unchanged file: same view, no duplicate
    path.write_text("Use spaces, four of them.", encoding="utf-8")
    os.utime(path, ns=(1, 2_000_000_000_000_000_000))
    second = strategy(first, facts()).view
    assert len(second.system_blocks) == 2
    assert "four" in text_of(second.system_blocks[1])


def test_memory_survives_summary_and_missing_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_text("Never push to main.", encoding="utf-8")
    view = coding_session(rounds=2, result_chars=1_000, turns=3)
    pipeline = PrependMemoryFiles(paths=(str(path),)) >> ReplaceWithSummary(keep_last_turns=1)
    out = pipeline(view, facts()).view
    assert any(is_memory_block(b) and "Never push" in text_of(b) for b in out.system_blocks)
    with pytest.raises(ConfigError, match=r"nope\.md"):
        PrependMemoryFiles(paths=(str(tmp_path / "nope.md"),))(view, facts())
    optional = PrependMemoryFiles(paths=(str(tmp_path / "nope.md"),), required=False)
    assert optional(view, facts()).view is view


# --- ClearThinking --------------------------------------------------------------------------------


def test_clear_thinking_keeps_latest_turn() -> None:
    view = coding_session(rounds=2, result_chars=100, turns=2)
    out = ClearThinking(keep_turns=1)(view, facts())
    first_turn = out.view.messages[:6]
    assert not any(isinstance(b, ThinkingBlock) for m in first_turn for b in m.blocks)
    latest = out.view.messages[6:]
    assert latest == view.messages[6:]
    assert all(a is b for a, b in zip(latest, view.messages[6:], strict=True))
    assert {r.action for r in out.receipts} == {"cleared_thinking"}
    assert ClearThinking(keep_turns=2)(view, facts()).view is view


def test_clear_thinking_protects_last_assistant_even_with_zero() -> None:
    view = Conversation(
        messages=(user("go"), assistant(thinking(), call("a")), user(result("a", "ok")))
    )
    assert ClearThinking(keep_turns=0)(view, facts()).view is view


# --- Server-side emulations -----------------------------------------------------------------------


def test_anthropic_clear_tool_uses_defaults_and_trigger() -> None:
    default = AnthropicClearToolUses()
    assert (default.trigger_tokens, default.keep, default.clear_at_least) == (100_000, 3, None)
    view = coding_session(rounds=8, result_chars=4_000, turns=1)
    assert default(view, facts()).view is view  # under 100k tokens
    low = AnthropicClearToolUses(trigger_tokens=1_000, keep=3)(view, facts())
    assert len([r for r in low.receipts if r.action == "evicted"]) == 5
    by_uses = AnthropicClearToolUses(trigger_tool_uses=10)
    assert by_uses(view, facts()).view is view  # 8 tool uses
    strict = AnthropicClearToolUses(trigger_tokens=1_000, clear_at_least=1_000_000)
    assert strict(view, facts(budget=10)).view is view  # clear_at_least holds even over budget


def test_anthropic_compact_defaults_and_block() -> None:
    default = AnthropicCompact()
    assert default.trigger_tokens == 150_000
    assert default.pause_after_compaction is False
    with pytest.raises(ValueError, match="50000"):
        AnthropicCompact(trigger_tokens=10_000)
    view = coding_session(rounds=30, result_chars=8_000, turns=2)
    assert tokens(view) > 50_000
    out = AnthropicCompact(trigger_tokens=50_000, pause_after_compaction=True)(view, facts())
    first = out.view.messages[0]
    assert isinstance(first.blocks[0], CompactionBlock)
    assert "## Goal and constraints" in (first.blocks[0].content or "")
    assert out.receipts[0].detail.endswith("paused")
    assert out.view.messages[-1] is view.messages[-1]
    assert is_valid(out.view)


def test_sliding_window_cuts_whole_rounds_of_a_thinking_turn_and_keeps_the_rest_as_sent() -> None:
    rounds: list[Message] = []
    for i in range(8):
        rounds += [
            assistant(thinking(f"plan {i}"), call(f"t{i}")),
            user(result(f"t{i}", "x" * 4000)),
        ]
    view = Conversation(messages=(user("read every file"), *rounds))
    out = SlidingWindow(keep_last_rounds=2)(view, facts(budget=2_000)).view
    assert out.messages[0] is view.messages[0]  # the request, verbatim
    assert out.messages[-4:] == view.messages[-4:]  # the last 2 rounds, thinking untouched
    assert all(any(m is k for k in view.messages) for m in out.messages)  # nothing edited
    assert len(out.messages) == 5
    assert is_valid(out)


def test_sliding_window_not_in_turn_never_cuts_into_a_latest_turn_that_holds_thinking() -> None:
    rounds: list[Message] = []
    for i in range(8):
        first: tuple[Block, ...] = (thinking("plan the reads"),) if i == 0 else ()
        rounds += [assistant(*first, call(f"t{i}")), user(result(f"t{i}", "x" * 4000))]
    view = Conversation(messages=(user("read every file"), *rounds))
    out = SlidingWindow(in_turn=False)(view, facts(budget=2_000))
    assert tokens(out.view) < tokens(view) or out.view is view
    kept = [b for m in out.view.messages for b in m.blocks if isinstance(b, ThinkingBlock)]
    assert kept == [thinking("plan the reads")]
    assert is_valid(out.view)
    # Without thinking the same turn may lose its oldest rounds.
    plain = Conversation(
        messages=tuple(
            m.model_copy(
                update={"content": tuple(b for b in m.blocks if not isinstance(b, ThinkingBlock))}
            )
            for m in view.messages
        )
    )
    assert len(SlidingWindow()(plain, facts(budget=2_000)).view.messages) < len(plain.messages)
