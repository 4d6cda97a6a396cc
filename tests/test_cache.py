"""The prompt-cache simulator against arithmetic done by hand.

The counter counts words (one token per word, no framing), so every figure below is a sum of the
word counts written next to the blocks.
"""

from __future__ import annotations

from typing import Any

import pytest

from contextkit.cache import (
    AnthropicCache,
    CacheSimulator,
    OpenAICache,
    PrefixPart,
    simulate_cache,
)
from contextkit.messages import Block, Conversation, Message, TextBlock, ThinkingBlock
from contextkit.session import Usage
from contextkit.tokens import MemoCounter

EPHEMERAL: dict[str, Any] = {"type": "ephemeral"}
ONE_HOUR: dict[str, Any] = {"type": "ephemeral", "ttl": "1h"}
CFG = AnthropicCache(min_tokens=1024)


class WordCounter(MemoCounter):
    per_message = 0

    def _count_text(self, text: str) -> int:
        return len(text.split())


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def text(n: int, tag: str = "w", mark: dict[str, Any] | None = None) -> TextBlock:
    if mark is None:
        return TextBlock(text=words(n, tag))
    return TextBlock(text=words(n, tag), cache_control=mark)


def user(*blocks: Block) -> Message:
    return Message(role="user", content=blocks)


def assistant(*blocks: Block) -> Message:
    return Message(role="assistant", content=blocks)


SYSTEM = (text(2000, "s", EPHEMERAL),)
U1, A1, U2 = text(100, "u"), text(50, "a"), text(30, "v")


def conv(*messages: Message, system: Any = SYSTEM, **extra: Any) -> Conversation:
    return Conversation(model="claude-sonnet-4-5", system=system, messages=messages, **extra)


def marked(block: TextBlock, mark: dict[str, Any] = EPHEMERAL) -> TextBlock:
    return block.model_copy(update={"cache_control": mark})


def usage(u: int = 0, w5: int = 0, w1h: int = 0, r: int = 0) -> Usage:
    return Usage(input_tokens=u, cache_write_5m=w5, cache_write_1h=w1h, cache_read=r)


def run(
    calls: list[tuple[Conversation, float]], cfg: AnthropicCache | OpenAICache = CFG
) -> list[Usage]:
    return [c.usage for c in simulate_cache(calls, WordCounter(), cfg)]


def test_two_calls_write_then_read_with_a_moved_breakpoint() -> None:
    first = conv(user(marked(U1)))
    second = conv(user(U1), assistant(A1), user(marked(U2)))
    got = run([(first, 0.0), (second, 60.0)])
    # Call 1: nothing cached; system (2000) and system+U1 (2100) written at 5m.
    assert got[0] == usage(w5=2000 + 100)
    # Call 2: the lookback from U2 finds the call-1 entry at U1 (2100 read); A1+U2 written.
    assert got[1] == usage(r=2100, w5=50 + 30)


def test_ttl_expiry_and_refresh_on_hit() -> None:
    first = conv(user(marked(U1)))
    second = conv(user(U1), assistant(A1), user(marked(U2)))
    # Call 2 at 200 s reads and refreshes (entries live until 500 s); call 3 at 450 s still reads.
    # Call 4 at 450 + 301 s: everything expired, the whole prefix is written again.
    got = run([(first, 0.0), (second, 200.0), (second, 450.0), (second, 751.0)])
    assert got[1] == usage(r=2100, w5=80)
    assert got[2] == usage(r=2180)
    assert got[3] == usage(w5=2180)


def test_one_hour_system_survives_what_expires_the_messages() -> None:
    system = (text(2000, "s", ONE_HOUR),)
    first = conv(user(marked(U1)), system=system)
    later = conv(user(U1), assistant(A1), user(marked(U2)), system=system)
    got = run([(first, 0.0), (later, 1000.0)])
    assert got[0] == usage(w1h=2000, w5=100)
    # 1000 s later: the 5m entry is gone, the 1h system entry is read.
    assert got[1] == usage(r=2000, w5=180)


def test_system_change_invalidates_system_and_messages() -> None:
    first = conv(user(marked(U1)))
    changed = conv(user(U1), assistant(A1), user(marked(U2)), system=(text(2000, "t", EPHEMERAL),))
    got = run([(first, 0.0), (changed, 10.0)])
    assert got[1] == usage(w5=2180)


def test_three_calls_with_invalidation_then_recovery() -> None:
    c1 = conv(user(marked(U1)))
    c2 = conv(user(U1), assistant(A1), user(marked(U2)), tool_choice={"type": "any"})
    c3 = conv(
        user(U1),
        assistant(A1),
        user(U2),
        assistant(text(20, "b")),
        user(marked(U1)),
        tool_choice={"type": "any"},
    )
    got = run([(c1, 0.0), (c2, 10.0), (c3, 20.0)])
    # tool_choice changed: the system entry still reads, the messages level is written anew.
    assert got[1] == usage(r=2000, w5=180)
    # Same tool_choice as call 2: its U2 entry (2180) is read; the new 20 + 100 written.
    assert got[2] == usage(r=2180, w5=120)


