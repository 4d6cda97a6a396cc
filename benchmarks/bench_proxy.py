"""What ``contextkit proxy`` adds to a call: the same request sent to a local upstream directly and
through the proxy (recording on, no strategy), in one run.

The upstream is a minimal local Anthropic endpoint that answers at once (a streamed answer of 24
server-sent events, or the same message as JSON), so the figures are the proxy's own cost: parse,
forward, pass the stream through chunk by chunk, reassemble it, price it, write the record. Calls
are made back to back from one client with keep-alive; the two paths are timed interleaved and
compared as medians of the wall time per call. The proxy runs as the ``contextkit proxy`` command
in its own process.

Run ``uv run pytest benchmarks/bench_proxy.py --benchmark-enable -s`` to see the numbers; with
``--benchmark-disable`` (the normal suite) the benchmarks run once as correctness checks and the
ratio test skips.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from contextkit.proxy import ProxyConfig, ProxyServer
from contextkit.wire import stream_events, to_sse

TARGET_RATIO = 25.0
"""A streamed call through the proxy may take at most this many times a direct one against an
upstream that answers at once (about 1 ms). The proxy is one more process to wake twice per call:
on a loaded machine most of the added time is waiting for a core, not the proxy's own CPU (printed
beside it). Against a real model, whose answers take seconds, the added milliseconds count."""
MESSAGE = {
    "id": "msg_bench",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "The quick brown fox jumps over the lazy dog. " * 4}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1200, "cache_read_input_tokens": 0, "output_tokens": 40},
}
STREAM = to_sse(stream_events(MESSAGE, chunk_chars=8)).encode()
HISTORY = [
    {"role": "user", "content": "Summarise the file."},
    {"role": "assistant", "content": [{"type": "text", "text": "Reading it."}]},
    {"role": "user", "content": "line of the file\n" * 200},
]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        data = STREAM if body.get("stream") else json.dumps(MESSAGE).encode()
        kind = "text/event-stream" if body.get("stream") else "application/json"
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _benchmarking(request: pytest.FixtureRequest) -> bool:
    options = request.config.option
    return not (options.benchmark_disable and not options.benchmark_enable)


@pytest.fixture(scope="module")
def paths(request: pytest.FixtureRequest) -> Iterator[tuple[str, str, int]]:
    """The upstream (a thread here), the proxy and the process it runs in. Timed (a benchmark run),
    the proxy is the command in its own process: in a thread of this one, every hand-over between
    client, proxy and upstream would wait for the GIL. In the normal suite, where these run once as
    checks, a thread saves starting a process."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as folder:
        if _benchmarking(request):
            yield from _proxy_process(upstream, folder)
        else:
            config = ProxyConfig(upstream=upstream, record_dir=Path(folder))
            with ProxyServer(config, on_line=lambda line: None) as proxy:
                yield upstream, proxy.base_url, os.getpid()
    server.shutdown()
    server.server_close()
    thread.join()


def _proxy_process(upstream: str, folder: str) -> Iterator[tuple[str, str, int]]:
    port = _free_port()
    command = [sys.executable, "-c", "from contextkit.cli import main; main()", "proxy"]
    command += ["--upstream", upstream, "--port", str(port), "--record", folder]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(base, child)
        yield upstream, base, child.pid
    finally:
        child.terminate()
        child.wait(timeout=15)


def _wait_for(base: str, child: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(base + "/stats", timeout=1)
            return
        except httpx.HTTPError:
            if child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the proxy did not start") from None
            time.sleep(0.1)


def _caller(client: httpx.Client, base: str, stream: bool) -> Callable[[], None]:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": HISTORY, "stream": stream}

    def call() -> None:
        answer = client.post(base + "/v1/messages", json=body)
        assert answer.status_code == 200
        assert len(answer.content) == (len(STREAM) if stream else len(json.dumps(MESSAGE)))

    return call


def test_direct_call(benchmark: BenchmarkFixture, paths: tuple[str, str, int]) -> None:
    with httpx.Client() as client:
        benchmark.pedantic(_caller(client, paths[0], True), rounds=30, iterations=1)  # type: ignore[no-untyped-call]


def test_call_through_the_proxy(benchmark: BenchmarkFixture, paths: tuple[str, str, int]) -> None:
    with httpx.Client() as client:
        benchmark.pedantic(_caller(client, paths[1], True), rounds=30, iterations=1)  # type: ignore[no-untyped-call]


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _times(fn: Callable[[], None], n: int) -> list[float]:
    wall: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        wall.append(time.perf_counter() - start)
    return wall


def test_proxy_overhead_ratio(request: pytest.FixtureRequest, paths: tuple[str, str, int]) -> None:
    if not _benchmarking(request):
        pytest.skip("timing ratio: run with --benchmark-enable")
    lines = []
    ratios: dict[str, float] = {}
    with httpx.Client() as client:
        for stream in (True, False):
            direct, through = _caller(client, paths[0], stream), _caller(client, paths[1], stream)
            for fn in (direct, through):
                _times(fn, 20)  # warm up: connections, imports, first-call caches
            d_wall: list[float] = []
            p_wall: list[float] = []
            proxy_cpu = 0.0
            for _ in range(5):  # interleaved, so load on the machine hits both alike
                d_wall += _times(direct, 40)
                cpu = _cpu_s(paths[2])
                p_wall += _times(through, 40)
                proxy_cpu += _cpu_s(paths[2]) - cpu
            d_med, p_med = statistics.median(d_wall), statistics.median(p_wall)
            ratio = p_med / d_med
            kind = "streamed" if stream else "JSON"
            lines.append(
                f"{kind} call: direct median {d_med * 1e3:.2f} ms, through the proxy "
                f"{p_med * 1e3:.2f} ms (+{(p_med - d_med) * 1e3:.2f} ms, ratio {ratio:.2f}); "
                f"the proxy's own CPU {proxy_cpu / len(p_wall) * 1e3:.2f} ms per call"
            )
            ratios[kind] = ratio
    print("\n" + "\n".join(lines))
    assert ratios["streamed"] <= TARGET_RATIO, lines[0]
