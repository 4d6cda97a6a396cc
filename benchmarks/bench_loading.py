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
from contextkit.strategies.config import strategy_from_spec
from contextkit.testing.transcripts import write_claude_code_transcript
from timing import best_of, require_benchmark_run

LARGE = os.environ.get("CONTEXTKIT_BENCH_LARGE") == "1"
SIZES = [500, 1000, 2000, *([5000] if LARGE else [])]
MAX_EXPONENT = 1.25
"""The reader's own work is linear (each request extends the previous one; the tests count it);
what is left above 1 is building each call's request tuple, which holds the whole history: every
``Call`` holds its full request, n**2 / 2 references over a session (about 200 MB at 5,000 calls),
a limit of the data model, not of the reader (docs/hardening.md, "Long sessions": one GC pass
over those references and their copying account for it). Measured: 1.10 for loading, 1.17 for
replay at 500 to 5,000 calls."""

_MEMORY = """
import json, sys
from contextkit.formats import load
from contextkit.replay import replay
from contextkit.strategies.config import strategy_from_spec

def peak_mb():  # VmHWM: this process's own peak (ru_maxrss keeps the parent's across exec)
    with open("/proc/self/status") as fh:
        line = next(line for line in fh if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024

session = load(sys.argv[1]).sessions[0]
loaded = peak_mb()
replay(session, strategy_from_spec("none"))
print(json.dumps({"load_mb": loaded, "replay_mb": peak_mb()}))
"""


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


def _peak_memory(path: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    value: dict[str, float] = json.loads(out.stdout)
    return value
