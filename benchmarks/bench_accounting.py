"""Pricing a session costs a small multiple of one pass of the tokenizer over its unique text.

A seeded 300-call session (``contextkit.session.examples``) is priced with a fresh tiktoken
counter: the
counter memoises per block and the cache simulator reuses the previous request's flattened prefix,
so pricing is linear in the unique text. Beside it, a naive re-count of the full array before every
call shows the quadratic cost avoided. Timings are ratios within one run (best of interleaved
repeats), never absolute times.

The goal is a ratio of at most 1.5 (:data:`TARGET_RATIO`). The ratio is measured only in a
benchmark run (``uv run pytest benchmarks/bench_accounting.py --benchmark-enable -s``), never as a
timed unit test of the normal suite (which runs with ``--benchmark-disable``): there the test skips
and the two benchmarks above still check correctness.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from contextkit.accounting import Ledger, price_session
from contextkit.messages import Block, Message, Tool, to_payload
from contextkit.pricing import ModelPrice
from contextkit.session import Session
from contextkit.session.examples import ExampleSpec, generate_session
from contextkit.tokens import TiktokenCounter, TokenizerUnavailable, block_text
from timing import best_of, interleaved, plain_count, require_benchmark_run

PRICE = ModelPrice(
    model="bench", input=3.0, output=15.0, cache_write_5m=3.75, cache_write_1h=6.0, cache_read=0.3
)
SESSION = generate_session(ExampleSpec(calls=300, user_turns=4, seed=11))
TARGET_RATIO = 1.5


def _counter() -> TiktokenCounter:
    try:
        return TiktokenCounter("o200k_base")
    except TokenizerUnavailable as exc:  # no network and no TIKTOKEN_CACHE_DIR copy
        pytest.skip(str(exc))


def _blocks(message: Message) -> Iterator[Block]:
    yield from message.blocks


def unique_texts(session: Session) -> list[str]:
    """Every distinct text the session sends or receives, once (by content: a text that two
    blocks carry counts once)."""
    seen: set[int] = set()
    texts: dict[str, None] = {}
    for call in session.calls:
        request = call.request
        parts: list[object] = [*request.tools, *request.system_blocks]
        for message in (*request.messages, *([call.response] if call.response else [])):
            parts.extend(_blocks(message) if not isinstance(message.content, str) else [message])
        for part in parts:
            if id(part) not in seen:
                seen.add(id(part))
                texts[_text(part)] = None
    return list(texts)


def _text(part: object) -> str:
    if isinstance(part, Message):
        return part.content if isinstance(part.content, str) else ""
    if isinstance(part, Tool):
        # The text MemoCounter.count_tool tokenizes: the tool's compact JSON payload.
        return json.dumps(to_payload(part), ensure_ascii=False, separators=(",", ":"))
    return block_text(part)  # type: ignore[arg-type]  # the remaining parts are blocks


def tokenize_once(texts: list[str]) -> int:
    """The floor: tiktoken over the unique texts, gathered beforehand (not timed), no memo."""
    count = plain_count()
    return sum(count(t) for t in texts)


def price_fresh(session: Session) -> Ledger:
    return price_session(session, _counter(), PRICE)


NAIVE_STRIDE = 10
"""The naive re-count is quadratic (about a minute here): it is timed on every 10th call and
scaled up, an estimate that the report labels as such."""


def naive_recount(session: Session, stride: int = 1) -> int:
    """Re-tokenize the whole array before every ``stride``-th call, with no memo."""
    count = plain_count()
    total = 0
    for call in session.calls[::stride]:
        request = call.request
        texts = [_text(p) for p in (*request.tools, *request.system_blocks)]
        for message in request.messages:
            if isinstance(message.content, str):
                texts.append(message.content)
            else:
                texts.extend(block_text(b) for b in message.content)
        total += sum(count(t) for t in texts)
    return total


def test_price_session_300_calls(benchmark: pytest.FixtureRequest) -> None:
    ledger = benchmark(price_fresh, SESSION)  # type: ignore[operator]
    assert isinstance(ledger, Ledger)
    assert ledger.calls == 300
    totals = ledger.simulated.total_input
    assert (totals == ledger.context_tokens).all()
    assert int(ledger.simulated.cache_read.sum()) > 0
    assert ledger.resend_ratio is not None
    assert ledger.resend_ratio > 10


def test_tokenize_unique_text_once(benchmark: pytest.FixtureRequest) -> None:
    tokens = benchmark(tokenize_once, unique_texts(SESSION))  # type: ignore[operator]
    assert isinstance(tokens, int)
    assert tokens > 10_000


def test_pricing_costs_a_small_multiple_of_tokenizing_once(request: pytest.FixtureRequest) -> None:
    require_benchmark_run(request)
    _counter()  # load the encoding before timing anything
    texts = unique_texts(SESSION)
    tokenize, pricing = interleaved(lambda: tokenize_once(texts), lambda: price_fresh(SESSION))
    naive = best_of(lambda: naive_recount(SESSION, NAIVE_STRIDE), repeats=1) * NAIVE_STRIDE
    print(
        f"\n300 calls: tokenize unique text once {tokenize * 1e3:.1f} ms, price_session "
        f"{pricing * 1e3:.1f} ms ({pricing / tokenize:.2f}x; goal {TARGET_RATIO}x), "
        "naive re-count before every call "
        f"about {naive * 1e3:.0f} ms ({naive / tokenize:.0f}x; every {NAIVE_STRIDE}th call, scaled)"
    )
    assert pricing <= TARGET_RATIO * tokenize
    assert naive > 20 * pricing
