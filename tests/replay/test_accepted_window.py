"""A call the provider accepted fit the window it ran in: it is never simulated as an overflow, and
the window a session ran is never taken as less than the largest input it was billed for."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from contextkit.formats import load
from contextkit.messages import Conversation, Message, TextBlock
from contextkit.replay import replay_as_recorded
from contextkit.session import Call, Session, Usage
from contextkit.testing.corpus import labelled_sessions


def _session(model: str, billed: list[int]) -> Session:
    calls = tuple(
        Call(
            request=Conversation(
                model=model, messages=(Message(role="user", content=(TextBlock(text="hi"),)),)
            ),
            usage=Usage(input_tokens=n, output_tokens=1),
        )
        for n in billed
    )
    return Session(path="<w>", format="anthropic", calls=calls)


def test_the_window_is_at_least_the_largest_accepted_input() -> None:
    session = _session("claude-sonnet-4-5", [150_000, 230_000])
    assert session.model_info.context_window == 230_000
    note = session.window_note()
    assert note is not None
    assert "230,000" in note
    assert "200,000" in note
    within = _session("claude-sonnet-4-5", [150_000])
    assert within.model_info.context_window == 200_000
    assert within.window_note() is None


@pytest.mark.corpus
def test_the_fable_5_session_ran_past_200k_and_no_accepted_call_overflows(corpus: Path) -> None:
    """oh-my-posh-claude s-f1 (claude-fable-5, a tier no fit knows: its window was taken as
    200k): 8 calls billed 201,834 to 222,916 tokens were flagged as overflows of the recording
    itself. The provider took them, so the window was at least 222,916."""
    session = load(corpus / "oh-my-posh-claude" / "s-f1-cc7fb29063-0.jsonl").sessions[0]
    assert session.model_info.context_window == session.accepted_input == 222_916
    replayed = replay_as_recorded(session)
    assert not any(row.overflow for row in replayed.rows)
    assert any(n.startswith("window: the provider accepted") for n in replayed.ledger.notes)


@pytest.mark.corpus
@pytest.mark.slow
def test_no_call_the_provider_accepted_is_an_overflow_on_the_corpus(corpus: Path) -> None:
    """Every corpus session with usage: the recording's replay flags no call with usage as over
    the window, the session's window holds its largest billed input, and its per-call rows add
    up to its row (the bill, with the harness's own compaction calls; before, the rows were the
    simulation's while the row was the bill: 70 of 196 sessions apart, $0.574 against $0.285 on
    one file in the issue)."""
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unknown prices: costs unknown, windows still hold
        for label, session in labelled_sessions(corpus):
            if not any(c.usage is not None for c in session.calls):
                continue
            window = session.model_info.context_window
            if window is not None:
                assert window >= session.accepted_input, label
            replayed = replay_as_recorded(session)
            rows = replayed.rows
            flagged = [r.call for r in rows if r.overflow and session.calls[r.call].usage]
            assert flagged == [], label
            cost = replayed.summary()["cost_usd"]
            if cost is not None and all(c.usage is not None for c in session.calls):
                summed = sum(r.cost_usd or 0.0 for r in rows) + (replayed.harness_usd or 0.0)
                assert summed == pytest.approx(cost, rel=1e-9), label
            checked += 1
    assert checked >= 100
