"""Every preset on every recorded session of the corpus, checked at every call of the replay.

At each call the view a strategy sends must:

- break no provider rule the tape (the full history) and the recorded request do not already break
  (a broken transcript may carry a dangling ``tool_use``; the view may not add to it);
- hold no more tokens than the tape;
- keep the system prompt, the newest message, and the latest user request that opens a turn
  (verbatim: its message, or its blocks after an in-turn summary in that message).

The floor of the replay issue: ``as-recorded`` reproduces the recorded bill of every session whose
calls all carry usage. The last test prints the cost/recall table of every session and preset and
names the sessions where a preset is at least 30% cheaper than as recorded, with recall >= 0.9 and
no overflowing call (run with ``-s`` to see it).
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from contextkit.accounting import default_cache, price_session
from contextkit.cache import AnthropicCache
from contextkit.messages import Conversation, Message, validate
from contextkit.models import resolve_model
from contextkit.pricing import UnknownPriceWarning, lookup_price
from contextkit.replay import Replay, replay, replay_as_recorded
from contextkit.session import Session
from contextkit.strategies import PRESETS, is_summary_block, strategy_from_spec
from contextkit.testing.corpus import labelled_sessions
from contextkit.tokens import TokenCounter, counter_for

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

CHEAPER = 0.30
MIN_RECALL = 0.9


PRICED_AS_SENT = ("none", "evict-tool-results", "sliding-window", "summary")
"""The presets whose dumped requests are priced again as sent (the check is the same for all)."""


@dataclass(frozen=True)
class Digest:
    """What the tests below need of one session replayed under every preset, kept once the replays
    are gone: a replay holds every view, tape and dumped request of its session, and all of them
    for every preset of every session do not fit in memory (one 2 MB Codex rollout alone took
    8.7 GB that way). Each session is replayed, checked and dropped in turn."""

    key: str
    calls: int
    has_usage: bool
    recorded: dict[str, Any]
    presets: dict[str, dict[str, Any]]
    """Each preset's ``Replay.summary()``."""
    problems: dict[str, list[str]]
    """Each preset's broken rules, per call (:func:`_problems`)."""
    prices_differently: frozenset[str]
    """The presets of :data:`PRICED_AS_SENT` whose dumped requests price otherwise."""
    usage_sums: dict[str, int] | None
    """The recorded usage summed over the calls (None: a call has no usage)."""
    bill: float | None
    """The recorded usage priced call by call, the harness's compaction calls included."""


def _usage_sums(session: Session) -> dict[str, int] | None:
    usages = [c.usage for c in session.calls]
    if any(u is None for u in usages):
        return None
    return {
        "input_tokens": sum(u.input_tokens for u in usages if u),
        "cache_read": sum(u.cache_read for u in usages if u),
        "cache_write": sum(u.cache_write for u in usages if u),
        "output": sum(u.output_tokens for u in usages if u),
    }


def _recorded_bill(session: Session) -> float | None:
    bill = _bill(session)
    # The harness's own compaction calls (Claude Code's agent-acompact-* subagents) belong to what
    # the recording cost.
    for sub in session.subagents:
        if sub.harness_compaction and bill is not None:
            extra = _bill(sub)
            bill = None if extra is None else bill + extra
    return bill


def _digest(key: str, session: Session) -> Digest:
    counter = counter_for(session.model_info)
    summaries: dict[str, dict[str, Any]] = {}
    problems: dict[str, list[str]] = {}
    differing: set[str] = set()
    for name in PRESETS:
        result = replay(session, strategy_from_spec(name), name=name, counter=counter)
        problems[name] = _problems(key, session, counter, result, name)
        if name in PRICED_AS_SENT and _priced(result) != _priced_as_sent(session, counter, result):
            differing.add(name)
        summaries[name] = result.summary()
        del result
    recorded = replay_as_recorded(session, counter=counter).summary()
    return Digest(
        key=key,
        calls=len(session.calls),
        has_usage=all(c.usage for c in session.calls),
        recorded=recorded,
        presets=summaries,
        problems=problems,
        prices_differently=frozenset(differing),
        usage_sums=_usage_sums(session),
        bill=_recorded_bill(session),
    )


@pytest.fixture(scope="module")
def replayed(corpus: Path) -> list[Digest]:
    out = []
    with warnings.catch_warnings():
        # Models without a known price ("<no model>", very new ones) cost "unknown": that is
        # reported in the table, not a failure of the strategies.
        warnings.simplefilter("ignore", UnknownPriceWarning)
        for key, session in labelled_sessions(corpus):
            out.append(_digest(key, session))
    assert out, "the corpus holds no session with model calls"
    return out


def _latest_turn_start(messages: Sequence[Message]) -> Message | None:
    for message in reversed(messages):
        if message.role == "user" and not any(message.tool_results()):
            return message
    return None


def _holds(view: Conversation, message: Message) -> bool:
    return any(m is message or m == message for m in reversed(view.messages))


def _keeps_request(view: Conversation, latest: Message) -> bool:
    """The latest request is in the view verbatim: its message, or its blocks ending a user
    message (an in-turn summary joins them in their message, before them)."""
    if _holds(view, latest):
        return True
    own = tuple(b for b in latest.blocks if not is_summary_block(b))
    return bool(own) and any(
        m.role == "user" and m.blocks[-len(own) :] == own for m in reversed(view.messages)
    )


