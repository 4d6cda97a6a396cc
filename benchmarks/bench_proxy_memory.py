"""The proxy's memory, bounded by its configuration: 10,000 distinct conversations through the
proxy's app with a strategy on (one engine per conversation), against an upstream that answers at
once, as a harness fleet would send them.

``ProxyConfig.max_conversations`` (``contextkit proxy --max-conversations``) caps the
conversations whose lanes and stats rows are kept; the least recently used are dropped (their
stats folded into one row, so totals stay whole). The resident set is read from ``/proc`` after
the bound is reached and again after 10,000 conversations: with the bound it stays flat. With
``--benchmark-enable`` the same load also runs with the bound at 10,000 (nothing dropped), the
baseline the growth is compared with in one run.

Run ``uv run pytest benchmarks/bench_proxy_memory.py --benchmark-enable -s`` to see the numbers.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path

import httpx
import pytest

from contextkit.proxy import ProxyConfig
from contextkit.proxy._app import Proxy
from contextkit.strategies import strategy_from_spec

CONVERSATIONS = 10_000
BOUND = 256
PLATEAU_AT = 1_000
"""Conversations after which the resident set is taken as the plateau (the bound is reached and
every code path has run)."""
MAX_GROWTH_MB = 16.0
"""Growth of the resident set allowed from the plateau to 10,000 conversations with the bound
(measured: under 3 MB; without it, about 100 MB)."""
MESSAGE = {
    "id": "msg_mem",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Read."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1200, "cache_read_input_tokens": 0, "output_tokens": 4},
}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _run(bound: int) -> tuple[Proxy, float, float]:
    """The proxy after ``CONVERSATIONS`` conversations of one call each; the resident set at the
    plateau and at the end."""
    config = ProxyConfig(
        upstream="http://upstream.invalid",
        strategy=strategy_from_spec("evict-tool-results"),
        max_conversations=bound,
    )
    proxy = Proxy(config)
    proxy.client = httpx.AsyncClient(
        transport=httpx.MockTransport(lambda _: httpx.Response(200, json=MESSAGE))
    )
    plateau = 0.0
    transport = httpx.ASGITransport(app=proxy.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy.invalid") as client:
        for i in range(CONVERSATIONS):
            text = f"conversation {i}: summarise the file.\n" + "line of the file\n" * 200
            body = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 100,
                "messages": [{"role": "user", "content": text}],
            }
            answer = await client.post("/v1/messages", json=body)
            assert answer.status_code == 200, answer.text
            if i + 1 == PLATEAU_AT:
                gc.collect()
                plateau = _rss_mb()
    await proxy.client.aclose()
    gc.collect()
    return proxy, plateau, _rss_mb()


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_proxy_memory_is_bounded_by_its_configuration(request: pytest.FixtureRequest) -> None:
    proxy, plateau, end = asyncio.run(_run(BOUND))
    assert proxy.conversations is not None
    assert len(proxy.conversations) == BOUND
    stats = proxy.stats.to_json()
    assert len(stats["conversations"]) == BOUND
    assert stats["total"]["calls"] == CONVERSATIONS
    assert stats["evicted"]["conversations"] == CONVERSATIONS - BOUND
    growth = end - plateau
    line = (
        f"{CONVERSATIONS:,} conversations, max_conversations={BOUND}: resident set "
        f"{plateau:.0f} MB after {PLATEAU_AT:,}, {end:.0f} MB after {CONVERSATIONS:,} "
        f"(+{growth:.1f} MB)"
    )
    options = request.config.option
    if not (options.benchmark_disable and not options.benchmark_enable):  # --benchmark-enable
        _, base_plateau, base_end = asyncio.run(_run(CONVERSATIONS))
        line += (
            f"; with nothing dropped: {base_plateau:.0f} MB -> {base_end:.0f} MB "
            f"(+{base_end - base_plateau:.1f} MB)"
        )
    print("\n" + line)
    assert growth <= MAX_GROWTH_MB, line
