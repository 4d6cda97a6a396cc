"""Speed goals are ratios measured in one run against a baseline on the same machine. They are
checked only in a benchmark run (``--benchmark-enable``); in the normal suite (which runs with
``--benchmark-disable``) the benchmarks still run once as plain tests and check their results,
and the ratio checks skip: a timed unit test on 2 noisy cores would say more about the load than
about the code."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import tiktoken


def require_benchmark_run(request: pytest.FixtureRequest) -> None:
    """Skip the calling test unless this is a benchmark run."""
    options = request.config.option
    if getattr(options, "benchmark_disable", False) and not getattr(
        options, "benchmark_enable", False
    ):
        pytest.skip("a speed ratio: measured in benchmark runs (--benchmark-enable), not here")


def best_of(fn: Callable[[], object], repeats: int = 3) -> float:
    """CPU seconds of ``fn``, best of ``repeats`` runs (load from other processes inflates wall
    time more)."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def interleaved(
    a: Callable[[], object], b: Callable[[], object], repeats: int = 7
) -> tuple[float, float]:
    """Best times of ``a`` and ``b`` run alternately, so that load on a shared machine hits both
    (measuring one and then the other lets a change of load pass for a change of speed)."""
    best_a = best_b = float("inf")
    for _ in range(repeats):
        best_a = min(best_a, best_of(a, 1))
        best_b = min(best_b, best_of(b, 1))
    return best_a, best_b


def plain_count(encoding: str = "o200k_base") -> Callable[[str], int]:
    """tiktoken's own count of one text, with no memo: what the floor (each unique text once)
    and the naive re-count (every text of every request) are timed with. Skips the calling test
    when the encoding cannot be loaded (no network and no ``TIKTOKEN_CACHE_DIR`` copy)."""
    try:
        enc = tiktoken.get_encoding(encoding)
    except Exception as exc:  # tiktoken raises network, IO and value errors alike
        pytest.skip(f"tiktoken encoding {encoding!r} unavailable: {exc}")

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return count
