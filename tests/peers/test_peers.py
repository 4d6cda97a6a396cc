"""The peers replayed as strategies, against the real packages (Headroom: the ``adapters``
dependency group, which ``.ci/run`` installs; LangChain: the dev group): called the way a harness
calls a strategy, one request after the other, and replayed end to end."""

from __future__ import annotations

import itertools
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from contextkit.errors import ConfigError, ContextkitError
from contextkit.messages import Conversation, Message, TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.peers import PEER_NAMES, RequestRewriter, peer
from contextkit.replay import can_be_best, run_strategy
from contextkit.session import Call, Session, Usage
from contextkit.strategies import CallFacts
from contextkit.strategies._summary_model import SUMMARY_OPEN
from contextkit.tokens import ApproxCounter


@pytest.fixture
def headroom() -> None:
    """Headroom is in the ``adapters`` group (``.ci/run`` installs it): CI fails without it, a
    plain ``uv run pytest`` skips its tests (the LangChain ones still run)."""
    if os.environ.get("CI"):
        import headroom  # noqa: F401, PLC0415 - CI must have it: fail, never skip
    else:
        pytest.importorskip("headroom", reason="headroom-ai: uv sync --group adapters")


START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def _rows(n: int, seed: int) -> str:
    return json.dumps(
        [
            {"id": i, "name": f"order-{seed}-{i}", "status": "shipped", "total": i * 7}
            for i in range(n)
        ]
    )


def _round(i: int, rows: int = 200, remark: bool = False) -> tuple[Message, Message]:
    use = ToolUseBlock(id=f"toolu_{i:03d}", name="Bash", input={"command": f"orders --page {i}"})
    ask = Message(role="assistant", content=(TextBlock(text=f"Page {i}."), use))
    said = (TextBlock(text=f"Good, page {i + 1} next."),) if remark else ()
    answer = Message(
        role="user", content=(ToolResultBlock(tool_use_id=use.id, content=_rows(rows, i)), *said)
    )
    return ask, answer


def _tape(rounds: int, remark: bool = False) -> list[Message]:
    messages = [Message(role="user", content="List every shipped order. Never touch refunds.")]
    for i in range(rounds):
        messages.extend(_round(i, remark=remark))
    return messages


def _facts(call: int, gap_s: float = 10.0, **more: Any) -> CallFacts:
    now = START + timedelta(seconds=gap_s * call)
    before = START + timedelta(seconds=gap_s * (call - 1)) if call else None
    return CallFacts(
        counter=ApproxCounter(),
        model="claude-sonnet-4-5",
        now=now,
        previous_call_at=before,
        call_index=call,
        **more,
    )


class _Spy:
    """Wraps a peer's ``rewrite`` to see what it is given."""

    def __init__(self, rewriter: RequestRewriter) -> None:
        self.given: list[tuple[int, int]] = []
        inner = rewriter.rewrite

        def rewrite(messages: tuple[Message, ...], facts: CallFacts, frozen: int) -> Any:
            self.given.append((len(messages), frozen))
            return inner(messages, facts, frozen)

        rewriter.rewrite = rewrite  # type: ignore[method-assign]


def _drive(
    strategy: RequestRewriter,
    rounds: int,
    gaps: dict[int, float] | None = None,
    tape: list[Message] | None = None,
    **facts: Any,
) -> list[Conversation]:
    """A harness loop: each call sends the previous view plus the new round."""
    tape = tape if tape is not None else _tape(rounds)
    view = Conversation(system="You are an agent.", messages=tuple(tape[:3]))
    views = []
    at = 0.0
    for call in range(rounds):
        if call:
            view = view.append(*tape[1 + 2 * call : 3 + 2 * call])
        gap = (gaps or {}).get(call, 10.0)
        at += gap
        now = START + timedelta(seconds=at)
        given = CallFacts(
            counter=ApproxCounter(),
            model="claude-sonnet-4-5",
            now=now,
            previous_call_at=now - timedelta(seconds=gap) if call else None,
            call_index=call,
            **facts,
        )
        view = strategy(view, given).view
        views.append(view)
    return views


@pytest.mark.usefixtures("headroom")
def test_headroom_proxy_sends_again_what_the_warm_cache_holds() -> None:
    """As its proxy: earlier output goes out byte for byte while the cache is warm (frozen = what
    the previous request sent), and may all be rewritten once the cache is cold (frozen 0)."""
    proxy = peer("headroom-proxy")
    spy = _Spy(proxy)
    views = _drive(proxy, 8, gaps={6: 900.0})
    for before, after in itertools.pairwise(views):
        n = len(before.messages)
        assert len(after.messages) == n + 2
    for call in range(1, 6):
        earlier = views[call - 1].messages
        assert all(a is b for a, b in zip(views[call].messages, earlier, strict=False))
        assert spy.given[call] == (len(earlier) + 2, len(earlier))
    assert spy.given[6][1] == 0  # 15 minutes later: nothing is cached, nothing frozen
    counter = ApproxCounter()
    full = Conversation(system="You are an agent.", messages=tuple(_tape(8)[:17]))
    assert counter.count_conversation(views[-1]) < counter.count_conversation(full) * 0.8


