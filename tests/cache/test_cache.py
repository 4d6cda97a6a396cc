"""The prompt-cache simulator against arithmetic done by hand.

The counter counts words (one token per word, no framing), so every figure below is a sum of the
word counts written next to the blocks.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextkit.cache import (
    AnthropicCache,
    CacheConfig,
    CacheSimulator,
    GeminiCache,
    OpenAICache,
    PrefixPart,
    simulate_cache,
    strip_prior_thinking,
)
from contextkit.cache._prefix import _shared_messages
from contextkit.messages import (
    Block,
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.replay import place_marks
from contextkit.session import Usage
from contextkit.testing import FixedCounter, WordCounter, words
from contextkit.testing.strategies import valid_conversations

EPHEMERAL: dict[str, Any] = {"type": "ephemeral"}
ONE_HOUR: dict[str, Any] = {"type": "ephemeral", "ttl": "1h"}
CFG = AnthropicCache(min_tokens=1024)


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


def conv(
    *messages: Message, system: Any = SYSTEM, model: str = "claude-sonnet-4-5", **extra: Any
) -> Conversation:
    return Conversation(model=model, system=system, messages=messages, **extra)


def marked(block: TextBlock, mark: dict[str, Any] = EPHEMERAL) -> TextBlock:
    return block.model_copy(update={"cache_control": mark})


def usage(u: int = 0, w5: int = 0, w1h: int = 0, r: int = 0) -> Usage:
    return Usage(input_tokens=u, cache_write_5m=w5, cache_write_1h=w1h, cache_read=r)


def run(calls: list[tuple[Conversation, float]], cfg: CacheConfig = CFG) -> list[Usage]:
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
    # Opus 4.6 keeps earlier turns' thinking: the thinking block is billed and cached.
    opus = "claude-opus-4-6"
    c1 = conv(user(U1), system=plain, cache_control=EPHEMERAL, model=opus)
    c2 = conv(
        user(U1),
        assistant(A1, thinking),
        user(U2),
        system=plain,
        cache_control=EPHEMERAL,
        model=opus,
    )
    got = run([(c1, 0.0), (c2, 1.0)])
    assert got[0] == usage(w5=2100)
    assert got[1] == usage(r=2100, w5=50 + 70 + 30)


THINK = ThinkingBlock(thinking=words(70, "t"), signature="sig")  # 70 words
CALL = ToolUseBlock(id="t1", name="Read", input={"p": "x"})  # 'Read {"p":"x"}': 2 words
RESULT = ToolResultBlock(tool_use_id="t1", content=words(40, "r"))  # 40 words


def _turns(model: str) -> list[tuple[Conversation, float]]:
    """Turn 1 (a tool loop with thinking), then turn 2 opened by a plain user message."""
    asked = user(marked(U1))
    loop = (user(U1), assistant(THINK, CALL), user(marked_result(RESULT)))
    answer = assistant(A1)
    turn_2 = (user(U1), assistant(THINK, CALL), user(RESULT), answer, user(marked(U2)))
    return [(conv(asked, model=model), 0.0), (conv(*loop, model=model), 10.0),
            (conv(*turn_2, model=model), 20.0)]  # fmt: skip


def marked_result(block: ToolResultBlock) -> ToolResultBlock:
    return block.model_copy(update={"cache_control": EPHEMERAL})


def test_models_that_strip_earlier_thinking_neither_bill_nor_cache_it() -> None:
    kept = simulate_cache(_turns("claude-opus-4-6"), WordCounter(), CFG)
    stripped = simulate_cache(_turns("claude-sonnet-4-5"), WordCounter(), CFG)
    # Within turn 1 the thinking is billed by both models (it is the current turn's).
    for calls in (kept, stripped):
        assert calls[1].usage == usage(r=2100, w5=70 + 2 + 40)
        assert calls[1].context_tokens == 2212
    # Turn 2, Opus 4.6: thinking kept; read what call 2 wrote, write the answer and U2.
    assert kept[2].usage == usage(r=2212, w5=50 + 30)
    assert kept[2].context_tokens == 2292
    # Sonnet 4.5: the thinking is gone; the prefix changed where it stood, so only system + U1
    # (written by call 1) is read and everything after it is written again.
    assert stripped[2].usage == usage(r=2100, w5=2 + 40 + 50 + 30)
    assert stripped[2].context_tokens == 2222
    stripped_request = strip_prior_thinking(_turns("claude-sonnet-4-5")[2][0])
    assert WordCounter().count_conversation(stripped_request) == 2222
    request = _turns("claude-opus-4-6")[2][0]
    assert strip_prior_thinking(request) is request


PLAIN = (text(1500, "p"),)


def test_stripping_is_incremental_and_counts_each_text_once() -> None:
    counted: list[str] = []

    class Recording(WordCounter):
        def _count_text(self, text: str) -> int:
            counted.append(text)
            return super()._count_text(text)

    history: list[Message] = []
    requests: list[tuple[Conversation, float]] = []
    for turn in range(6):
        history.append(user(text(30, f"q{turn}")))
        for step in range(3):
            think = ThinkingBlock(thinking=words(20, f"t{turn}.{step}"), signature="s")
            use = ToolUseBlock(id=f"c{turn}.{step}", name="Run", input={"n": f"{turn}.{step}"})
            request = conv(*history, system=PLAIN, model="claude-haiku-4-5")
            requests.append((request, 10.0 * len(requests)))
            result = ToolResultBlock(tool_use_id=use.id, content=f"ok{turn}.{step}")
            history += [assistant(think, use), user(result)]
        history.append(assistant(text(10, f"a{turn}")))
    calls = simulate_cache(requests, Recording(), AnthropicCache(min_tokens=0, placement="auto"))
    assert len(counted) == len(set(counted))  # no history is counted again after a new turn
    for (request, _), call in zip(requests, calls, strict=True):
        assert call.context_tokens == WordCounter().count_conversation(
            strip_prior_thinking(request)
        )
        assert call.usage.total_input == call.context_tokens
    # Within a turn each call writes the step before it (thinking 20, call 2, result 1). A new
    # turn rewrites the previous turn without its thinking (3 x (2 + 1)), its answer and question.
    writes = [c.usage.cache_write for c in calls]
    assert writes[1:] == [49 if i % 3 == 0 else 23 for i in range(1, len(calls))]


def test_cache_control_on_a_stripped_thinking_block_is_still_an_error() -> None:
    bad = THINK.model_copy(update={"cache_control": EPHEMERAL})
    request = conv(user(U1), assistant(bad, A1), user(marked(U2)))
    (call,) = simulate_cache([(request, 0.0)], WordCounter(), CFG)
    assert call.context_tokens == 2000 + 100 + 50 + 30
    assert any("thinking block" in e for e in call.errors)


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


def test_gemini_implicit_caching_has_its_own_minimum_and_no_steps() -> None:
    system = words(4000, "s")
    c1 = conv(user(U1), system=system)
    c2 = conv(user(U1), assistant(A1), user(U2), system=system)
    got = run([(c1, 0.0), (c2, 10.0), (c2, 400.0)], GeminiCache(min_tokens=4096))
    assert got[0] == usage(u=4100)
    # The whole shared prefix (4,100 tokens, over the 4,096 minimum) is read, nothing written.
    assert got[1] == usage(r=4100, u=80)
    assert got[2] == usage(u=4180)  # expired
    # Below a model's minimum nothing is cached.
    assert run([(c1, 0.0), (c2, 10.0)], GeminiCache(min_tokens=8192))[1] == usage(u=4180)


def test_each_provider_gets_its_own_cache_rules() -> None:
    from contextkit.cache import automatic_cache, cache_note  # noqa: PLC0415
    from contextkit.models import resolve_model  # noqa: PLC0415

    gemini = automatic_cache(resolve_model("gemini-3-pro"))
    assert isinstance(gemini, GeminiCache)
    assert gemini.min_tokens == 4096
    flash = automatic_cache(resolve_model("gemini-2.5-flash"), date(2026, 1, 1))
    assert isinstance(flash, GeminiCache)
    assert flash.min_tokens == 1024
    assert isinstance(automatic_cache(resolve_model("gpt-5.5")), OpenAICache)
    assert automatic_cache(resolve_model("claude-sonnet-4-5")) is None
    assert "Gemini implicit caching from 4,096 tokens" in cache_note(gemini)


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


# --- the engine's placement, done by the simulator ---------------------------------------------


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    valid_conversations(max_turns=3),
    st.booleans(),
    st.lists(st.booleans(), max_size=12),
    st.sampled_from(["as drawn", "marked first", "top-level mark"]),
)
def test_engine_placement_prices_as_the_engine_marked_requests(
    full: Conversation, one_hour: bool, keep: list[bool], marks: str
) -> None:
    """Growing views of a conversation (some calls dropping an early message, as a compaction
    would) priced two ways: the simulator placing the engine's breakpoints itself, and the requests
    ``engine.place_breakpoints`` marks (what a replay dumps) priced as sent. Same bill per call,
    with the request's own marks before the engine's (a marked system block first) or automatic
    caching, and a counter that frames each message (as a string message and its block must)."""
    if marks == "marked first" and isinstance(full.system, tuple):
        full = full.model_copy(update={"system": full.system[::-1]})
    if marks == "top-level mark":
        full = full.model_copy(update={"cache_control": dict(EPHEMERAL)})
    views, messages = [], list(full.messages)
    for n in range(1, len(messages) + 1):
        view = full.model_copy(update={"messages": tuple(messages[:n])})
        if keep and not keep[n % len(keep)] and n > 2:
            view = view.model_copy(update={"messages": view.messages[1:]})
        views.append(view)
    ttl = 3600 if one_hour else 300
    cfg = AnthropicCache(min_tokens=0, ttl_s=ttl)
    engine = simulate_cache(
        ((v, 60.0 * i) for i, v in enumerate(views)),
        FixedCounter(),
        cfg.model_copy(update={"placement": "engine"}),
    )
    marked = place_marks(views, ttl)
    sent = simulate_cache(((r, 60.0 * i) for i, r in enumerate(marked)), FixedCounter(), cfg)
    assert [c.usage for c in engine] == [c.usage for c in sent]
    assert [c.breakpoints for c in engine] == [c.breakpoints for c in sent]
    assert [c.errors for c in engine] == [c.errors for c in sent]
    assert engine[-1].breakpoints >= 1


def test_a_string_message_keys_as_its_one_text_block() -> None:
    """Marking a string message turns it into a text block; the cached prefix must not change."""
    plain = Conversation(messages=(Message(role="user", content=words(30)),), system=words(5))
    as_block = Conversation(
        messages=(Message(role="user", content=(text(30, mark=EPHEMERAL),)),),
        system=(TextBlock(text=words(5)),),
    )
    cfg = AnthropicCache(min_tokens=0)
    calls = simulate_cache(
        [(as_block, 0.0), (plain.model_copy(update={"cache_control": EPHEMERAL}), 1.0)],
        WordCounter(),
        cfg,
    )
    assert calls[0].usage.cache_write_5m == 35
    assert calls[1].usage.cache_read == 35


def test_a_harness_reset_rewrites_its_level_and_what_follows() -> None:
    """Hidden prefix: 40 words cached before (tools level) + 60 (system level); messages 30 + 20.
    A messages reset keeps the 100-word prefix; a system reset keeps only the first 40."""
    prefix = (
        PrefixPart(tokens=40, ttl_s=300, label="static", level="tools"),
        PrefixPart(tokens=60, ttl_s=300, label="session system"),
    )
    first = Conversation(messages=(user(text(30, "a")),))
    second = Conversation(messages=(*first.messages, assistant(text(20, "b"))))
    cfg = AnthropicCache(min_tokens=0, placement="auto")
    sim = CacheSimulator(cfg, WordCounter(), prefix)
    assert sim.step(first, 0.0).usage == Usage(cache_write_5m=130)
    assert sim.step(second, 10.0).usage == Usage(cache_read=130, cache_write_5m=20)
    # the same request again, after the harness changed the messages level: 100 read, 50 written
    assert sim.step(second, 20.0, reset="messages").usage == Usage(
        cache_read=100, cache_write_5m=50
    )
    assert sim.step(second, 30.0).usage == Usage(cache_read=150)
    # after a system reset only the tools-level part is read: 40 read, 110 written
    assert sim.step(second, 40.0, reset="system").usage == Usage(cache_read=40, cache_write_5m=110)
    assert sim.step(second, 50.0).usage == Usage(cache_read=150)


@pytest.mark.parametrize("prefix", [(), (PrefixPart(tokens=40, ttl_s=300, level="tools"),)])
def test_a_system_reset_rewrites_the_messages_without_a_system_position(
    prefix: tuple[PrefixPart, ...],
) -> None:
    """No system prompt and no system-level hidden part: the messages are rewritten all the same."""
    first = Conversation(messages=(user(text(30, "a")),))
    second = Conversation(messages=(*first.messages, assistant(text(20, "b"))))
    sim = CacheSimulator(AnthropicCache(min_tokens=0, placement="auto"), WordCounter(), prefix)
    head = sum(p.tokens for p in prefix)
    sim.step(first, 0.0)
    sim.step(second, 10.0)
    after = sim.step(second, 20.0, reset="system").usage
    assert after == Usage(cache_read=head, cache_write_5m=50)


class NotedText(TextBlock):
    """A subclass of a block class, as a caller's own model might be."""


