"""Fleets of sessions: ``compare``, ``cost`` and ``inspect`` over thousands of recordings, with
rows streamed to Parquet, resumable, on this process, a process pool or Ray.

The layer above :mod:`contextkit.replay` and :mod:`contextkit.estimate`, below the CLI. A run
walks the folders lazily (:func:`walk_files`), turns each file into flat rows
(:func:`process_file`: one per session x strategy, optionally one per call), on an engine
(:func:`map_files`), and writes them as they come (see ``docs/fleet.md`` for the schema,
:data:`SESSION_COLUMNS` and :data:`CALL_COLUMNS`). :mod:`contextkit.fleet.synthetic` writes
synthetic fleets of Claude Code sessions with realistic sizes, for tests and benchmarks.
pyarrow (extra ``fleet``) and ray (extra ``ray``) are imported only when used.
"""

from __future__ import annotations

from contextkit.fleet._config import SCHEMA_VERSION, FleetConfig
from contextkit.fleet._engines import ENGINES, Engine, default_jobs, import_ray, map_files
from contextkit.fleet._output import calls_path
from contextkit.fleet._run import FleetSummary, run_fleet, summarize
from contextkit.fleet._schema import CALL_COLUMNS, SESSION_COLUMNS, Column
from contextkit.fleet._walk import FileTask, walk_files
from contextkit.fleet._work import FileOutcome, process_file, project_of

__all__ = [
    "CALL_COLUMNS",
    "ENGINES",
    "SCHEMA_VERSION",
    "SESSION_COLUMNS",
    "Column",
    "Engine",
    "FileOutcome",
    "FileTask",
    "FleetConfig",
    "FleetSummary",
    "calls_path",
    "default_jobs",
    "import_ray",
    "map_files",
    "process_file",
    "project_of",
    "run_fleet",
    "summarize",
    "walk_files",
]
