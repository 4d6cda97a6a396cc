"""The engine's own cost per call is small beside the strategy it runs.

A seeded 1,000-message view (a task, then tool rounds with results of a few hundred tokens) sits in
a :class:`ContextEngine` with :class:`EvictToolResults`; token counts are memoised (the counter is
warmed once, as in a live loop where every message was counted at an earlier call). One engine
call is ``prepare`` (strategy + cache breakpoints) + ``record`` (call record, append) + ``add`` (the
next tool result), with no network and no checkpoint. Beside it: the strategy applied alone to the
same view. Timings are compared as a ratio within one run (best of interleaved repeats).

Run ``uv run pytest benchmarks/bench_engine.py --benchmark-enable -s`` to see the numbers; with
``--benchmark-disable`` (the normal suite) the two benchmarks run once as correctness checks and
the ratio test skips.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from contextkit.engine import MAX_BREAKPOINTS, ContextEngine, count_breakpoints
from contextkit.messages import Message, Tool
from contextkit.strategies import CallFacts, EvictToolResults
from contextkit.testing import FixedCounter, assistant, tool_result, tool_use, user

VIEW_MESSAGES = 1_000
TARGET_RATIO = 2.0
"""An engine call may cost at most twice the strategy alone (breakpoints, records, appends)."""
TOOLS = (Tool(name="read", description="Read a file.", input_schema={"type": "object"}),)
STRATEGY = EvictToolResults(keep_last=3)


def _history(n_messages: int, seed: int = 7) -> list[Message]:
    rng = random.Random(seed)
    messages = [user("Fix the failing test in the parser.")]
    i = 0
    while len(messages) < n_messages:
        size = rng.randint(20, 200)
        body = "".join(f"line {n}: value = {rng.random():.6f}\n" for n in range(size))
        messages.append(assistant(f"Reading part {i}.", tool_uses=[tool_use(f"t{i}", "read")]))
        messages.append(user(tool_result(f"t{i}", body)))
        i += 1
    return messages


def _engine() -> ContextEngine:
    engine = ContextEngine(
        STRATEGY,
        model="bench",
        system="You are a coding agent.",
        tools=TOOLS,
        counter=FixedCounter(),
        budget_tokens=10_000_000,  # eviction by keep_last only: the view keeps its length
        context_window=10_000_000,  # (a budget may not exceed the window)
    )
    engine.add(*_history(VIEW_MESSAGES))
    engine.counter.count_conversation(engine.view)  # memoise, as earlier calls would have
    engine.prepare()
    engine.record(assistant("warm", tool_uses=[tool_use("w", "read")]), stop_reason="tool_use")
    engine.add(user(tool_result("w", "ok")))
    return engine


def _engine_call(engine: ContextEngine) -> Callable[[], None]:
    state = {"i": 0}

    def call() -> None:
        i = state["i"] = state["i"] + 1
        engine.prepare()
        engine.record(
            assistant(f"s{i}", tool_uses=[tool_use(f"b{i}", "read")]), stop_reason="tool_use"
        )
        engine.add(user(tool_result(f"b{i}", f"result {i}\n" * 40)))

    return call


def _strategy_alone(engine: ContextEngine) -> Callable[[], None]:
    view = engine.view
    facts = CallFacts(counter=engine.counter, budget_tokens=engine.budget_tokens, model="bench")

    def apply() -> None:
        STRATEGY(view, facts)

    return apply


def test_engine_call(benchmark: BenchmarkFixture) -> None:
    engine = _engine()
    assert len(engine.view.messages) >= VIEW_MESSAGES
    benchmark.pedantic(_engine_call(engine), rounds=50, iterations=1)  # type: ignore[no-untyped-call]
    assert len(engine.calls) >= 2
    assert all(count_breakpoints(c.request) <= MAX_BREAKPOINTS for c in engine.calls)


def test_strategy_alone(benchmark: BenchmarkFixture) -> None:
    engine = _engine()
    benchmark.pedantic(_strategy_alone(engine), rounds=50, iterations=1)  # type: ignore[no-untyped-call]


def _best(fn: Callable[[], None], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def test_engine_overhead_ratio(request: pytest.FixtureRequest) -> None:
    options = request.config.option
    if options.benchmark_disable and not options.benchmark_enable:
        pytest.skip("timing ratio: run with --benchmark-enable")
    engine = _engine()
    call, alone = _engine_call(engine), _strategy_alone(_engine())
    call_s = alone_s = float("inf")
    for _ in range(5):  # interleaved, so load on the machine hits both alike
        call_s = min(call_s, _best(call, 10))
        alone_s = min(alone_s, _best(alone, 10))
    ratio = call_s / alone_s
    print(
        f"\nengine call (prepare+record+add) on {len(engine.view.messages)} messages: "
        f"{call_s * 1e3:.2f} ms; strategy alone: {alone_s * 1e3:.2f} ms; "
        f"engine overhead {max(call_s - alone_s, 0) * 1e3:.2f} ms; ratio {ratio:.2f}"
    )
    assert ratio <= TARGET_RATIO