class NotedThinking(ThinkingBlock):
    """A subclass of a thinking block."""


def test_subclassed_blocks_are_handled_as_their_base_class() -> None:
    # The simulator classifies blocks once per class (not with isinstance per block): a
    # subclass must still key, count and reject as its base class does.
    first = conv(user(marked(U1)))
    second = conv(user(NotedText(text=U1.text)), assistant(A1), user(marked(U2)))
    got = run([(first, 0.0), (second, 60.0)])
    assert got[1] == usage(r=2100, w5=50 + 30)  # the same key as the base-class block: read
    thought = NotedThinking(thinking="hmm", signature="sig", cache_control=EPHEMERAL)
    rejected = conv(user(U1), assistant(thought, A1), user(marked(U2)))
    (call,) = simulate_cache([(rejected, 0.0)], WordCounter(), CFG)
    assert call.errors == ("cache_control on a thinking block (the provider rejects it)",)
    assert call.breakpoints == 2  # system and U2: the thinking block is never a breakpoint


def test_shared_messages_by_identity_and_equality() -> None:
    a, b, c, d = user(text(3, "a")), assistant(text(3, "b")), user(text(3, "c")), user(text(3, "d"))
    twin = user(text(3, "a"))  # equal to ``a``, another object
    assert _shared_messages((a, b), (a, b, c)) == 2  # the history grew
    assert _shared_messages((a, b, c), (a, b)) == 2  # it shrank
    assert _shared_messages((a, d, c), (a, b, c, d)) == 1  # a message in the middle changed
    assert _shared_messages((twin, b), (a, b, c)) == 2  # equal and the last one shared
    assert _shared_messages((twin, d), (a, b, c)) == 0  # otherwise by identity
    assert _shared_messages((), (a,)) == 0


