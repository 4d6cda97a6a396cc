"""Fleet runs: sessions per second per core and peak memory, by fleet size and engine.

Seeded synthetic fleets (:func:`contextkit.fleet.synthetic.write_fleet`: Claude Code files with
sizes drawn from the corpus fit) of 100 and 1,000 sessions, and 10,000 with
``CONTEXTKIT_BENCH_FLEET_LARGE=1`` (which also adds the serial and Ray runs of 1,000), each run
``compare --out`` style (``as-recorded`` and ``evict-tool-results``, one row per session x
strategy to Parquet) in a fresh interpreter. Measured per run: wall time of the run itself (Ray:
on a cluster started before the clock, ``num_cpus`` = the pool's jobs); CPU seconds of the
interpreter and of every process it started (sampled from /proc every 0.25 s: pool workers, Ray's
raylet and workers, less what the cluster spent before the clock); peak RSS of the interpreter
(its VmHWM: ``ru_maxrss`` would include the peak of the pytest process it was started from), of
the largest other process and of the whole tree. Sessions per second per core: sessions /
wall / processes that worked (on a loaded machine wall time says more about the load than about
the code, so it is also given per CPU second). Goals, checked in a benchmark run only: time linear
(CPU for 1,000 within 7-14x of 100; with LARGE, 10,000 within 7-14x of 1,000), memory flat (the
interpreter's and the largest worker's peak at 1,000, and the interpreter's at 10,000, within
1.5x of those at 100 plus 60 MB), and the pool's CPU per session over 1,000 within 1.3x of one
process's. A worker's peak follows the largest session it replays (a larger fleet draws larger
outliers), so flatness in the number of sessions is also checked apart, on fleets of sessions of
at most 12 calls: one process's peak at 1,000 (and 10,000) within 1.2x of its peak at 100 plus
30 MB.

    uv run pytest benchmarks/bench_fleet.py --benchmark-enable -s -p no:cacheprovider
    CONTEXTKIT_BENCH_FLEET_LARGE=1 uv run pytest benchmarks/bench_fleet.py --benchmark-enable -s

Without ``--benchmark-enable`` (the suite) a fleet of 12 runs on each engine but Ray and must
give the same rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from contextkit.fleet import FleetConfig, run_fleet
from contextkit.fleet.synthetic import write_fleet
from timing import require_benchmark_run

LARGE = os.environ.get("CONTEXTKIT_BENCH_FLEET_LARGE") == "1"
SPECS = ("as-recorded", "evict-tool-results")
JOBS = 2
SEED = 5

_RUN = """
import json, os, sys, threading, time
from pathlib import Path
from contextkit.fleet import FleetConfig, run_fleet
folder, out, engine, jobs, specs = json.loads(sys.argv[1])
TICK = os.sysconf("SC_CLK_TCK")
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20
me = os.getpid()
cpu, peak, total_peak, stop = {}, {}, [0.0], threading.Event()

