"""The built-in strategies give the same views and receipts as before they were made incremental.

Replays of a seeded synthetic session under every preset (and a few parameterised variants) are
hashed (payload of every view, every receipt) and compared with digests recorded by the code as it
was before the per-call work was cut (commit de417bf). A strategy change that is meant to change
results must re-record them: run ``_digest`` on each case and paste the new values, saying why in
the commit.

The incremental pieces are also checked against their plain definitions: a counter's
``count_conversation`` (which reuses the totals of the histories it counted) against a fresh
counter's, and ``tool_result_tokens`` against a plain sum, on growing and edited views.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence

import pytest

from contextkit.messages import (
    Conversation,
    Message,
    Tool,
    ToolResultBlock,
    to_payload,
)
from contextkit.replay import replay
from contextkit.session import Session
from contextkit.session.examples import ExampleSpec, generate_session
from contextkit.strategies import (
    CacheAwareGate,
    EvictToolResults,
    SlidingWindow,
    Strategy,
    strategy_from_spec,
)
from contextkit.strategies._structure import info, tool_result_tokens, with_blocks
from contextkit.tokens import ApproxCounter, MemoCounter

_SESSION: list[Session] = []


def session() -> Session:
    if not _SESSION:
        _SESSION.append(generate_session(ExampleSpec(calls=120, user_turns=4, seed=11)))
    return _SESSION[0]


def _spec(spec: str) -> Callable[[], Strategy]:
    return lambda: strategy_from_spec(spec)


# name -> (strategy factory, context window, digest, calls compacted, receipts): recorded before.
# Re-recorded when the presets became cache-timed and the window and summary cut inside the turn,
# and when receipts gained ``summary_tokens`` (views unchanged: the digests without that field are
# the ones recorded before); and when the offline summary gained its Findings and User messages
# sections and kept constraints verbatim (summary views only: same calls compacted, same receipts).
CASES: dict[str, tuple[Callable[[], Strategy], int, str, int, int]] = {
    "evict-tool-results": (_spec("evict-tool-results"), 60_000, "55393ea147582ebd", 4, 91),
    "sliding-window": (_spec("sliding-window"), 60_000, "6ca7aa74ecc7fead", 4, 4),
    "sliding-window@30k": (_spec("sliding-window"), 30_000, "3bb94aa8b6fae52d", 57, 60),
    "summary": (_spec("summary"), 60_000, "16b7c4f8a0e971e6", 2, 2),
    "evict-then-summary": (_spec("evict-then-summary"), 40_000, "47b28808c3a6fe2e", 4, 62),
    "evict-clear-inputs": (
        _spec("evict-tool-results:keep_last=null,clear_inputs=true"),
        60_000,
        "fa17dc3bd24d5f0a",
        44,
        67,
    ),
    "evict-keep-tokens": (
        _spec("evict-tool-results:keep_last=null,keep_tokens=3000,min_freed_tokens=0"),
        60_000,
        "a811fe0eae4120e2",
        4,
        88,
    ),
    "sliding-keep-turns": (_spec("sliding-window:keep_turns=2"), 60_000, "0d4400ac0b577bd5", 4, 4),
    "summary-one-turn": (_spec("summary:keep_last_turns=1"), 60_000, "92c6bb858ff79b6b", 2, 2),
    "bare-evict": (EvictToolResults, 60_000, "d52c0b83f19775da", 49, 113),
    "bare-window": (lambda: SlidingWindow(max_tokens=20_000), 60_000, "11ca9dca0d319cc5", 56, 56),
    "gated-evict": (
        lambda: CacheAwareGate(EvictToolResults(min_freed_tokens=0)),
        60_000,
        "6794f7d63b693119",
        26,
        109,
    ),
}


def _digest(strategy: Strategy, window: int) -> tuple[str, int, int]:
    result = replay(session(), strategy, counter=ApproxCounter(), window=window)
    h = hashlib.sha256()
    for view, receipts in zip(result.views, result.receipts, strict=True):
        h.update(json.dumps(to_payload(view), sort_keys=True).encode())
        h.update(json.dumps([r.model_dump(mode="json") for r in receipts], sort_keys=True).encode())
    compacted = sum(1 for r in result.receipts if r)
    return h.hexdigest()[:16], compacted, sum(len(r) for r in result.receipts)


@pytest.mark.parametrize("name", list(CASES))
def test_replay_views_and_receipts_are_as_recorded(name: str) -> None:
    make, window, digest, compacted, receipts = CASES[name]
    assert _digest(make(), window) == (digest, compacted, receipts)


# --- incremental totals against their plain definitions ----------------------------------------


class _WholeRequestCounter(ApproxCounter):
    """A counter whose request total is not a sum over messages (like the counting endpoint)."""

    def count_conversation(self, conversation: Conversation) -> int:
        return 7 * len(conversation.messages) + super().count_conversation(conversation)


def _edited(messages: Sequence[Message], rng: random.Random) -> Sequence[Message]:
    """``messages`` with one tool result shortened (a new message object, as an eviction makes)."""
    holders = [i for i, m in enumerate(messages) if info(m).results]
    if not holders:
        return messages
    i = rng.choice(holders)
    j, _ = info(messages[i]).results[0]
    blocks = list(messages[i].blocks)
    blocks[j] = ToolResultBlock(tool_use_id="x", content="cleared")
    return (*messages[:i], with_blocks(messages[i], blocks), *messages[i + 1 :])


@pytest.mark.parametrize("make", [ApproxCounter, _WholeRequestCounter])
def test_incremental_totals_equal_full_counts(make: Callable[[], MemoCounter]) -> None:
    rng = random.Random(2)
    counter, fresh = make(), make()
    tape = session().calls[-1].request
    view = tape.model_copy(update={"messages": ()})
    for k in range(0, len(tape.messages), 3):
        view = view.append(*tape.messages[k : k + 3])
        if rng.random() < 0.2:
            view = view.with_messages(_edited(view.messages, rng))
        if rng.random() < 0.1:  # another head: the same messages under other tools
            view = view.model_copy(update={"tools": (Tool(name=f"t{k}"),)})
        if rng.random() < 0.1:
            view = view.model_copy(update={"messages": view.messages[2:]})
        assert counter.count_conversation(view) == make().count_conversation(view)
        plain = sum(
            fresh.count_block(b)
            for m in view.messages
            if m.role == "user"
            for _, b in info(m).results
        )
        assert tool_result_tokens(view.messages, counter) == plain