def test_blocks_with_extra_fields_key_by_their_whole_content() -> None:
    """A text or tool_use block with extra fields (Claude Code writes a "caller" on every
    tool_use) keys by its fields and extras: an equal copy reads what the first wrote, a changed
    extra is new content (its prefix is written again from there on)."""
    use = ToolUseBlock(id="t1", name="Read", input={"path": "a.py"}, caller={"type": "direct"})
    note = TextBlock.model_validate({"type": "text", "text": words(40, "n"), "citations": None})
    first = conv(user(U1), assistant(note, use), user(marked(U2)))
    again = conv(
        user(U1),
        assistant(note.model_copy(deep=True), use.model_copy(deep=True)),
        user(marked(U2)),
    )
    other = use.model_copy(update={"caller": {"type": "code_execution"}})
    changed = conv(user(U1), assistant(note, other), user(marked(U2)))
    got = run([(first, 0.0), (again, 10.0), (changed, 20.0)])
    tool_use = len(("Read " + '{"path":"a.py"}').split())
    written = 2000 + 100 + 40 + tool_use + 30
    assert got[0] == usage(w5=written)
    assert got[1] == usage(r=written)
    assert got[2] == usage(r=2000, w5=written - 2000)  # system read, the messages written again


def test_a_lone_surrogate_in_a_block_prices() -> None:
    """Text read from a file may hold a lone surrogate (JSON allows the escape); the simulator
    digests such blocks without JSON, which cannot encode one, and equal blocks still key alike."""
    bad = "output \ud800 here"
    use = ToolUseBlock(id="t", name="x", input={"a": bad})
    ask = Message(role="user", content="go")
    calls = Message(role="assistant", content=(use,))

    def answer() -> Message:  # a new, equal object each time
        return Message(
            role="user", content=(ToolResultBlock(tool_use_id="t", content=(TextBlock(text=bad),)),)
        )

    first = Conversation(model="claude-sonnet-4-5", messages=(ask, calls, answer()))
    more = Message(role="user", content="more")
    second = first.with_messages(
        (ask, calls, answer(), Message(role="assistant", content="ok"), more)
    )
    config = AnthropicCache(min_tokens=0, placement="auto")
    cached = simulate_cache([(first, 0.0), (second, 1.0)], FixedCounter(), config)
    assert cached[0].cache_write_5m > 0
    assert cached[1].cache_read == cached[0].cache_write_5m  # the equal copy read what was written
