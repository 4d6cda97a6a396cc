"""Load and faults: ``contextkit proxy`` (the command, in its own process) under 64 concurrent
streaming conversations for 20 s (32 for 3 s outside CI), while the upstream answers 429 / 500 /
529, times out, cuts a stream mid-way, a client goes away mid-stream, and clients send bodies the
proxy cannot parse (not JSON, a number of 5,000 digits, nesting 100,000 deep). Every request
carries credentials (an API key, a bearer token, a session cookie).

Every exchange is recorded exactly once, complete or marked incomplete with the reason; no line is
lost or corrupt; no credential value reaches a record; the proxy keeps serving afterwards; every
record file reads back. Printed (``pytest -s``): the added latency per
call against the same load sent to the upstream directly (median, p99), and the proxy's memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from contextkit.formats import load
from contextkit.wire import assemble_stream
from proxy_helper import check_files, records
from proxy_upstream import DripUpstream

pytestmark = pytest.mark.slow
FULL = bool(os.environ.get("CI"))
CONVERSATIONS = 64 if FULL else 32
LOAD_S = 20.0 if FULL else 3.0
CREDENTIALS = {
    "x-api-key": "sk-ant-test-load-key",
    "authorization": "Bearer sk-openai-test-load-token",
    "cookie": "session-cookie=1; other=2",
}
"""Sent with every request; none of these values may reach a record (proxy_helper.SECRETS
covers their stems)."""
MALFORMED = {
    "not json": b"{not json at all",
    "long number": b'{"model": "m", "max_tokens": ' + b"9" * 5_000 + b', "messages": []}',
    "deep": b"[" * 100_000 + b"]" * 100_000,
}
MODEL = "claude-sonnet-4-5"
FAULTS = ("429", "500", "529", "slow", "cut", "disconnect")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def proxy_process(
    tmp_path: Path,
) -> Iterator[tuple[str, subprocess.Popen[bytes], Path, DripUpstream]]:
    with DripUpstream(slow_s=2.5) as upstream:
        port = _free_port()
        out = (tmp_path / "console.txt").open("wb")
        command = [sys.executable, "-c", "from contextkit.cli import main; main()", "proxy"]
        command += ["--upstream", upstream.base_url, "--port", str(port)]
        command += ["--record", str(tmp_path / "rec"), "--timeout", "1.0"]
        child = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "200"}
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/stats", timeout=1)
                break
            except httpx.HTTPError:
                if child.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError((tmp_path / "console.txt").read_text()) from None
                time.sleep(0.1)
        try:
            yield url, child, tmp_path, upstream
        finally:
            child.terminate()
            child.wait(timeout=15)
            out.close()


def _body(first: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    messages = [{"role": "user", "content": first}, *history]
    return {"model": MODEL, "max_tokens": 64, "stream": True, "messages": messages}


async def _conversation(
    client: httpx.AsyncClient, base: str, name: str, until: float
) -> list[float]:
    """Calls back to back until ``until``; the latency of each (seconds)."""
    history: list[dict[str, Any]] = []
    latencies: list[float] = []
    while time.monotonic() < until:
        start = time.perf_counter()
        async with client.stream(
            "POST", base + "/v1/messages", json=_body(name, history)
        ) as answer:
            assert answer.status_code == 200
            text = "".join([chunk async for chunk in answer.aiter_text()])
        latencies.append(time.perf_counter() - start)
        message = assemble_stream(text).message
        assert message["stop_reason"] == "end_turn"
        history += [
            {"role": "assistant", "content": message["content"]},
            {"role": "user", "content": f"go on ({len(latencies)})"},
        ]
    return latencies


async def _fault(client: httpx.AsyncClient, base: str, kind: str) -> tuple[str, int, str]:
    first = "fault:endless" if kind == "disconnect" else f"fault:{kind}"
    async with client.stream("POST", base + "/v1/messages", json=_body(first, [])) as answer:
        if kind == "disconnect":
            async for _ in answer.aiter_bytes():
                break  # go away after the first chunk
            return kind, answer.status_code, ""
        text = (await answer.aread()).decode()
    return kind, answer.status_code, text


async def _malformed(client: httpx.AsyncClient, base: str, kind: str) -> tuple[str, int, str]:
    answer = await client.post(
        base + "/v1/messages", content=MALFORMED[kind], headers={"content-type": "application/json"}
    )
    return kind, answer.status_code, answer.text


async def _load(
    base: str, seconds: float, faults: bool
) -> tuple[list[float], list[tuple[str, int, str]]]:
    limits = httpx.Limits(max_connections=CONVERSATIONS + 36)
    async with httpx.AsyncClient(timeout=60, limits=limits, headers=CREDENTIALS) as client:
        until = time.monotonic() + seconds
        talks = [
            _conversation(client, base, f"conversation {i}", until) for i in range(CONVERSATIONS)
        ]
        trouble = [_fault(client, base, k) for k in FAULTS] if faults else []
        trouble += [_malformed(client, base, k) for k in MALFORMED] if faults else []
        talked, failed = await asyncio.gather(asyncio.gather(*talks), asyncio.gather(*trouble))
    return [x for result in talked for x in result], list(failed)


def _first(record: dict[str, Any]) -> str:
    """The first message's text of a recorded request ('' for a body the proxy could not
    parse, recorded as its text)."""
    request = record["request"]
    if not isinstance(request, dict):
        return ""
    return str(request["messages"][0]["content"])


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _check_faults(recorded: list[dict[str, Any]]) -> None:
    """Each fault recorded with what happened to it."""
    outcome = {_first(r): r for r in recorded if _first(r).startswith("fault:")}
    for code in ("429", "500", "529"):
        assert outcome[f"fault:{code}"]["status"] == int(code)
        assert outcome[f"fault:{code}"]["response"]["type"] == "error"
    assert outcome["fault:slow"]["complete"] is False
    assert "timed out" in outcome["fault:slow"]["error"]
    assert outcome["fault:cut"]["complete"] is False
    assert "broke" in outcome["fault:cut"]["error"]
    gone = outcome["fault:endless"]
    assert gone["complete"] is False
    assert gone["error"] == "client disconnected"
    assert gone["duration_ms"] < 8_000  # the proxy stopped relaying, long before the stream's end


def _check_unparsed_and_secrets(recorded: list[dict[str, Any]]) -> None:
    """The bodies the proxy could not parse, recorded once each with the upstream's refusal;
    every other exchange but the faults complete with its usage; no credential value anywhere in
    any record."""
    unparsed = [r for r in recorded if not isinstance(r["request"], dict)]
    assert len(unparsed) == len(MALFORMED)
    assert all(r["status"] == 400 for r in unparsed)
    normal = [r for r in recorded if _first(r) and not _first(r).startswith("fault:")]
    assert all(r["complete"] and r["status"] == 200 and r["usage"] for r in normal)
    for record in recorded:
        text = json.dumps(record)
        assert not any(value in text for value in CREDENTIALS.values())


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _figures(latencies: list[float]) -> tuple[float, float]:
    ordered = sorted(latencies)
    return statistics.median(ordered) * 1000, ordered[int(0.99 * (len(ordered) - 1))] * 1000


def test_load_and_faults(
    proxy_process: tuple[str, subprocess.Popen[bytes], Path, DripUpstream],
) -> None:
    url, child, root, upstream = proxy_process
    rss_before = _rss_mb(child.pid)
    direct, _ = asyncio.run(_load(upstream.base_url, LOAD_S / 2, faults=False))
    cpu_before = _cpu_s(child.pid)
    through, faults = asyncio.run(_load(url, LOAD_S, faults=True))
    proxy_cpu = _cpu_s(child.pid) - cpu_before
    rss_after = _rss_mb(child.pid)
    by_kind = {kind: (status, text) for kind, status, text in faults}
    assert by_kind["429"][0] == 429
    assert by_kind["500"][0] == 500
    assert by_kind["529"][0] == 529
    assert by_kind["slow"][0] == 504
    assert "event: error" in by_kind["cut"][1]  # the SDKs raise on it
    for kind in MALFORMED:  # forwarded as sent: the upstream's answer, in the API's shape
        assert by_kind[kind][0] == 400, kind
        assert '"invalid_request_error"' in by_kind[kind][1]
    # The proxy keeps serving.
    after, _ = asyncio.run(_load(url, 0.2, faults=False))
    assert after
    sent = len(through) + len(FAULTS) + len(MALFORMED) + len(after)
    folder = root / "rec"
    deadline = time.monotonic() + 10
    while sum(len(p.read_text().splitlines()) for p in folder.glob("*.jsonl")) < sent:
        assert time.monotonic() < deadline, "exchanges missing from the record"
        time.sleep(0.1)
    time.sleep(0.3)
    check_files(folder)
    recorded = records(folder)
    assert len(recorded) == sent
    assert len({r["id"] for r in recorded}) == sent
    conversations = Counter(_first(r) for r in recorded)
    assert sum(conversations[f"conversation {i}"] for i in range(CONVERSATIONS)) == len(
        through
    ) + len(after)
    _check_faults(recorded)
    _check_unparsed_and_secrets(recorded)
    # Every file reads back; failed exchanges stay calls without a response, with a note.
    for path in folder.glob("*.jsonl"):
        session = load(path).sessions[0]
        unparsed_here = session.set_aside.get("unparsed request", 0)
        assert session.calls or unparsed_here, path.name
        assert sum("not JSON" in n for n in session.notes) == unparsed_here
    stats = httpx.get(url + "/stats").json()["total"]
    assert stats["failed"] == 3 + len(MALFORMED) + 1  # 429, 500, 529; the bodies; the timeout
    assert stats["calls"] == sent
    assert stats["incomplete"] == 3
    d_median, d_p99 = _figures(direct)
    p_median, p_p99 = _figures(through)
    print(
        f"\n{CONVERSATIONS} concurrent streaming conversations: direct {len(direct)} calls in "
        f"{LOAD_S / 2:.1f}s, median {d_median:.1f} ms, p99 {d_p99:.1f} ms; through the proxy "
        f"{len(through)} calls in {LOAD_S:.1f}s, median {p_median:.1f} ms, p99 {p_p99:.1f} ms; "
        f"added latency per call: median {p_median - d_median:+.1f} ms, "
        f"p99 {p_p99 - d_p99:+.1f} ms; "
        f"proxy CPU {proxy_cpu:.2f} s over the {LOAD_S:.0f} s of load "
        f"({proxy_cpu / max(len(through), 1) * 1e3:.1f} ms per call); "
        f"proxy RSS {rss_before:.0f} MB at start, {rss_after:.0f} MB after {sent} exchanges"
    )
    console = (root / "console.txt").read_text()
    assert console.count("so far $") == sent


def test_streams_pass_through_as_they_arrive(tmp_path: Path) -> None:
    """The client gets the first event long before the upstream sends the last one."""
    from contextkit.proxy import ProxyConfig, ProxyServer  # noqa: PLC0415  (needs the extra)

    with (
        DripUpstream() as upstream,
        ProxyServer(ProxyConfig(upstream=upstream.base_url)) as proxy,
        httpx.Client(timeout=10) as client,
    ):
        start = time.perf_counter()
        first_at = None
        body = _body("fault:long", [])
        with client.stream("POST", proxy.base_url + "/v1/messages", json=body) as answer:
            for _ in answer.iter_bytes():
                first_at = first_at or time.perf_counter() - start
        total = time.perf_counter() - start
    assert first_at is not None
    assert total > 1.0  # about 60 events, 25 ms apart
    assert first_at < total / 4, (first_at, total)
