"""The command line starts fast: ``contextkit --help`` against ``python -c "import typer"``.

Each command is a fresh process (``subprocess.run``), timed by the CPU it used (user + system, from
``getrusage(RUSAGE_CHILDREN)``: load from other processes on a shared machine inflates wall time
far more) and by wall time beside it. The three commands run interleaved, so a change of load hits
all of them; the ratios are of medians in this one run. Goal: ``--help`` within 2x of importing the
CLI framework alone. ``validate`` of a small file is measured too: it loads the readers and the
message model, which a command that reads a file needs (no goal, a figure to watch).

``uv run pytest benchmarks/bench_cli.py --benchmark-enable -s`` prints the numbers; the normal
suite runs each command once as a correctness check and skips the ratio.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from timing import require_benchmark_run

TARGET_RATIO = 2.0
"""``contextkit --help`` may cost at most twice ``import typer``."""
RUNS = 15
SMALL = Path(__file__).parent.parent / "tests" / "fixtures" / "validate" / "clean.jsonl"


def _contextkit() -> list[str]:
    """The ``contextkit`` script of this environment (as a user runs it), else ``-m``."""
    script = Path(sys.executable).with_name("contextkit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "contextkit"]


COMMANDS = {
    "import typer": [sys.executable, "-c", "import typer"],
    "contextkit --help": [*_contextkit(), "--help"],
    "contextkit validate small": [*_contextkit(), "validate", str(SMALL)],
}


def _timed(command: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(CPU seconds, wall seconds, result) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done


def test_each_command_runs() -> None:
    """What is timed works: help lists the commands, validate reads the small file cleanly."""
    _, _, helped = _timed(COMMANDS["contextkit --help"])
    assert helped.returncode == 0, helped.stderr
    for name in ("compare", "replay", "cost", "inspect", "validate", "demo", "convert"):
        assert name in helped.stdout
    _, _, checked = _timed(COMMANDS["contextkit validate small"])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 violation(s)" in checked.stdout


def test_help_within_twice_import_typer(request: pytest.FixtureRequest) -> None:
    require_benchmark_run(request)
    cpu: dict[str, list[float]] = {name: [] for name in COMMANDS}
    wall: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for command in COMMANDS.values():  # warm the file cache: the first run reads .pyc files
        _timed(command)
    for _ in range(RUNS):
        for name, command in COMMANDS.items():
            c, w, done = _timed(command)
            assert done.returncode == 0, done.stderr
            cpu[name].append(c)
            wall[name].append(w)
    base_cpu = statistics.median(cpu["import typer"])
    base_wall = statistics.median(wall["import typer"])
    print(f"\n{RUNS} interleaved runs each, medians (ratio against import typer):")
    for name in COMMANDS:
        mc, mw = statistics.median(cpu[name]), statistics.median(wall[name])
        print(
            f"  {name:28} CPU {mc * 1000:6.0f} ms ({mc / base_cpu:.2f}x)  "
            f"wall {mw * 1000:6.0f} ms ({mw / base_wall:.2f}x)"
        )
    ratio = statistics.median(cpu["contextkit --help"]) / base_cpu
    assert ratio <= TARGET_RATIO, f"contextkit --help costs {ratio:.2f}x import typer"