def descendants():
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    parent[int(name)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    found, todo = [], [me]
    while todo:
        pid = todo.pop()
        kids = [p for p, pp in parent.items() if pp == pid]
        found += kids
        todo += kids
    return found

def sample():
    while not stop.wait(0.25):
        total = 0.0
        for pid in descendants():
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            cpu[pid] = (int(fields[11]) + int(fields[12])) / TICK
            rss = int(fields[21]) * PAGE_MB
            peak[pid] = max(peak.get(pid, 0.0), rss)
            total += rss
        total_peak[0] = max(total_peak[0], total)

if engine == "ray":
    from contextkit.fleet import import_ray
    ray = import_ray()
    ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
    ray.get(ray.remote(lambda: 0).remote())  # a worker up before the clock
thread = threading.Thread(target=sample, daemon=True)
before = {}
thread.start()
time.sleep(0.3)
before = dict(cpu)  # the cluster's own processes, started before the clock
self_cpu = time.process_time()
start = time.perf_counter()
summary = run_fleet([folder], FleetConfig(specs=tuple(specs)), Path(out), engine=engine, jobs=jobs)
wall = time.perf_counter() - start
self_cpu = time.process_time() - self_cpu
stop.set()
thread.join()
workers_cpu = sum(c - before.get(p, 0.0) for p, c in cpu.items())
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec, so it would report the peak of the
# pytest process this interpreter was started from (which wrote the fleets), not its own.
with open("/proc/self/status") as fh:
    me_mb = next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:")) / 1024
print(json.dumps({"wall_s": wall, "cpu_s": self_cpu + workers_cpu, "rss_mb": me_mb,
                  "worker_rss_mb": max(peak.values(), default=0.0),
                  "tree_rss_mb": me_mb + total_peak[0],
                  "rows": summary.computed, "files": summary.files}))
"""


def measure(folder: Path, out: Path, engine: str, jobs: int) -> dict[str, Any]:
    """One run in a fresh interpreter: wall and CPU seconds (this process and every process it
    started, sampled from /proc), peak RSS in MB (this process, the largest other process, the
    whole tree), rows computed."""
    args = json.dumps([str(folder), str(out), engine, jobs, list(SPECS)])
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-c", _RUN, args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=7200,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    cores = 1 if engine == "serial" else jobs
    result["per_core_wall"] = result["files"] / result["wall_s"] / cores
    result["per_cpu_s"] = result["files"] / result["cpu_s"]
    return result


@pytest.fixture(scope="module")
def fleets(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("fleets")
    sizes = (100, 1000, 10_000) if LARGE else (100, 1000)
    out = {}
    for n in sizes:
        write_fleet(root / str(n), n, seed=SEED)
        out[n] = root / str(n)
    return out


def test_engines_agree_on_a_small_fleet(tmp_path: Path) -> None:
    """The plain-suite check: what the benchmark times gives the same rows on every engine."""
    write_fleet(tmp_path / "f", 12, seed=SEED, max_calls=30)
    tables = []
    for engine in ("serial", "process"):
        out = tmp_path / f"{engine}.parquet"
        run_fleet([tmp_path / "f"], FleetConfig(specs=SPECS), out, engine=engine, jobs=JOBS)
        tables.append(pq.read_table(out).sort_by([("file", "ascending")]).to_pylist())
    assert tables[0] == tables[1]
    assert len(tables[0]) == 12 * len(SPECS)


def _line(n: int, engine: str, r: dict[str, Any]) -> str:
    return (
        f"{n:>6} sessions {engine:>7}: wall {r['wall_s']:7.1f} s, cpu {r['cpu_s']:7.1f} s, "
        f"{r['per_core_wall']:5.2f} sessions/s/core (wall), {r['per_cpu_s']:5.2f} per cpu-s, "
        f"peak MB: driver {r['rss_mb']:.0f}, largest worker {r['worker_rss_mb']:.0f}, "
        f"tree {r['tree_rss_mb']:.0f}"
    )


def test_fleet_scaling(
    fleets: dict[int, Path], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    require_benchmark_run(request)
    plan = [(100, "serial"), (100, "process"), (100, "ray"), (1000, "process")]
    if LARGE:
        plan += [(1000, "serial"), (1000, "ray"), (10_000, "process")]
    found: dict[tuple[int, str], dict[str, Any]] = {}
    for n, engine in plan:
        r = measure(fleets[n], tmp_path / f"{n}-{engine}.parquet", engine, JOBS)
        found[(n, engine)] = r
        assert r["rows"] == n * len(SPECS)
        print(_line(n, engine, r), flush=True)
    s100, p100, p1000 = found[(100, "serial")], found[(100, "process")], found[(1000, "process")]
    r100 = found[(100, "ray")]
    print(
        f"wall speed-up at 100: pool {s100['wall_s'] / p100['wall_s']:.2f}x one process, "
        f"Ray {p100['wall_s'] / r100['wall_s']:.2f}x the pool; "
        f"cpu per session: pool {s100['per_cpu_s'] / p100['per_cpu_s']:.2f}x one process's, "
        f"Ray {p100['per_cpu_s'] / r100['per_cpu_s']:.2f}x the pool's"
    )
    print(f"pool, cpu 1,000 / 100: {p1000['cpu_s'] / p100['cpu_s']:.1f}x")
    # Linear: ten times the sessions, about ten times the work (CPU: the load of other
    # processes on the machine inflates wall time, not CPU time).
    assert 7 <= p1000["cpu_s"] / p100["cpu_s"] <= 14
    # Flat: the driver's and each worker's peak do not grow with the fleet.
    assert p1000["rss_mb"] <= 1.5 * p100["rss_mb"] + 60
    assert p1000["worker_rss_mb"] <= 1.5 * p100["worker_rss_mb"] + 60
    # The pool's overhead (worker start, each worker's own token memo), amortised over 1,000
    # sessions: its CPU per session within 1.3x of one process's.
    assert p1000["per_cpu_s"] >= s100["per_cpu_s"] / 1.3
    if LARGE:
        p10k = found[(10_000, "process")]
        print(f"pool, cpu 10,000 / 1,000: {p10k['cpu_s'] / p1000['cpu_s']:.1f}x")
        assert p10k["rss_mb"] <= 1.5 * p100["rss_mb"] + 60
        assert 7 <= p10k["cpu_s"] / p1000["cpu_s"] <= 14


def test_memory_is_flat_in_the_number_of_sessions(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A worker's peak follows the largest session it replays (a bigger fleet draws bigger
    outliers from the same distribution); so, with the sessions' size bounded (at most 12 calls),
    the one process that reads, replays and writes must not grow with their number."""
    require_benchmark_run(request)
    sizes = (100, 1000, 10_000) if LARGE else (100, 1000)
    peaks = {}
    for n in sizes:
        write_fleet(tmp_path / str(n), n, seed=SEED, max_calls=12)
        r = measure(tmp_path / str(n), tmp_path / f"{n}.parquet", "serial", 1)
        assert r["rows"] == n * len(SPECS)
        peaks[n] = r["rss_mb"]
        print(_line(n, "serial", r) + " (at most 12 calls per session)", flush=True)
    for n in sizes[1:]:
        assert peaks[n] <= 1.2 * peaks[100] + 30
