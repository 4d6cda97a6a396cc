"""Speed goals are ratios measured in one run against a baseline on the same machine. They are
checked only in a benchmark run (``--benchmark-enable``); in the normal suite (which runs with
``--benchmark-disable``) the benchmarks still run once as plain tests and check their results,
and the ratio checks skip: a timed unit test on 2 noisy cores would say more about the load than
about the code."""

from __future__ import annotations

import pytest


def require_benchmark_run(request: pytest.FixtureRequest) -> None:
    """Skip the calling test unless this is a benchmark run."""
    options = request.config.option
    if getattr(options, "benchmark_disable", False) and not getattr(
        options, "benchmark_enable", False
    ):
        pytest.skip("a speed ratio: measured in benchmark runs (--benchmark-enable), not here")
