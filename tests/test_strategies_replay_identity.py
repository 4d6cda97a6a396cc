"""The built-in strategies give the same views and receipts as before they were made incremental.

Replays of a seeded synthetic session under every preset (and a few parameterised variants) are
hashed (payload of every view, every receipt) and compared with digests recorded by the code as it
was before the per-call work was cut (commit de417bf). A strategy change that is meant to change
results must re-record them: run ``_digest`` on each case and paste the new values, saying why in
the commit.

The incremental pieces are also checked against their plain definitions: the extractive summary
against a copy of the former forward summariser, a counter's ``count_conversation`` (which
reuses the totals of the histories it counted) against a fresh counter's, and
``tool_result_tokens`` against a plain sum, on growing and edited views.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence

import pytest

from contextkit.messages import (
    Block,
    CompactionBlock,
    Conversation,
    Message,
    TextBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
    to_payload,
)
from contextkit.replay import replay
from contextkit.session import Session
from contextkit.session.examples import ExampleSpec, generate_session
from contextkit.strategies import (
    CacheAwareGate,
    CallFacts,
    EvictToolResults,
    SlidingWindow,
    Strategy,
)
from contextkit.strategies._structure import info, tool_result_tokens, with_blocks
from contextkit.strategies.config import strategy_from_spec
from contextkit.strategies.summarisers import (
    _DECISION,
    _ERROR,
    _OPEN,
    SECTIONS,
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    ExtractiveSummariser,
    _identifiers,
    _inputs_named,
    _sentences,
)
from contextkit.tokens import ApproxCounter, MemoCounter

_SESSION: list[Session] = []


def session() -> Session:
    if not _SESSION:
        _SESSION.append(generate_session(ExampleSpec(calls=120, user_turns=4, seed=11)))
    return _SESSION[0]


def _spec(spec: str) -> Callable[[], Strategy]:
    return lambda: strategy_from_spec(spec)


# name -> (strategy factory, context window, digest, calls compacted, receipts): recorded before.
CASES: dict[str, tuple[Callable[[], Strategy], int, str, int, int]] = {
    "evict-tool-results": (_spec("evict-tool-results"), 60_000, "2b81651056536280", 3, 112),
    "sliding-window": (_spec("sliding-window"), 60_000, "84d21f900134da91", 4, 4),
    "sliding-window@30k": (_spec("sliding-window"), 30_000, "c7303dcdbd1658f7", 33, 33),
    "summary": (_spec("summary"), 60_000, "b6104acf025ff1b9", 2, 2),
    "evict-then-summary": (_spec("evict-then-summary"), 40_000, "492bd8653119df25", 4, 79),
    "evict-clear-inputs": (
        _spec("evict-tool-results:keep_last=null,clear_inputs=true"),
        60_000,
        "154b4d254af55c11",
        44,
        67,
    ),
    "evict-keep-tokens": (
        _spec("evict-tool-results:keep_last=null,keep_tokens=3000,min_freed_tokens=0"),
        60_000,
        "e6272b8e169ca74a",
        3,
        110,
    ),
    "sliding-keep-turns": (_spec("sliding-window:keep_turns=2"), 60_000, "20feaaa983a8dc67", 3, 3),
    "summary-one-turn": (_spec("summary:keep_last_turns=1"), 60_000, "3fb5f77ccfa94adf", 1, 1),
    "bare-evict": (EvictToolResults, 60_000, "ded1fd7e9dd4851a", 49, 113),
    "bare-window": (lambda: SlidingWindow(max_tokens=20_000), 60_000, "4e9a7fd7d53bfa4b", 46, 46),
    "gated-evict": (
        lambda: CacheAwareGate(EvictToolResults(min_freed_tokens=0)),
        60_000,
        "d275d779a30913e0",
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


# --- the extractive summary against the former forward summariser -------------------------------


def _reference_summary(messages: Sequence[Message], max_items: int, max_chars: int) -> str:
    """The extractive summariser as it was: every entry collected oldest first, then each
    section de-duplicated at its last occurrence and cut to its last ``max_items``."""
    sections: dict[str, list[str]] = {name: [] for name in SECTIONS}

    def clip(text: str) -> str:
        flat = " ".join(text.split())
        return flat if len(flat) <= max_chars else flat[: max_chars - 3] + "..."

    def merge(text: str) -> None:
        current: str | None = None
        for line in text.splitlines():
            if line.startswith("## ") and line[3:] in sections:
                current = line[3:]
            elif current is not None and line.startswith("- "):
                sections[current].append(line[2:])

    for message in messages:
        for block in message.blocks:
            _reference_block(message.role, block, sections, clip, merge)
    lines = [SUMMARY_OPEN, f"Summary of {len(messages)} earlier messages."]
    for name in SECTIONS:
        items = sections[name]
        last = {item: i for i, item in enumerate(items)}
        kept = [item for i, item in enumerate(items) if last[item] == i and item][-max_items:]
        if kept:
            lines.append(f"## {name}")
            lines.extend(f"- {item}" for item in kept)
    lines.append(SUMMARY_CLOSE)
    return "\n".join(lines)


def _reference_block(
    role: str,
    block: Block,
    sections: dict[str, list[str]],
    clip: Callable[[str], str],
    merge: Callable[[str], None],
) -> None:
    if isinstance(block, TextBlock) and SUMMARY_OPEN in block.text:
        merge(block.text)
    elif isinstance(block, CompactionBlock):
        merge(block.content or "")
    elif isinstance(block, TextBlock):
        sections["Files and identifiers"].extend(_identifiers(block.text))
        if role == "user":
            sections["User requests"].append(clip(block.text))
            return
        for line in _sentences(block.text):
            if _OPEN.search(line):
                sections["Open items"].append(clip(line))
            elif _DECISION.search(line):
                sections["Decisions"].append(clip(line))
    elif isinstance(block, ToolUseBlock):
        sections["Files and identifiers"].extend(_inputs_named(block))
    elif isinstance(block, ToolResultBlock):
        text = block.text
        sections["Files and identifiers"].extend(_identifiers(text)[:5])
        errors = [line for line in text.splitlines() if _ERROR.search(line)]
        if block.is_error and not errors and text.strip():
            errors = [text.strip().splitlines()[0]]
        sections["Errors"].extend(clip(line.strip()) for line in errors[-3:])
        sections["Open items"].extend(clip(ln.strip()) for ln in text.splitlines() if "TODO" in ln)


def _odd_messages() -> list[Message]:
    """Blocks the synthetic session lacks: errors without error words, TODOs, code spans,
    separators other than newlines, empty and repeated entries, a compaction block."""
    return [
        Message(role="user", content="Fix `parse_order` in src/orders/api.py; TODO: tests"),
        Message(
            role="assistant",
            content=(
                TextBlock(text="Let me look.\rI'll read it. Still need `cfg.toml` next step!"),
                ToolUseBlock(id="t1", name="Read", input={"file_path": "a.py", "command": ""}),
            ),
        ),
        Message(
            role="user",
            content=(
                ToolResultBlock(tool_use_id="t1", content="boom\x0bKeyError: x\u2028TODO: y\n\n"),
                ToolResultBlock(tool_use_id="t1", content="   \n", is_error=True),
                ToolResultBlock(tool_use_id="t1", content="exit 2\nsee log", is_error=True),
            ),
        ),
        Message(role="assistant", content=(CompactionBlock(content="## Errors\n- old error"),)),
        Message(role="user", content="Fix `parse_order` in src/orders/api.py; TODO: tests"),
    ]


def test_extractive_summary_matches_the_former_summariser() -> None:
    rng = random.Random(5)
    pools = [
        list(
            generate_session(ExampleSpec(calls=90, user_turns=6, seed=s)).calls[-1].request.messages
        )
        for s in (3, 11)
    ]
    pools.append(_odd_messages() * 3)
    for _ in range(120):
        pool = rng.choice(pools)
        start = rng.randrange(len(pool))
        span = pool[start : rng.randrange(start, len(pool) + 1)]
        max_items, max_chars = rng.choice([1, 2, 3, 8, 40]), rng.choice([20, 60, 240])
        if span and rng.random() < 0.4:  # a summary written earlier, folded into this one
            prior = _reference_summary(rng.choice(pools)[: rng.randrange(1, 80)], 5, 240)
            span[0] = Message(role="user", content=(TextBlock(text="task"), TextBlock(text=prior)))
        summariser = ExtractiveSummariser(max_items=max_items, max_item_chars=max_chars)
        expected = _reference_summary(span, max_items, max_chars)
        assert summariser.summarise(span, CallFacts()).text == expected


# --- incremental totals against their plain definitions ----------------------------------------


class _WholeRequestCounter(ApproxCounter):
    """A counter whose request total is not a sum over messages (like the counting endpoint)."""

    def count_conversation(self, conversation: Conversation) -> int:
        return 7 * len(conversation.messages) + super().count_conversation(conversation)


def _edited(messages: tuple[Message, ...], rng: random.Random) -> tuple[Message, ...]:
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