def _problems(
    key: str, session: Session, counter: TokenCounter, result: Replay, name: str
) -> list[str]:
    problems = []
    for k, (tape, view, sent) in enumerate(
        zip(result.tapes, result.views, result.requests, strict=True)
    ):
        where = f"{key} [{name}] call {k}"
        allowed = Counter(v.code for v in validate(tape))
        allowed |= Counter(v.code for v in validate(session.calls[k].request))
        added = Counter(v.code for v in validate(sent)) - allowed
        if added:
            problems.append(f"{where}: the view adds violations {dict(added)}")
        if counter.count_conversation(view) > counter.count_conversation(tape):
            problems.append(f"{where}: the view holds more tokens than the tape")
        if view.system != tape.system:
            problems.append(f"{where}: the system prompt changed")
        if tape.messages and not _holds(view, tape.messages[-1]):
            problems.append(f"{where}: the newest message was dropped or edited")
        latest = _latest_turn_start(tape.messages)
        if latest is not None and not _keeps_request(view, latest):
            problems.append(f"{where}: the latest user request was dropped or edited")
    return problems


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_view_is_valid_smaller_and_keeps_what_it_must(
    replayed: list[Digest], name: str
) -> None:
    problems = [p for item in replayed for p in item.problems[name]]
    calls = sum(item.calls for item in replayed)
    assert not problems, f"{len(problems)} problems over {calls} calls:\n" + "\n".join(
        problems[:40]
    )


CLASSES = ("input", "cache_write_5m", "cache_write_1h", "cache_read")


def _priced(result: Replay) -> dict[str, list[int]]:
    """The replay's own bill, call by call (the simulator placed the breakpoints itself)."""
    table = result.ledger.simulated
    return {k: getattr(table, k).tolist() for k in CLASSES}


def _priced_as_sent(
    session: Session, counter: TokenCounter, result: Replay
) -> dict[str, list[int]]:
    """The replay's marked requests (what ``--dump-requests`` writes) priced as sent (the hidden
    prefix of a Claude Code file inferred, as always, from the recorded first request)."""
    cache = default_cache(session, [c.usage for c in session.calls if c.usage] or None)
    if isinstance(cache, AnthropicCache):
        cache = cache.model_copy(update={"placement": "as-sent"})
    table = price_session(
        session, counter, cache=cache, output="recorded", requests=result.requests
    ).simulated
    return {k: getattr(table, k).tolist() for k in CLASSES}


@pytest.mark.parametrize("name", PRICED_AS_SENT)
def test_the_dumped_requests_price_as_the_replay(replayed: list[Digest], name: str) -> None:
    """The simulator places the engine's breakpoints itself when replaying; the requests built
    with ``place_breakpoints`` (the dump) must be billed identically, call by call."""
    differing = [item.key for item in replayed if name in item.prices_differently]
    assert not differing, f"{name}: {len(differing)} sessions price differently: {differing[:10]}"


def test_as_recorded_reproduces_the_recorded_bill(replayed: list[Digest]) -> None:
    checked = 0
    for item in replayed:
        if item.usage_sums is None:
            continue
        summary = item.recorded
        for field, total in item.usage_sums.items():
            assert summary[field] == total, (item.key, field)
        if item.bill is None:
            assert summary["cost_usd"] is None, item.key
        else:
            assert summary["cost_usd"] == pytest.approx(item.bill, rel=1e-9), item.key
        checked += 1
    assert checked >= 10  # Claude Code, claude-trace, Codex, Gemini, OpenHands files have usage


def _bill(session: Session) -> float | None:
    """The recorded usage priced call by call at each call's model price (None: a price unknown)."""
    total = 0.0
    for call in session.calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnknownPriceWarning)
            price = lookup_price(resolve_model(call.model or call.request.model), call.timestamp)
        if price is None or call.usage is None:
            return None
        total += price.cost(call.usage)
    return total


def _money(value: float | None) -> str:
    return "unknown" if value is None or math.isnan(value) else f"{value:.4f}"


def _wins(item: Digest) -> list[str]:
    """Presets at least 30% cheaper than as recorded, with recall >= 0.9 and no overflow."""
    base = item.recorded["cost_usd"]
    if not base:
        return []
    # The same preset against `none` (the same simulator on the full tape) separates what the
    # strategy saves from the gap between the simulation and the recorded bill.
    tape = item.presets["none"]["cost_usd"]
    wins = []
    for name, s in item.presets.items():
        cheap = s["cost_usd"] is not None and s["cost_usd"] <= (1 - CHEAPER) * base
        if cheap and s["recall"] >= MIN_RECALL and s["overflow_calls"] == 0:
            versus = f", {1 - s['cost_usd'] / tape:.0%} vs none" if tape else ""
            wins.append(f"{name} ({1 - s['cost_usd'] / base:.0%} cheaper{versus})")
    return wins


def test_cost_and_recall_table(replayed: list[Digest]) -> None:
    head = ["session", "calls", "usage", "as-recorded $", *(f"{n} $/recall" for n in PRESETS)]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    winners = []
    for item in replayed:
        cells = [item.key, str(item.calls), "yes" if item.has_usage else "no"]
        cells.append(_money(item.recorded["cost_usd"]))
        for s in item.presets.values():
            over = f" ({s['overflow_calls']} over)" if s["overflow_calls"] else ""
            cells.append(f"{_money(s['cost_usd'])} / {s['recall']:.2f}{over}")
        lines.append(" | ".join(cells))
        wins = _wins(item)
        if wins:
            winners.append(f"{item.key}: {', '.join(wins)}")
    print("\n" + "\n".join(lines))
    print(
        f"\nsessions with a preset >= {CHEAPER:.0%} cheaper, recall >= {MIN_RECALL}, no overflow:"
    )
    print("\n".join(winners) or "(none)")
    assert len(lines) == len(replayed) + 2
    assert all(s["recall"] <= 1.0 for item in replayed for s in item.presets.values())
