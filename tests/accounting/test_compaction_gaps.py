"""What the harness sends after a compaction but the file omits, sized from the billed usage of
the first call after it (:mod:`contextkit.accounting._gaps`), rides in the later requests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contextkit.accounting import NO_MISSES, price_session
from contextkit.messages import Conversation, Message, TextBlock
from contextkit.session import Call, Session, Usage
from contextkit.testing import WordCounter, fixed_price

PRICE = fixed_price("claude-sonnet-4-5")
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def text(n: int, tag: str) -> Message:
    return Message(role="user", content=(TextBlock(text=" ".join(f"{tag}{i}" for i in range(n))),))


def reply(tag: str) -> Message:
    return Message(role="assistant", content=(TextBlock(text=" ".join([tag] * 10)),))


def session(*, restored: int, exact: bool = False) -> Session:
    """Two calls, a compaction to a 300-word summary, then three calls after it; the harness
    sent ``restored`` tokens after the summary that the file does not hold."""
    u1, u2, summary = text(2000, "u"), text(500, "v"), text(300, "s")
    a1, a2, b1, b2 = reply("a"), reply("b"), reply("c"), reply("d")
    after = [text(50, "w"), text(60, "x")]
    at = [T0 + timedelta(seconds=10 * k) for k in range(5)]
    requests = [
        (u1,),
        (u1, a1, u2),
        (summary,),
        (summary, b1, after[0]),
        (summary, b1, after[0], b2, after[1]),
    ]
    responses = [a1, a2, b1, b2, reply("e")]
    counts = [2000, 2510, 300 + restored, 360 + restored, 430 + restored]
    reads = [0, 2000, 0, 300 + restored, 360 + restored]
    calls = tuple(
        Call(
            request=Conversation(model="claude-sonnet-4-5", messages=r),
            response=resp,
            timestamp=t,
            exact=exact,
            usage=Usage(cache_read=read, cache_write_5m=count - read, output_tokens=10),
        )
        for r, resp, t, count, read in zip(requests, responses, at, counts, reads, strict=True)
    )
    return Session(path="<c>", format="claude-code", calls=calls, compactions=(2,))


def test_the_gap_after_a_compaction_rides_until_the_end() -> None:
    ledger = price_session(session(restored=5000), WordCounter(), PRICE, misses=NO_MISSES)
    assert ledger.recorded is not None
    recorded = ledger.recorded.total_input.tolist()
    got = ledger.context_tokens.tolist()
    assert got[:2] == recorded[:2]  # before the compaction: nothing added
    for simulated, billed in zip(got[2:], recorded[2:], strict=True):
        assert simulated == pytest.approx(billed, abs=3)  # the filler counts within a few tokens
    # The restored content is cached with the summary: read again, not written again.
    assert ledger.simulated.cache_read.tolist()[3] >= 5000
    assert any("5,000 tokens at call 2" in note for note in ledger.notes)
    assert ledger.cost_error() == pytest.approx(0.0, abs=0.002)


def test_a_small_shortfall_is_not_a_gap() -> None:
    ledger = price_session(session(restored=5), WordCounter(), PRICE, misses=NO_MISSES)
    assert ledger.context_tokens.tolist()[2] == 300
    assert not any("after a compaction" in note for note in ledger.notes)


def test_a_request_as_sent_has_no_gap() -> None:
    ledger = price_session(session(restored=5000, exact=True), WordCounter(), PRICE)
    assert ledger.context_tokens.tolist()[2] == 300


def test_a_view_without_the_summary_carries_no_gap() -> None:
    recorded = session(restored=5000)
    views = [c.request for c in recorded.calls]
    views[4] = views[4].model_copy(update={"messages": views[4].messages[1:]})  # summary gone
    ledger = price_session(recorded, WordCounter(), PRICE, requests=views, misses=NO_MISSES)
    got = ledger.context_tokens.tolist()
    assert got[3] == pytest.approx(5360, abs=3)
    assert got[4] == 130  # the reply, its follow-up, the next reply and message: no gap


def resumed(calls: int, resume: int, compact: int | None = None, restored: int = 0) -> Session:
    """A prompt, then a 100-word message per call; the hidden prefix is 5,000 tokens until call
    ``resume`` (a system-level reset) and 3,000 from it on; at call ``compact`` (if any) the
    history restarts from a 300-word summary, and the harness sent ``restored`` tokens after it
    that the file omits."""
    history: list[Message] = []
    out = []
    for k in range(calls):
        if k == compact:
            history = [text(300, "s")]
        history.append(text(1200 if k == 0 else 100, f"q{k}"))
        hidden = 5000 if k < resume else 3000
        extra = restored if compact is not None and k >= compact else 0
        held = sum(
            len(b.text.split()) for m in history for b in m.blocks if isinstance(b, TextBlock)
        )
        out.append(
            Call(
                request=Conversation(model="claude-sonnet-4-5", messages=tuple(history)),
                response=reply(f"r{k}"),
                timestamp=T0 + timedelta(seconds=10 * k),
                usage=Usage(cache_write_5m=hidden + held + extra, output_tokens=10),
                cache_reset="system" if k == resume else None,
            )
        )
        history.append(out[-1].response)  # type: ignore[arg-type]
    compactions = () if compact is None else (compact,)
    return Session(
        path="<r>",
        format="claude-code",
        calls=tuple(out),
        prefix_known=False,
        compactions=compactions,
    )


def test_a_resume_measures_the_hidden_system_prompt_again() -> None:
    """Call 3 follows a resume (a system-level reset): the hidden prefix, 5,000 tokens at call 1,
    is 3,000 from there on, as that call's usage shows; the messages are written again."""
    ledger = price_session(resumed(5, resume=3), WordCounter(), PRICE, misses=NO_MISSES)
    assert ledger.recorded is not None
    assert ledger.context_tokens.tolist() == ledger.recorded.total_input.tolist()
    assert any("-2,000 tokens at call 3" in note for note in ledger.notes)
    written = ledger.simulated.cache_write_5m.tolist()
    assert written[3] == ledger.context_tokens.tolist()[3]  # the new system prompt and after
    assert written[4] < 200


def test_a_compaction_after_a_resume_is_measured_against_the_resumed_prefix() -> None:
    """Call 2 resumes (the hidden prefix goes from 5,000 to 3,000 tokens), call 4 follows a
    compaction whose restored content (1,500 tokens) the file omits. Measured against the prefix
    of call 1, the gap came out 2,000 tokens short (-500: none) and every call after the
    compaction was simulated 1,500 tokens under its bill (entire-claude s-89: 7,070 tokens under,
    -15% at the compaction); against the resumed prefix every call matches its bill."""
    recorded = resumed(6, resume=2, compact=4, restored=1500)
    ledger = price_session(recorded, WordCounter(), PRICE, misses=NO_MISSES)
    assert ledger.recorded is not None
    got, billed = ledger.context_tokens.tolist(), ledger.recorded.total_input.tolist()
    for simulated, bill in zip(got, billed, strict=True):
        assert simulated == pytest.approx(bill, abs=3)
    assert any("1,500 tokens at call 4" in note for note in ledger.notes)
