"""Loading and replaying a Claude Code transcript is linear in its calls.

Synthetic transcripts (:mod:`contextkit.testing.transcripts`) of 500, 1,000 and 2,000 calls (and
5,000 with ``CONTEXTKIT_BENCH_LARGE=1``) are loaded and replayed (strategy ``none``); the test
fits ``time ~ calls ** k`` over the sizes and checks ``k <= MAX_EXPONENT`` in a benchmark run
(the old reader, which walked the whole chain again per call, fitted about 2). Peak memory is
measured in a fresh process per size (``VmHWM``). Each size is also a plain pytest-benchmark case::

    CONTEXTKIT_BENCH_LARGE=1 uv run pytest benchmarks/bench_loading.py --benchmark-enable -s \\
        --benchmark-timer=time.process_time --benchmark-columns=median,rounds
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from contextkit.formats import load
from contextkit.replay import replay
from contextkit.strategies import strategy_from_spec
from contextkit.testing.transcripts import write_claude_code_transcript
from contextkit.wire import _reuse, write_requests_jsonl
from timing import best_of, require_benchmark_run

LARGE = os.environ.get("CONTEXTKIT_BENCH_LARGE") == "1"
SIZES = [500, 1000, 2000, *([5000] if LARGE else [])]
MAX_EXPONENT = 1.1
"""The reader's own work is linear (each request extends the previous one; the tests count it),
and the requests of a thread are views of one list (``contextkit.messages.History``), so a
session of n calls holds its messages once, not n**2 / 2 references. Measured (docs/hardening.md,
"Long sessions"): 0.81 to 1.05 for loading, 0.79 to 1.08 for replay at 500 to 5,000 calls over
six runs (1.28 and 1.32 when every request held its own tuple)."""

_PEAK_MB = """
import json, sys

def peak_mb():  # VmHWM: this process's own peak (ru_maxrss keeps the parent's across exec)
    with open("/proc/self/status") as fh:
        line = next(line for line in fh if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024
"""

_MEMORY = (
    _PEAK_MB
    + """
from contextkit.formats import load
from contextkit.replay import replay
from contextkit.strategies._config import strategy_from_spec

session = load(sys.argv[1]).sessions[0]
loaded = peak_mb()
replay(session, strategy_from_spec("none"))
print(json.dumps({"load_mb": loaded, "replay_mb": peak_mb()}))
"""
)

_TRACE_MEMORY = (
    _PEAK_MB
    + """
from contextkit.formats import load
from contextkit.wire import _reuse

_reuse.RECENT = int(sys.argv[2])
start = peak_mb()
calls = len(load(sys.argv[1]).sessions[0].calls)
print(json.dumps({"calls": calls, "start_mb": start, "peak_mb": peak_mb()}))
"""
)
TRACE_SIZES = (100, 400)
"""Calls of the request-body traces: 2.2 MB and 36 MB of JSON (each body holds the history)."""


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    folder = tmp_path_factory.mktemp("transcripts")
    return {n: write_claude_code_transcript(folder / f"t{n}.jsonl", n) for n in SIZES}


def _exponent(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(time) against log(calls)."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


@pytest.mark.slow
@pytest.mark.parametrize("calls", SIZES)
def test_load(benchmark: Any, transcripts: dict[int, Path], calls: int) -> None:
    session = benchmark(lambda: load(transcripts[calls]).sessions[0])
    assert len(session.calls) == calls


@pytest.mark.slow
def test_load_and_replay_are_linear(
    request: pytest.FixtureRequest, transcripts: dict[int, Path]
) -> None:
    require_benchmark_run(request)
    loads, replays = [], []
    replay(load(transcripts[SIZES[0]]).sessions[0], strategy_from_spec("none"))  # warm
    for n in SIZES:
        session = load(transcripts[n]).sessions[0]  # warm: tokenizer, imports
        loads.append((n, best_of(partial(load, transcripts[n]), 2)))
        replays.append((n, best_of(partial(replay, session, strategy_from_spec("none")), 1)))
    memory = {n: _peak_memory(transcripts[n]) for n in SIZES}
    k_load, k_replay = _exponent(loads), _exponent(replays)
    for (n, t_load), (_, t_replay) in zip(loads, replays, strict=True):
        mb = memory[n]
        print(
            f"{n:>6} calls: load {t_load:6.2f} s, replay {t_replay:6.2f} s CPU; peak "
            f"{mb['load_mb']:.0f} MB loaded, {mb['replay_mb']:.0f} MB replayed"
        )
    print(f"fitted exponent: load {k_load:.2f}, replay {k_replay:.2f}")
    assert k_load <= MAX_EXPONENT
    assert k_replay <= MAX_EXPONENT


@pytest.mark.slow
def test_request_traces_take_memory_by_the_history_not_the_file(
    tmp_path: Path,
) -> None:
    """A file of request bodies (a raw API trace) holds its history again in every line: read
    a line at a time, parsing only what repeats no earlier body (``wire._reuse``), peak memory
    follows the conversation; parsing every body on its own follows the file."""
    growth = {}
    for recent in (_reuse.RECENT, 0):
        peaks = []
        for n in TRACE_SIZES:
            path = tmp_path / f"trace{n}.jsonl"
            if not path.exists():
                session = load(write_claude_code_transcript(tmp_path / f"t{n}.jsonl", n))
                write_requests_jsonl(path, [c.request for c in session.sessions[0].calls])
            mb = _peak_memory(path, _TRACE_MEMORY, str(recent))
            assert mb["calls"] == n
            peaks.append(mb["peak_mb"] - mb["start_mb"])
            mode = "on " if recent else "off"
            print(
                f"{n:>4} calls, {path.stat().st_size / 1e6:5.1f} MB file, reuse {mode}: "
                f"{peaks[-1]:6.1f} MB over imports"
            )
        growth[recent] = peaks[-1] - peaks[0]
    # Off, 4x the calls is about 16x the file and 300 MB more; on, a few MB.
    assert growth[_reuse.RECENT] < growth[0] / 10


def _peak_memory(path: Path, script: str = _MEMORY, *args: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", script, str(path), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    value: dict[str, float] = json.loads(out.stdout)
    return value