def test_lookback_of_twenty_blocks() -> None:
    first = conv(user(marked(U1)))
    many = tuple(text(10, f"x{i}") for i in range(25))
    far = conv(user(U1), assistant(*many[:-1], marked(many[-1])))
    near = conv(user(U1), assistant(*many[:18], marked(many[18])))
    # 25 blocks after the call-1 breakpoint: the walk back (20 positions) misses U1's entry and
    # only the system breakpoint hits.
    assert run([(first, 0.0), (far, 5.0)])[1] == usage(r=2000, w5=100 + 250)
    # 19 new blocks: U1 is the 20th position walking back from the breakpoint, so it is found.
    assert run([(first, 0.0), (near, 5.0)])[1] == usage(r=2100, w5=190)


def test_uncached_tail_after_last_breakpoint_and_minimum_length() -> None:
    short = (text(500, "s", EPHEMERAL),)
    call = conv(user(marked(text(300, "u"))), user(text(40, "z")), system=short)
    # System prefix 500 < 1024: not cached; 800 at the message breakpoint is cached nowhere
    # either (below the minimum); all 840 are uncached input.
    assert run([(call, 0.0)])[0] == usage(u=840)
    long_call = conv(user(marked(U1)), user(text(40, "z")))
    assert run([(long_call, 0.0)])[0] == usage(w5=2100, u=40)


def test_same_start_time_cannot_read_each_other() -> None:
    first = conv(user(marked(U1)))
    got = run([(first, 5.0), (first, 5.0), (first, 6.0)])
    assert got[1] == usage(w5=2100)
    assert got[2] == usage(r=2100)


def test_automatic_caching_marks_the_last_cacheable_block() -> None:
    plain = (TextBlock(text=words(2000, "s")),)
    thinking = ThinkingBlock(thinking=words(70, "t"), signature="sig")
    c1 = conv(user(U1), system=plain, cache_control=EPHEMERAL)
    c2 = conv(user(U1), assistant(A1, thinking), user(U2), system=plain, cache_control=EPHEMERAL)
    got = run([(c1, 0.0), (c2, 1.0)])
    assert got[0] == usage(w5=2100)
    assert got[1] == usage(r=2100, w5=50 + 70 + 30)


def test_rule_breaking_requests_are_flagged() -> None:
    five = conv(*(user(marked(text(300, f"m{i}"))) for i in range(4)))
    calls = simulate_cache([(five, 0.0)], WordCounter(), CFG)
    assert any("at most 4" in e for e in calls[0].errors)
    mixed = conv(user(marked(U1, ONE_HOUR)))
    flagged = simulate_cache([(mixed, 0.0)], WordCounter(), CFG)[0]
    assert any("1h cache breakpoint after a 5m" in e for e in flagged.errors)
    ok = simulate_cache([(conv(user(marked(U1))), 0.0)], WordCounter(), CFG)[0]
    assert ok.errors == ()


def test_claude_code_placement_and_warm_hidden_prefix() -> None:
    cfg = AnthropicCache(min_tokens=1024, placement="claude-code", ttl_s=3600)
    prefix = (
        PrefixPart(tokens=3000, ttl_s=3600, warm=True),
        PrefixPart(tokens=1500, ttl_s=3600),
    )
    sim = CacheSimulator(cfg, WordCounter(), prefix)
    m1 = Message(role="user", content=words(100))
    m2 = Message(role="assistant", content=(A1,))
    m3 = Message(role="user", content=(U2,))
    first = sim.step(Conversation(model="claude-opus-4-6", messages=(m1,)), 0.0)
    second = sim.step(Conversation(model="claude-opus-4-6", messages=(m1, m2, m3)), 30.0)
    # The 3000-token part was cached before the session; the rest is written at 1h.
    assert first.usage == usage(r=3000, w1h=1500 + 100)
    assert first.context_tokens == 4600
    assert first.new_tokens == 4600
    assert second.usage == usage(r=4600, w1h=80)
    assert second.new_tokens == 80
    assert second.breakpoints == 4


def test_openai_automatic_prefix_caching() -> None:
    cfg = OpenAICache(retention_s=300)
    system = words(2000, "s")
    c1 = conv(user(U1), system=system)
    c2 = conv(user(U1), assistant(A1), user(U2), system=system)
    got = run([(c1, 0.0), (c2, 10.0), (c2, 400.0)], cfg)
    assert got[0] == usage(u=2100)
    # Shared prefix 2100 tokens: 1024 + 8 x 128 = 2048 cached, the rest uncached.
    assert got[1] == usage(r=2048, u=2180 - 2048)
    # 390 s later the retained prefix has expired.
    assert got[2] == usage(u=2180)


@pytest.mark.parametrize("placement", ["as-sent", "auto", "claude-code", "off"])
def test_classes_always_add_up_to_the_context(placement: str) -> None:
    cfg = AnthropicCache(min_tokens=1024, placement=placement)  # type: ignore[arg-type]
    history: list[Message] = []
    requests = []
    for i in range(12):
        history.append(user(text(150 + 10 * i, f"q{i}")))
        requests.append((conv(*history, system=words(1500, "s")), 20.0 * i))
        history.append(assistant(text(40, f"r{i}")))
    for call in simulate_cache(requests, WordCounter(), cfg):
        assert call.usage.total_input == call.context_tokens
        if placement == "off":
            assert call.usage.cache_read == call.usage.cache_write == 0
