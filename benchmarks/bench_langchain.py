"""What people use instead: LangChain's history helpers against contextkit, on the same session.

Optional (``langchain-core`` is not a contextkit dependency): every test here skips, saying so,
unless the ``bench-extra`` group is installed::

    uv run --group bench-extra pytest benchmarks/bench_langchain.py -s -p no:cacheprovider

- ``count_tokens_approximately`` re-run over the history at every call, against contextkit's
  memoised count of every request (``TiktokenCounter``).
- ``trim_messages`` at every call of a 300-call session, against :class:`SlidingWindow` with the
  same budget and the same kind of count (characters / 4 plus 3 per message): the time per call,
  and whether what each keeps is still a request the provider accepts. LangChain's output is
  mapped back to the blocks it came from and checked with :func:`contextkit.messages.validate`
  (a ``tool_result`` whose ``tool_use`` was trimmed away, a history that starts with the
  assistant, ... make the next call fail with HTTP 400).

Each test checks what it measured; the timings are printed (and compared only in benchmark runs:
2 noisy cores).
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from bench_replay import count_every_request, synthetic
from contextkit.messages import (
    Conversation,
    ThinkingBlock,
    validate,
)
from contextkit.peers._langchain import LangChainHistory
from contextkit.peers._langchain import back_to_request as peer_back
from contextkit.peers._langchain import to_langchain as peer_to_langchain
from contextkit.replay._recall import message_text, system_text
from contextkit.strategies import CallFacts, SlidingWindow
from contextkit.strategies._structure import last_turn_start
from contextkit.tokens import ApproxCounter
from timing import best_of

BUDGET = 60_000
"""Tokens each trimmer may keep: the 300-call session passes it about a third of the way in."""
SLACK = 0.02
"""Over the budget means by more than this share: the two approximate counts (LangChain's and
:class:`ApproxCounter`, both characters / 4 plus 3 per message) differ by up to ~1.4% here."""

if importlib.util.find_spec("langchain_core") is None:
    pytest.skip(
        "langchain-core is not installed (not a contextkit dependency, deliberately not installed; "
        "uv run --group bench-extra ... installs it): the LangChain comparisons are skipped",
        allow_module_level=True,
    )

# Optional and untyped here: imported only when installed.
from langchain_core.messages import (  # type: ignore[import-not-found,unused-ignore]  # noqa: E402
    SystemMessage,
    trim_messages,
)
from langchain_core.messages.utils import (  # type: ignore[import-not-found,unused-ignore]  # noqa: E402
    count_tokens_approximately,
)


def to_langchain(request: Conversation) -> LangChainHistory:
    """The request as LangChain messages (:func:`contextkit.peers._langchain.to_langchain`), the
    system prompt first."""
    history = LangChainHistory()
    if request.system:
        history.add(SystemMessage(content=system_text(request)), -1, "")
    messages = peer_to_langchain(request.messages)
    for lc in messages.messages:
        history.add(lc, *messages.origin[id(lc)])
    return history


def back_to_request(
    kept: list[Any], history: LangChainHistory, request: Conversation
) -> Conversation:
    """The request LangChain's trimmed history stands for (the system prompt left aside)."""
    body = [m for m in kept if history.origin[id(m)][0] >= 0]
    return request.with_messages(peer_back(body, history, request.messages))


@dataclass
class _Outcome:
    seconds: list[float] = field(default_factory=list)
    kept_tokens: list[int] = field(default_factory=list)
    invalid: Counter[str] = field(default_factory=Counter)
    invalid_calls: int = 0
    over_budget: int = 0
    over_views: list[Conversation] = field(default_factory=list)
    empty: int = 0


def _judge(outcome: _Outcome, view: Conversation, seconds: float) -> None:
    counter = ApproxCounter()
    outcome.seconds.append(seconds)
    # What both trimmers see and budget: system prompt and messages (trim_messages is not told
    # of the tool definitions, which SlidingWindow counts too, so it keeps a little less).
    tokens = counter.count_conversation(view.model_copy(update={"tools": ()}))
    outcome.kept_tokens.append(tokens)
    over = tokens > BUDGET * (1 + SLACK)
    outcome.over_budget += over
    if over:
        outcome.over_views.append(view)
    outcome.empty += not view.messages
    problems = validate(view)
    outcome.invalid_calls += bool(problems)
    outcome.invalid.update(p.code for p in problems)


