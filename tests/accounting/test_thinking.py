"""Thinking a file holds without its text (or summarised), sized from the billed output and carried
by the later requests (:mod:`contextkit.accounting._thinking`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contextkit.accounting import NO_MISSES, price_session
from contextkit.accounting._thinking import omitted_thinking, with_thinking, without_thinking
from contextkit.messages import (
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.session import Call, Session, Usage
from contextkit.testing import WordCounter, fixed_price, words

T0 = datetime(2026, 7, 13, 10, 0, tzinfo=UTC)
MODEL = "claude-sonnet-4-5"
THOUGHT = 400
"""Billed thinking of every response (the file holds none of its text)."""


def omitted_session(shown: str = "") -> Session:
    """A tool loop whose every response thought ``THOUGHT`` tokens the file shows as ``shown``
    (empty: an omitted display); each call's recorded input is its request counted with every
    earlier thinking block at its billed size, as the provider bills it."""
    counter = WordCounter()
    history: list[Message] = [Message(role="user", content=(TextBlock(text=words(2000, "p")),))]
    calls: list[Call] = []
    for k in range(6):
        request = Conversation(model=MODEL, messages=tuple(history))
        carried = THOUGHT * k - counter.count_text(shown) * k
        total = counter.count_conversation(request) + carried
        think = ThinkingBlock(thinking=shown, signature=f"sig{k}" * 20)
        use = ToolUseBlock(id=f"t{k}", name="Read", input={"p": f"f{k}"})
        answer = Message(role="assistant", content=(think, use))
        output = THOUGHT + counter.count_block(use)
        usage = Usage(input_tokens=total, output_tokens=output)
        at = T0 + timedelta(seconds=10 * k)
        calls.append(Call(request=request, response=answer, timestamp=at, usage=usage))
        result = ToolResultBlock(tool_use_id=f"t{k}", content=words(100, f"r{k}_"))
        history += [answer, Message(role="user", content=(result,))]
    return Session(path="<t>", format="claude-code", calls=tuple(calls), prefix_known=True)


def test_thinking_without_text_is_sized_from_the_billed_output() -> None:
    session = omitted_session()
    sizes = omitted_thinking(session, WordCounter())
    assert sorted(sizes.values()) == [THOUGHT] * 6
    filled = with_thinking([c.request for c in session.calls], sizes, WordCounter())
    counter = WordCounter()
    for call, request in zip(session.calls, filled, strict=True):
        assert call.usage is not None
        assert counter.count_conversation(request) == pytest.approx(call.usage.total_input, abs=6)
    # Requests that shared a message still share the rebuilt one.
    assert filled[2].messages[1] is filled[5].messages[1]
    emptied = without_thinking(filled, sizes)
    assert emptied[5].messages[1].content[0].thinking == ""  # type: ignore[union-attr]


def test_summarised_thinking_is_sized_too_and_full_thinking_is_left_alone() -> None:
    summary = words(50, "s")
    assert len(omitted_thinking(omitted_session(summary), WordCounter())) == 6
    full = words(THOUGHT, "f")
    assert omitted_thinking(omitted_session(full), WordCounter()) == {}


def test_the_ledger_carries_the_sized_thinking_and_says_so() -> None:
    session = omitted_session()
    price = fixed_price(MODEL)
    ledger = price_session(session, WordCounter(), price, misses=NO_MISSES)
    assert ledger.recorded is not None
    simulated = ledger.simulated.total_input
    recorded = ledger.recorded.total_input
    assert abs(int(simulated.sum()) - int(recorded.sum())) <= 6 * 6
    assert any("thinking the file holds without its text" in n for n in ledger.notes)


def test_an_estimated_output_sizes_nothing() -> None:
    session = omitted_session()
    calls = tuple(c.model_copy(update={"output_estimated": True}) for c in session.calls)
    assert omitted_thinking(session.model_copy(update={"calls": calls}), WordCounter()) == {}


def test_a_signature_the_file_holds_twice_sizes_nothing() -> None:
    """A redacted signature (the same text on every block) is no block's identity: sizing it
    would give every thinking block of the session one block's size."""
    session = omitted_session()
    redacted = []
    for call in session.calls:
        assert call.response is not None
        blocks = tuple(
            b.model_copy(update={"signature": "[REDACTED_SIGNATURE]"})
            if isinstance(b, ThinkingBlock)
            else b
            for b in call.response.blocks
        )
        response = call.response.model_copy(update={"content": blocks})
        redacted.append(call.model_copy(update={"response": response}))
    same = session.model_copy(update={"calls": tuple(redacted)})
    assert omitted_thinking(same, WordCounter()) == {}