@pytest.mark.usefixtures("headroom")
def test_headroom_library_compresses_the_whole_history_every_time() -> None:
    library = peer("headroom-library")
    spy = _Spy(library)
    views = _drive(library, 6)
    assert [given for given, _ in spy.given] == [3 + 2 * c for c in range(6)]  # full history
    results = [b for m in views[-1].messages for b in m.blocks if isinstance(b, ToolResultBlock)]
    assert len(results) == 6
    assert sum(len(r.text) for r in results) < sum(len(_rows(200, i)) for i in range(6)) * 0.8


def test_langchain_trim_keeps_the_budget_from_the_full_history() -> None:
    """As the LangGraph docs apply it before each model call: the full history is trimmed anew,
    to a suffix that starts at a human message; the blocks kept are the ones given."""
    trim = peer("langchain-trim")
    spy = _Spy(trim)
    tape = _tape(8, remark=True)
    views = _drive(trim, 8, tape=tape, budget_tokens=20_000)
    assert [given for given, _ in spy.given] == [3 + 2 * c for c in range(8)]
    blocks = {id(b) for m in tape for b in m.blocks}
    counter = ApproxCounter()
    assert any(len(v.messages) < 3 + 2 * c for c, v in enumerate(views)), "it must cut"
    for view in views:
        assert view.messages
        assert counter.count_conversation(view) <= 20_000 * 1.05
        for m in view.messages:  # text given as a string is the same message, else blocks
            assert isinstance(m.content, str) or all(id(b) in blocks for b in m.blocks)
            assert not isinstance(m.content, str) or any(m is t for t in tape)
        assert view.messages[0].role == "user"
        assert not any(isinstance(b, ToolResultBlock) for b in view.messages[0].blocks)


def test_langchain_trim_of_an_agent_run_sends_nothing_once_over_budget() -> None:
    """One typed request, then only tool rounds: the documented ``start_on="human"`` finds no
    human message inside the budget, so nothing is left; the replay says the task is lost."""
    views = _drive(peer("langchain-trim"), 8, budget_tokens=20_000)
    assert views[0].messages
    assert not views[-1].messages
    replayed = run_strategy(_session(8), "langchain-trim", window=25_000).summary()
    assert replayed["refused_calls"] >= 1  # no message at all: the provider refuses it
    assert not can_be_best(replayed)
    assert replayed["probe_task"] is not None
    assert replayed["probe_task"] < 1


def test_langchain_summary_persists_and_is_billed() -> None:
    summary = peer("langchain-summary")
    views = _drive(summary, 12, context_window=30_000)
    summarised = [v for v in views if SUMMARY_OPEN in v.messages[0].blocks[0].model_dump_json()]
    assert summarised, "12 pages of orders pass 80% of a 30k window"
    first = summarised[0]
    assert len(first.messages) <= 21  # the summary, then LangChain's last 20 messages
    session = _session(12)
    replayed = run_strategy(session, "langchain-summary", window=30_000).summary()
    assert replayed["summariser_calls"] >= 1
    assert replayed["summariser_usd"] > 0
    assert replayed["probes"] > 0


def _session(rounds: int) -> Session:
    tape = _tape(rounds)
    calls = []
    for c in range(rounds):
        request = Conversation(
            model="claude-sonnet-4-5",
            system="You are an agent.",
            messages=tuple(tape[: 3 + 2 * c]),
        )
        response = (
            tape[3 + 2 * c] if 3 + 2 * c < len(tape) else Message(role="assistant", content="Done.")
        )
        calls.append(
            Call(
                request=request,
                response=response,
                usage=Usage(input_tokens=1, output_tokens=20),
                model="claude-sonnet-4-5",
                timestamp=START + timedelta(seconds=10 * c),
            )
        )
    return Session(path="orders.jsonl", format="synthetic", session_id="orders", calls=tuple(calls))


@pytest.mark.parametrize("name", PEER_NAMES)
def test_every_peer_replays_end_to_end(name: str, request: pytest.FixtureRequest) -> None:
    if name.startswith("headroom"):
        request.getfixturevalue("headroom")
    result = run_strategy(_session(10), name)
    summary = result.summary()
    assert summary["cost_usd"] is not None
    assert summary["cost_usd"] > 0
    assert "cost_plus_recovery_usd" in summary
    assert result.strategy == name


def test_unknown_peer_and_missing_extra_are_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="no peer named 'nope'; peers: headroom-proxy"):
        peer("nope")
    monkeypatch.setitem(sys.modules, "headroom", None)
    strategy = peer("headroom-proxy")
    view = Conversation(messages=(Message(role="user", content="hi"),))
    with pytest.raises(ContextkitError, match="pip install headroom-ai"):
        strategy(view, _facts(0))
