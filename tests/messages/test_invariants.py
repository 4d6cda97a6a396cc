"""Invariants: validate finds what breaks the provider's rules; repair fixes it, nothing else."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextkit.errors import ConfigError
from contextkit.messages import (
    CODES,
    FAILED_TEXT,
    INTERRUPTED_TEXT,
    PLACEHOLDER_USER_TEXT,
    Code,
    Conversation,
    Message,
    RedactedThinkingBlock,
    Rules,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    repair,
    to_payload,
    validate,
)
from contextkit.testing import (
    FixedCounter,
    assistant,
    conversation,
    inject_violation,
    redacted_thinking,
    thinking,
    tool_result,
    tool_use,
    user,
)
from contextkit.testing.strategies import any_conversations, valid_conversations

PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROVIDERS = st.sampled_from(["anthropic", "strict"])


def codes(conv: Conversation, provider: str = "anthropic") -> list[str]:
    return [v.code for v in validate(conv, provider=provider)]


def _provider_for(code: Code) -> str:
    # The Anthropic API merges same-role neighbours; only the strict rules forbid them.
    return "strict" if code == "consecutive_same_role" else "anthropic"


def _latest_assistant_thinking(conv: Conversation) -> list[object]:
    """Signed thinking blocks of the last assistant turn (a run of assistant messages)."""
    run: list[Message] = []
    for message in reversed(conv.messages):
        if message.role == "assistant":
            run.insert(0, message)
        elif run:
            break
    return [b for m in run for b in m.blocks if _signed(b)]


def _signed(block: object) -> bool:
    if isinstance(block, ThinkingBlock):
        return bool(block.signature)
    return isinstance(block, RedactedThinkingBlock)


def _is_subsequence(small: list[object], big: list[object]) -> bool:
    it = iter(big)
    return all(any(s is b for b in it) for s in small)


# --------------------------------------------------------------------------------------------------
# properties


@PROPERTY
@given(conv=any_conversations(), provider=PROVIDERS)
def test_repair_always_validates(conv: Conversation, provider: str) -> None:
    fixed, receipts = repair(conv, provider=provider)
    assert validate(fixed, provider=provider) == ()
    assert (fixed is conv) == (not receipts)
    assert all(r.strategy == "repair" for r in receipts)


@PROPERTY
@given(conv=any_conversations(), provider=PROVIDERS)
def test_repair_keeps_signed_thinking_of_latest_assistant_turn(
    conv: Conversation, provider: str
) -> None:
    before = _latest_assistant_thinking(conv)
    fixed, _ = repair(conv, provider=provider)
    # The same block objects, in the same order, still in the last assistant turn (which may
    # have grown when repair dropped an empty message between two assistant messages).
    assert _is_subsequence(before, _latest_assistant_thinking(fixed))


@PROPERTY
@given(conv=any_conversations(), provider=PROVIDERS)
def test_repair_is_idempotent(conv: Conversation, provider: str) -> None:
    once, _ = repair(conv, provider=provider)
    twice, receipts = repair(once, provider=provider)
    assert twice is once
    assert receipts == ()


@PROPERTY
@given(conv=valid_conversations(), provider=PROVIDERS)
def test_valid_conversations_are_valid_and_repair_returns_them_as_is(
    conv: Conversation, provider: str
) -> None:
    assert validate(conv, provider=provider) == ()
    fixed, receipts = repair(conv, provider=provider)
    assert fixed is conv
    assert receipts == ()


@PROPERTY
@given(conv=valid_conversations(), code=st.sampled_from(CODES))
def test_validate_finds_each_injected_violation(conv: Conversation, code: Code) -> None:
    provider = _provider_for(code)
    broken = inject_violation(conv, code)
    assert code in codes(broken, provider)
    fixed, receipts = repair(broken, provider=provider)
    assert validate(fixed, provider=provider) == ()
    assert receipts


@settings(max_examples=100, deadline=None)
@given(conv=valid_conversations(max_turns=2))
def test_valid_conversations_round_trip_through_the_wire_form(conv: Conversation) -> None:
    again = Conversation.model_validate(to_payload(conv))
    assert again == conv
    assert validate(again) == ()


@settings(max_examples=100, deadline=None)
@given(conv=valid_conversations(end="user"))
def test_end_user_draws_requests(conv: Conversation) -> None:
    assert conv.messages[-1].role == "user"


@settings(max_examples=100, deadline=None)
@given(conv=valid_conversations(end="assistant"))
def test_end_assistant_draws_finished_turns(conv: Conversation) -> None:
    assert conv.messages[-1].role == "assistant"
    assert not list(conv.messages[-1].tool_uses())


# --------------------------------------------------------------------------------------------------
# validate: each rule by example

ASK = user("list the files")
CALL = assistant("Looking.", tool_uses=[tool_use("t1", "ls")])


def test_valid_parallel_calls_in_any_result_order() -> None:
    conv = conversation(
        ASK,
        assistant(thinking("plan"), tool_uses=[tool_use("t1"), tool_use("t2")]),
        user(tool_result("t2"), tool_result("t1", "boom", is_error=True), "go on"),
    )
    assert validate(conv) == ()


def test_dangling_when_never_answered_and_when_answered_late() -> None:
    never = conversation(ASK, CALL, user("never mind"))
    late = conversation(ASK, CALL, user("wait"), assistant("ok"), user(tool_result("t1")))
    assert codes(never) == ["dangling_tool_use"]
    assert codes(late) == ["dangling_tool_use", "orphan_tool_result"]
    v = validate(never)[0]
    assert (v.message_index, v.block_index) == (1, 1)
    assert "t1" in v.detail


def test_request_ending_on_a_tool_call_is_dangling() -> None:
    assert codes(conversation(ASK, CALL)) == ["dangling_tool_use"]


def test_orphan_duplicate_and_misplaced_results() -> None:
    assert codes(conversation(ASK, assistant("hi"), user(tool_result("zz")))) == [
        "orphan_tool_result"
    ]
    dup = conversation(ASK, CALL, user(tool_result("t1"), tool_result("t1")))
    assert codes(dup) == ["duplicate_tool_result"]
    late = conversation(ASK, CALL, user("first", tool_result("t1")))
    assert [(v.code, v.block_index) for v in validate(late)] == [("results_not_first", 1)]


def test_duplicate_tool_use_id_across_turns() -> None:
    conv = conversation(ASK, CALL, user(tool_result("t1")), CALL, user(tool_result("t1")))
    assert [(v.code, v.message_index) for v in validate(conv)] == [("duplicate_tool_use_id", 3)]


def test_split_user_turn_is_one_turn_for_anthropic_and_two_for_strict() -> None:
    conv = conversation(
        ASK,
        assistant(tool_uses=[tool_use("a"), tool_use("b")]),
        user(tool_result("a")),
        user(tool_result("b")),
    )
    assert codes(conv) == []
    assert codes(conv, "strict") == [
        "dangling_tool_use",
        "consecutive_same_role",
        "orphan_tool_result",
    ]


def test_merged_turn_with_text_before_results() -> None:
    conv = conversation(ASK, CALL, user("note"), user(tool_result("t1")))
    assert codes(conv) == ["results_not_first"]


def test_roles_and_blocks_in_the_wrong_role() -> None:
    assert codes(conversation(assistant("hi"), ASK)) == ["first_not_user"]
    assert codes(conversation(ASK, assistant("x"), user(tool_use("u")))) == ["tool_use_in_user"]
    bad = conversation(ASK, assistant("x", tool_result("t9")), user("next"))
    assert codes(bad) == ["tool_result_in_assistant"]


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ((user(""),), ["empty_content"]),
        ((user("  \n"),), ["empty_content"]),
        ((Message(role="user", content=()),), ["empty_content"]),
        ((user(TextBlock(text=" ")), assistant("x"), user("y")), ["empty_content"]),
        ((ASK, assistant(""), user("y")), ["empty_content"]),
        ((ASK, assistant("")), []),  # an empty final assistant message is allowed (prefill)
        ((ASK, Message(role="assistant", content=())), []),
        ((ASK, assistant("Sure ")), ["trailing_whitespace"]),
        ((ASK, assistant("a", "b\n")), ["trailing_whitespace"]),
        ((ASK, assistant("Sure ", tool_uses=[tool_use("k")])), ["dangling_tool_use"]),
        ((ASK, CALL, user(tool_result("t1", "", is_error=True))), ["empty_content"]),
        (
            (
                ASK,
                CALL,
                user(tool_result("t1", "")),
            ),
            [],
        ),  # empty non-error result is fine
        ((ASK, CALL, user(tool_result("t1", [" "]))), ["empty_content"]),
        ((ASK, assistant(thinking("x", None), "a"), user("b")), ["thinking_signature_missing"]),
        ((ASK, assistant(redacted_thinking(), "a"), user("b")), []),
    ],
)
def test_content_rules(messages: tuple[Message, ...], expected: list[str]) -> None:
    assert codes(conversation(*messages)) == expected


def test_empty_conversation_is_not_a_violation() -> None:
    assert validate(Conversation()) == ()


def test_rules_can_be_configured() -> None:
    lax = Rules(name="lax", first_must_be_user=False, thinking_needs_signature=False)
    conv = conversation(assistant(thinking("x", None), "hi"), user("q"))
    assert codes(conv) == ["first_not_user", "thinking_signature_missing"]
    assert validate(conv, provider=lax) == ()
    with pytest.raises(ConfigError, match="unknown provider rules 'bedrock'"):
        validate(conv, provider="bedrock")


# --------------------------------------------------------------------------------------------------
# repair: what it does, by example


def test_repair_answers_a_dangling_call_in_the_next_user_message() -> None:
    conv = conversation(ASK, CALL, user("never mind"), assistant("ok"))
    fixed, receipts = repair(conv)
    answer = fixed.messages[2]
    assert isinstance(answer.content, tuple)
    first = answer.content[0]
    assert isinstance(first, ToolResultBlock)
    assert (first.tool_use_id, first.is_error, first.content) == ("t1", True, INTERRUPTED_TEXT)
    assert answer.content[1] == TextBlock(text="never mind")
    assert [(r.action, r.tool_use_id, r.message_index) for r in receipts] == [("inserted", "t1", 2)]
    # messages repair did not touch are the same objects
    assert fixed.messages[0] is ASK
    assert fixed.messages[1] is CALL
    assert fixed.messages[3] is conv.messages[3]


def test_repair_appends_a_user_turn_after_a_final_call() -> None:
    fixed, _ = repair(conversation(ASK, CALL))
    assert [m.role for m in fixed.messages] == ["user", "assistant", "user"]
    assert [b.tool_use_id for b in fixed.messages[2].tool_results()] == ["t1"]


def test_repair_drops_orphans_and_duplicates_and_moves_results_first() -> None:
    conv = conversation(
        ASK,
        CALL,
        user("note", tool_result("zz"), tool_result("t1", "one"), tool_result("t1", "two")),
    )
    fixed, receipts = repair(conv)
    assert to_payload(fixed.messages[2]) == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
            {"type": "text", "text": "note"},
        ],
    }
    assert sorted(r.action for r in receipts) == ["dropped", "dropped", "moved"]


def test_repair_merges_neighbours_only_under_strict_rules() -> None:
    conv = conversation(ASK, user("more"), assistant("ok"))
    assert repair(conv)[0] is conv
    fixed, receipts = repair(conv, provider="strict")
    assert [m.role for m in fixed.messages] == ["user", "assistant"]
    assert [r.action for r in receipts] == ["merged"]


def test_repair_drops_empty_messages_and_blank_blocks() -> None:
    conv = conversation(ASK, assistant(""), user(TextBlock(text=""), "real"), assistant("a"))
    fixed, _ = repair(conv)
    assert [to_payload(m) for m in fixed.messages] == [
        {"role": "user", "content": "list the files"},
        {"role": "user", "content": [{"type": "text", "text": "real"}]},
        {"role": "assistant", "content": "a"},
    ]


def test_repair_fills_an_empty_error_result_and_trims_prefill() -> None:
    conv = conversation(ASK, CALL, user(tool_result("t1", "", is_error=True)), assistant("So "))
    fixed, _ = repair(conv)
    result = next(fixed.messages[2].tool_results())
    assert result.content == FAILED_TEXT
    assert fixed.messages[3].content == "So"


def test_repair_puts_a_user_message_first() -> None:
    fixed, _ = repair(conversation(assistant("hello"), ASK))
    assert fixed.messages[0] == user(PLACEHOLDER_USER_TEXT)


def test_repair_drops_unsigned_thinking_only() -> None:
    signed = thinking("kept")
    conv = conversation(ASK, assistant(thinking("gone", None), signed, "answer"), user("next"))
    fixed, _ = repair(conv)
    assert fixed.messages[1].blocks == (signed, TextBlock(text="answer"))
    assert fixed.messages[1].blocks[0] is signed


def test_repair_keeps_system_tools_and_extras() -> None:
    conv = Conversation.model_validate(
        {
            "system": "be brief",
            "max_tokens": 100,
            "messages": [{"role": "assistant", "content": "x"}],
        }
    )
    fixed, _ = repair(conv)
    assert to_payload(fixed)["max_tokens"] == 100
    assert fixed.system == "be brief"


def test_inject_violation_rejects_unknown_codes() -> None:
    with pytest.raises(ValueError, match="unknown violation code"):
        inject_violation(conversation(ASK), "nope")  # type: ignore[arg-type]


def test_fixed_counter_is_exact() -> None:
    counter = FixedCounter()
    assert counter.name == "fixed"
    assert counter.count_text("abcdefghi") == 3
    assert counter.count_message(user("abcd")) == 3 + 1
    assert counter.count_conversation(conversation(user("abcd"), assistant("abcdefgh"))) == 9