def _langchain_trim(start_on: str | None) -> _Outcome:
    session = synthetic(300)
    outcome = _Outcome()
    for call in session.calls:
        history = to_langchain(call.request)  # a LangChain harness holds these already
        start = time.process_time()
        kept = trim_messages(
            history.messages,
            max_tokens=BUDGET,
            token_counter=count_tokens_approximately,
            strategy="last",
            include_system=True,
            start_on=start_on,
        )
        seconds = time.process_time() - start
        _judge(outcome, back_to_request(kept, history, call.request), seconds)
    return outcome


def _contextkit_window() -> _Outcome:
    session = synthetic(300)
    outcome = _Outcome()
    window = SlidingWindow(max_tokens=BUDGET)
    facts = CallFacts(counter=ApproxCounter(), budget_tokens=BUDGET)
    for call in session.calls:
        start = time.process_time()
        view = window(call.request, facts).view
        seconds = time.process_time() - start
        _judge(outcome, view, seconds)
    return outcome


def _line(name: str, outcome: _Outcome) -> str:
    median_ms = statistics.median(outcome.seconds) * 1e3
    codes = ", ".join(f"{c} x{n}" for c, n in outcome.invalid.most_common()) or "none"
    most = max(outcome.kept_tokens) - BUDGET
    overshoot = f" (by up to {most:,} tokens)" if outcome.over_budget else ""
    return (
        f"  {name:<44} {median_ms:6.2f} ms/call (median); {outcome.invalid_calls:3d} of 300 "
        f"calls would be refused ({codes}); {outcome.over_budget} over the budget{overshoot}; "
        f"{outcome.empty} with no message left"
    )


def test_trim_messages_against_the_sliding_window(request: pytest.FixtureRequest) -> None:
    outcomes = {
        "langchain trim_messages (strategy=last)": _langchain_trim(None),
        "langchain trim_messages (start_on=human)": _langchain_trim("human"),
        "contextkit SlidingWindow": _contextkit_window(),
    }
    print(f"\n300 calls, budget {BUDGET:,} tokens (characters / 4 + 3 per message), every call:")
    print("\n".join(_line(name, o) for name, o in outcomes.items()))
    ours = outcomes["contextkit SlidingWindow"]
    assert ours.invalid_calls == 0  # every view contextkit keeps is one the provider accepts
    assert ours.empty == 0
    # Where it stays over the budget, the latest turn holds thinking, which must go back
    # unmodified: it is kept whole (best effort), where start_on=human keeps no message at all.
    for view in ours.over_views:
        latest = last_turn_start(view.messages)
        assert latest is not None
        assert any(isinstance(b, ThinkingBlock) for m in view.messages[latest:] for b in m.blocks)
    for outcome in outcomes.values():
        assert len(outcome.seconds) == 300
        assert max(outcome.kept_tokens) > 0
    # The check can fail: the raw history, cut at a tool result, is refused.
    cut = synthetic(300).calls[-1].request
    assert validate(cut.with_messages(cut.messages[2:]))
    if request.config.option.benchmark_enable:
        mine = statistics.median(ours.seconds)
        theirs = statistics.median(outcomes["langchain trim_messages (strategy=last)"].seconds)
        print(f"  trim_messages / SlidingWindow per call: {theirs / mine:.1f}x")


def test_count_tokens_approximately_against_memoised_counts() -> None:
    """LangChain's helper re-counts the whole list at every call; contextkit memoises."""
    session = synthetic(300)

    def langchain() -> list[int]:
        return [
            count_tokens_approximately(
                [{"role": m.role, "content": message_text(m)} for m in c.request.messages]
            )
            for c in session.calls
        ]

    theirs = best_of(langchain, repeats=1)
    ours = best_of(lambda: count_every_request(session), repeats=1)
    print(f"\n300 calls: langchain count_tokens_approximately {theirs / ours:.1f}x contextkit")
    assert len(langchain()) == len(session.calls)
    assert theirs > 0
    assert ours > 0
