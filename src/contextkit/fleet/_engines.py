"""Where the per-file work runs: in this process, a process pool, or Ray tasks.

Contract: :func:`map_files` takes an iterator of ``(task, keys)`` and yields one
:class:`FileOutcome` per item, in the order of the items, whatever the engine; it pulls items from
the iterator only as workers free up (at most ``2 x jobs`` in flight), so neither the walk nor the
results pile up. Each engine runs the same :func:`process_file`; nothing is shared with a worker
but the :class:`FleetConfig` and the file's task. ``serial``: this process; ``process`` (the
default): a pool of ``jobs`` processes on this machine; ``ray``: Ray tasks on the cluster
``ray.init()`` connects to (a running one, ``RAY_ADDRESS``, else a local one of ``jobs`` CPUs that
the run starts and stops).
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Literal

from contextkit.errors import ConfigError, ContextkitError
from contextkit.fleet._config import FleetConfig
from contextkit.fleet._walk import FileTask
from contextkit.fleet._work import FileOutcome, process_file

Engine = Literal["serial", "process", "ray"]
ENGINES: tuple[Engine, ...] = ("serial", "process", "ray")
Item = tuple[FileTask, Mapping[str, str]]


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def map_files(
    items: Iterator[Item], config: FleetConfig, engine: Engine = "process", jobs: int | None = None
) -> Iterator[FileOutcome]:
    """:func:`process_file` over ``items`` on ``engine`` (see the module docstring)."""
    jobs = jobs or default_jobs()
    if engine == "serial":
        return (process_file(task, config, keys) for task, keys in items)
    if engine == "process":
        return _pool(items, config, jobs)
    if engine == "ray":
        return _ray(items, config, jobs)
    raise ConfigError(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")


def _windowed(
    items: Iterator[Item], submit: Callable[[Item], Any], wait: Callable[[Any], FileOutcome], n: int
) -> Iterator[FileOutcome]:
    """Keep ``n`` items in flight; yield their outcomes in item order."""
    flight: deque[Any] = deque()
    for item in items:
        flight.append(submit(item))
        if len(flight) >= n:
            yield wait(flight.popleft())
    while flight:
        yield wait(flight.popleft())


def _pool(items: Iterator[Item], config: FleetConfig, jobs: int) -> Iterator[FileOutcome]:
    # forkserver: workers forked from a clean server that has imported contextkit once (no
    # threads of this process, such as a progress bar's, are copied into them).
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["contextkit.fleet._work"])
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_show_warnings_by,
        initargs=(warnings.showwarning,),
    )
    try:

        def submit(item: Item) -> Future[FileOutcome]:
            return pool.submit(process_file, item[0], config, dict(item[1]))

        yield from _windowed(items, submit, lambda f: f.result(), 2 * jobs)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _show_warnings_by(show: Callable[..., None]) -> None:
    warnings.showwarning = show


def _ray(items: Iterator[Item], config: FleetConfig, jobs: int) -> Iterator[FileOutcome]:
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
    try:
        cpus = int(ray.cluster_resources().get("CPU", jobs))
        remote = ray.remote(num_cpus=1)(process_file)
        shared = ray.put(config)  # the one thing every task shares

        def submit(item: Item) -> Any:
            return remote.remote(item[0], shared, dict(item[1]))

        yield from _windowed(items, submit, ray.get, 2 * cpus)
    finally:
        if started:
            ray.shutdown()


def import_ray() -> Any:
    """``ray``, or an error naming the extra. Its workers run this interpreter: under ``uv run``
    Ray would otherwise ship the working directory and build a uv environment for each worker
    (``RAY_ENABLE_UV_RUN_RUNTIME_ENV``, read when ray is first imported)."""
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray  # noqa: PLC0415  (optional extra, heavy: imported only for --engine ray)
    except ImportError:
        raise ContextkitError(
            "--engine ray needs ray: install the ray extra (pip install 'contextkit[ray]')"
        ) from None
    return ray
